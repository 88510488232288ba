package e2e

import (
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/kubevirt/virt-advisor/pkg/apis/advisor/v1alpha1"
	"github.com/kubevirt/virt-advisor/pkg/failpoint"
	"github.com/kubevirt/virt-advisor/pkg/profiles/dedicatedcpus"
	"github.com/kubevirt/virt-advisor/pkg/status"
	"github.com/kubevirt/virt-advisor/test/names"
)

const (
	hdName           = "virt-higher-density"
	revertHCOItem    = "revert-hyperconverged-kubevirt-hyperconverged"
	revertSwapItem   = "revert-machineconfig-90-worker-kubelet-swap"
	overcommitPath   = "spec.higherWorkloadDensity.memoryOvercommitPercentage"
	revertRolloutMax = 2 * time.Minute
)

// machineConfigSpecs are the MachineConfigs of the cluster, by name, their
// spec fields; the rendered ones are the MachineConfig operator's output
// (it keeps old ones), not what anyone wrote.
func machineConfigSpecs() map[string]interface{} {
	GinkgoHelper()
	list, err := dyn().Resource(mcGVR).List(suiteCtx, metav1.ListOptions{})
	Expect(err).NotTo(HaveOccurred())
	out := map[string]interface{}{}
	for _, mc := range list.Items {
		if strings.HasPrefix(mc.GetName(), "rendered-") {
			continue
		}
		out[mc.GetName()] = runtime.DeepCopyJSONValue(mc.Object["spec"])
	}
	return out
}

func hcoSpec() interface{} {
	GinkgoHelper()
	return runtime.DeepCopyJSONValue(getObject(hcoGVR, hcoNS, hcoName).Object["spec"])
}

// applyHigherDensity approves the virt-higher-density plan and waits until
// it is Completed, its swap MachineConfig rolled out.
func applyHigherDensity() {
	GinkgoHelper()
	configWith(hdName, `{"profile":"virt-higher-density","action":"DryRun"}`)
	waitPhase(hdName, v1alpha1.PhaseReviewRequired, 30*time.Second)
	_, err := advisor.AdvisorV1alpha1().VirtPlatformConfigs().Approve(suiteCtx, hdName,
		&v1alpha1.Approval{Spec: v1alpha1.ApprovalSpec{PlanHash: planHashOf(hdName)}}, metav1.CreateOptions{})
	Expect(err).NotTo(HaveOccurred())
	waitPhase(hdName, v1alpha1.PhaseCompleted, revertRolloutMax)
	waitPoolSettled("00-worker", "90-worker-kubelet-swap")
}

func revertPlan() *v1alpha1.Plan {
	GinkgoHelper()
	p, err := advisor.AdvisorV1alpha1().VirtPlatformConfigs().GetRevertPlan(suiteCtx, hdName, metav1.GetOptions{})
	Expect(err).NotTo(HaveOccurred())
	return p
}

// expectReverted waits for the revert to be written and checks the config
// manages nothing any more.
func expectReverted() *v1alpha1.VirtPlatformConfig {
	GinkgoHelper()
	c := waitPhase(hdName, v1alpha1.PhaseIgnored, revertRolloutMax)
	cond := meta.FindStatusCondition(c.Status.Conditions, string(v1alpha1.PhaseIgnored))
	Expect(cond).NotTo(BeNil())
	Expect(cond.Reason).To(Equal("Reverted"))
	Expect(status.PhaseMessage(&c.Status)).To(ContainSubstring("nothing is managed"))
	Expect(c.Status.Approval.Revert).To(BeTrue())
	Expect(c.Status.Replaced).To(BeEmpty(), "nothing left to revert")
	Expect(c.Status.AppliedItems).To(BeEmpty(), "nothing managed: no drift measured")
	for _, it := range c.Status.Items {
		Expect(it.State).To(Equal(v1alpha1.ItemStateCompleted), it.Name)
	}
	waitPoolSettled("00-worker")
	Consistently(func() v1alpha1.ConfigPhase { return getConfig(hdName).Status.Phase }).WithTimeout(2*time.Second).
		Should(Equal(v1alpha1.PhaseIgnored), "a written revert rests until the spec changes")
	return c
}

