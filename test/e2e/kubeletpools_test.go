package e2e

import (
	"fmt"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubevirt/virt-advisor/pkg/apis/advisor/v1alpha1"
	"github.com/kubevirt/virt-advisor/pkg/machineconfig"
	"github.com/kubevirt/virt-advisor/pkg/profiles/dedicatedcpus"
	"github.com/kubevirt/virt-advisor/test/env"
	"github.com/kubevirt/virt-advisor/test/names"
)

// addHardware creates the Nodes and NodeResourceTopologies of a class of
// make run's --hardware-classes (its pool must exist); they go when the
// spec ends.
func addHardware(h env.HardwareClass) {
	GinkgoHelper()
	for _, name := range h.NodeNames() {
		want := h.NodeObject(name)
		created, err := kube.CoreV1().Nodes().Create(suiteCtx, want, metav1.CreateOptions{})
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(func() { Expect(testEnv.DeleteNode(suiteCtx, name)).To(Succeed()) })
		created.Status = want.Status
		_, err = kube.CoreV1().Nodes().UpdateStatus(suiteCtx, created, metav1.UpdateOptions{})
		Expect(err).NotTo(HaveOccurred())
		_, err = dyn().Resource(nrtGVR).Create(suiteCtx, h.TopologyObject(name), metav1.CreateOptions{})
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(func() { _ = dyn().Resource(nrtGVR).Delete(suiteCtx, name, metav1.DeleteOptions{}) })
	}
}

// pausedByUs is true when virt-advisor holds the pool paused for its
// coalescing window.
func pausedByUs(pool string) bool {
	GinkgoHelper()
	p := getObject(mcpGVR, "", pool)
	paused, _, _ := unstructured.NestedBool(p.Object, "spec", "paused")
	_, until := p.GetAnnotations()[machineconfig.PausedUntilAnnotation]
	return paused && until
}

// poolNames are the pools of a plan item's reboots.
func poolNames(it v1alpha1.PlanItem) []string {
	var out []string
	for _, r := range it.Reboots {
		out = append(out, fmt.Sprintf("%s (%d nodes)", r.Pool, r.Nodes))
	}
	return out
}

