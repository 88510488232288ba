package e2e

import (
	"encoding/json"
	"strings"
	"syscall"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kubevirt/virt-advisor/pkg/apis/advisor/v1alpha1"
	"github.com/kubevirt/virt-advisor/test/env/fakemco"
)

const (
	pausedUntilAnnotation = "advisor.kubevirt.io/paused-until"
	ourManager            = "virt-advisor-operator"
	// otherMC is a MachineConfig of someone else that makes the worker pool
	// roll out.
	otherMC = "50-worker-e2e-other"
)

// pausedManagers lists the field managers owning the worker pool's
// spec.paused, and whether it is true.
func pausedManagers(g Gomega) (bool, []string) {
	pool, err := get(mcpGVR, "", "worker")
	g.Expect(err).NotTo(HaveOccurred())
	paused, _, _ := unstructured.NestedBool(pool.Object, "spec", "paused")
	var managers []string
	for _, mf := range pool.GetManagedFields() {
		var fields struct {
			Spec map[string]json.RawMessage `json:"f:spec"`
		}
		if mf.FieldsV1 != nil && json.Unmarshal(mf.FieldsV1.Raw, &fields) == nil {
			if _, ok := fields.Spec["f:paused"]; ok {
				managers = append(managers, mf.Manager)
			}
		}
	}
	return paused, managers
}

// expectUnpausedByUs checks that the worker pool is unpaused and that
// nothing of our pause is left on it.
func expectUnpausedByUs() {
	GinkgoHelper()
	Eventually(func(g Gomega) {
		paused, managers := pausedManagers(g)
		g.Expect(paused).To(BeFalse())
		g.Expect(managers).NotTo(ContainElement(ourManager))
		pool, err := get(mcpGVR, "", "worker")
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(pool.GetAnnotations()).NotTo(HaveKey(pausedUntilAnnotation))
	}).WithTimeout(30 * time.Second).WithPolling(200 * time.Millisecond).Should(Succeed())
}

// rolloutsSince is what the fake MCO did to the worker pool since before.
func rolloutsSince(before fakemco.Rollouts) (int, []int) {
	now := testEnv.FakeMCORollouts("worker")
	nodes := make([]int, len(now.NodeUpdates))
	for i := range nodes {
		nodes[i] = now.NodeUpdates[i]
		if i < len(before.NodeUpdates) {
			nodes[i] -= before.NodeUpdates[i]
		}
	}
	return now.Rollouts - before.Rollouts, nodes
}

// startAdvisorWithWindow serves the API from an advisor of its own (own
// store and Lease) with the given coalescing window for the rest of the spec.
func startAdvisorWithWindow(name, window string) {
	GinkgoHelper()
	adv, err := testEnv.StartAdvisor(suiteCtx, name, "--rollout-coalesce-window="+window,
		"--etcd-servers="+testEnv.EtcdURL, "--etcd-prefix=/"+name+"-"+strings.ToLower(randomSuffix()),
		"--leader-elect-resource-name=virt-advisor-"+name)
	Expect(err).NotTo(HaveOccurred())
	main := testEnv.Advisor()
	DeferCleanup(func() {
		Expect(testEnv.RegisterAdvisor(suiteCtx, main)).To(Succeed())
		_ = adv.Stop(syscall.SIGTERM)
	})
	Expect(testEnv.RegisterAdvisor(suiteCtx, adv)).To(Succeed())
}