var _ = Describe("revert", Ordered, func() {
	var hcoBefore, mcsBefore interface{}
	BeforeEach(func() {
		resetCluster()
		// A value set before virt-advisor, by someone else.
		replaceSpec(hcoGVR, hcoNS, hcoName, map[string]interface{}{"higherWorkloadDensity": map[string]interface{}{"memoryOvercommitPercentage": int64(100)}})
		hcoBefore, mcsBefore = hcoSpec(), machineConfigSpecs()
		applyHigherDensity()
	})
	AfterEach(resetCluster)

	It("restores virt-higher-density after Completed: the swap MachineConfig deleted (worker reboots), the HCO's overcommit back", func() {
		c := getConfig(hdName)
		Expect(c.Status.Replaced).To(HaveLen(2), "the HCO written over and the MachineConfig created: %+v", c.Status.Replaced)

		p := revertPlan()
		Expect(p.Status.PlanHash).NotTo(Equal(planHashOf(hdName)))
		Expect(p.Status.Items).To(HaveLen(2))
		Expect(p.Status.Items[0].Name).To(Equal(revertHCOItem), "settings are restored before the objects backing them go")
		hcoItem := planItem(p, revertHCOItem)
		Expect(hcoItem.Operation).To(Equal(v1alpha1.OperationUpdate))
		Expect(hcoItem.Diff).To(ContainSubstring("-    memoryOvercommitPercentage: 150"))
		Expect(hcoItem.Diff).To(ContainSubstring("+    memoryOvercommitPercentage: 100"))
		swap := planItem(p, revertSwapItem)
		Expect(swap.Operation).To(Equal(v1alpha1.OperationDelete))
		Expect(swap.ImpactSeverity).To(Equal(v1alpha1.ImpactHigh))
		Expect(swap.Reboots).To(ContainElement(HaveField("Pool", "worker")), "the reboot note: the worker pool rolls the removal")
		Expect(p.Status.Warnings).To(BeEmpty())

		_, err := advisor.AdvisorV1alpha1().VirtPlatformConfigs().Approve(suiteCtx, hdName,
			&v1alpha1.Approval{Spec: v1alpha1.ApprovalSpec{PlanHash: p.Status.PlanHash}}, metav1.CreateOptions{})
		Expect(err).NotTo(HaveOccurred())
		expectReverted()

		Expect(hcoSpec()).To(Equal(hcoBefore), "the HCO's spec as before the first approval")
		Expect(machineConfigSpecs()).To(Equal(mcsBefore), "the MachineConfigs as before the first approval")
		_, err = advisor.AdvisorV1alpha1().VirtPlatformConfigs().GetRevertPlan(suiteCtx, hdName, metav1.GetOptions{})
		Expect(statusCode(err)).To(Equal(int32(409)), "nothing left to revert: %v", err)
		Expect(err.Error()).To(ContainSubstring("there is nothing to revert"))
	})

	It("reports a field someone else changed since as a conflict and leaves it alone", func() {
		patchObject(hcoGVR, hcoNS, hcoName, `{"spec":{"higherWorkloadDensity":{"memoryOvercommitPercentage":130}}}`)
		var p *v1alpha1.Plan
		Eventually(func(g Gomega) {
			p = revertPlan()
			g.Expect(p.Status.Warnings).To(ContainElement(And(ContainSubstring("conflict: "+overcommitPath),
				ContainSubstring("virt-advisor wrote 150, it is now 130"), ContainSubstring("the revert leaves it alone"))))
		}).WithTimeout(30 * time.Second).Should(Succeed())
		hcoItem := planItem(p, revertHCOItem)
		Expect(hcoItem.Diff).NotTo(MatchRegexp(`(?m)^[-+]\s+memoryOvercommitPercentage`), "the conflict is not written")
		Expect(hcoItem.Diff).To(ContainSubstring("-  ksmConfiguration:"), "the field virt-advisor added and nobody changed is removed")

		_, err := advisor.AdvisorV1alpha1().VirtPlatformConfigs().Approve(suiteCtx, hdName,
			&v1alpha1.Approval{Spec: v1alpha1.ApprovalSpec{PlanHash: p.Status.PlanHash}}, metav1.CreateOptions{})
		Expect(err).NotTo(HaveOccurred())
		expectReverted()
		want := runtime.DeepCopyJSONValue(hcoBefore).(map[string]interface{})
		Expect(unstructured.SetNestedField(want, int64(130), "higherWorkloadDensity", "memoryOvercommitPercentage")).To(Succeed())
		Expect(hcoSpec()).To(Equal(want), "someone else's value left alone, ours removed")
		Expect(machineConfigSpecs()).To(Equal(mcsBefore))
	})

	It("kubectl advisor revert shows the revert plan, asks, and approves it with --yes", func() {
		r := plugin("n\n", "revert", hdName, "--no-color")
		Expect(r.code).To(Equal(1), r.stdout+r.stderr)
		Expect(r.stdout).To(ContainSubstring(revertSwapItem))
		Expect(r.stdout).To(ContainSubstring(revertHCOItem))
		Expect(r.stdout).To(MatchRegexp(`Approve revert plan [0-9a-f]{12}\? \[y/N\] Nothing approved\.`))
		Expect(getConfig(hdName).Status.Approval.Revert).To(BeFalse(), "nothing approved")

		r = plugin("", "revert", hdName, "--no-color", "--yes")
		Expect(r.code).To(Equal(0), r.stdout+r.stderr)
		Expect(r.stdout).To(MatchRegexp(`Revert plan [0-9a-f]{12} approved by admin`))
		expectReverted()
		Expect(hcoSpec()).To(Equal(hcoBefore))
		Expect(machineConfigSpecs()).To(Equal(mcsBefore))
	})

	It("refuses the approval of a revert plan to an editor and a viewer (403), writing nothing", func() {
		hash := revertPlan().Status.PlanHash
		before := getConfig(hdName)
		for _, role := range []string{"virt-advisor-editor", "virt-advisor-viewer"} {
			c, _, _ := userClient(role)
			_, err := c.AdvisorV1alpha1().VirtPlatformConfigs().Approve(suiteCtx, hdName,
				&v1alpha1.Approval{Spec: v1alpha1.ApprovalSpec{PlanHash: hash}}, metav1.CreateOptions{})
			Expect(statusCode(err)).To(Equal(int32(403)), "%s: %v", role, err)
		}
		editor, _, _ := userClient("virt-advisor-editor")
		p, err := editor.AdvisorV1alpha1().VirtPlatformConfigs().GetRevertPlan(suiteCtx, hdName, metav1.GetOptions{})
		Expect(err).NotTo(HaveOccurred(), "an editor reviews the revert as it reviews plans")
		Expect(p.Status.PlanHash).To(Equal(hash))
		viewer, _, _ := userClient("virt-advisor-viewer")
		_, err = viewer.AdvisorV1alpha1().VirtPlatformConfigs().GetRevertPlan(suiteCtx, hdName, metav1.GetOptions{})
		Expect(statusCode(err)).To(Equal(int32(403)), "a viewer does not see plans: %v", err)

		Consistently(func(g Gomega) {
			c := getConfig(hdName)
			g.Expect(c.Status.Phase).To(Equal(v1alpha1.PhaseCompleted))
			g.Expect(c.Status.Approval).To(Equal(before.Status.Approval))
			g.Expect(c.Status.Replaced).To(Equal(before.Status.Replaced))
		}).WithTimeout(2 * time.Second).Should(Succeed())
		Expect(machineConfigSpecs()).To(HaveKey("90-worker-kubelet-swap"), "nothing reverted")
	})
})

