package e2e

import (
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/kubevirt/virt-advisor/pkg/apis/advisor/v1alpha1"
)

// The optional kernel tunings of virt-higher-density: KSM zero pages and
// THP madvise, each a MachineConfig of the worker pool.
var _ = Describe("virt-higher-density: KSM zero pages and THP madvise", Ordered, func() {
	BeforeEach(resetCluster)
	AfterEach(resetCluster)

	const tuned = `{"profile":"virt-higher-density","options":{"virtHigherDensity":{"enableSwap":false,"memoryToRequestRatio":100,` +
		`"ksmConfiguration":{"enabled":true,"useZeroPages":true},"thpMadvise":true}}}`

	It("plans both MachineConfigs with their reboots, applies them once approved and reports their drift", func() {
		configWith("virt-higher-density", tuned)
		p := reviewedPlan("virt-higher-density")
		ksm := planItem(p, "enable-ksm-zero-pages")
		Expect(ksm.Error).To(BeEmpty())
		Expect(ksm.Operation).To(Equal(v1alpha1.OperationCreate))
		Expect(ksm.ImpactSeverity).To(Equal(v1alpha1.ImpactHigh))
		Expect(ksm.Message).To(HavePrefix("MachineConfig '90-worker-ksm-zero-pages' will be configured to enable KSM zero pages (use_zero_pages) on the worker nodes"))
		Expect(ksm.Message).To(ContainSubstring("; reboots: pool worker, 3 nodes, once"))
		Expect(ksm.Reboots).To(ContainElement(HaveField("Pool", "worker")))
		Expect(ksm.Diff).To(HavePrefix("--- /dev/null\n+++ 90-worker-ksm-zero-pages (MachineConfig)\n"))
		Expect(ksm.Diff).To(ContainSubstring(`echo 1 > /sys/kernel/mm/ksm/use_zero_pages`))
		Expect(ksm.Diff).To(ContainSubstring("kubevirt-ksm-zero-pages.service"))

		thp := planItem(p, "enable-thp-madvise")
		Expect(thp.Error).To(BeEmpty())
		Expect(thp.Operation).To(Equal(v1alpha1.OperationCreate))
		Expect(thp.Message).To(ContainSubstring("; reboots: pool worker, 3 nodes, once"))
		Expect(thp.Diff).To(ContainSubstring("+  - transparent_hugepage=madvise\n"))
		Expect(nested(desired(thp), "spec", "kernelArguments")).To(Equal([]interface{}{"transparent_hugepage=madvise"}))

		hco := planItem(p, "configure-higher-density")
		Expect(hco.Message).To(HavePrefix("HyperConverged 'kubevirt-hyperconverged' (hco.kubevirt.io/v1beta1) will be configured with memoryOvercommitPercentage=100 and KSM enabled"))

		approvePlan("virt-higher-density")
		c := waitPhase("virt-higher-density", v1alpha1.PhaseCompleted, 120*time.Second)
		for _, name := range []string{"enable-ksm-zero-pages", "enable-thp-madvise"} {
			Expect(item(c, name).State).To(Equal(v1alpha1.ItemStateCompleted), name)
		}
		ksmMC := getObject(mcGVR, "", "90-worker-ksm-zero-pages")
		Expect(ksmMC).NotTo(BeNil())
		Expect(ksmMC.GetLabels()).To(HaveKeyWithValue("advisor.kubevirt.io/managed-by", "virt-higher-density"))
		Expect(ksmMC.GetLabels()).To(HaveKeyWithValue("machineconfiguration.openshift.io/role", "worker"))
		thpMC := getObject(mcGVR, "", "90-worker-thp-madvise")
		Expect(nested(thpMC.Object, "spec", "kernelArguments")).To(Equal([]interface{}{"transparent_hugepage=madvise"}))
		Expect(getObject(hcoGVR, hcoNS, hcoName).Object).To(HaveKeyWithValue("spec", HaveKey("ksmConfiguration")))

		By("an administrator's edit of the THP kernel argument is drift")
		patchObject(mcGVR, "", "90-worker-thp-madvise", `{"spec":{"kernelArguments":["transparent_hugepage=always"]}}`)
		c = waitPhase("virt-higher-density", v1alpha1.PhaseDrifted, 10*time.Second)
		Expect(condition(c, "Drifted").Reason).To(Equal("DriftDetected"))
		Expect(item(c, "enable-thp-madvise").Message).To(ContainSubstring("spec.kernelArguments"))
		drifted := planItem(getPlan("virt-higher-density"), "enable-thp-madvise")
		Expect(drifted.Operation).To(Equal(v1alpha1.OperationUpdate))
		Expect(drifted.Diff).To(ContainSubstring("-  - transparent_hugepage=always\n+  - transparent_hugepage=madvise\n"))
	})

	It("deletes only the MachineConfig of a tuning turned off", func() {
		configWith("virt-higher-density", tuned)
		reviewedPlan("virt-higher-density")
		approvePlan("virt-higher-density")
		waitPhase("virt-higher-density", v1alpha1.PhaseCompleted, 120*time.Second)

		configWith("virt-higher-density", `{"profile":"virt-higher-density","options":{"virtHigherDensity":{"enableSwap":false,"memoryToRequestRatio":100,"thpMadvise":true}}}`)
		p := reviewedPlan("virt-higher-density")
		off := planItem(p, "enable-ksm-zero-pages")
		Expect(off.Operation).To(Equal(v1alpha1.OperationDelete))
		Expect(off.Message).To(HavePrefix("MachineConfig '90-worker-ksm-zero-pages' will be removed: KSM zero pages (use_zero_pages) is disabled"))
		Expect(planItem(p, "enable-thp-madvise").Operation).To(Equal(v1alpha1.OperationNone))
		approvePlan("virt-higher-density")
		waitPhase("virt-higher-density", v1alpha1.PhaseCompleted, 120*time.Second)
		Expect(getObject(mcGVR, "", "90-worker-ksm-zero-pages")).To(BeNil())
		Expect(getObject(mcGVR, "", "90-worker-thp-madvise")).NotTo(BeNil())
	})

	It("refuses KSM zero pages without KSM with 422 naming the field, and writes nothing", func() {
		from := auditOffset()
		err := createRaw("virt-higher-density", `{"profile":"virt-higher-density","options":{"virtHigherDensity":{"ksmConfiguration":{"enabled":false,"useZeroPages":true}}}}`)
		expectInvalid(err, "spec.options.virtHigherDensity.ksmConfiguration.useZeroPages", "useZeroPages requires ksmConfiguration.enabled: true")
		Expect(getObject(mcGVR, "", "90-worker-ksm-zero-pages")).To(BeNil())
		Expect(advisorWritesSince(from)).To(BeEmpty(), "a refused config writes nothing")
	})

	It("plans nothing new for an existing configuration without the options", func() {
		configWith("virt-higher-density", `{"profile":"virt-higher-density"}`)
		p := reviewedPlan("virt-higher-density")
		for _, it := range p.Status.Items {
			Expect(it.Name).NotTo(BeElementOf("enable-ksm-zero-pages", "enable-thp-madvise"), "no MachineConfig of theirs exists: nothing to delete")
		}
	})
})

