package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/util/retry"

	"github.com/kubevirt/virt-advisor/pkg/apis/advisor/v1alpha1"
	applyv1alpha1 "github.com/kubevirt/virt-advisor/pkg/generated/applyconfiguration/advisor/v1alpha1"
)

var _ = Describe("the advisor.kubevirt.io API through the aggregator", func() {
	It("is registered, Available and discoverable with its subresources", func() {
		out, err := kubectl("get", "apiservice", "v1alpha1.advisor.kubevirt.io",
			"-o", `jsonpath={.status.conditions[?(@.type=="Available")].status}`)
		Expect(err).NotTo(HaveOccurred(), out)
		Expect(out).To(Equal("True"))

		out, err = kubectl("api-resources", "--api-group=advisor.kubevirt.io", "--no-headers", "--sort-by=name")
		Expect(err).NotTo(HaveOccurred(), out)
		var rows [][]string
		for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
			rows = append(rows, strings.Fields(line))
		}
		// NAME SHORTNAMES APIVERSION NAMESPACED KIND
		Expect(rows).To(Equal([][]string{
			{"approvalpolicies", "ap", "advisor.kubevirt.io/v1alpha1", "false", "ApprovalPolicy"},
			{"maintenancewindows", "mw", "advisor.kubevirt.io/v1alpha1", "false", "MaintenanceWindow"},
			{"virtplatformconfigs", "vpc", "advisor.kubevirt.io/v1alpha1", "false", "VirtPlatformConfig"},
		}))

		list, err := kube.Discovery().ServerResourcesForGroupVersion("advisor.kubevirt.io/v1alpha1")
		Expect(err).NotTo(HaveOccurred())
		verbs := map[string][]string{}
		for _, r := range list.APIResources {
			verbs[r.Name] = r.Verbs
			Expect(r.Namespaced).To(BeFalse(), r.Name)
		}
		Expect(verbs["virtplatformconfigs"]).To(ConsistOf("create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"))
		Expect(verbs["virtplatformconfigs/status"]).To(ConsistOf("get", "patch", "update"))
		Expect(verbs["virtplatformconfigs/plan"]).To(ConsistOf("get"))
		Expect(verbs["virtplatformconfigs/revert"]).To(ConsistOf("get"))
		Expect(verbs["virtplatformconfigs/approve"]).To(ConsistOf("create"))
		Expect(verbs["virtplatformconfigs/abort"]).To(ConsistOf("create"))
		// Status is computed on read: no status subresource to write.
		Expect(verbs["maintenancewindows"]).To(ConsistOf("create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"))
		// Its status too (covered configs, last approved and refused); its
		// author is taken from the request that set it.
		Expect(verbs["approvalpolicies"]).To(ConsistOf("create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"))
		Expect(verbs).To(HaveLen(8))
	})

	It("applies the defaults", func() {
		c := createConfig(newConfig("load-aware-rebalancing"))
		Expect(c.Spec.Action).To(Equal(v1alpha1.PlanActionDryRun))
		Expect(c.Spec.FailurePolicy).To(Equal(v1alpha1.FailurePolicyAbort))
		Expect(c.Generation).To(Equal(int64(1)))

		patch := `{"spec":{"options":{"loadAware":{}}}}`
		c, err := advisor.AdvisorV1alpha1().VirtPlatformConfigs().Patch(suiteCtx, c.Name, types.MergePatchType, []byte(patch), metav1.PatchOptions{})
		Expect(err).NotTo(HaveOccurred())
		la := c.Spec.Options.LoadAware
		Expect(*la.DeschedulingIntervalSeconds).To(Equal(int32(60)))
		Expect(la.Mode).To(Equal("Automatic"))
		Expect(*la.EnablePSIMetrics).To(BeTrue())
		Expect(la.DevDeviationThresholds).To(Equal("AsymmetricLow"))
		Expect(la.EvictionLimitTotal).To(BeNil(), "eviction limits are derived from the HCO, not defaulted")
		Expect(c.Generation).To(Equal(int64(2)))

		createConfig(newConfig("virt-higher-density"))
		d := updateConfig("virt-higher-density", func(d *v1alpha1.VirtPlatformConfig) {
			d.Spec.Options = &v1alpha1.ProfileOptions{VirtHigherDensity: &v1alpha1.VirtHigherDensityConfig{KSMConfiguration: &v1alpha1.KSMConfiguration{}}}
		})
		vhd := d.Spec.Options.VirtHigherDensity
		Expect(*vhd.EnableSwap).To(BeTrue())
		Expect(*vhd.MemoryToRequestRatio).To(Equal(int32(150)))
		Expect(*vhd.KSMConfiguration.Enabled).To(BeTrue())
	})

	It("supports create, get, list, watch, update, patch and delete", func() {
		configs := advisor.AdvisorV1alpha1().VirtPlatformConfigs()
		deleteConfig("example-profile")
		w, err := configs.Watch(suiteCtx, metav1.ListOptions{FieldSelector: "metadata.name=example-profile"})
		Expect(err).NotTo(HaveOccurred())
		defer w.Stop()

		c := createConfig(newConfig("example-profile"))
		Eventually(w.ResultChan()).WithTimeout(5 * time.Second).Should(Receive(HaveField("Type", watch.Added)))

		got, err := configs.Get(suiteCtx, "example-profile", metav1.GetOptions{})
		Expect(err).NotTo(HaveOccurred())
		Expect(got.UID).To(Equal(c.UID))

		list, err := configs.List(suiteCtx, metav1.ListOptions{})
		Expect(err).NotTo(HaveOccurred())
		Expect(list.Items).To(ContainElement(HaveField("Name", "example-profile")))

		// The controller writes status meanwhile: retry on conflict, as clients do.
		Expect(retry.RetryOnConflict(retry.DefaultRetry, func() error {
			latest, err := configs.Get(suiteCtx, "example-profile", metav1.GetOptions{})
			if err != nil {
				return err
			}
			latest.Spec.Action = v1alpha1.PlanActionIgnore
			got, err = configs.Update(suiteCtx, latest, metav1.UpdateOptions{})
			return err
		})).To(Succeed())
		Expect(got.Spec.Action).To(Equal(v1alpha1.PlanActionIgnore))
		Eventually(w.ResultChan()).WithTimeout(5 * time.Second).Should(Receive(HaveField("Type", watch.Modified)))

		got, err = configs.Patch(suiteCtx, "example-profile", types.MergePatchType, []byte(`{"spec":{"failurePolicy":"Continue"}}`), metav1.PatchOptions{})
		Expect(err).NotTo(HaveOccurred())
		Expect(got.Spec.FailurePolicy).To(Equal(v1alpha1.FailurePolicyContinue))

		got, err = configs.Patch(suiteCtx, "example-profile", types.JSONPatchType, []byte(`[{"op":"replace","path":"/spec/waitTimeout","value":"10m"}]`), metav1.PatchOptions{})
		Expect(err).NotTo(HaveOccurred())
		Expect(got.Spec.WaitTimeout).To(Equal("10m"))

		// Compiled-in types support strategic merge patch too.
		got, err = configs.Patch(suiteCtx, "example-profile", types.StrategicMergePatchType, []byte(`{"spec":{"bypassOptimisticLock":true}}`), metav1.PatchOptions{})
		Expect(err).NotTo(HaveOccurred())
		Expect(got.Spec.BypassOptimisticLock).To(BeTrue())

		Expect(configs.Delete(suiteCtx, "example-profile", metav1.DeleteOptions{})).To(Succeed())
		Eventually(w.ResultChan()).WithTimeout(5 * time.Second).Should(Receive(HaveField("Type", watch.Deleted)))
	})

	It("supports server-side apply with managedFields and conflicts", func() {
		configs := advisor.AdvisorV1alpha1().VirtPlatformConfigs()
		deleteConfig("example-profile")
		DeferCleanup(deleteConfig, "example-profile")

		cfg := applyv1alpha1.VirtPlatformConfig("example-profile").
			WithSpec(applyv1alpha1.VirtPlatformConfigSpec().WithProfile("example-profile").WithAction(v1alpha1.PlanActionIgnore))
		got, err := configs.Apply(suiteCtx, cfg, metav1.ApplyOptions{FieldManager: "alice-tool"})
		Expect(err).NotTo(HaveOccurred())
		Expect(got.Spec.Action).To(Equal(v1alpha1.PlanActionIgnore))
		Expect(got.ManagedFields).To(ContainElement(And(
			HaveField("Manager", "alice-tool"), HaveField("Operation", metav1.ManagedFieldsOperationApply))))
		owned := got.ManagedFields[0].FieldsV1.GetRawString()
		Expect(owned).To(ContainSubstring(`"f:action"`))
		Expect(owned).To(ContainSubstring(`"f:profile"`))

		// Another manager changing the same field conflicts unless forced.
		other := applyv1alpha1.VirtPlatformConfig("example-profile").
			WithSpec(applyv1alpha1.VirtPlatformConfigSpec().WithProfile("example-profile").WithAction(v1alpha1.PlanActionDryRun))
		_, err = configs.Apply(suiteCtx, other, metav1.ApplyOptions{FieldManager: "bob-tool"})
		Expect(apierrors.IsConflict(err)).To(BeTrue(), "%v", err)
		got, err = configs.Apply(suiteCtx, other, metav1.ApplyOptions{FieldManager: "bob-tool", Force: true})
		Expect(err).NotTo(HaveOccurred())
		Expect(got.Spec.Action).To(Equal(v1alpha1.PlanActionDryRun))

		// kubectl apply --server-side records its own manager.
		out, err := kubectlApply(`{"apiVersion":"advisor.kubevirt.io/v1alpha1","kind":"VirtPlatformConfig","metadata":{"name":"example-profile"},"spec":{"profile":"example-profile","action":"DryRun","waitTimeout":"5m"}}`,
			"--server-side", "--force-conflicts")
		Expect(err).NotTo(HaveOccurred(), out)
		got, err = configs.Get(suiteCtx, "example-profile", metav1.GetOptions{})
		Expect(err).NotTo(HaveOccurred())
		Expect(got.Spec.WaitTimeout).To(Equal("5m"))
		Expect(got.ManagedFields).To(ContainElement(HaveField("Manager", "kubectl")))
	})

	It("prints NAME ACTION IMPACT PHASE AGE, and PROFILE MESSAGE with -o wide", func() {
		createConfig(newConfig("example-profile"))
		out, err := kubectl("get", "virtplatformconfigs")
		Expect(err).NotTo(HaveOccurred(), out)
		header := strings.Fields(strings.SplitN(out, "\n", 2)[0])
		Expect(header).To(Equal([]string{"NAME", "ACTION", "IMPACT", "PHASE", "AGE"}))
		Expect(out).To(MatchRegexp(`(?m)^example-profile\s+DryRun\s+`))

		out, err = kubectl("get", "vpc", "example-profile", "-o", "wide")
		Expect(err).NotTo(HaveOccurred(), out)
		header = strings.Fields(strings.SplitN(out, "\n", 2)[0])
		Expect(header).To(Equal([]string{"NAME", "ACTION", "IMPACT", "PHASE", "AGE", "PROFILE", "MESSAGE"}))
	})

	It("selects configs by spec.profile, spec.action and status.phase (--field-selector), and names them when a field is unknown", func() {
		createConfig(newConfig("example-profile"))
		out, err := kubectl("get", "vpc", "--field-selector", "spec.profile=example-profile,spec.action=DryRun", "-o", "name")
		Expect(err).NotTo(HaveOccurred(), out)
		Expect(strings.TrimSpace(out)).To(Equal("virtplatformconfig.advisor.kubevirt.io/example-profile"))
		out, err = kubectl("get", "vpc", "--field-selector", "spec.action=Apply", "-o", "name")
		Expect(err).NotTo(HaveOccurred(), out)
		Expect(out).NotTo(ContainSubstring("example-profile"))
		Eventually(func() (string, error) {
			return kubectl("get", "vpc", "--field-selector", "status.phase=ReviewRequired", "-o", "name")
		}).WithTimeout(30*time.Second).WithPolling(200*time.Millisecond).Should(ContainSubstring("example-profile"),
			func() string { return describeStatus(getConfig("example-profile")) })

		_, err = advisor.AdvisorV1alpha1().VirtPlatformConfigs().List(suiteCtx, metav1.ListOptions{FieldSelector: "spec.failurePolicy=Abort"})
		Expect(apierrors.IsBadRequest(err)).To(BeTrue(), "an unknown field is a 400: %v", err)
		Expect(err.Error()).To(ContainSubstring(`"status.phase"`))
	})

	It("documents its fields for kubectl explain (OpenAPI v3)", func() {
		out := explain("virtplatformconfig.spec.options.virtHigherDensity")
		Expect(out).To(ContainSubstring("GROUP:      advisor.kubevirt.io"))
		Expect(out).To(ContainSubstring("memoryToRequestRatio"))
		Expect(strings.Join(strings.Fields(out), " ")).To(ContainSubstring("Values above 120 require enableSwap=true"))
		Expect(out).To(ContainSubstring("ksmConfiguration"))

		// OpenAPI v2 is served as well.
		raw, err := adminRaw.Get().AbsPath("/openapi/v2").DoRaw(suiteCtx)
		Expect(err).NotTo(HaveOccurred())
		Expect(string(raw)).To(ContainSubstring("io.kubevirt.advisor.v1alpha1.Plan"))
		Expect(string(raw)).To(ContainSubstring("io.kubevirt.advisor.v1alpha1.Approval"))
	})

	It("keeps status out of the main resource and spec out of /status", func() {
		configs := advisor.AdvisorV1alpha1().VirtPlatformConfigs()
		createConfig(func() *v1alpha1.VirtPlatformConfig {
			c := newConfig("example-profile")
			c.Spec.Action = v1alpha1.PlanActionIgnore
			return c
		}())
		waitPhase("example-profile", v1alpha1.PhaseIgnored, 10*time.Second)

		c := updateConfig("example-profile", func(c *v1alpha1.VirtPlatformConfig) {
			c.Status.Phase = v1alpha1.PhaseCompleted
			c.Spec.FailurePolicy = v1alpha1.FailurePolicyContinue
		})
		Expect(c.Status.Phase).To(Equal(v1alpha1.PhaseIgnored), "status written through the main resource must be ignored")
		Expect(c.Spec.FailurePolicy).To(Equal(v1alpha1.FailurePolicyContinue))

		// /status takes no writes, not even a cluster admin's: status is
		// the controller's (its items are what gets applied).
		var before *v1alpha1.VirtPlatformConfig
		Eventually(func() int64 {
			before = getConfig("example-profile")
			return before.Status.ObservedGeneration
		}).WithTimeout(10*time.Second).Should(Equal(c.Generation), "the controller saw the spec change")
		forged := before.DeepCopy()
		forged.Status.Phase = v1alpha1.PhaseDrafting
		forged.Status.Approval = &v1alpha1.ApprovalRecord{PlanHash: "forged", ApprovedBy: "mallory"}
		_, err := configs.UpdateStatus(suiteCtx, forged, metav1.UpdateOptions{})
		Expect(statusCode(err)).To(Equal(int32(403)), "%v", err)
		Expect(err.Error()).To(ContainSubstring("status is written only by the embedded controller"))
		_, err = configs.Patch(suiteCtx, c.Name, types.MergePatchType,
			[]byte(`{"spec":{"failurePolicy":"Abort"},"status":{"phase":"Pending"}}`), metav1.PatchOptions{}, "status")
		Expect(statusCode(err)).To(Equal(int32(403)), "%v", err)
		after := getConfig("example-profile")
		Expect(after.ResourceVersion).To(Equal(before.ResourceVersion), "nothing was written")
		Expect(after.Status.Phase).To(Equal(v1alpha1.PhaseIgnored))
	})

	It("bumps the generation and records the author only on spec changes", func() {
		configs := advisor.AdvisorV1alpha1().VirtPlatformConfigs()
		c := createConfig(newConfig("example-profile"))
		Expect(c.Status.SpecChangedBy).To(Equal("admin"))

		c, err := configs.Patch(suiteCtx, c.Name, types.MergePatchType, []byte(`{"metadata":{"labels":{"team":"virt"}}}`), metav1.PatchOptions{})
		Expect(err).NotTo(HaveOccurred())
		Expect(c.Generation).To(Equal(int64(1)), "a label change is not a spec change")

		c, err = configs.Patch(suiteCtx, c.Name, types.MergePatchType, []byte(`{"spec":{"bypassOptimisticLock":true}}`), metav1.PatchOptions{})
		Expect(err).NotTo(HaveOccurred())
		Expect(c.Generation).To(Equal(int64(2)))
		Expect(c.Spec.BypassOptimisticLock).To(BeTrue())
	})
})

// updateConfig reads, mutates and writes a config, retrying on conflicts
// with the controller's writes as clients do.
func updateConfig(name string, mutate func(*v1alpha1.VirtPlatformConfig)) *v1alpha1.VirtPlatformConfig {
	GinkgoHelper()
	configs := advisor.AdvisorV1alpha1().VirtPlatformConfigs()
	var out *v1alpha1.VirtPlatformConfig
	Expect(retry.RetryOnConflict(retry.DefaultRetry, func() error {
		c, err := configs.Get(suiteCtx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		mutate(c)
		out, err = configs.Update(suiteCtx, c, metav1.UpdateOptions{})
		return err
	})).To(Succeed())
	return out
}

// kubectlApply applies a manifest with kubectl apply -f.
func kubectlApply(manifest string, args ...string) (string, error) {
	var obj map[string]any
	Expect(json.Unmarshal([]byte(manifest), &obj)).To(Succeed())
	f := filepath.Join(GinkgoT().TempDir(), "manifest.json")
	Expect(os.WriteFile(f, []byte(manifest), 0o600)).To(Succeed())
	return kubectl(append([]string{"apply", "-f", f}, args...)...)
}
