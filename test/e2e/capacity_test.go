package e2e

import (
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/kubevirt/virt-advisor/pkg/apis/advisor/v1alpha1"
	"github.com/kubevirt/virt-advisor/test/env"
)

// capacityVM is a migratable VMI and its virt-launcher pod asking memory
// (and any more requests) on its node.
type capacityVM struct {
	name, node, memory string
	more, selector     map[string]string
}

// runCapacityVMs creates the VMIs and their launcher pods, deleted when
// the spec ends.
func runCapacityVMs(vms ...capacityVM) {
	GinkgoHelper()
	for _, v := range vms {
		runVMIs(env.VMI{Namespace: vmNS, Name: v.name, Node: v.node, EvictionStrategy: "LiveMigrate", Migratable: true})
		req := map[string]string{"memory": v.memory, "cpu": "1"}
		for k, q := range v.more {
			req[k] = q
		}
		Expect(testEnv.CreateLauncherPod(suiteCtx, env.LauncherPod{Namespace: vmNS, VMI: v.name, Node: v.node, Requests: req, NodeSelector: v.selector})).To(Succeed())
		DeferCleanup(func() { Expect(testEnv.DeleteLauncherPod(suiteCtx, vmNS, v.name)).To(Succeed()) })
	}
}

// deleteCapacityVM deletes a VMI and its launcher pod, as when it stops.
func deleteCapacityVM(name string) {
	GinkgoHelper()
	Expect(testEnv.DeleteVMI(suiteCtx, vmNS, name)).To(Succeed())
	Expect(testEnv.DeleteLauncherPod(suiteCtx, vmNS, name)).To(Succeed())
}

// psiCapacity is the capacity the PSI item states for the worker pool.
func psiCapacity(p *v1alpha1.Plan) string {
	GinkgoHelper()
	psi := planItem(p, psiItemName)
	Expect(psi.Reboots).To(HaveLen(1))
	return psi.Reboots[0].Capacity
}

const (
	// Each 50 GiB VM finds at most 14 GiB free on the two other 64 GiB nodes.
	unfit50 = "50 GiB, at most 14 GiB free on a node it may run on"
	// capacityBlocked is the PSI item waiting on the three 50 GiB VMs.
	capacityBlocked = "Waiting: writing MachineConfig '99-worker-psi-karg' would drain nodes that run 3 VMs that would block the drain: " +
		"default/cap-a (InsufficientCapacity: " + unfit50 + ", pool worker), default/cap-b (InsufficientCapacity: " + unfit50 + ", pool worker), " +
		"default/cap-c (InsufficientCapacity: " + unfit50 + ", pool worker)"
)

