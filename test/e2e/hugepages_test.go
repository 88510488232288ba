package e2e

import (
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kubevirt/virt-advisor/pkg/apis/advisor/v1alpha1"
	"github.com/kubevirt/virt-advisor/pkg/hardware"
)

// nodeCacheTimeout is how long a plan may take to see Nodes just created:
// the server reads them from its cache, whose watch may be a reflector
// backoff behind a kube-apiserver restarted by an earlier spec of the same
// process (its retries back off to 30 s, jittered up to twice that; CI on
// b443f4e failed two of these specs at 20 s, started 24 s after one).
const nodeCacheTimeout = 90 * time.Second

// addNodes creates Nodes of a role with this allocatable memory (and
// capacity) and, when vendor is set, node-feature-discovery's CPU vendor
// label; they are deleted after the spec.
func addNodes(role, memory, vendor string, names ...string) {
	GinkgoHelper()
	for _, n := range names {
		labels := map[string]string{"node-role.kubernetes.io/" + role: ""}
		if vendor != "" {
			labels[hardware.VendorLabel] = vendor
		}
		Expect(testEnv.CreateNode(suiteCtx, n, labels)).To(Succeed())
		DeferCleanup(func() { Expect(testEnv.DeleteNode(suiteCtx, n)).To(Succeed()) })
		if memory == "" {
			continue
		}
		Eventually(func() error {
			node, err := kube.CoreV1().Nodes().Get(suiteCtx, n, metav1.GetOptions{})
			if err != nil {
				return err
			}
			q := resource.MustParse(memory)
			node.Status.Capacity = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("16"), corev1.ResourceMemory: q}
			node.Status.Allocatable = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("16"), corev1.ResourceMemory: q}
			_, err = kube.CoreV1().Nodes().UpdateStatus(suiteCtx, node, metav1.UpdateOptions{})
			return err
		}).WithTimeout(10 * time.Second).Should(Succeed())
	}
}

// kernelArguments are a MachineConfig's spec.kernelArguments.
func kernelArguments(mc *unstructured.Unstructured) []string {
	args, _, _ := unstructured.NestedStringSlice(mc.Object, "spec", "kernelArguments")
	return args
}

