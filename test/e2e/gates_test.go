package e2e

import (
	"fmt"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubevirt/virt-advisor/pkg/apis/advisor/v1alpha1"
	"github.com/kubevirt/virt-advisor/pkg/hardware"
	"github.com/kubevirt/virt-advisor/pkg/machineconfig"
	"github.com/kubevirt/virt-advisor/test/env/fakemco"
)

// Stepped rollouts (docs/operations.md, "Gates between node reboots"):
// virt-advisor lets a pool's rollout through one MCO step at a time and
// asks the gates between two steps. The fake MCO rolls the pool over its
// Nodes as the MCO does (desired/current config, state, maxUnavailable),
// and leaves a node NotReady after its reboot when told to.
var _ = Describe("gates between node reboots", func() {
	const (
		pp     = "pci-passthrough"
		mcName = "50-e2e-gates-virt-advisor-pci-passthrough"
		pool   = "e2e-gates"
	)
	// steppedPCI rolls pci-passthrough out on a pool of three Intel nodes
	// the fake MCO steps, 1 s per node, with the gates of spec.
	steppedPCI := func(gates string) []string {
		GinkgoHelper()
		nodes := addSteppingPool(pool, 3, 1)
		for _, n := range nodes {
			setNodeLabel(n, hardware.VendorLabel, "GenuineIntel")
		}
		DeferCleanup(func() { _ = dyn().Resource(mcGVR).Delete(suiteCtx, mcName, metav1.DeleteOptions{}) })
		configWith(pp, fmt.Sprintf(`{"profile":"pci-passthrough","options":{"pciPassthrough":{"pool":%q}},"rollout":{"gates":%s}}`, pool, gates))
		waitPhase(pp, v1alpha1.PhaseReviewRequired, 30*time.Second)
		p := getPlan(pp)
		Expect(p.Status.Settings.Gates).NotTo(BeNil(), "the plan names the gates in force")
		return nodes
	}

	It("holds the next node while one is not back, goes on by itself when it comes back in time, each node updated once", func() {
		nodes := steppedPCI(`{"nodeReadyTimeout":"5m"}`)
		Expect(getPlan(pp).Status.Settings.Gates.NodeReadyTimeout).To(Equal("5m0s"))
		setNodeAnnotation(nodes[1], fakemco.NotReadyAfterRebootAnnotation, "true")
		before := testEnv.FakeMCORollouts(pool)
		approvePlan(pp)

		By("the second node stays NotReady: the third is not targeted, the pool stays paused, the config names the node")
		rendered := waitNodeUpdated(nodes[1])
		Eventually(func(g Gomega) {
			g.Expect(nodeReady(nodes[1])).To(BeFalse())
			g.Expect(poolPaused(pool)).To(BeTrue())
			g.Expect(describeStatus(getConfig(pp))).To(ContainSubstring(nodes[1]))
		}).WithTimeout(20 * time.Second).Should(Succeed())
		Consistently(func() string { return getNode(nodes[2]).Annotations[fakemco.DesiredConfigAnnotation] }).
			WithTimeout(4*time.Second).WithPolling(200*time.Millisecond).ShouldNot(Equal(rendered), "no further node is targeted")

		By("it comes back within nodeReadyTimeout: the rollout goes on by itself")
		setNodeAnnotation(nodes[1], fakemco.NotReadyAfterRebootAnnotation, "")
		waitPhase(pp, v1alpha1.PhaseCompleted, 60*time.Second)
		expectEachNodeOnce(pool, before, len(nodes))
		Expect(poolPaused(pool)).To(BeFalse(), "the stepping pause ends with the rollout")
		Expect(getObject(mcpGVR, "", pool).GetAnnotations()).NotTo(HaveKey(machineconfig.StepAnnotation))
	})

	It("halts past nodeReadyTimeout, and only an approver's approval resumes it, not an editor's spec change", func() {
		nodes := steppedPCI(`{"nodeReadyTimeout":"30s"}`)
		setNodeAnnotation(nodes[0], fakemco.NotReadyAfterRebootAnnotation, "true")
		before := testEnv.FakeMCORollouts(pool)
		approvePlan(pp)
		rendered := waitNodeUpdated(nodes[0])

		By("the first node is not back within 30s: halted, the config says which gate, on which node")
		var halted *v1alpha1.VirtPlatformConfig
		Eventually(func(g Gomega) {
			halted = getConfig(pp)
			g.Expect(describeStatus(halted)).To(SatisfyAll(ContainSubstring("halted"), ContainSubstring("gate nodeBack"), ContainSubstring(nodes[0])))
		}).WithTimeout(60 * time.Second).WithPolling(500 * time.Millisecond).Should(Succeed())
		h := machineconfig.ReadHalt(getObject(mcpGVR, "", pool))
		Expect(h).NotTo(BeNil())
		Expect(h.Gate).To(Equal("nodeBack"))
		Expect(h.Node).To(Equal(nodes[0]))
		Expect(poolPaused(pool)).To(BeTrue())
		Eventually(func() []string { return eventMessages(pool, "RolloutHalted") }).WithTimeout(10 * time.Second).
			Should(ContainElement(ContainSubstring(nodes[0])), "an Event on the pool says why")

		By("the node comes back: the halt holds (a person decides)")
		setNodeAnnotation(nodes[0], fakemco.NotReadyAfterRebootAnnotation, "")
		Eventually(func() bool { return nodeReady(nodes[0]) }).WithTimeout(20 * time.Second).Should(BeTrue())
		expectHalted(pool, nodes, rendered)

		By("an editor's spec change drafts a new plan: the halt holds, no policy, no editor approval ends it")
		editor, user, _ := userClient("virt-advisor-editor")
		_, err := editor.AdvisorV1alpha1().VirtPlatformConfigs().Patch(suiteCtx, pp, types.MergePatchType,
			[]byte(`{"spec":{"failurePolicy":"Continue"}}`), metav1.PatchOptions{})
		Expect(err).NotTo(HaveOccurred(), "%s may change the spec", user)
		Eventually(func() int64 { return getConfig(pp).Status.ObservedGeneration }).WithTimeout(30*time.Second).
			Should(Equal(halted.Generation+1), "the new spec is planned")
		_, err = editor.AdvisorV1alpha1().VirtPlatformConfigs().Approve(suiteCtx, pp,
			&v1alpha1.Approval{Spec: v1alpha1.ApprovalSpec{PlanHash: planHashOf(pp)}}, metav1.CreateOptions{})
		Expect(statusCode(err)).To(Equal(int32(403)), "%v", err)
		expectHalted(pool, nodes, rendered)

		By("an approver approves the live plan: the rollout resumes from what is written, each node updated once")
		approvePlan(pp)
		Eventually(func(g Gomega) {
			for _, n := range nodes {
				g.Expect(getNode(n).Annotations[fakemco.CurrentConfigAnnotation]).To(Equal(rendered), n)
			}
		}).WithTimeout(60 * time.Second).Should(Succeed())
		waitPhase(pp, v1alpha1.PhaseCompleted, 60*time.Second)
		expectEachNodeOnce(pool, before, len(nodes))
		Expect(getObject(mcpGVR, "", pool).GetAnnotations()).NotTo(HaveKey(machineconfig.HaltAnnotation))
		Eventually(func() []string { return eventMessages(pool, "RolloutResumed") }).WithTimeout(10 * time.Second).ShouldNot(BeEmpty())
	})
})

