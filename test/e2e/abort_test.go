package e2e

import (
	"time"

	"github.com/chromedp/chromedp"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

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

// psiRollingOut approves load-aware-rebalancing with step (a duration)
// per worker node and returns once the first node is updated and the
// second under way.
func psiRollingOut(step string) fakemco.Rollouts {
	GinkgoHelper()
	patchObject(mcpGVR, "", "worker", `{"metadata":{"annotations":{"`+fakemco.StepTimeAnnotation+`":"`+step+`"}}}`)
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
// finishes for a while (three node steps of 2 s).
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
		before := psiRollingOut("2s")
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
			ContainSubstring("written: enable-psi-metrics, enable-load-aware-descheduling"), ContainSubstring("stay paused")))
		Expect(eventReasons("load-aware-rebalancing")).To(ContainElement("Aborted"))
		Eventually(func() string { return itemMessage("load-aware-rebalancing", "enable-psi-metrics") }).WithTimeout(10 * time.Second).
			Should(ContainSubstring("is paused: the plan rolling out on it was aborted"))

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

	It("keeps the pool paused through an editor's spec change (a new draft) until an approver approves: the editor's approval is refused", func() {
		before := psiRollingOut("2s")
		atAbort := nodesUpdated(before)
		abortPlan("load-aware-rebalancing")
		expectHeldPaused(before, atAbort)
		aborted := getConfig("load-aware-rebalancing")

		By("an editor changes the spec: a new plan is drafted, the pool stays paused")
		editor, user, _ := userClient("virt-advisor-editor")
		_, err := editor.AdvisorV1alpha1().VirtPlatformConfigs().Patch(suiteCtx, "load-aware-rebalancing", types.MergePatchType,
			[]byte(`{"spec":{"failurePolicy":"Continue"}}`), metav1.PatchOptions{})
		Expect(err).NotTo(HaveOccurred(), "%s may change the spec", user)
		Eventually(func() int64 { return getConfig("load-aware-rebalancing").Status.ObservedGeneration }).WithTimeout(30*time.Second).
			Should(Equal(aborted.Generation+1), "the new spec is planned")
		expectHeldPaused(before, atAbort)
		c := waitPhase("load-aware-rebalancing", v1alpha1.PhaseReviewRequired, 30*time.Second)
		Expect(c.Status.Abort).NotTo(BeNil(), "the spec change keeps the abort")
		Expect(describeStatus(c)).To(SatisfyAll(ContainSubstring("99-worker-psi-karg stay paused"), ContainSubstring("approve")))

		By("the editor may not approve; the pool stays paused")
		_, err = editor.AdvisorV1alpha1().VirtPlatformConfigs().Approve(suiteCtx, "load-aware-rebalancing",
			&v1alpha1.Approval{Spec: v1alpha1.ApprovalSpec{PlanHash: planHashOf("load-aware-rebalancing")}}, metav1.CreateOptions{})
		Expect(statusCode(err)).To(Equal(int32(403)), "%v", err)
		Expect(getConfig("load-aware-rebalancing").Status.Abort).NotTo(BeNil())
		expectHeldPaused(before, atAbort)

		By("an approver's approval ends the pause: each node updated once")
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
		// 5 s per node: the plugin is asked twice before the rollout ends.
		before := psiRollingOut("5s")
		r := plugin("n\n", "abort", "load-aware-rebalancing")
		Expect(r.code).To(Equal(1), r.stderr)
		Expect(r.stdout).To(SatisfyAll(ContainSubstring("is being applied"), ContainSubstring("Abort plan "), ContainSubstring("Nothing aborted.")))
		Expect(getConfig("load-aware-rebalancing").Status.Phase).To(Equal(v1alpha1.PhaseInProgress))

		atAbort := nodesUpdated(before)
		r = plugin("y\n", "abort", "load-aware-rebalancing")
		Expect(r.code).To(Equal(0), r.stderr)
		Expect(r.stdout).To(MatchRegexp(`Plan [0-9a-f]{12} aborted by .* Written: enable-psi-metrics, enable-load-aware-descheduling; not written: none\. To go on: kubectl advisor approve load-aware-rebalancing`))
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

const abortReader = "abort-e2e-cluster-reader"

var _ = Describe("kubectl advisor dashboard: the abort button of the rollout page", Ordered, startFirst, func() {
	BeforeAll(func() {
		startBrowser()
		role := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: abortReader}, Rules: []rbacv1.PolicyRule{
			{APIGroups: []string{"machineconfiguration.openshift.io"}, Resources: []string{"machineconfigpools", "machineconfigs"}, Verbs: []string{"get", "list", "watch"}},
			{APIGroups: []string{""}, Resources: []string{"nodes", "events"}, Verbs: []string{"get", "list", "watch"}},
		}}
		_, err := kube.RbacV1().ClusterRoles().Create(suiteCtx, role, metav1.CreateOptions{})
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(func() { _ = kube.RbacV1().ClusterRoles().Delete(suiteCtx, abortReader, metav1.DeleteOptions{}) })
	})
	BeforeEach(resetCluster)
	AfterEach(func() {
		deleteConfig("load-aware-rebalancing")
		resetCluster()
	})

	It("shows a viewer no button; lets an approver abort after confirming, with the CSRF token; the page then says Aborted and what was written", func() {
		// 20 s per node: two browsers load their pages before the rollout
		// ends (at 10 s the rollout of three nodes ended first once, in
		// make test on four processes).
		before := psiRollingOut("20s")
		hash := getConfig("load-aware-rebalancing").Status.Approval.PlanHash
		rollout := "/configs/load-aware-rebalancing/rollout"

		By("a viewer sees why there is no button, and a forged form is refused")
		_, viewerConfig := dashboardUser("vera", "virt-advisor-viewer", abortReader)
		dv := startDashboard(viewerConfig)
		vtab := newTab()
		load(vtab, chromedp.Navigate(dv.url))
		load(vtab, chromedp.Navigate(dv.base+rollout))
		Expect(textOf(vtab, "#cannot-abort")).To(ContainSubstring("virt-advisor-approver"))
		resp := submitForm(vtab, "/configs/load-aware-rebalancing/abort", map[string]string{"csrf": csrfOf(vtab), "planHash": hash, "confirm": "yes"})
		Expect(resp.Status).To(BeEquivalentTo(403), pageText(vtab))
		Expect(getConfig("load-aware-rebalancing").Status.Phase).To(Equal(v1alpha1.PhaseInProgress), "nothing aborted")

		By("an approver: the button, the confirmation, then the abort")
		approver, kubeconfig := dashboardUser("abe", "virt-advisor-approver", abortReader)
		d := startDashboard(kubeconfig)
		tab := newTab()
		load(tab, chromedp.Navigate(d.url))
		load(tab, chromedp.Navigate(d.base+rollout))
		Expect(textOf(tab, "#abort")).To(Equal("Abort plan " + hash[:12]))
		resp = submitForm(tab, "/configs/load-aware-rebalancing/abort", map[string]string{"csrf": "forged", "planHash": hash, "confirm": "yes"})
		Expect(resp.Status).To(BeEquivalentTo(403), "a form without the page's CSRF token")
		Expect(getConfig("load-aware-rebalancing").Status.Phase).To(Equal(v1alpha1.PhaseInProgress), "nothing aborted")
		load(tab, chromedp.Navigate(d.base+rollout))
		clickTo(tab, "#abort")
		Expect(textOf(tab, "#confirm")).To(Equal("Yes, abort plan " + hash[:12]))
		Expect(getConfig("load-aware-rebalancing").Status.Phase).To(Equal(v1alpha1.PhaseInProgress), "nothing aborted before the confirmation")
		atAbort := nodesUpdated(before)
		resp = clickTo(tab, "#confirm")
		Expect(resp.URL).To(Equal(d.base + rollout + "?aborted=" + hash))
		expectHeldPaused(before, atAbort)
		c := getConfig("load-aware-rebalancing")
		Expect(c.Status.Phase).To(Equal(v1alpha1.PhaseAborted))
		Expect(c.Status.Abort.AbortedBy).To(Equal(approver))
		Expect(textOf(tab, "#flash")).To(ContainSubstring("Plan " + hash[:12] + " aborted by " + approver))
		waitFor(tab, `document.getElementById('phase').textContent.includes('Aborted')`, 30*time.Second)
		Expect(eval[bool](tab, `document.getElementById('abort') === null`)).To(BeTrue(), "no abort button once aborted")
		// The pool is held until an approver approves a plan, not until
		// the time its pause annotation says.
		held := "until an approver approves a plan of this config or the config is deleted (plan " + hash[:12] + " was aborted by " + approver + ")"
		waitFor(tab, `document.getElementById('pools').textContent.includes(`+jsString(held)+`)`, 30*time.Second)
		Expect(textOf(tab, "#items")).NotTo(ContainSubstring("is updating"), "an aborted item does not read as updating")
		Expect(textOf(tab, "#items")).To(ContainSubstring("enable-psi-metrics"))
		screenshot(tab, "aborted")

		By("an editor's spec change drafts a new plan: the page still says the pool is held by the abort, and how to release it")
		editor, _, _ := userClient("virt-advisor-editor")
		_, err := editor.AdvisorV1alpha1().VirtPlatformConfigs().Patch(suiteCtx, "load-aware-rebalancing", types.MergePatchType,
			[]byte(`{"spec":{"failurePolicy":"Continue"}}`), metav1.PatchOptions{})
		Expect(err).NotTo(HaveOccurred())
		waitPhase("load-aware-rebalancing", v1alpha1.PhaseReviewRequired, 30*time.Second)
		expectHeldPaused(before, atAbort)
		load(tab, chromedp.Navigate(d.base+rollout))
		Expect(textOf(tab, "#pools")).To(SatisfyAll(ContainSubstring(held), Not(MatchRegexp(`until \d{4}-\d{2}-\d{2}T`))), "no pause end in the past")
		Expect(textOf(tab, "#summary")).To(SatisfyAll(ContainSubstring("99-worker-psi-karg stay paused by virt-advisor"),
			ContainSubstring("To release them, review the plan and approve it")))
		Expect(textOf(tab, "#items")).NotTo(ContainSubstring("is updating"))
		screenshot(tab, "aborted-then-edited")
	})
})