// kubeletConfigNames are the KubeletConfigs of the cluster.
func kubeletConfigNames() []string {
	GinkgoHelper()
	list, err := dyn().Resource(names.KubeletConfigs).List(suiteCtx, metav1.ListOptions{})
	Expect(err).NotTo(HaveOccurred())
	var out []string
	for _, kc := range list.Items {
		out = append(out, kc.GetName())
	}
	return out
}

// targetSpecs are what an administrator set before virt-advisor, on the
// objects the profiles write over: the KubeDescheduler's and the
// HyperConverged's spec, and the example ConfigMap's data (nil: none).
func targetSpecs() map[string]interface{} {
	GinkgoHelper()
	out := map[string]interface{}{
		"KubeDescheduler": runtime.DeepCopyJSONValue(getObject(kdGVR, kdNS, "cluster").Object["spec"]),
		"HyperConverged":  hcoSpec(),
	}
	if cm := exampleConfigMap(); cm != nil {
		out["ConfigMap"] = runtime.DeepCopyJSONValue(cm.Object["data"])
	}
	return out
}

// revertToEarlier approves the revert plan of config, which has no item
// error nor conflict, and waits until it is written and the pools rolled
// it out.
func revertToEarlier(config string) {
	GinkgoHelper()
	p, err := advisor.AdvisorV1alpha1().VirtPlatformConfigs().GetRevertPlan(suiteCtx, config, metav1.GetOptions{})
	Expect(err).NotTo(HaveOccurred())
	for _, it := range p.Status.Items {
		GinkgoWriter.Printf("revert item %s: %s %s %s\n%s\n", it.Name, it.Operation, it.Message, it.Error, it.Diff)
		Expect(it.Error).To(BeEmpty(), "%s: the shipped admission policy admits the revert's dry-run", it.Name)
		Expect(it.Operation).To(BeElementOf(v1alpha1.OperationUpdate, v1alpha1.OperationDelete), it.Name)
	}
	Expect(p.Status.Warnings).To(BeEmpty(), "no conflict: nobody changed what virt-advisor wrote")
	_, err = advisor.AdvisorV1alpha1().VirtPlatformConfigs().Approve(suiteCtx, config,
		&v1alpha1.Approval{Spec: v1alpha1.ApprovalSpec{PlanHash: p.Status.PlanHash}}, metav1.CreateOptions{})
	Expect(err).NotTo(HaveOccurred())
	c := waitPhase(config, v1alpha1.PhaseIgnored, revertRolloutMax)
	Expect(meta.FindStatusCondition(c.Status.Conditions, string(v1alpha1.PhaseIgnored)).Reason).To(Equal("Reverted"), status.PhaseMessage(&c.Status))
	Expect(c.Status.Replaced).To(BeEmpty())
	for _, it := range c.Status.Items {
		Expect(it.State).To(Equal(v1alpha1.ItemStateCompleted), "%s: %s", it.Name, it.Message)
	}
}

