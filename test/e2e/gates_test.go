package e2e

import (
	"fmt"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubevirt/virt-advisor/pkg/apis/advisor/v1alpha1"
	"github.com/kubevirt/virt-advisor/pkg/hardware"
	"github.com/kubevirt/virt-advisor/pkg/machineconfig"
	"github.com/kubevirt/virt-advisor/test/env"
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
	// steppedPCI drafts pci-passthrough for a pool of three Intel nodes
	// the fake MCO steps, 1 s per node, with the gates of spec; it returns
	// the nodes and the rendered config they run.
	steppedPCI := func(gates string) (nodes []string, initial string) {
		GinkgoHelper()
		nodes = addSteppingPool(pool, 3, 1)
		initial = poolSpecName(pool)
		for _, n := range nodes {
			setNodeLabel(n, hardware.VendorLabel, "GenuineIntel")
		}
		DeferCleanup(func() { _ = dyn().Resource(mcGVR).Delete(suiteCtx, mcName, metav1.DeleteOptions{}) })
		configWith(pp, fmt.Sprintf(`{"profile":"pci-passthrough","options":{"pciPassthrough":{"pool":%q}},"rollout":{"gates":%s}}`, pool, gates))
		waitPhase(pp, v1alpha1.PhaseReviewRequired, 30*time.Second)
		p := getPlan(pp)
		Expect(p.Status.Settings.Gates).NotTo(BeNil(), "the plan names the gates in force")
		return nodes, initial
	}

	It("holds the next node while one is not back, goes on by itself when it comes back in time, each node updated once", func() {
		nodes, initial := steppedPCI(`{"nodeReadyTimeout":"5m"}`)
		Expect(getPlan(pp).Status.Settings.Gates.NodeReadyTimeout).To(Equal("5m0s"))
		setNodeAnnotation(nodes[1], fakemco.NotReadyAfterRebootAnnotation, "true")
		before := testEnv.FakeMCORollouts(pool)
		approvePlan(pp)

		By("the second node stays NotReady: the third is not targeted, the pool stays paused, the config names the node")
		rendered := waitNodeUpdated(nodes[1], initial)
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
		// The pool reports Updated with its last node done, a moment before
		// the last gates pass and the stepping pause ends.
		Eventually(func() bool { return poolPaused(pool) }).WithTimeout(10*time.Second).Should(BeFalse(), "the stepping pause ends with the rollout")
		Expect(getObject(mcpGVR, "", pool).GetAnnotations()).NotTo(HaveKey(machineconfig.StepAnnotation))
	})

	It("halts past nodeReadyTimeout, and only an approver's approval resumes it, not an editor's spec change", func() {
		nodes, initial := steppedPCI(`{"nodeReadyTimeout":"30s"}`)
		setNodeAnnotation(nodes[0], fakemco.NotReadyAfterRebootAnnotation, "true")
		before := testEnv.FakeMCORollouts(pool)
		approvePlan(pp)
		rendered := waitNodeUpdated(nodes[0], initial)

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
		Eventually(func() []string { return eventMessages(pool, "RolloutHalted") }).WithTimeout(10*time.Second).
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

	// haltFirstNode approves the plan with a node timeout of 30s and leaves
	// the first node NotReady past it: the rollout halts; the node then
	// comes back. It returns the nodes, the config they ran and the one
	// the first now runs.
	haltFirstNode := func() (nodes []string, initial, rendered string) {
		GinkgoHelper()
		nodes, initial = steppedPCI(`{"nodeReadyTimeout":"30s"}`)
		setNodeAnnotation(nodes[0], fakemco.NotReadyAfterRebootAnnotation, "true")
		approvePlan(pp)
		rendered = waitNodeUpdated(nodes[0], initial)
		Eventually(func() *machineconfig.PoolHalt { return machineconfig.ReadHalt(getObject(mcpGVR, "", pool)) }).
			WithTimeout(60 * time.Second).WithPolling(500 * time.Millisecond).ShouldNot(BeNil())
		setNodeAnnotation(nodes[0], fakemco.NotReadyAfterRebootAnnotation, "")
		Eventually(func() bool { return nodeReady(nodes[0]) }).WithTimeout(20 * time.Second).Should(BeTrue())
		return nodes, initial, rendered
	}

	It("halt, then abort: the abort holds the pool; the approval after it completes the rollout, each node updated once", func() {
		before := testEnv.FakeMCORollouts(pool)
		nodes, _, rendered := haltFirstNode()
		abortPlan(pp)
		Eventually(func() *v1alpha1.AbortRecord { return getConfig(pp).Status.Abort }).WithTimeout(20 * time.Second).ShouldNot(BeNil())
		expectHalted(pool, nodes, rendered)

		approvePlan(pp)
		waitPhase(pp, v1alpha1.PhaseCompleted, 90*time.Second)
		expectEachNodeOnce(pool, before, len(nodes))
		Expect(getObject(mcpGVR, "", pool).GetAnnotations()).NotTo(HaveKey(machineconfig.HaltAnnotation))
		Eventually(func() bool { return poolPaused(pool) }).WithTimeout(10 * time.Second).Should(BeFalse())
	})

	It("halt, then revert: the MachineConfig is deleted and every node returns to the config it ran, stepped", func() {
		nodes, initial, _ := haltFirstNode()
		before := testEnv.FakeMCORollouts(pool)
		revertToEarlier(pp)
		Expect(getObject(mcGVR, "", mcName)).To(BeNil(), "the revert deleted the MachineConfig")
		Eventually(func(g Gomega) {
			for _, n := range nodes {
				a := getNode(n).Annotations
				g.Expect(a[fakemco.CurrentConfigAnnotation]).To(Equal(initial), n)
				g.Expect(a[fakemco.DesiredConfigAnnotation]).To(Equal(initial), n)
			}
			g.Expect(poolPaused(pool)).To(BeFalse())
		}).WithTimeout(60 * time.Second).Should(Succeed())
		Expect(getObject(mcpGVR, "", pool).GetAnnotations()).NotTo(HaveKey(machineconfig.HaltAnnotation))
		// The pool stayed paused until the MCO rendered the deletion: no
		// node was updated to the configuration reverted, and only the
		// halted node was updated again, back to the one it ran.
		now := testEnv.FakeMCORollouts(pool)
		updated := 0
		for i := range now.NodeUpdates {
			n := now.NodeUpdates[i]
			if i < len(before.NodeUpdates) {
				n -= before.NodeUpdates[i]
			}
			updated += n
		}
		Expect(updated).To(Equal(1), "node updates since the halt %v, before %v: only the halted node is updated, once", now.NodeUpdates, before.NodeUpdates)
	})

	It("waits for a VM the step moved to be Ready again where it was, then goes on", func() {
		nodes, initial := steppedPCI(`{"nodeReadyTimeout":"5m"}`)
		web := env.VMI{Namespace: "default", Name: "e2e-gates-web", Node: nodes[0], EvictionStrategy: "LiveMigrate", Migratable: true, Ready: true}
		Expect(testEnv.CreateVMI(suiteCtx, web)).To(Succeed())
		DeferCleanup(func() { Expect(testEnv.DeleteVMI(suiteCtx, web.Namespace, web.Name)).To(Succeed()) })
		setNodeAnnotation(nodes[0], fakemco.NotReadyAfterRebootAnnotation, "true") // the step lingers
		before := testEnv.FakeMCORollouts(pool)
		approvePlan(pp)
		rendered := waitNodeUpdated(nodes[0], initial)

		By("KubeVirt moved the VM off the step's node; it runs, not Ready yet: the next step waits, naming it")
		moved := web
		moved.Node, moved.Ready = nodes[1], false
		Expect(testEnv.UpdateVMI(suiteCtx, moved)).To(Succeed())
		succeededMigration("e2e-gates-web-migration", web.Name, nodes[0])
		setNodeAnnotation(nodes[0], fakemco.NotReadyAfterRebootAnnotation, "")
		Eventually(func(g Gomega) {
			g.Expect(describeStatus(getConfig(pp))).To(ContainSubstring("default/e2e-gates-web"))
		}).WithTimeout(30 * time.Second).Should(Succeed())
		Consistently(func() string { return getNode(nodes[1]).Annotations[fakemco.DesiredConfigAnnotation] }).
			WithTimeout(3*time.Second).WithPolling(200*time.Millisecond).ShouldNot(Equal(rendered), "no further node is targeted")

		By("the VM is Ready again: the rollout goes on, each node updated once")
		moved.Ready = true
		Expect(testEnv.UpdateVMI(suiteCtx, moved)).To(Succeed())
		waitPhase(pp, v1alpha1.PhaseCompleted, 60*time.Second)
		expectEachNodeOnce(pool, before, len(nodes))
	})

	It("halts on a failed live migration of a step's drain, naming the VM and the migration", func() {
		nodes, initial := steppedPCI(`{"nodeReadyTimeout":"5m"}`)
		setNodeAnnotation(nodes[0], fakemco.NotReadyAfterRebootAnnotation, "true") // the step stays in flight
		approvePlan(pp)
		rendered := waitNodeUpdated(nodes[0], initial)

		By("KubeVirt reports the migration of a VM off the step's node failed: halted at once")
		failedMigration("e2e-gates-db-0-migration", "e2e-gates-db-0", nodes[0])
		Eventually(func(g Gomega) {
			g.Expect(describeStatus(getConfig(pp))).To(SatisfyAll(ContainSubstring("halted"), ContainSubstring("gate vmsMoved"),
				ContainSubstring("default/e2e-gates-db-0"), ContainSubstring("e2e-gates-db-0-migration")))
		}).WithTimeout(30 * time.Second).Should(Succeed())
		setNodeAnnotation(nodes[0], fakemco.NotReadyAfterRebootAnnotation, "")
		expectHalted(pool, nodes, rendered)
	})

	It("does not drain a pool whose node someone else maintains (a NodeMaintenance) until it ends", func() {
		nodes, _ := steppedPCI(`{}`)
		before := testEnv.FakeMCORollouts(pool)
		nodeMaintenance("e2e-gates-nm", nodes[2])
		approvePlan(pp)

		By("the write waits, the config says why; no node is targeted")
		Eventually(func(g Gomega) {
			g.Expect(describeStatus(getConfig(pp))).To(SatisfyAll(ContainSubstring("NodeMaintenance 'e2e-gates-nm'"), ContainSubstring(nodes[2])))
		}).WithTimeout(30 * time.Second).Should(Succeed())
		Consistently(func(g Gomega) {
			for _, n := range nodes {
				a := getNode(n).Annotations
				g.Expect(a[fakemco.DesiredConfigAnnotation]).To(Equal(a[fakemco.CurrentConfigAnnotation]), n)
			}
		}).WithTimeout(3 * time.Second).Should(Succeed())

		By("the maintenance ends: the rollout goes on, each node updated once")
		Expect(dyn().Resource(nodeMaintenanceGVR).Delete(suiteCtx, "e2e-gates-nm", metav1.DeleteOptions{})).To(Succeed())
		waitPhase(pp, v1alpha1.PhaseCompleted, 60*time.Second)
		expectEachNodeOnce(pool, before, len(nodes))
	})

	Context("the alert gate, read from a real Prometheus and Alertmanager", func() {
		const rules = `groups:
- name: e2e-gates
  rules:
  - alert: E2EGatesAlreadyFiring
    expr: e2e_gates_old > 0
    labels:
      severity: critical
  - alert: E2EGatesNodeUnhealthy
    expr: e2e_gates_unhealthy > 0
    labels:
      severity: critical
`
		// withAlertSource restarts the server reading the alerts from url
		// (kind Prometheus or Alertmanager); the spec's end restores it.
		withAlertSource := func(kind, url string) {
			GinkgoHelper()
			DeferCleanup(func() { Expect(testEnv.RestartAdvisorWith(suiteCtx, nil, nil)).To(Succeed()) })
			Expect(testEnv.RestartAdvisorWith(suiteCtx, nil, map[string]string{"--alert-source-url": url, "--alert-source-kind": kind})).To(Succeed())
		}

		DescribeTable("halts after the step in flight on an alert that starts firing mid-rollout, not on one already firing",
			func(kind string) {
				m, err := testEnv.StartMonitoring(suiteCtx, env.MonitoringOptions{Rules: rules})
				Expect(err).NotTo(HaveOccurred())
				DeferCleanup(m.Stop)
				url := m.PrometheusURL
				if kind == "Alertmanager" {
					url = m.AlertmanagerURL
				}
				withAlertSource(kind, url)
				m.SetMetric("e2e_gates_old", nil, 1)
				_, err = m.WaitFiring(suiteCtx, map[string]string{"alertname": "E2EGatesAlreadyFiring"}, 30*time.Second)
				Expect(err).NotTo(HaveOccurred())

				nodes, initial := steppedPCI(`{"nodeReadyTimeout":"5m","alerts":{"matchers":["severity=\"critical\""]}}`)
				Expect(getPlan(pp).Status.Settings.Gates.Alerts.Source).To(Equal(kind + " " + url))
				setNodeAnnotation(nodes[0], fakemco.NotReadyAfterRebootAnnotation, "true") // the first step lingers
				approvePlan(pp)
				rendered := waitNodeUpdated(nodes[0], initial)

				By("an alert starts firing while the first node is down")
				m.SetMetric("e2e_gates_unhealthy", map[string]string{"node": nodes[0]}, 1)
				_, err = m.WaitFiring(suiteCtx, map[string]string{"alertname": "E2EGatesNodeUnhealthy"}, 30*time.Second)
				Expect(err).NotTo(HaveOccurred())
				setNodeAnnotation(nodes[0], fakemco.NotReadyAfterRebootAnnotation, "")

				By("the node is back, the gate trips on the new alert only")
				Eventually(func(g Gomega) {
					g.Expect(describeStatus(getConfig(pp))).To(SatisfyAll(ContainSubstring("gate alerts"), ContainSubstring("E2EGatesNodeUnhealthy")))
				}).WithTimeout(30 * time.Second).Should(Succeed())
				h := machineconfig.ReadHalt(getObject(mcpGVR, "", pool))
				Expect(h).NotTo(BeNil())
				Expect(strings.Join(h.Evidence, " ")).NotTo(ContainSubstring("E2EGatesAlreadyFiring"), "an alert firing before the rollout does not trip the gate")
				expectHalted(pool, nodes, rendered)
			},
			Entry("through Prometheus' query API", "Prometheus"),
			Entry("through the Alertmanager's v2 API", "Alertmanager"),
		)

		It("holds while the alert source is down, naming it", func() {
			withAlertSource("Prometheus", "http://127.0.0.1:1")
			nodes, initial := steppedPCI(`{"nodeReadyTimeout":"5m","alerts":{}}`)
			approvePlan(pp)
			rendered := waitNodeUpdated(nodes[0], initial)
			Eventually(func(g Gomega) {
				g.Expect(describeStatus(getConfig(pp))).To(SatisfyAll(ContainSubstring("the alerts cannot be read"), ContainSubstring("127.0.0.1:1")))
			}).WithTimeout(30 * time.Second).Should(Succeed())
			Consistently(func() string { return getNode(nodes[1]).Annotations[fakemco.DesiredConfigAnnotation] }).
				WithTimeout(3*time.Second).WithPolling(200*time.Millisecond).ShouldNot(Equal(rendered), "no further node is targeted")
		})

		It("goes on, warned on the pool, with onError: Ignore while the alert source is down", func() {
			withAlertSource("Prometheus", "http://127.0.0.1:1")
			nodes, _ := steppedPCI(`{"nodeReadyTimeout":"5m","alerts":{"onError":"Ignore"}}`)
			Expect(getPlan(pp).Status.Settings.Gates.Alerts.OnError).To(Equal(v1alpha1.GateErrorIgnore))
			before := testEnv.FakeMCORollouts(pool)
			approvePlan(pp)
			waitPhase(pp, v1alpha1.PhaseCompleted, 90*time.Second)
			expectEachNodeOnce(pool, before, len(nodes))
			Eventually(func() []string { return eventMessages(pool, "GateNotEvaluated") }).WithTimeout(10 * time.Second).
				Should(ContainElement(ContainSubstring("the alerts cannot be read")))
		})
	})
})

var (
	migrationGVR       = schema.GroupVersionResource{Group: "kubevirt.io", Version: "v1", Resource: "virtualmachineinstancemigrations"}
	nodeMaintenanceGVR = schema.GroupVersionResource{Group: "nodemaintenance.medik8s.io", Version: "v1beta1", Resource: "nodemaintenances"}
)

// succeededMigration creates, as KubeVirt would, a migration of vmi off
// node that succeeded.
func succeededMigration(name, vmi, node string) {
	GinkgoHelper()
	m := &unstructured.Unstructured{Object: map[string]interface{}{
		"apiVersion": "kubevirt.io/v1", "kind": "VirtualMachineInstanceMigration",
		"metadata": map[string]interface{}{"name": name, "namespace": "default"},
		"spec":     map[string]interface{}{"vmiName": vmi},
		"status": map[string]interface{}{"phase": "Succeeded",
			"migrationState": map[string]interface{}{"sourceNode": node, "completed": true}},
	}}
	_, err := dyn().Resource(migrationGVR).Namespace("default").Create(suiteCtx, m, metav1.CreateOptions{})
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(func() {
		_ = dyn().Resource(migrationGVR).Namespace("default").Delete(suiteCtx, name, metav1.DeleteOptions{})
	})
}

// failedMigration creates, as KubeVirt would, a VirtualMachineInstanceMigration
// of vmi off node that failed.
func failedMigration(name, vmi, node string) {
	GinkgoHelper()
	m := &unstructured.Unstructured{Object: map[string]interface{}{
		"apiVersion": "kubevirt.io/v1", "kind": "VirtualMachineInstanceMigration",
		"metadata": map[string]interface{}{"name": name, "namespace": "default"},
		"spec":     map[string]interface{}{"vmiName": vmi},
		"status": map[string]interface{}{"phase": "Failed",
			"migrationState": map[string]interface{}{"sourceNode": node, "failed": true}},
	}}
	_, err := dyn().Resource(migrationGVR).Namespace("default").Create(suiteCtx, m, metav1.CreateOptions{})
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(func() {
		_ = dyn().Resource(migrationGVR).Namespace("default").Delete(suiteCtx, name, metav1.DeleteOptions{})
	})
}

// nodeMaintenance puts node under a medik8s NodeMaintenance.
func nodeMaintenance(name, node string) {
	GinkgoHelper()
	nm := &unstructured.Unstructured{Object: map[string]interface{}{
		"apiVersion": "nodemaintenance.medik8s.io/v1beta1", "kind": "NodeMaintenance",
		"metadata": map[string]interface{}{"name": name},
		"spec":     map[string]interface{}{"nodeName": node, "reason": "e2e: firmware upgrade"},
	}}
	_, err := dyn().Resource(nodeMaintenanceGVR).Create(suiteCtx, nm, metav1.CreateOptions{})
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(func() { _ = dyn().Resource(nodeMaintenanceGVR).Delete(suiteCtx, name, metav1.DeleteOptions{}) })
}

// waitNodeUpdated waits until node was updated to a rendered config
// other than before (the pool's before the approval), and returns it.
func waitNodeUpdated(node, before string) string {
	GinkgoHelper()
	var rendered string
	Eventually(func(g Gomega) {
		a := getNode(node).Annotations
		rendered = a[fakemco.CurrentConfigAnnotation]
		g.Expect(rendered).To(HavePrefix("rendered-"))
		g.Expect(rendered).NotTo(Equal(before))
		g.Expect(a[fakemco.DesiredConfigAnnotation]).To(Equal(rendered))
		g.Expect(a[fakemco.StateAnnotation]).To(Equal(fakemco.StateDone))
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