var _ = Describe("capacity: the VMs a drain live-migrates must find room", Ordered, func() {
	BeforeAll(func() {
		withWorkerNodes()
		for _, n := range []string{"worker-0", "worker-1", "worker-2"} {
			Expect(testEnv.SetNodeResources(suiteCtx, n, map[string]string{"memory": "64Gi", "cpu": "32", "pods": "110"}, nil)).To(Succeed())
		}
	})
	BeforeEach(resetCluster)
	AfterEach(resetCluster)

	It("150 GiB of VMs on three 64 GiB nodes: the PSI plan names the VMs that find no room, warns, and the approved item waits before the drain; deleting one VM makes it fit and the rollout completes", func() {
		runCapacityVMs(capacityVM{name: "cap-a", node: "worker-0", memory: "50Gi"}, capacityVM{name: "cap-b", node: "worker-1", memory: "50Gi"},
			capacityVM{name: "cap-c", node: "worker-2", memory: "50Gi"})
		configWith("load-aware-rebalancing", `{"profile":"load-aware-rebalancing"}`)
		// The plan reads pods from the server's cache, milliseconds behind.
		reviewedPlan("load-aware-rebalancing")
		var p *v1alpha1.Plan
		Eventually(func() string { p = getPlan("load-aware-rebalancing"); return psiCapacity(p) }).WithTimeout(10 * time.Second).
			Should(Equal("does not fit: default/cap-a (" + unfit50 + "); default/cap-b (" + unfit50 + "); default/cap-c (" + unfit50 + ")"))
		psi := planItem(p, psiItemName)
		Expect(psi.Message).To(HaveSuffix("; capacity: pool worker " + psiCapacity(p)))
		Expect(fates(psi)).To(Equal([]string{
			"default/cap-a on worker-0: BlocksDrain (InsufficientCapacity: " + unfit50 + ")",
			"default/cap-b on worker-1: BlocksDrain (InsufficientCapacity: " + unfit50 + ")",
			"default/cap-c on worker-2: BlocksDrain (InsufficientCapacity: " + unfit50 + ")",
		}))
		Expect(p.Status.Warnings).To(ContainElement(ContainSubstring("would block on 3 VMs: default/cap-a (blocks the drain, InsufficientCapacity: " + unfit50 + ", pool worker)")))

		approvePlan("load-aware-rebalancing")
		Eventually(func() string { return itemMessage("load-aware-rebalancing", psiItemName) }).WithTimeout(20 * time.Second).Should(HavePrefix(capacityBlocked))
		Consistently(func(g Gomega) {
			g.Expect(getObject(mcGVR, "", "99-worker-psi-karg")).To(BeNil(), "nothing written while the VMs find no room")
		}).WithTimeout(3 * time.Second).WithPolling(500 * time.Millisecond).Should(Succeed())

		deleteCapacityVM("cap-c")
		Eventually(func() string { return psiCapacity(getPlan("load-aware-rebalancing")) }).WithTimeout(10 * time.Second).
			Should(Equal("fits: worst node worker-0 moves 50 GiB, 78 GiB free elsewhere"))
		c := waitPhase("load-aware-rebalancing", v1alpha1.PhaseCompleted, 90*time.Second)
		Expect(item(c, psiItemName).State).To(Equal(v1alpha1.ItemStateCompleted))
		waitPoolSettled("00-worker", "99-worker-psi-karg")
	})

	It("a VM with a GPU no other node has, and a VM whose CPU model no other node has, are named", func() {
		Expect(testEnv.SetNodeResources(suiteCtx, "worker-0", map[string]string{"memory": "64Gi", "cpu": "32", "pods": "110", "nvidia.com/A100": "1"}, nil)).To(Succeed())
		Expect(testEnv.SetNodeResources(suiteCtx, "worker-1", map[string]string{"memory": "64Gi", "cpu": "32", "pods": "110"},
			map[string]string{"cpu-model.node.kubevirt.io/Icelake-Server": "true"})).To(Succeed())
		DeferCleanup(func() {
			Expect(testEnv.SetNodeResources(suiteCtx, "worker-0", map[string]string{"memory": "64Gi", "cpu": "32", "pods": "110"}, nil)).To(Succeed())
		})
		runCapacityVMs(capacityVM{name: "db-0", node: "worker-0", memory: "8Gi", more: map[string]string{"nvidia.com/A100": "1"}},
			capacityVM{name: "legacy", node: "worker-1", memory: "4Gi", selector: map[string]string{"cpu-model.node.kubevirt.io/Icelake-Server": "true"}})
		configWith("load-aware-rebalancing", `{"profile":"load-aware-rebalancing"}`)
		reviewedPlan("load-aware-rebalancing")
		Eventually(func() string { return psiCapacity(getPlan("load-aware-rebalancing")) }).WithTimeout(10 * time.Second).
			Should(Equal("does not fit: default/db-0 (8 GiB, no node with `nvidia.com/A100` left); default/legacy (its CPU model Icelake-Server is on no other node)"))
	})

	It("a VM added after the review that breaks the fit makes the approval of the reviewed plan 409", func() {
		// Two 50 GiB VMs fit (a drained node comes back empty); a third does not.
		runCapacityVMs(capacityVM{name: "cap-a", node: "worker-0", memory: "50Gi"}, capacityVM{name: "cap-b", node: "worker-1", memory: "50Gi"})
		configWith("load-aware-rebalancing", `{"profile":"load-aware-rebalancing"}`)
		reviewedPlan("load-aware-rebalancing")
		var p *v1alpha1.Plan
		Eventually(func() string { p = getPlan("load-aware-rebalancing"); return psiCapacity(p) }).WithTimeout(10 * time.Second).Should(HavePrefix("fits: "))
		reviewed := p.Status.PlanHash

		runCapacityVMs(capacityVM{name: "cap-c", node: "worker-2", memory: "50Gi"})
		Eventually(func() string { return getPlan("load-aware-rebalancing").Status.PlanHash }).
			WithTimeout(10*time.Second).ShouldNot(Equal(reviewed), "the server's caches have the new VM")
		err := approve(advisor, "load-aware-rebalancing", reviewed)
		Expect(statusCode(err)).To(Equal(int32(409)), "%v", err)
		Expect(getConfig("load-aware-rebalancing").Status.Approval).To(BeNil(), "nothing approved")
	})

	It("a VM added after the approval that breaks the fit fails the waiting item as a stale plan before anything is written", func() {
		// cap-x blocks (not migratable): the approved item waits before the drain.
		runVMIs(env.VMI{Namespace: vmNS, Name: "cap-x", Node: "worker-2", EvictionStrategy: "LiveMigrate", Reason: "HostDeviceNotLiveMigratable"})
		runCapacityVMs(capacityVM{name: "cap-a", node: "worker-0", memory: "50Gi"}, capacityVM{name: "cap-b", node: "worker-1", memory: "50Gi"})
		configWith("load-aware-rebalancing", `{"profile":"load-aware-rebalancing"}`)
		reviewedPlan("load-aware-rebalancing")
		Eventually(func() string { return psiCapacity(getPlan("load-aware-rebalancing")) }).WithTimeout(10 * time.Second).Should(HavePrefix("fits: "))
		approvePlan("load-aware-rebalancing")
		Eventually(func() string { return itemMessage("load-aware-rebalancing", psiItemName) }).WithTimeout(20 * time.Second).Should(HavePrefix("Waiting: writing MachineConfig '99-worker-psi-karg'"))

		runCapacityVMs(capacityVM{name: "cap-c", node: "worker-2", memory: "50Gi"})
		c := waitPhase("load-aware-rebalancing", v1alpha1.PhaseFailed, 30*time.Second)
		Expect(condition(c, string(v1alpha1.PhaseFailed)).Reason).To(Equal("StalePlan"))
		Expect(item(c, psiItemName).Message).To(And(HavePrefix("Not written: item 'enable-psi-metrics': MachineConfig '99-worker-psi-karg' would now drain nodes whose VMs the reviewed plan did not show with that fate: "),
			ContainSubstring("default/cap-a (blocks the drain, InsufficientCapacity: ")))
		Expect(getObject(mcGVR, "", "99-worker-psi-karg")).To(BeNil())
	})
})
