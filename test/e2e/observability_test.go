package e2e

import (
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/kubevirt/virt-advisor/pkg/apis/advisor/v1alpha1"
)

// advisorDirect talks to virt-advisor-apiserver itself, not through the
// aggregator, as the admin (its client certificate is trusted by the
// delegated authentication).
func advisorDirect() rest.Interface {
	GinkgoHelper()
	cfg := rest.CopyConfig(testEnv.AdminConfig)
	cfg.Host = testEnv.Advisor().URL
	cfg.TLSClientConfig.CAData, cfg.TLSClientConfig.CAFile = nil, testEnv.ServingCAFile
	c, err := kubernetes.NewForConfig(cfg)
	Expect(err).NotTo(HaveOccurred())
	return c.CoreV1().RESTClient()
}

var _ = Describe("observability", func() {
	AfterEach(resetCluster)

	It("serves health checks and virt_advisor_* metrics", func() {
		direct := advisorDirect()
		for _, path := range []string{"/healthz", "/livez", "/readyz"} {
			raw, err := direct.Get().AbsPath(path).DoRaw(suiteCtx)
			Expect(err).NotTo(HaveOccurred(), path)
			Expect(string(raw)).To(Equal("ok"), path)
		}

		configWith("example-profile", `{"profile":"example-profile","action":"Apply"}`)
		waitPhase("example-profile", v1alpha1.PhaseCompleted, 15*time.Second)
		_ = getPlan("example-profile")

		var metrics string
		Eventually(func() string {
			raw, err := direct.Get().AbsPath("/metrics").DoRaw(suiteCtx)
			Expect(err).NotTo(HaveOccurred())
			metrics = string(raw)
			return metrics
		}).WithTimeout(10 * time.Second).Should(ContainSubstring(`virt_advisor_configs{phase="Completed",profile="example-profile"} 1`))
		Expect(metrics).To(MatchRegexp(`(?m)^virt_advisor_approvals_total [1-9]`))
		Expect(metrics).To(ContainSubstring(`virt_advisor_plan_duration_seconds_count{profile="example-profile"}`))
		Expect(metrics).To(ContainSubstring(`virt_advisor_apply_duration_seconds_count{profile="example-profile"}`))
		Expect(metrics).To(ContainSubstring("virt_advisor_drift_detections_total"))
		Expect(metrics).To(ContainSubstring("virt_advisor_drift_detection_seconds"))
	})
})