// A KubeletConfig for worker is rendered as 99-worker-generated-kubelet
// with role worker; worker-cnv, a custom pool selecting role worker as
// OpenShift's custom pools do, renders it too. The nodes of make run's
// --hardware-classes: worker 3 Intel nodes with 32 CPUs in 1 NUMA zone,
// worker-cnv 3 AMD nodes with 64 CPUs in 2 zones.
var _ = Describe("a KubeletConfig for worker and a custom pool selecting role worker", Label("kubeletconfig"), func() {
	BeforeEach(resetCluster)
	AfterEach(resetCluster)

	It("is refused while the nodes of both pools differ, naming pools and nodes; once they are alike, the plan reboots both, the coalescing pause holds both before the write, and each node of both reboots once", func() {
		startAdvisorWithWindow("window-10-kcpools", "10s")
		addCNVPool(3)
		patchObject(mcpGVR, "", "worker", `{"metadata":{"annotations":{"fake-mco.virt-advisor.io/step-time":"200ms"}}}`)
		workers, cnv := env.LocalHardware[0], env.LocalHardware[1]
		Expect(workers.Pool).To(Equal("worker"))
		Expect(cnv.Pool).To(Equal(cnvPool))
		addHardware(workers)
		addHardware(cnv)

		By("the nodes differ: refused, naming both pools and their nodes; nothing written")
		configWith(dedicatedcpus.Name, `{"profile":"dedicated-cpus","options":{"dedicatedCPUs":{"pool":"worker","allowAllWorkers":true}}}`)
		Eventually(func() string { return planItem(getPlan(dedicatedcpus.Name), dcItem).Error }).WithTimeout(20 * time.Second).
			Should(Equal("KubeletConfig 'virt-advisor-dedicated-cpus' (rendered as MachineConfig '99-worker-generated-kubelet' with role 'worker') for MachineConfigPool 'worker' " +
				"is rendered by MachineConfigPools 'worker', 'worker-cnv' (each one's machineConfigSelector selects it), whose nodes differ in CPU count: " +
				"worker-0, worker-1, worker-2 of pool worker have 32; worker-cnv-0, worker-cnv-1, worker-cnv-2 of pool worker-cnv have 64; " +
				"choose a pool whose nodes are alike and whose MachineConfigs no other pool renders (a custom pool such as worker-cnv), or make the nodes alike"))
		Consistently(func() *unstructured.Unstructured { return getObject(names.KubeletConfigs, "", dcKubelet) }).
			WithTimeout(2 * time.Second).Should(BeNil())

		By("the worker nodes made like the AMD ones: derived from all six, both pools in the reboots")
		for _, name := range workers.NodeNames() {
			patchNodeCPUs(name, 64)
			nrt := getObject(nrtGVR, "", name)
			nrt.Object["zones"] = cnv.TopologyObject(name).Object["zones"]
			_, err := dyn().Resource(nrtGVR).Update(suiteCtx, nrt, metav1.UpdateOptions{})
			Expect(err).NotTo(HaveOccurred())
		}
		var it v1alpha1.PlanItem
		Eventually(func(g Gomega) {
			it = planItem(getPlan(dedicatedcpus.Name), dcItem)
			g.Expect(it.Error).To(BeEmpty())
		}).WithTimeout(20 * time.Second).Should(Succeed())
		reviewedPlan(dedicatedcpus.Name)
		it = planItem(getPlan(dedicatedcpus.Name), dcItem)
		GinkgoWriter.Printf("plan item %s (%s): %s\nreboots: %v\n", it.Name, it.Operation, it.Message, poolNames(it))
		Expect(it.Message).To(And(
			ContainSubstring("It is rendered as MachineConfig '99-worker-generated-kubelet' with role 'worker', which MachineConfigPool 'worker-cnv' renders too"),
			ContainSubstring("reservedSystemCPUs 0,32: 1 core per NUMA zone, from 6 nodes with 64 CPUs in 2 NUMA zones"),
			ContainSubstring("reservedMemory 562Mi on NUMA node 0, 562Mi on NUMA node 1"),
			HaveSuffix("reboots: pool worker, 3 nodes, once; pool worker-cnv, 3 nodes, once")))
		Expect(poolNames(it)).To(Equal([]string{"worker (3 nodes)", "worker-cnv (3 nodes)"}))

		By("approved: both pools are paused by virt-advisor before the KubeletConfig is written")
		before := map[string]int{"worker": testEnv.FakeMCORollouts("worker").Rollouts, cnvPool: testEnv.FakeMCORollouts(cnvPool).Rollouts}
		beforeNodes := map[string][]int{"worker": testEnv.FakeMCORollouts("worker").NodeUpdates, cnvPool: testEnv.FakeMCORollouts(cnvPool).NodeUpdates}
		approvePlan(dedicatedcpus.Name)
		Eventually(func() *unstructured.Unstructured { return getObject(names.KubeletConfigs, "", dcKubelet) }).
			WithTimeout(30 * time.Second).WithPolling(50 * time.Millisecond).ShouldNot(BeNil())
		Expect(pausedByUs("worker")).To(BeTrue(), "worker is paused for the coalescing window when the KubeletConfig is written")
		Expect(pausedByUs(cnvPool)).To(BeTrue(), "worker-cnv, which renders the generated MachineConfig, is paused too")

		c := waitPhase(dedicatedcpus.Name, v1alpha1.PhaseCompleted, 120*time.Second)
		Expect(item(c, dcItem).State).To(Equal(v1alpha1.ItemStateCompleted))
		var rolled []string
		for _, pc := range item(c, dcItem).PoolConfigsBefore {
			rolled = append(rolled, pc.Pool)
		}
		Expect(rolled).To(Equal([]string{"worker", cnvPool}), "the rollout was followed on both pools")
		Expect(machineconfig.HasSource(getObject(mcpGVR, "", cnvPool), "status", "99-worker-generated-kubelet")).To(BeTrue())
		for _, pool := range []string{"worker", cnvPool} {
			now := testEnv.FakeMCORollouts(pool)
			Expect(now.Rollouts-before[pool]).To(Equal(1), "rollouts of pool %s", pool)
			Expect(now.NodeUpdates).To(HaveLen(3))
			for i := range now.NodeUpdates {
				was := 0
				if i < len(beforeNodes[pool]) {
					was = beforeNodes[pool][i]
				}
				Expect(now.NodeUpdates[i]-was).To(Equal(1), "node %d of pool %s rebooted once", i, pool)
			}
		}

		By("turned off: the Delete reboots both pools again and completes on both")
		_, err := advisor.AdvisorV1alpha1().VirtPlatformConfigs().Patch(suiteCtx, dedicatedcpus.Name, types.MergePatchType,
			[]byte(`{"spec":{"options":{"dedicatedCPUs":{"enabled":false}}}}`), metav1.PatchOptions{})
		Expect(err).NotTo(HaveOccurred())
		off := planItem(reviewedPlan(dedicatedcpus.Name), dcItem)
		Expect(off.Operation).To(Equal(v1alpha1.OperationDelete))
		Expect(poolNames(off)).To(Equal([]string{"worker (3 nodes)", "worker-cnv (3 nodes)"}))
		approvePlan(dedicatedcpus.Name)
		waitPhase(dedicatedcpus.Name, v1alpha1.PhaseCompleted, 120*time.Second)
		Expect(getObject(names.KubeletConfigs, "", dcKubelet)).To(BeNil())
		Expect(machineconfig.HasSource(getObject(mcpGVR, "", cnvPool), "status", "99-worker-generated-kubelet")).To(BeFalse())
	})
})