// Every shipped profile, approved over an administrator's earlier values
// (where it writes over an object) and reverted with the shipped
// admission policy installed: the objects written over are as the
// administrator left them, and what the profile created is gone.
var _ = Describe("revert: every shipped profile, with the shipped admission policy", func() {
	BeforeEach(resetCluster)
	AfterEach(resetCluster)

	administratorsKubeDescheduler := func() {
		replaceSpec(kdGVR, kdNS, "cluster", map[string]interface{}{
			"managementState": "Managed", "deschedulingIntervalSeconds": int64(3600), "mode": "Predictive",
			"profiles":              []interface{}{"AffinityAndTaints", "LifecycleAndUtilization"},
			"profileCustomizations": map[string]interface{}{"devLowNodeUtilizationThresholds": "High", "devEnableSoftTainter": false},
		})
	}
	for _, tc := range []struct {
		profile, spec string
		// earlier sets what an administrator had before, and what the
		// profile needs (pools, nodes); settled are the worker pool's
		// MachineConfigs once the profile is applied.
		earlier func()
		settled []string
	}{
		{profile: "load-aware-rebalancing", spec: `{"profile":"load-aware-rebalancing"}`,
			earlier: administratorsKubeDescheduler, settled: []string{"00-worker", "99-worker-psi-karg"}},
		{profile: "virt-higher-density", spec: `{"profile":"virt-higher-density"}`,
			earlier: func() {
				replaceSpec(hcoGVR, hcoNS, hcoName, map[string]interface{}{
					"higherWorkloadDensity": map[string]interface{}{"memoryOvercommitPercentage": int64(120)},
					"ksmConfiguration":      map[string]interface{}{"nodeLabelSelector": map[string]interface{}{"matchLabels": map[string]interface{}{"ksm": "admin"}}},
				})
			}, settled: []string{"00-worker", "90-worker-kubelet-swap"}},
		{profile: "live-migration-limits", spec: `{"profile":"live-migration-limits"}`,
			earlier: func() {
				withWorkerNodes() // the limits are derived from the nodes that receive migrations
				replaceSpec(hcoGVR, hcoNS, hcoName, map[string]interface{}{"liveMigrationConfig": map[string]interface{}{
					"bandwidthPerMigration": "1Gi", "completionTimeoutPerGiB": int64(800), "parallelMigrationsPerCluster": int64(20),
					"parallelOutboundMigrationsPerNode": int64(4), "progressTimeout": int64(150)}})
			}},
		{profile: "example-profile", spec: `{"profile":"example-profile"}`, earlier: func() {}},
		{profile: "hugepages", spec: `{"profile":"hugepages","options":{"hugepages":{"pool":"e2e-rv-hp","pageSize":"1G","memoryPercent":50}}}`,
			earlier: func() {
				addPool("e2e-rv-hp", roleSelector("e2e-rv-hp"), nodeRole("e2e-rv-hp"), 2, 300*time.Millisecond, "00-e2e-rv-hp")
				addNodes("e2e-rv-hp", "64Gi", "", "e2e-rv-hp-0", "e2e-rv-hp-1")
				DeferCleanup(func() {
					_ = dyn().Resource(mcGVR).Delete(suiteCtx, "50-e2e-rv-hp-virt-advisor-hugepages", metav1.DeleteOptions{})
				})
			}},
		{profile: "pci-passthrough", spec: `{"profile":"pci-passthrough","options":{"pciPassthrough":{"pool":"e2e-rv-pci"}}}`,
			earlier: func() {
				addPool("e2e-rv-pci", roleSelector("e2e-rv-pci"), nodeRole("e2e-rv-pci"), 2, 300*time.Millisecond, "00-e2e-rv-pci")
				addNodes("e2e-rv-pci", "", "GenuineIntel", "e2e-rv-pci-0", "e2e-rv-pci-1")
				DeferCleanup(func() {
					_ = dyn().Resource(mcGVR).Delete(suiteCtx, "50-e2e-rv-pci-virt-advisor-pci-passthrough", metav1.DeleteOptions{})
				})
			}},
		{profile: dedicatedcpus.Name, spec: dcSpec, earlier: cnvWorld},
	} {
		It("reverts "+tc.profile+" to the administrator's earlier state", func() {
			expectShippedPolicy()
			tc.earlier()
			before, mcs, kcs := targetSpecs(), machineConfigSpecs(), kubeletConfigNames()

			configWith(tc.profile, tc.spec)
			waitPhase(tc.profile, v1alpha1.PhaseReviewRequired, 60*time.Second)
			approvePlan(tc.profile)
			c := waitPhase(tc.profile, v1alpha1.PhaseCompleted, revertRolloutMax)
			Expect(c.Status.Replaced).NotTo(BeEmpty())
			if tc.settled != nil {
				waitPoolSettled(tc.settled...)
			}
			Expect([]interface{}{targetSpecs(), machineConfigSpecs(), kubeletConfigNames()}).NotTo(Equal([]interface{}{before, mcs, kcs}),
				"the profile wrote something to revert")

			revertToEarlier(tc.profile)
			Eventually(machineConfigSpecs).WithTimeout(revertRolloutMax).Should(Equal(mcs), "the MachineConfigs as before the approval")
			Expect(kubeletConfigNames()).To(Equal(kcs), "the KubeletConfigs as before the approval")
			Expect(targetSpecs()).To(Equal(before), "the objects written over as the administrator left them")
			if tc.settled != nil {
				waitPoolSettled("00-worker")
			}
		})
	}
})

