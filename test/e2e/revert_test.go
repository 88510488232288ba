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
	"github.com/kubevirt/virt-advisor/pkg/status"
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