// hugepages: boot-time huge pages on the nodes of a pool
// (docs/profiles/hugepages.md), on a pool of its own.
var _ = Describe("hugepages", func() {
	const (
		hp     = "hugepages"
		hpItem = "configure-hugepages"
		pool   = "e2e-hp"
		mcName = "50-e2e-hp-virt-advisor-hugepages"
	)

	It("plans the kernel arguments with the count per node and what is left, rolls the pool once per node to Completed, and reports a hand edit as drift", func() {
		addPool(pool, roleSelector(pool), nodeRole(pool), 2, 300*time.Millisecond, "00-"+pool)
		addNodes(pool, "64Gi", "", "e2e-hp-0", "e2e-hp-1")
		DeferCleanup(func() { _ = dyn().Resource(mcGVR).Delete(suiteCtx, mcName, metav1.DeleteOptions{}) })
		before := testEnv.FakeMCORollouts(pool)

		configWith(hp, `{"profile":"hugepages","options":{"hugepages":{"pool":"e2e-hp","pageSize":"1G","memoryPercent":50}}}`)
		var it v1alpha1.PlanItem
		Eventually(func(g Gomega) {
			it = planItem(getPlan(hp), hpItem)
			g.Expect(it.Error).To(BeEmpty())
			g.Expect(it.Message).To(ContainSubstring("e2e-hp-1"))
		}).WithTimeout(nodeCacheTimeout).Should(Succeed())
		GinkgoWriter.Printf("plan item message: %s\ndiff:\n%s\n", it.Message, it.Diff)
		Expect(it.TargetRef.Name).To(Equal(mcName))
		Expect(it.Diff).To(ContainSubstring("+  - default_hugepagesz=1G"))
		Expect(it.Diff).To(ContainSubstring("+  - hugepagesz=1G"))
		Expect(it.Diff).To(ContainSubstring("+  - hugepages=32"))
		Expect(it.Message).To(ContainSubstring("MachineConfig '50-e2e-hp-virt-advisor-hugepages' will be configured with kernel arguments default_hugepagesz=1G hugepagesz=1G hugepages=32 for MachineConfigPool 'e2e-hp'"))
		Expect(it.Message).To(ContainSubstring("e2e-hp-0 32 x 1G of 64.0 GiB, 32.0 GiB left for ordinary pods and VMs"))
		Expect(it.Message).To(ContainSubstring("e2e-hp-1 32 x 1G of 64.0 GiB, 32.0 GiB left for ordinary pods and VMs"))
		Expect(it.Reboots).NotTo(BeEmpty(), "a kernel argument reboots the pool's nodes")
		Expect(it.Reboots[0].Pool).To(Equal(pool))

		waitPhase(hp, v1alpha1.PhaseReviewRequired, 10*time.Second)
		approvePlan(hp)
		waitPhase(hp, v1alpha1.PhaseCompleted, 60*time.Second)
		mc := getObject(mcGVR, "", mcName)
		Expect(kernelArguments(mc)).To(Equal([]string{"default_hugepagesz=1G", "hugepagesz=1G", "hugepages=32"}))
		Expect(mc.GetLabels()).To(HaveKeyWithValue("machineconfiguration.openshift.io/role", pool))
		now := testEnv.FakeMCORollouts(pool)
		Expect(now.Rollouts-before.Rollouts).To(Equal(1), "one rollout")
		for i := range now.NodeUpdates {
			prev := 0
			if i < len(before.NodeUpdates) {
				prev = before.NodeUpdates[i]
			}
			Expect(now.NodeUpdates[i]-prev).To(Equal(1), "node %d rebooted once", i)
		}

		By("a hand edit of the count is drift")
		patchObject(mcGVR, "", mcName, `{"spec":{"kernelArguments":["default_hugepagesz=1G","hugepagesz=1G","hugepages=60"]}}`)
		c := waitPhase(hp, v1alpha1.PhaseDrifted, 10*time.Second)
		Expect(condition(c, "Drifted").Reason).To(Equal("DriftDetected"))
	})

	It("refuses a share the options alone say leaves too little (422), and a share that leaves less than the floor on these nodes with the numbers", func() {
		By("kubectl explain describes the options")
		out := explain("virtplatformconfig.spec.options.hugepages")
		for _, f := range []string{"pool", "pageSize", "memoryPercent", "floorGiB"} {
			Expect(out).To(ContainSubstring(f))
		}
		Expect(strings.Join(strings.Fields(out), " ")).To(ContainSubstring("beyond the kubelet's reservations"))

		err := createRaw(hp, `{"profile":"hugepages","options":{"hugepages":{"pool":"e2e-hp","memoryPercent":95,"pageSize":"1Gi","floorGiB":0}}}`)
		expectInvalid(err, "spec.options.hugepages.memoryPercent", "must be between 1 and 90, inclusive")
		expectInvalid(err, "spec.options.hugepages.pageSize", `supported values: "1G", "2M"`)
		expectInvalid(err, "spec.options.hugepages.floorGiB", "must be between 1 and 1024, inclusive")
		err = createRaw(hp, `{"profile":"hugepages","options":{"hugepages":{"pool":"Bad_Pool"}}}`)
		expectInvalid(err, "spec.options.hugepages.pool", "Bad_Pool")

		const pool = "e2e-hp-floor"
		addPool(pool, roleSelector(pool), nodeRole(pool), 1, 300*time.Millisecond, "00-"+pool)
		addNodes(pool, "32Gi", "", "e2e-hp-small")
		mcsBefore := listNames(mcGVR)
		configWith(hp, `{"profile":"hugepages","options":{"hugepages":{"pool":"e2e-hp-floor","memoryPercent":90,"floorGiB":8}}}`)
		var it v1alpha1.PlanItem
		Eventually(func(g Gomega) {
			it = planItem(getPlan(hp), hpItem)
			g.Expect(it.Error).To(ContainSubstring("e2e-hp-small"))
		}).WithTimeout(nodeCacheTimeout).Should(Succeed())
		GinkgoWriter.Printf("plan item error: %s\n", it.Error)
		Expect(it.Error).To(ContainSubstring("90% of node 'e2e-hp-small''s 32.0 GiB is 28 1G pages, leaving 4.0 GiB for ordinary pods and VMs beyond the kubelet's reservations, less than the floor of 8 GiB (options.hugepages.floorGiB): lower options.hugepages.memoryPercent to at most 75"))
		Expect(listNames(mcGVR)).To(Equal(mcsBefore), "nothing written")
	})

	It("refuses a pool whose nodes differ in memory, naming them", func() {
		const pool = "e2e-hp-mixed"
		addPool(pool, roleSelector(pool), nodeRole(pool), 3, 300*time.Millisecond, "00-"+pool)
		addNodes(pool, "64Gi", "", "e2e-hp-a", "e2e-hp-b")
		addNodes(pool, "128Gi", "", "e2e-hp-big")
		configWith(hp, `{"profile":"hugepages","options":{"hugepages":{"pool":"e2e-hp-mixed"}}}`)
		Eventually(func(g Gomega) {
			it := planItem(getPlan(hp), hpItem)
			g.Expect(it.Error).To(ContainSubstring("the nodes of MachineConfigPool 'e2e-hp-mixed' differ in allocatable memory: e2e-hp-a, e2e-hp-b have 64 GiB; e2e-hp-big has 128 GiB"))
		}).WithTimeout(20 * time.Second).Should(Succeed())
		Expect(strings.Contains(strings.Join(listNames(mcGVR), ","), "virt-advisor-hugepages")).To(BeFalse())
	})
})