// An object virt-advisor created, deleted by hand and created again by a
// later approval is recorded under both UIDs; its revert has one item,
// for the object there now, and is approved and written.
var _ = Describe("revert: an object created again", func() {
	BeforeEach(resetCluster)
	AfterEach(resetCluster)

	It("lists the ConfigMap example-profile created twice once, and deletes the one there now", func() {
		const config = "example-profile"
		configWith(config, `{"profile":"example-profile"}`)
		waitPhase(config, v1alpha1.PhaseReviewRequired, 30*time.Second)
		approvePlan(config)
		waitPhase(config, v1alpha1.PhaseCompleted, 30*time.Second)
		first := exampleConfigMap()
		Expect(dyn().Resource(configMapGVR).Namespace(hcoNS).Delete(suiteCtx, "example-config", metav1.DeleteOptions{})).To(Succeed())
		waitPhase(config, v1alpha1.PhaseDrifted, 30*time.Second)
		approvePlan(config)
		waitPhase(config, v1alpha1.PhaseCompleted, 30*time.Second)
		second := exampleConfigMap()
		Expect(second.GetUID()).NotTo(Equal(first.GetUID()))
		Expect(getConfig(config).Status.Replaced).To(HaveLen(2), "recorded under both UIDs")

		p, err := advisor.AdvisorV1alpha1().VirtPlatformConfigs().GetRevertPlan(suiteCtx, config, metav1.GetOptions{})
		Expect(err).NotTo(HaveOccurred())
		Expect(p.Status.Items).To(HaveLen(1), "one item per target: %+v", p.Status.Items)
		Expect(p.Status.Items[0].Name).To(Equal("revert-configmap-example-config"))
		Expect(p.Status.Items[0].Operation).To(Equal(v1alpha1.OperationDelete))
		_, err = advisor.AdvisorV1alpha1().VirtPlatformConfigs().Approve(suiteCtx, config,
			&v1alpha1.Approval{Spec: v1alpha1.ApprovalSpec{PlanHash: p.Status.PlanHash}}, metav1.CreateOptions{})
		Expect(err).NotTo(HaveOccurred())
		c := waitPhase(config, v1alpha1.PhaseIgnored, 30*time.Second)
		Expect(c.Status.Replaced).To(BeEmpty())
		Expect(exampleConfigMap()).To(BeNil(), "the one there now is deleted")
	})
})

