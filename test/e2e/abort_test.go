package e2e

import (
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubevirt/virt-advisor/pkg/apis/advisor/v1alpha1"
	"github.com/kubevirt/virt-advisor/test/env/fakemco"
)

// abortPlan aborts the approved plan of name as the admin.
func abortPlan(name string) *v1alpha1.Abort {
	GinkgoHelper()
	a, err := advisor.AdvisorV1alpha1().VirtPlatformConfigs().Abort(suiteCtx, name, &v1alpha1.Abort{}, metav1.CreateOptions{})
	Expect(err).NotTo(HaveOccurred())
	return a
}

// nodesUpdated is how many worker node updates the fake MCO finished since before.
func nodesUpdated(before fakemco.Rollouts) int {
	_, nodes := rolloutsSince(before)
	sum := 0
	for _, n := range nodes {
		sum += n
	}
	return sum
}

// psiRollingOut approves load-aware-rebalancing with 2 s per worker node
// and returns once the first node is updated and the second under way.
func psiRollingOut() fakemco.Rollouts {
	GinkgoHelper()
	patchObject(mcpGVR, "", "worker", `{"metadata":{"annotations":{"`+fakemco.StepTimeAnnotation+`":"2s"}}}`)
	configWith("load-aware-rebalancing", `{"profile":"load-aware-rebalancing"}`)
	waitPhase("load-aware-rebalancing", v1alpha1.PhaseReviewRequired, 20*time.Second)
	before := testEnv.FakeMCORollouts("worker")
	approvePlan("load-aware-rebalancing")
	Eventually(func() int { return nodesUpdated(before) }).WithTimeout(60*time.Second).WithPolling(20*time.Millisecond).
		Should(Equal(1), "the first node updated")
	return before
}

// expectHeldPaused checks that the worker pool is paused by us and that no
// node update beyond the one in flight when the abort was answered
// finishes for a while (three node steps).
func expectHeldPaused(before fakemco.Rollouts, atAbort int) {
	GinkgoHelper()
	paused, managers := pausedManagers(Default)
	Expect(paused).To(BeTrue(), "paused when the abort is answered")
	Expect(managers).To(ContainElement(ourManager))
	Consistently(func() int { return nodesUpdated(before) }).WithTimeout(6*time.Second).WithPolling(100*time.Millisecond).
		Should(BeNumerically("<=", atAbort+1), "only the node in flight at the abort finishes")
	Expect(nodesUpdated(before)).To(BeNumerically("<", 3), "the rollout did not complete")
}