// waitNodeUpdated waits until the MCO targets node with a new rendered
// config, and returns it.
func waitNodeUpdated(node string) string {
	GinkgoHelper()
	var rendered string
	Eventually(func(g Gomega) {
		a := getNode(node).Annotations
		g.Expect(a[fakemco.DesiredConfigAnnotation]).To(ContainSubstring("rendered-"))
		g.Expect(a[fakemco.CurrentConfigAnnotation]).To(Equal(a[fakemco.DesiredConfigAnnotation]))
		g.Expect(a[fakemco.StateAnnotation]).To(Equal(fakemco.StateDone))
		rendered = a[fakemco.CurrentConfigAnnotation]
		g.Expect(strings.Contains(rendered, "rendered-")).To(BeTrue())
		g.Expect(rendered).To(Equal(poolSpecName("e2e-gates")))
	}).WithTimeout(60 * time.Second).WithPolling(100 * time.Millisecond).Should(Succeed())
	return rendered
}

// expectHalted: the pool stays paused and halted, and no node but those
// already on rendered is targeted.
func expectHalted(pool string, nodes []string, rendered string) {
	GinkgoHelper()
	Consistently(func(g Gomega) {
		p := getObject(mcpGVR, "", pool)
		g.Expect(p.GetAnnotations()).To(HaveKey(machineconfig.HaltAnnotation))
		paused, _, _ := unstructured.NestedBool(p.Object, "spec", "paused")
		g.Expect(paused).To(BeTrue())
		g.Expect(getNode(nodes[2]).Annotations[fakemco.DesiredConfigAnnotation]).NotTo(Equal(rendered))
	}).WithTimeout(4 * time.Second).WithPolling(250 * time.Millisecond).Should(Succeed())
}

func poolPaused(pool string) bool {
	GinkgoHelper()
	paused, _, _ := unstructured.NestedBool(getObject(mcpGVR, "", pool).Object, "spec", "paused")
	return paused
}

// expectEachNodeOnce: since before, one rollout of pool, each of its n
// nodes updated exactly once.
func expectEachNodeOnce(pool string, before fakemco.Rollouts, n int) {
	GinkgoHelper()
	now := testEnv.FakeMCORollouts(pool)
	updates := make([]int, n)
	for i := range updates {
		updates[i] = now.NodeUpdates[i]
		if i < len(before.NodeUpdates) {
			updates[i] -= before.NodeUpdates[i]
		}
	}
	want := make([]int, n)
	for i := range want {
		want[i] = 1
	}
	Expect(updates).To(Equal(want), "each node updated exactly once")
}

// setNodeLabel sets a label on a Node.
func setNodeLabel(node, key, value string) {
	GinkgoHelper()
	_, err := kube.CoreV1().Nodes().Patch(suiteCtx, node, types.MergePatchType,
		[]byte(fmt.Sprintf(`{"metadata":{"labels":{%q:%q}}}`, key, value)), metav1.PatchOptions{})
	Expect(err).NotTo(HaveOccurred())
}