// A crash right after the write over an administrator's HyperConverged,
// before the status records it: what the write replaced was stored
// before it, so the revert still restores the administrator's values.
var _ = Describe("revert: after a crash between a write and its record", startFirst, func() {
	BeforeEach(resetCluster)
	AfterEach(resetCluster)

	It("restores the administrator's migration limits the write replaced", func() {
		const config = "live-migration-limits"
		withWorkerNodes()
		replaceSpec(hcoGVR, hcoNS, hcoName, map[string]interface{}{"liveMigrationConfig": map[string]interface{}{
			"bandwidthPerMigration": "1Gi", "completionTimeoutPerGiB": int64(800), "parallelMigrationsPerCluster": int64(20),
			"parallelOutboundMigrationsPerNode": int64(4), "progressTimeout": int64(150)}})
		before := hcoSpec()
		configWith(config, `{"profile":"live-migration-limits"}`)
		waitPhase(config, v1alpha1.PhaseReviewRequired, 30*time.Second)
		Expect(testEnv.RestartAdvisorWith(suiteCtx, []string{failpoint.EnvVar + "=after-write"}, nil)).To(Succeed())
		DeferCleanup(func() { _ = testEnv.RestartAdvisorWith(suiteCtx, nil, nil) })
		approvePlan(config)
		Eventually(testEnv.Advisor().Exited).WithTimeout(30*time.Second).Should(BeTrue(), "killed by the failpoint after the write")
		Expect(hcoSpec()).NotTo(Equal(before), "the write was made before the crash")

		Expect(testEnv.RestartAdvisorWith(suiteCtx, nil, nil)).To(Succeed())
		c := waitPhase(config, v1alpha1.PhaseCompleted, 60*time.Second)
		Expect(c.Status.Replaced).To(HaveLen(1), "the record stored before the write, completed by the retry")
		revertToEarlier(config)
		Expect(hcoSpec()).To(Equal(before), "the administrator's values, as before the write")
	})
})