var _ = Describe("rollouts: one reboot per node", Ordered, startFirst, func() {
	BeforeEach(resetCluster)
	AfterEach(func() {
		_ = dyn().Resource(mcGVR).Delete(suiteCtx, otherMC, metav1.DeleteOptions{})
		resetCluster()
	})

	DescribeTable("PSI and swap approved 5 s apart",
		func(window string, rollouts int) {
			startAdvisorWithWindow("window-"+strings.TrimSuffix(window, "s"), window)
			configWith("load-aware-rebalancing", `{"profile":"load-aware-rebalancing"}`)
			configWith("virt-higher-density", `{"profile":"virt-higher-density"}`)
			waitPhase("load-aware-rebalancing", v1alpha1.PhaseReviewRequired, 20*time.Second)
			waitPhase("virt-higher-density", v1alpha1.PhaseReviewRequired, 20*time.Second)
			Expect(planItem(getPlan("load-aware-rebalancing"), "enable-psi-metrics").Message).To(HaveSuffix("; reboots: pool worker, 3 nodes, once"))
			before := testEnv.FakeMCORollouts("worker")
			since := time.Now().Add(-time.Second).Truncate(time.Second)

			approvePlan("load-aware-rebalancing")
			time.Sleep(5 * time.Second)
			approvePlan("virt-higher-density")
			waitPhase("load-aware-rebalancing", v1alpha1.PhaseCompleted, 90*time.Second)
			waitPhase("virt-higher-density", v1alpha1.PhaseCompleted, 90*time.Second)
			waitPoolSettled("00-worker", "99-worker-psi-karg", "90-worker-kubelet-swap")

			n, nodes := rolloutsSince(before)
			Expect(n).To(Equal(rollouts), "rollouts of the worker pool")
			Expect(nodes).To(Equal([]int{rollouts, rollouts, rollouts}), "updates of each worker node")
			expectUnpausedByUs()
			// The pool is the administrator's: its events say who paused it.
			if rollouts == 1 {
				Eventually(func() []string { return eventReasonsSince("worker", since) }).WithTimeout(10 * time.Second).
					Should(ContainElements("PausedByVirtAdvisor", "UnpausedByVirtAdvisor"))
			} else {
				Consistently(func() []string { return eventReasonsSince("worker", since) }).WithTimeout(2*time.Second).
					ShouldNot(ContainElement(HavePrefix("PausedBy")), "without a window the pool is never paused")
			}
		},
		Entry("with a 10 s window: one rollout, each node updated once", "10s", 1),
		Entry("with --rollout-coalesce-window=0: two rollouts", "0s", 2),
	)

	It("waits for a pool an administrator paused, never unpauses it, and finishes once it is unpaused by hand", func() {
		patchObject(mcpGVR, "", "worker", `{"spec":{"paused":true}}`)
		start := float64(time.Now().Add(-time.Second).Unix())
		configWith("load-aware-rebalancing", `{"profile":"load-aware-rebalancing","action":"Apply"}`)
		Eventually(func() string { return itemMessage("load-aware-rebalancing", "enable-psi-metrics") }).WithTimeout(20 * time.Second).
			Should(Equal("Waiting: MachineConfigPool 'worker' is paused by someone else (field manager e2e-admin); virt-advisor never unpauses it: the change is written when the pool is unpaused"))
		// Longer than the suite's window: nothing is written, the pool stays as the administrator left it.
		Consistently(func(g Gomega) {
			paused, managers := pausedManagers(g)
			g.Expect(paused).To(BeTrue())
			g.Expect(managers).To(Equal([]string{"e2e-admin"}))
			g.Expect(getObject(mcGVR, "", "99-worker-psi-karg")).To(BeNil())
		}).WithTimeout(6 * time.Second).WithPolling(500 * time.Millisecond).Should(Succeed())
		Expect(getConfig("load-aware-rebalancing").Status.Phase).To(Equal(v1alpha1.PhaseInProgress))
		// VirtAdvisorApprovedChangeWaiting counts from this series.
		psi := map[string]string{"name": "load-aware-rebalancing", "item": "enable-psi-metrics"}
		Eventually(func(g Gomega) {
			waiting := samples(scrape(g), "virt_advisor_config_write_waiting_since_timestamp_seconds", psi)
			g.Expect(waiting).To(HaveLen(1))
			g.Expect(waiting[0]).To(And(BeNumerically(">=", start), BeNumerically("<=", float64(time.Now().Unix()+1))))
		}).WithTimeout(10 * time.Second).Should(Succeed())

		patchObject(mcpGVR, "", "worker", `{"spec":{"paused":false}}`)
		c := waitPhase("load-aware-rebalancing", v1alpha1.PhaseCompleted, 60*time.Second)
		Expect(item(c, "enable-psi-metrics").State).To(Equal(v1alpha1.ItemStateCompleted))
		expectUnpausedByUs()
		Eventually(func(g Gomega) {
			g.Expect(samples(scrape(g), "virt_advisor_config_write_waiting_since_timestamp_seconds", psi)).To(BeEmpty())
		}).WithTimeout(10*time.Second).Should(Succeed(), "written: no longer waiting")
	})

	It("ends a pause of a killed server after its restart, and the items complete", func() {
		configWith("load-aware-rebalancing", `{"profile":"load-aware-rebalancing"}`)
		waitPhase("load-aware-rebalancing", v1alpha1.PhaseReviewRequired, 20*time.Second)
		approvePlan("load-aware-rebalancing")
		Eventually(func(g Gomega) {
			paused, managers := pausedManagers(g)
			g.Expect(paused).To(BeTrue())
			g.Expect(managers).To(ContainElement(ourManager))
		}).WithTimeout(20 * time.Second).WithPolling(50 * time.Millisecond).Should(Succeed())

		adv := testEnv.Advisor()
		Expect(adv.Stop(syscall.SIGKILL)).To(Succeed())
		// Nobody ends the window while no server runs.
		time.Sleep(4 * time.Second)
		Eventually(func(g Gomega) {
			paused, managers := pausedManagers(g)
			g.Expect(paused).To(BeTrue())
			g.Expect(managers).To(ContainElement(ourManager))
		}).Should(Succeed())

		restarted, err := testEnv.StartAdvisor(suiteCtx, adv.Name)
		Expect(err).NotTo(HaveOccurred())
		Expect(testEnv.RegisterAdvisor(suiteCtx, restarted)).To(Succeed())
		expectUnpausedByUs()
		c := waitPhase("load-aware-rebalancing", v1alpha1.PhaseCompleted, 60*time.Second)
		Expect(item(c, "enable-psi-metrics").State).To(Equal(v1alpha1.ItemStateCompleted))
		Expect(getObject(mcGVR, "", "99-worker-psi-karg")).NotTo(BeNil())
	})

	It("waits while the pool updates to a config without the change, then writes it", func() {
		patchObject(mcpGVR, "", "worker", `{"metadata":{"annotations":{"`+fakemco.StepTimeAnnotation+`":"2s"}}}`)
		other := &unstructured.Unstructured{Object: map[string]interface{}{
			"apiVersion": "machineconfiguration.openshift.io/v1", "kind": "MachineConfig",
			"metadata": map[string]interface{}{"name": otherMC, "labels": map[string]interface{}{"machineconfiguration.openshift.io/role": "worker"}},
			"spec":     map[string]interface{}{"kernelArguments": []interface{}{"e2e.other=1"}},
		}}
		_, err := dyn().Resource(mcGVR).Create(suiteCtx, other, metav1.CreateOptions{})
		Expect(err).NotTo(HaveOccurred())
		var rendered string
		Eventually(func(g Gomega) {
			pool, err := get(mcpGVR, "", "worker")
			g.Expect(err).NotTo(HaveOccurred())
			rendered, _, _ = unstructured.NestedString(pool.Object, "spec", "configuration", "name")
			status, _, _ := unstructured.NestedString(pool.Object, "status", "configuration", "name")
			g.Expect(rendered).NotTo(Equal(status))
		}).WithTimeout(10 * time.Second).WithPolling(100 * time.Millisecond).Should(Succeed())

		configWith("load-aware-rebalancing", `{"profile":"load-aware-rebalancing","action":"Apply","waitTimeout":"2m"}`)
		Eventually(func() string { return itemMessage("load-aware-rebalancing", "enable-psi-metrics") }).WithTimeout(20 * time.Second).
			Should(Equal("Waiting: MachineConfigPool 'worker' is updating to " + rendered +
				", which does not include MachineConfig '99-worker-psi-karg'; the change is written when it is done"))
		Expect(getObject(mcGVR, "", "99-worker-psi-karg")).To(BeNil(), "nothing written onto a busy pool")
		Expect(item(getConfig("load-aware-rebalancing"), "enable-load-aware-descheduling").State).To(Equal(v1alpha1.ItemStatePending), "items are written in order")

		c := waitPhase("load-aware-rebalancing", v1alpha1.PhaseCompleted, 90*time.Second)
		Expect(item(c, "enable-psi-metrics").State).To(Equal(v1alpha1.ItemStateCompleted))
		waitPoolSettled("00-worker", otherMC, "99-worker-psi-karg")
		expectUnpausedByUs()
	})
})