var _ = Describe("aborting an approved plan", startFirst, func() {
	BeforeEach(resetCluster)
	AfterEach(func() {
		deleteConfig("load-aware-rebalancing")
		resetCluster()
	})

	It("stops a rollout of 3 nodes after the node in flight, says what was written, and a new approval resumes it: each node updated once", func() {
		before := psiRollingOut()
		atAbort := nodesUpdated(before)
		a := abortPlan("load-aware-rebalancing")
		Expect(a.Status.AbortedBy).NotTo(BeEmpty())
		Expect(a.Status.Written).To(ContainElement("enable-psi-metrics"))
		Expect(a.Status.NotWritten).To(BeEmpty(), "every item was written before the MachineConfig rolled out")
		expectHeldPaused(before, atAbort)

		c := getConfig("load-aware-rebalancing")
		Expect(c.Status.Phase).To(Equal(v1alpha1.PhaseAborted), describeStatus(c))
		expectOnePhaseTrue(c)
		Expect(c.Status.Abort).NotTo(BeNil())
		Expect(c.Status.Abort.Written).To(ConsistOf("enable-load-aware-descheduling", "enable-psi-metrics"))
		Expect(describeStatus(c)).To(SatisfyAll(ContainSubstring("was aborted by"),
			ContainSubstring("written: enable-load-aware-descheduling, enable-psi-metrics"), ContainSubstring("stay paused")))
		Expect(eventReasons("load-aware-rebalancing")).To(ContainElement("Aborted"))

		By("a second abort is a conflict that says what to do")
		_, err := advisor.AdvisorV1alpha1().VirtPlatformConfigs().Abort(suiteCtx, "load-aware-rebalancing", &v1alpha1.Abort{}, metav1.CreateOptions{})
		Expect(statusCode(err)).To(Equal(int32(409)), "%v", err)
		Expect(err.Error()).To(SatisfyAll(ContainSubstring("already aborted"), ContainSubstring("approve it")))

		By("the next plan starts from what is live; approving it ends the pause")
		p := getPlan("load-aware-rebalancing")
		for _, it := range p.Status.Items {
			Expect(it.Operation).To(Equal(v1alpha1.OperationNone), "%s was written before the abort", it.Name)
		}
		approvePlan("load-aware-rebalancing")
		waitPhase("load-aware-rebalancing", v1alpha1.PhaseCompleted, 90*time.Second)
		Expect(getConfig("load-aware-rebalancing").Status.Abort).To(BeNil())
		waitPoolSettled("00-worker", "99-worker-psi-karg")
		n, nodes := rolloutsSince(before)
		Expect(n).To(Equal(1), "one rollout, paused and resumed")
		Expect(nodes).To(Equal([]int{1, 1, 1}), "each worker node updated exactly once")
		expectUnpausedByUs()
	})

	It("refuses an editor and a viewer with 403 and changes nothing; an approver aborting a plan not being applied gets a 409", func() {
		configWith("load-aware-rebalancing", `{"profile":"load-aware-rebalancing"}`)
		waitPhase("load-aware-rebalancing", v1alpha1.PhaseReviewRequired, 20*time.Second)
		before := getConfig("load-aware-rebalancing")
		for _, role := range []string{"virt-advisor-editor", "virt-advisor-viewer"} {
			c, user, _ := userClient(role)
			_, err := c.AdvisorV1alpha1().VirtPlatformConfigs().Abort(suiteCtx, "load-aware-rebalancing", &v1alpha1.Abort{}, metav1.CreateOptions{})
			Expect(statusCode(err)).To(Equal(int32(403)), "%s (%s): %v", user, role, err)
			Expect(err.Error()).To(ContainSubstring("virtplatformconfigs/abort"))
		}
		c, _, _ := userClient("virt-advisor-approver")
		_, err := c.AdvisorV1alpha1().VirtPlatformConfigs().Abort(suiteCtx, "load-aware-rebalancing", &v1alpha1.Abort{}, metav1.CreateOptions{})
		Expect(statusCode(err)).To(Equal(int32(409)), "%v", err)
		Expect(err.Error()).To(ContainSubstring("no approved plan is being applied (phase ReviewRequired)"))
		after := getConfig("load-aware-rebalancing")
		Expect(after.ResourceVersion).To(Equal(before.ResourceVersion), "nothing written")
		Expect(after.Status.Abort).To(BeNil())
	})

	It("aborts with the plugin after asking; deleting the aborted config ends the pause", func() {
		before := psiRollingOut()
		r := plugin("n\n", "abort", "load-aware-rebalancing")
		Expect(r.code).To(Equal(1), r.stderr)
		Expect(r.stdout).To(SatisfyAll(ContainSubstring("is being applied"), ContainSubstring("Abort plan "), ContainSubstring("Nothing aborted.")))
		Expect(getConfig("load-aware-rebalancing").Status.Phase).To(Equal(v1alpha1.PhaseInProgress))

		atAbort := nodesUpdated(before)
		r = plugin("y\n", "abort", "load-aware-rebalancing")
		Expect(r.code).To(Equal(0), r.stderr)
		Expect(r.stdout).To(MatchRegexp(`Plan [0-9a-f]{12} aborted by .* Written: enable-load-aware-descheduling, enable-psi-metrics; not written: none\. To go on: kubectl advisor approve load-aware-rebalancing`))
		expectHeldPaused(before, atAbort)
		Expect(getConfig("load-aware-rebalancing").Status.Phase).To(Equal(v1alpha1.PhaseAborted))

		r = plugin("", "abort", "--yes", "load-aware-rebalancing")
		Expect(r.code).To(Equal(2))
		Expect(r.stderr).To(ContainSubstring("nothing to abort"))

		By("deleting the config ends the pause")
		deleteConfig("load-aware-rebalancing")
		expectUnpausedByUs()
		waitPoolSettled("00-worker", "99-worker-psi-karg")
	})
})
