package e2e

import (
	"fmt"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// createRaw POSTs a VirtPlatformConfig body as JSON.
func createRaw(name, spec string) error {
	deleteConfig(name)
	body := fmt.Sprintf(`{"apiVersion":"advisor.kubevirt.io/v1alpha1","kind":"VirtPlatformConfig","metadata":{"name":%q},"spec":%s}`, name, spec)
	err := adminRaw.Post().Resource("virtplatformconfigs").Body([]byte(body)).
		SetHeader("Content-Type", "application/json").Do(suiteCtx).Error()
	if err == nil {
		DeferCleanup(deleteConfig, name)
	}
	return err
}

// expectInvalid checks a 422 whose causes name the field and the message.
func expectInvalid(err error, fieldPath, message string) {
	GinkgoHelper()
	Expect(err).To(HaveOccurred())
	Expect(apierrors.IsInvalid(err)).To(BeTrue(), "want 422 Invalid, got %v", err)
	status := err.(apierrors.APIStatus).Status()
	Expect(status.Code).To(Equal(int32(422)))
	var causes []string
	for _, c := range status.Details.Causes {
		if strings.HasPrefix(c.Field, fieldPath) && strings.Contains(c.Message, message) {
			return
		}
		causes = append(causes, c.Field+": "+c.Message)
	}
	Fail(fmt.Sprintf("no cause on %s containing %q in %q", fieldPath, message, causes))
}

var _ = Describe("validation", func() {
	DescribeTable("rejects a bad VirtPlatformConfig with 422, the field path and the message",
		func(name, spec, fieldPath, message string) {
			expectInvalid(createRaw(name, spec), fieldPath, message)
		},
		Entry("name differs from profile", "my-config", `{"profile":"load-aware-rebalancing"}`,
			"metadata.name", "To ensure a singleton pattern, the VirtPlatformConfig name must exactly match the spec.profile."),
		Entry("profile missing", "load-aware-rebalancing", `{}`, "spec.profile", "Required value"),
		Entry("unknown profile", "turbo", `{"profile":"turbo"}`, "spec.profile", `Unsupported value: "turbo"`),
		Entry("unknown action", "example-profile", `{"profile":"example-profile","action":"Now"}`, "spec.action", `supported values: "DryRun", "Apply", "Ignore"`),
		Entry("unknown failurePolicy", "example-profile", `{"profile":"example-profile","failurePolicy":"Retry"}`, "spec.failurePolicy", `supported values: "Abort", "Continue"`),
		Entry("waitTimeout not a duration", "example-profile", `{"profile":"example-profile","waitTimeout":"soon"}`, "spec.waitTimeout", "must be a Go duration such as 30m"),
		Entry("waitTimeout negative", "example-profile", `{"profile":"example-profile","waitTimeout":"-1m"}`, "spec.waitTimeout", "must be positive"),
		Entry("interval below 60", "load-aware-rebalancing", `{"profile":"load-aware-rebalancing","options":{"loadAware":{"deschedulingIntervalSeconds":59}}}`,
			"spec.options.loadAware.deschedulingIntervalSeconds", "must be between 60 and 86400, inclusive"),
		Entry("interval above 86400", "load-aware-rebalancing", `{"profile":"load-aware-rebalancing","options":{"loadAware":{"deschedulingIntervalSeconds":86401}}}`,
			"spec.options.loadAware.deschedulingIntervalSeconds", "must be between 60 and 86400, inclusive"),
		Entry("unknown mode", "load-aware-rebalancing", `{"profile":"load-aware-rebalancing","options":{"loadAware":{"mode":"Eager"}}}`,
			"spec.options.loadAware.mode", `supported values: "Automatic", "Predictive"`),
		Entry("unknown thresholds", "load-aware-rebalancing", `{"profile":"load-aware-rebalancing","options":{"loadAware":{"devDeviationThresholds":"Extreme"}}}`,
			"spec.options.loadAware.devDeviationThresholds", `"AsymmetricHigh"`),
		Entry("evictionLimitTotal 0", "load-aware-rebalancing", `{"profile":"load-aware-rebalancing","options":{"loadAware":{"evictionLimitTotal":0}}}`,
			"spec.options.loadAware.evictionLimitTotal", "must be between 1 and 1000, inclusive"),
		Entry("evictionLimitTotal 1001", "load-aware-rebalancing", `{"profile":"load-aware-rebalancing","options":{"loadAware":{"evictionLimitTotal":1001}}}`,
			"spec.options.loadAware.evictionLimitTotal", "must be between 1 and 1000, inclusive"),
		Entry("evictionLimitNode 101", "load-aware-rebalancing", `{"profile":"load-aware-rebalancing","options":{"loadAware":{"evictionLimitNode":101}}}`,
			"spec.options.loadAware.evictionLimitNode", "must be between 1 and 100, inclusive"),
		Entry("ratio 99", "virt-higher-density", `{"profile":"virt-higher-density","options":{"virtHigherDensity":{"memoryToRequestRatio":99}}}`,
			"spec.options.virtHigherDensity.memoryToRequestRatio", "must be between 100 and 300, inclusive"),
		Entry("ratio 301", "virt-higher-density", `{"profile":"virt-higher-density","options":{"virtHigherDensity":{"memoryToRequestRatio":301}}}`,
			"spec.options.virtHigherDensity.memoryToRequestRatio", "must be between 100 and 300, inclusive"),
		Entry("ratio above 120 without swap", "virt-higher-density", `{"profile":"virt-higher-density","options":{"virtHigherDensity":{"enableSwap":false,"memoryToRequestRatio":130}}}`,
			"spec.options.virtHigherDensity.memoryToRequestRatio", "memoryToRequestRatio > 120 requires enableSwap=true"),
		Entry("enableSwap false with ratio 150", "virt-higher-density", `{"profile":"virt-higher-density","options":{"virtHigherDensity":{"enableSwap":false,"memoryToRequestRatio":150}}}`,
			"spec.options.virtHigherDensity.memoryToRequestRatio", "memoryToRequestRatio > 120 requires enableSwap=true"),
		Entry("bad KSM node selector", "virt-higher-density", `{"profile":"virt-higher-density","options":{"virtHigherDensity":{"ksmConfiguration":{"nodeLabelSelector":{"matchExpressions":[{"key":"a","operator":"Sometimes"}]}}}}}`,
			"spec.options.virtHigherDensity.ksmConfiguration.nodeLabelSelector.matchExpressions[0].operator", "not a valid selector operator"),
		Entry("density options on load-aware", "load-aware-rebalancing", `{"profile":"load-aware-rebalancing","options":{"virtHigherDensity":{}}}`,
			"spec.options.virtHigherDensity", "When profile is 'load-aware-rebalancing', only options.loadAware may be set"),
		Entry("load-aware options on density", "virt-higher-density", `{"profile":"virt-higher-density","options":{"loadAware":{}}}`,
			"spec.options.loadAware", "When profile is 'virt-higher-density', only options.virtHigherDensity may be set"),
		Entry("load-aware options on example", "example-profile", `{"profile":"example-profile","options":{"loadAware":{}}}`,
			"spec.options.loadAware", "options.loadAware can only be used with profile 'load-aware-rebalancing'"),
		Entry("density options on example", "example-profile", `{"profile":"example-profile","options":{"virtHigherDensity":{}}}`,
			"spec.options.virtHigherDensity", "options.virtHigherDensity can only be used with profile 'virt-higher-density'"),
	)

	It("accepts the boundary values", func() {
		Expect(createRaw("load-aware-rebalancing", `{"profile":"load-aware-rebalancing","waitTimeout":"1h30m","options":{"loadAware":{"deschedulingIntervalSeconds":86400,"mode":"Predictive","devDeviationThresholds":"High","evictionLimitTotal":1000,"evictionLimitNode":100}}}`)).To(Succeed())
		Expect(createRaw("virt-higher-density", `{"profile":"virt-higher-density","options":{"virtHigherDensity":{"enableSwap":false,"memoryToRequestRatio":120}}}`)).To(Succeed())
	})

	It("rejects a profile change on update", func() {
		createConfig(newConfig("example-profile"))
		_, err := advisor.AdvisorV1alpha1().VirtPlatformConfigs().Patch(suiteCtx, "example-profile", types.MergePatchType,
			[]byte(`{"spec":{"profile":"virt-higher-density"}}`), metav1.PatchOptions{})
		expectInvalid(err, "spec.profile", "Profile is immutable")
	})
})
