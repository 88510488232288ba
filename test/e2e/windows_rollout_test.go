package e2e

import (
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/kubevirt/virt-advisor/pkg/apis/advisor/v1alpha1"
	"github.com/kubevirt/virt-advisor/test/env/fakemco"
)

// workerWindow is a window of the worker pool.
func workerWindow(name, schedule string, d time.Duration, kind v1alpha1.MaintenanceWindowKind) *v1alpha1.MaintenanceWindow {
	w := newWindow(name, schedule, d, "")
	w.Spec.PoolNames = []string{"worker"}
	w.Spec.Kind = kind
	return w
}

// untilSecond waits until the wall clock is within [from, to) seconds of
// a minute.
func untilSecond(from, to int) {
	GinkgoHelper()
	for s := time.Now().Second(); s < from || s >= to; s = time.Now().Second() {
		time.Sleep(200 * time.Millisecond)
	}
}

// The suite's coalescing window (3 s) is much shorter than these windows
// (20 s of every minute): the coalescing pause happens inside them.
var _ = Describe("rollouts in maintenance windows", startFirst, func() {
	BeforeEach(resetCluster)
	AfterEach(resetCluster)

	It("writes nothing until the window opens, pauses the rollout when it closes and completes it over the next openings, each node updated once", func() {
		// 10 s per node: three nodes take longer than one 20 s window.
		patchObject(mcpGVR, "", "worker", `{"metadata":{"annotations":{"`+fakemco.StepTimeAnnotation+`":"10s"}}}`)
		createWindow(workerWindow("e2e-every-minute", "* * * * *", 20*time.Second, v1alpha1.MaintenanceWindowKindAllow))
		configWith("load-aware-rebalancing", `{"profile":"load-aware-rebalancing"}`)
		waitPhase("load-aware-rebalancing", v1alpha1.PhaseReviewRequired, 20*time.Second)
		untilSecond(25, 45) // the window is closed
		Expect(planItem(getPlan("load-aware-rebalancing"), "enable-psi-metrics").Message).To(
			ContainSubstring("maintenance windows: pool 'worker': window 'e2e-every-minute' opens"), "the plan says when it is written")
		before := testEnv.FakeMCORollouts("worker")

		approvePlan("load-aware-rebalancing")
		Eventually(func() string { return itemMessage("load-aware-rebalancing", "enable-psi-metrics") }).WithTimeout(10 * time.Second).
			Should(MatchRegexp(`^Waiting: MachineConfigPool 'worker': window 'e2e-every-minute' opens .*; the change is written when it opens$`))
		w := item(getConfig("load-aware-rebalancing"), "enable-psi-metrics").MaintenanceWindow
		Expect(w).NotTo(BeNil())
		Expect(w.Name).To(Equal("e2e-every-minute"))
		Expect(w.RolloutPaused).To(BeFalse())
		Consistently(func() interface{} { return getObject(mcGVR, "", "99-worker-psi-karg") }).
			WithTimeout(time.Duration(58-time.Now().Second())*time.Second).WithPolling(500*time.Millisecond).
			Should(BeNil(), "nothing is written while the window is closed")

		Eventually(func() interface{} { return getObject(mcGVR, "", "99-worker-psi-karg") }).WithTimeout(15*time.Second).
			ShouldNot(BeNil(), "written when the window opens")

		// The window closes mid-rollout: the pool is paused by us, the
		// nodes updated so far stay updated.
		Eventually(func(g Gomega) {
			it := item(getConfig("load-aware-rebalancing"), "enable-psi-metrics")
			g.Expect(it.Message).To(MatchRegexp(`MachineConfigPool 'worker': maintenance window closed: [12] of 3 nodes updated; resumes .* \(window 'e2e-every-minute'\)`))
			g.Expect(it.MaintenanceWindow).NotTo(BeNil())
			g.Expect(it.MaintenanceWindow.RolloutPaused).To(BeTrue())
			g.Expect(it.WindowPauses).To(BeNumerically(">=", 1))
			paused, managers := pausedManagers(g)
			g.Expect(paused).To(BeTrue())
			g.Expect(managers).To(ContainElement(ourManager))
			pool, err := get(mcpGVR, "", "worker")
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(pool.GetAnnotations()).To(HaveKeyWithValue("advisor.kubevirt.io/paused-for-window", "e2e-every-minute"))
		}).WithTimeout(40 * time.Second).WithPolling(500 * time.Millisecond).Should(Succeed())

		c := waitPhase("load-aware-rebalancing", v1alpha1.PhaseCompleted, 150*time.Second)
		Expect(item(c, "enable-psi-metrics").MaintenanceWindow).To(BeNil())
		waitPoolSettled("00-worker", "99-worker-psi-karg")
		n, nodes := rolloutsSince(before)
		Expect(n).To(Equal(1), "one rollout of the worker pool, paused and resumed")
		Expect(nodes).To(Equal([]int{1, 1, 1}), "each worker node updated exactly once")
		expectUnpausedByUs()
	})

	It("lets a window as long as its period cover the pool at all times: the plan says so, the change is written at once and rolled out without a pause", func() {
		createWindow(workerWindow("e2e-whole-week", "0 22 * * 6", 7*24*time.Hour, v1alpha1.MaintenanceWindowKindAllow))
		configWith("load-aware-rebalancing", `{"profile":"load-aware-rebalancing"}`)
		waitPhase("load-aware-rebalancing", v1alpha1.PhaseReviewRequired, 20*time.Second)
		Expect(planItem(getPlan("load-aware-rebalancing"), "enable-psi-metrics").Message).To(
			ContainSubstring("maintenance windows: pool 'worker': window 'e2e-whole-week' is open, with no end in sight (its openings touch)"))
		approvePlan("load-aware-rebalancing")
		Eventually(func() interface{} { return getObject(mcGVR, "", "99-worker-psi-karg") }).WithTimeout(15*time.Second).
			ShouldNot(BeNil(), "written at once: the window is open")
		c := waitPhase("load-aware-rebalancing", v1alpha1.PhaseCompleted, 120*time.Second)
		it := item(c, "enable-psi-metrics")
		Expect(it.MaintenanceWindow).To(BeNil())
		Expect(it.WindowPauses).To(BeZero(), "no opening ended mid-rollout")
		expectUnpausedByUs()
	})

	It("lets a freeze covering now beat an open window: nothing is written until the freeze ends", func() {
		createWindow(workerWindow("e2e-always", "* * * * *", time.Minute, v1alpha1.MaintenanceWindowKindAllow))
		createWindow(workerWindow("e2e-freeze", "* * * * *", 30*time.Second, v1alpha1.MaintenanceWindowKindDeny))
		configWith("load-aware-rebalancing", `{"profile":"load-aware-rebalancing"}`)
		waitPhase("load-aware-rebalancing", v1alpha1.PhaseReviewRequired, 20*time.Second)
		untilSecond(2, 15) // the freeze is on, the Allow window open
		approvePlan("load-aware-rebalancing")
		Eventually(func() string { return itemMessage("load-aware-rebalancing", "enable-psi-metrics") }).WithTimeout(10 * time.Second).
			Should(MatchRegexp(`^Waiting: MachineConfigPool 'worker': freeze 'e2e-freeze' until .*; the change is written when it opens$`))
		Consistently(func() interface{} { return getObject(mcGVR, "", "99-worker-psi-karg") }).
			WithTimeout(time.Duration(29-time.Now().Second())*time.Second).WithPolling(500*time.Millisecond).
			Should(BeNil(), "nothing is written during the freeze")
		// Written after the freeze: the rollout ends outside a freeze,
		// within this minute, or the next one when the server's view of
		// the pool came late (its watch still backing off after an outage
		// an earlier spec of this process made) and the next freeze paused
		// it (CI on 93c12d3).
		waitPhase("load-aware-rebalancing", v1alpha1.PhaseCompleted, 120*time.Second)
		Expect(time.Now().Second()).To(BeNumerically(">=", 30), "completed after a freeze, not during one")
		expectUnpausedByUs()
	})
})