// The descheduler's migration cooldowns, sent only to an operator level
// whose KubeDescheduler CRD has them.
var _ = Describe("load-aware-rebalancing: descheduler migration cooldowns", Ordered, func() {
	BeforeEach(resetCluster)
	AfterEach(resetCluster)
	AfterAll(func() { installDeschedulerLevel("5.3.3") })

	const cooldowns = `{"profile":"load-aware-rebalancing","options":{"loadAware":{"enablePSIMetrics":false,` +
		`"devMigrationCooldown":"30m","devMaxMigrationCooldown":"240m","devMigrationHistoryWindow":"24h"}}}`

	It("sends them to a level that has the fields and applies them", func() {
		installDeschedulerLevel("5.3.3")
		configWith("load-aware-rebalancing", cooldowns)
		var kd v1alpha1.PlanItem
		Eventually(func(g Gomega) {
			kd = planItem(getPlan("load-aware-rebalancing"), "enable-load-aware-descheduling")
			g.Expect(kd.Error).To(BeEmpty(), "the dry-run must be accepted by the level's CRD")
			g.Expect(nested(desired(kd), "spec", "profileCustomizations")).To(And(
				HaveKeyWithValue("devMigrationCooldown", "30m0s"),
				HaveKeyWithValue("devMaxMigrationCooldown", "4h0m0s"),
				HaveKeyWithValue("devMigrationHistoryWindow", "24h0m0s")))
		}).WithTimeout(30 * time.Second).WithPolling(time.Second).Should(Succeed())
		Expect(kd.Message).NotTo(ContainSubstring("devMigration"))
		Expect(kd.Diff).To(ContainSubstring("+    devMigrationCooldown: 30m0s\n"))

		approvePlan("load-aware-rebalancing")
		waitPhase("load-aware-rebalancing", v1alpha1.PhaseCompleted, 60*time.Second)
		live := getObject(kdGVR, kdNS, "cluster")
		Expect(nested(live.Object, "spec", "profileCustomizations", "devMaxMigrationCooldown")).To(Equal("4h0m0s"))
		Expect(nested(live.Object, "spec", "profileCustomizations", "devMigrationHistoryWindow")).To(Equal("24h0m0s"))
	})

	It("drops them on a level without the fields and names each in the message", func() {
		installDeschedulerLevel("5.2.x")
		configWith("load-aware-rebalancing", cooldowns)
		var kd v1alpha1.PlanItem
		Eventually(func(g Gomega) {
			kd = planItem(getPlan("load-aware-rebalancing"), "enable-load-aware-descheduling")
			g.Expect(kd.Error).To(BeEmpty(), "the dry-run must be accepted by the level's CRD")
			g.Expect(nested(desired(kd), "spec", "profiles")).To(Equal([]interface{}{"AffinityAndTaints", "DevKubeVirtRelieveAndMigrate"}))
		}).WithTimeout(30 * time.Second).WithPolling(time.Second).Should(Succeed())
		custom := nested(desired(kd), "spec", "profileCustomizations").(map[string]interface{})
		Expect(custom).NotTo(HaveKey("devMigrationCooldown"))
		Expect(custom).NotTo(HaveKey("devMaxMigrationCooldown"))
		Expect(custom).NotTo(HaveKey("devMigrationHistoryWindow"))
		for _, note := range []string{"devMigrationCooldown 30m", "devMaxMigrationCooldown 240m", "devMigrationHistoryWindow 24h"} {
			Expect(kd.Message).To(ContainSubstring(note + " is not supported by the installed operator (descheduler operator 5.4.0 and later) and is not set"))
		}
		approvePlan("load-aware-rebalancing")
		waitPhase("load-aware-rebalancing", v1alpha1.PhaseCompleted, 60*time.Second)
		Expect(nested(getObject(kdGVR, kdNS, "cluster").Object, "spec", "profileCustomizations")).NotTo(HaveKey("devMigrationCooldown"))
	})

	DescribeTable("refuses cooldowns that are not durations, out of range or inconsistent with 422 and the field path",
		func(options, fieldPath, message string) {
			err := createRaw("load-aware-rebalancing", `{"profile":"load-aware-rebalancing","options":{"loadAware":`+options+`}}`)
			expectInvalid(err, fieldPath, message)
		},
		Entry("not a duration", `{"devMigrationCooldown":"soon"}`, "spec.options.loadAware.devMigrationCooldown", "must be a duration such as 30m or 2h"),
		Entry("too long", `{"devMigrationCooldown":"25h"}`, "spec.options.loadAware.devMigrationCooldown", "must be between 1m0s and 24h0m0s, inclusive"),
		Entry("maximum below the cooldown", `{"devMigrationCooldown":"2h","devMaxMigrationCooldown":"1h"}`,
			"spec.options.loadAware.devMaxMigrationCooldown", "must be at least devMigrationCooldown (2h0m0s)"),
		Entry("window below 6 maximum cooldowns", `{"devMaxMigrationCooldown":"9h"}`,
			"spec.options.loadAware.devMaxMigrationCooldown", "devMigrationHistoryWindow (48h0m0s) must be at least 6 x devMaxMigrationCooldown (9h0m0s)"),
	)
})
