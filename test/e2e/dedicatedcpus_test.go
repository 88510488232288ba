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
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/kubevirt/virt-advisor/pkg/apis/advisor/v1alpha1"
	"github.com/kubevirt/virt-advisor/pkg/machineconfig"
	"github.com/kubevirt/virt-advisor/pkg/profiles/dedicatedcpus"
	"github.com/kubevirt/virt-advisor/test/env"
	"github.com/kubevirt/virt-advisor/test/env/fakemco"
	"github.com/kubevirt/virt-advisor/test/names"
)

var kubeletConfigsGVR = names.KubeletConfigs

var nrtGVR = schema.GroupVersionResource{Group: "topology.node.k8s.io", Version: "v1alpha2", Resource: "noderesourcetopologies"}

const (
	cnvPool    = "worker-cnv"
	dcItem     = dedicatedcpus.ItemName
	dcKubelet  = dedicatedcpus.KubeletConfigName
	dcGenerate = "99-worker-cnv-generated-kubelet"
)

// addCNVPool makes pool worker-cnv (its pool label, as OpenShift sets it)
// for machines machines, rolled by the fake MCO.
func addCNVPool(machines int) {
	GinkgoHelper()
	pool := dedicatedcpus.Pool(cnvPool)
	pool.SetAnnotations(map[string]string{fakemco.MachinesAnnotation: fmt.Sprint(machines), fakemco.StepTimeAnnotation: "200ms"})
	// A pool another spec of this process made may still be going.
	_ = dyn().Resource(mcpGVR).Delete(suiteCtx, cnvPool, metav1.DeleteOptions{})
	Eventually(func() *unstructured.Unstructured { return getObject(mcpGVR, "", cnvPool) }).WithTimeout(30 * time.Second).Should(BeNil())
	_, err := dyn().Resource(mcpGVR).Create(suiteCtx, pool, metav1.CreateOptions{})
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(func() {
		// Our KubeletConfig first: the fake MCO removes its finalizer
		// while the pool it renders for still exists.
		_ = dyn().Resource(names.KubeletConfigs).Delete(suiteCtx, dcKubelet, metav1.DeleteOptions{})
		Eventually(func() *unstructured.Unstructured { return getObject(names.KubeletConfigs, "", dcKubelet) }).
			WithTimeout(30 * time.Second).Should(BeNil())
		_ = dyn().Resource(mcpGVR).Delete(suiteCtx, cnvPool, metav1.DeleteOptions{})
	})
	waitSettled(cnvPool, machines)
}

// addCNVNode creates a node of pool worker-cnv with cpus CPUs (SMT on) and,
// when zones are given, its NodeResourceTopology; both go when the spec
// ends.
func addCNVNode(name string, cpus int, zones ...int) {
	GinkgoHelper()
	if len(zones) > 0 {
		_, err := dyn().Resource(nrtGVR).Create(suiteCtx, dedicatedcpus.Topology(name, zones...), metav1.CreateOptions{})
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(func() { _ = dyn().Resource(nrtGVR).Delete(suiteCtx, name, metav1.DeleteOptions{}) })
	}
	n := dedicatedcpus.Node(name, cnvPool, cpus, true)
	status := n.Object["status"]
	created, err := dyn().Resource(nodeGVR).Create(suiteCtx, n, metav1.CreateOptions{})
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(func() { Expect(testEnv.DeleteNode(suiteCtx, name)).To(Succeed()) })
	created.Object["status"] = status
	_, err = dyn().Resource(nodeGVR).UpdateStatus(suiteCtx, created, metav1.UpdateOptions{})
	Expect(err).NotTo(HaveOccurred())
}

var nodeGVR = schema.GroupVersionResource{Version: "v1", Resource: "nodes"}

// cnvWorld is pool worker-cnv of three nodes with 64 CPUs in two NUMA
// zones, their NodeResourceTopologies served, and a VM on the first.
func cnvWorld() {
	GinkgoHelper()
	addCNVPool(3)
	for i := range 3 {
		addCNVNode(fmt.Sprintf("cnv-%d", i), 64, 32, 32)
	}
	runVMIs(env.VMI{Namespace: vmNS, Name: "vm-pinned", Node: "cnv-0", EvictionStrategy: "LiveMigrate", Migratable: true})
}

const dcSpec = `{"profile":"dedicated-cpus","options":{"dedicatedCPUs":{"pool":"worker-cnv"}}}`

var _ = Describe("dedicated-cpus", Label("kubeletconfig"), func() {
	BeforeEach(resetCluster)
	AfterEach(resetCluster)

	It("plans the KubeletConfig derived from the pool's NUMA zones with its reboots and VMs, applies it through the generated MachineConfig, reports drift, and prunes only its own", func() {
		cnvWorld()
		before := testEnv.FakeMCORollouts(cnvPool)
		configWith(dedicatedcpus.Name, dcSpec)
		p := reviewedPlan(dedicatedcpus.Name)
		it := planItem(p, dcItem)
		GinkgoWriter.Printf("plan item %s (%s %s):\n%s\n%s\n", it.Name, it.Operation, it.ImpactSeverity, it.Message, it.Diff)
		for _, r := range it.Reboots {
			GinkgoWriter.Printf("reboots: pool %s, %d nodes, %s (%s), drains %v: %s\n", r.Pool, r.Nodes, r.Disruption, r.DisruptionReason, r.Drains, r.VMSummary)
		}
		Expect(it.Error).To(BeEmpty())
		Expect(it.Operation).To(Equal(v1alpha1.OperationCreate))
		Expect(it.Message).To(ContainSubstring("reservedSystemCPUs 0,16,32,48: 1 core per NUMA zone with its SMT sibling, from 3 nodes with 64 CPUs in 2 NUMA zones (CPU numbering assumed: cores zone by zone, SMT siblings at +32)"))
		Expect(it.Message).To(ContainSubstring("reservedMemory 562Mi on NUMA node 0, 562Mi on NUMA node 1: systemReserved 512Mi + kubeReserved 512Mi + evictionHard memory.available 100Mi"))
		Expect(it.Message).To(ContainSubstring("the kubelet's CPU and memory manager state is reset on these nodes, which are drained and rebooted"))
		Expect(it.Diff).To(And(ContainSubstring(`reservedSystemCPUs: 0,16,32,48`), ContainSubstring("cpuManagerPolicy: static"), ContainSubstring("numaNode: 1")))
		Expect(it.Reboots).To(HaveLen(1))
		Expect(it.Reboots[0]).To(And(HaveField("Pool", cnvPool), HaveField("Disruption", v1alpha1.NodeDisruptionReboot), HaveField("Drains", true)))
		Expect(fates(it)).To(Equal([]string{vmNS + "/vm-pinned on cnv-0: LiveMigrate"}))
		Expect(p.Status.Warnings).To(ContainElement(HavePrefix("item '" + dcItem + "': the kubelet's CPU manager state is reset on the nodes of MachineConfigPool 'worker-cnv'")))
		GinkgoWriter.Printf("warnings: %q\n", p.Status.Warnings)

		approvePlan(dedicatedcpus.Name)
		c := waitPhase(dedicatedcpus.Name, v1alpha1.PhaseCompleted, 90*time.Second)
		Expect(item(c, dcItem).State).To(Equal(v1alpha1.ItemStateCompleted))
		kc := getObject(names.KubeletConfigs, "", dcKubelet)
		Expect(kc.GetLabels()).To(HaveKeyWithValue("advisor.kubevirt.io/managed-by", dedicatedcpus.Name))
		Expect(getObject(mcGVR, "", dcGenerate)).NotTo(BeNil(), "the fake MCO rendered it")
		now := testEnv.FakeMCORollouts(cnvPool)
		Expect(now.Rollouts - before.Rollouts).To(Equal(1))
		Expect(len(now.NodeUpdates)).To(Equal(3))
		for i := range now.NodeUpdates {
			was := 0
			if i < len(before.NodeUpdates) {
				was = before.NodeUpdates[i]
			}
			Expect(now.NodeUpdates[i]-was).To(Equal(1), "node %d rebooted once", i)
		}

		By("a hand edit of cpuManagerPolicy is drift")
		patchObject(names.KubeletConfigs, "", dcKubelet, `{"spec":{"kubeletConfig":{"cpuManagerPolicy":"none"}}}`)
		c = waitPhase(dedicatedcpus.Name, v1alpha1.PhaseDrifted, 30*time.Second)
		Expect(item(c, dcItem).Message).To(ContainSubstring("spec.kubeletConfig"))

		By("someone else's KubeletConfig stays when ours is turned off")
		other := kubeletConfigObj("e2e-other-kubelet", map[string]interface{}{"maxPods": int64(300)})
		other.Object["spec"].(map[string]interface{})["machineConfigPoolSelector"] = map[string]interface{}{"matchLabels": map[string]interface{}{machineconfig.PoolLabelPrefix + cnvPool: ""}}
		_, err := dyn().Resource(names.KubeletConfigs).Create(suiteCtx, other, metav1.CreateOptions{})
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(func() {
			_ = dyn().Resource(names.KubeletConfigs).Delete(suiteCtx, "e2e-other-kubelet", metav1.DeleteOptions{})
		})

		// An option change of the same config: it recorded that it created
		// the KubeletConfig (the MachineConfig operator writes to it too).
		_, err = advisor.AdvisorV1alpha1().VirtPlatformConfigs().Patch(suiteCtx, dedicatedcpus.Name, types.MergePatchType,
			[]byte(`{"spec":{"options":{"dedicatedCPUs":{"enabled":false}}}}`), metav1.PatchOptions{})
		Expect(err).NotTo(HaveOccurred())
		p = reviewedPlan(dedicatedcpus.Name)
		off := planItem(p, dcItem)
		GinkgoWriter.Printf("turned off: %s %s: %s\n", off.Name, off.Operation, off.Message)
		Expect(off.Operation).To(Equal(v1alpha1.OperationDelete))
		Expect(off.Reboots).To(HaveLen(1))
		approvePlan(dedicatedcpus.Name)
		waitPhase(dedicatedcpus.Name, v1alpha1.PhaseCompleted, 90*time.Second)
		Expect(getObject(names.KubeletConfigs, "", dcKubelet)).To(BeNil())
		Expect(getObject(names.KubeletConfigs, "", "e2e-other-kubelet")).NotTo(BeNil(), "only ours is pruned")
	})

	It("refuses a pool whose nodes differ, naming the node", func() {
		addCNVPool(3)
		addCNVNode("cnv-0", 64, 32, 32)
		addCNVNode("cnv-1", 64, 32, 32)
		addCNVNode("cnv-odd", 48, 24, 24)
		configWith(dedicatedcpus.Name, dcSpec)
		Eventually(func() string { return planItem(getPlan(dedicatedcpus.Name), dcItem).Error }).WithTimeout(20 * time.Second).
			Should(Equal("the nodes of MachineConfigPool 'worker-cnv' differ in CPU count: cnv-0, cnv-1 have 64; cnv-odd has 48; split the pool so that its nodes are alike, or set the value explicitly"))
		Expect(getObject(names.KubeletConfigs, "", dcKubelet)).To(BeNil())
	})

	It("asks for no review when a node like the others joins the pool, and for one when a different node joins", func() {
		cnvWorld()
		configWith(dedicatedcpus.Name, dcSpec)
		reviewedPlan(dedicatedcpus.Name)
		approvePlan(dedicatedcpus.Name)
		c := waitPhase(dedicatedcpus.Name, v1alpha1.PhaseCompleted, 90*time.Second)
		applied := string(item(c, dcItem).DesiredState.Raw)

		By("a fourth node with the same hardware: nothing to review (the next step shows that a node's arrival is looked at)")
		addCNVNode("cnv-3", 64, 32, 32)
		Consistently(func(g Gomega) {
			c := getConfig(dedicatedcpus.Name)
			g.Expect(c.Status.Phase).To(Equal(v1alpha1.PhaseCompleted))
			g.Expect(string(item(c, dcItem).DesiredState.Raw)).To(Equal(applied))
		}).WithTimeout(5 * time.Second).WithPolling(500 * time.Millisecond).Should(Succeed())

		By("a fifth node with 96 CPUs: the pool no longer derives one value, a new review")
		addCNVNode("cnv-4", 96, 48, 48)
		Eventually(func(g Gomega) {
			c := getConfig(dedicatedcpus.Name)
			g.Expect(c.Status.Phase).To(Or(Equal(v1alpha1.PhaseDrifted), Equal(v1alpha1.PhaseReviewRequired)))
			g.Expect(item(c, dcItem).Message).To(ContainSubstring("cnv-4 has 96"))
		}).WithTimeout(30 * time.Second).WithPolling(200 * time.Millisecond).Should(Succeed())
		Expect(testEnv.DeleteNode(suiteCtx, "cnv-4")).To(Succeed())

		By("all nodes replaced by 96-CPU ones: the derived values change, input drift asks for a review")
		Expect(testEnv.DeleteNode(suiteCtx, "cnv-3")).To(Succeed())
		for i := range 3 {
			patchNodeCPUs(fmt.Sprintf("cnv-%d", i), 96)
			patchObject(nrtGVR, "", fmt.Sprintf("cnv-%d", i), `{"zones":[{"name":"node-0","type":"Node","resources":[{"name":"cpu","capacity":"48","allocatable":"48","available":"48"},{"name":"memory","capacity":"128Gi","allocatable":"125Gi","available":"125Gi"}]},{"name":"node-1","type":"Node","resources":[{"name":"cpu","capacity":"48","allocatable":"48","available":"48"},{"name":"memory","capacity":"128Gi","allocatable":"125Gi","available":"125Gi"}]}]}`)
		}
		c = waitPhase(dedicatedcpus.Name, v1alpha1.PhaseReviewRequired, 30*time.Second)
		Expect(condition(c, "InputDependencyDrift").Message).To(Equal("Input dependency changed: the nodes of the pool changed: reservedSystemCPUs 0,16,32,48 -> 0,24,48,72"))
		Expect(getObject(names.KubeletConfigs, "", dcKubelet)).NotTo(BeNil())
	})

	It("is written under the shipped RBAC and admission policy, which refuse any other KubeletConfig and any other kubelet setting", func() {
		expectShippedPolicy()
		cfg, err := clientcmd.BuildConfigFromFlags("", testEnv.AdvisorKubeconfig)
		Expect(err).NotTo(HaveOccurred())
		server := dynamic.NewForConfigOrDie(cfg)
		byPolicy := func(err error, what, message string) {
			GinkgoHelper()
			Expect(err).To(HaveOccurred(), what)
			Expect(err.Error()).To(And(MatchRegexp(deniedByPolicy), ContainSubstring(message)), what)
		}
		evil := kubeletConfigObj("99-evil-kubelet", map[string]interface{}{"cpuManagerPolicy": "static"})
		_, err = server.Resource(names.KubeletConfigs).Create(suiteCtx, evil, metav1.CreateOptions{})
		byPolicy(err, "another KubeletConfig", "writes only the machineconfiguration.openshift.io/kubeletconfigs virt-advisor-dedicated-cpus, not 99-evil-kubelet")
		ours := kubeletConfigObj(dcKubelet, map[string]interface{}{"cpuManagerPolicy": "static", "maxPods": int64(2000)})
		_, err = server.Resource(names.KubeletConfigs).Create(suiteCtx, ours, metav1.CreateOptions{})
		byPolicy(err, "a kubelet setting no profile writes", "with the values dedicated-cpus writes")
		Expect(err.Error()).To(ContainSubstring("maxPods"))
		reserved := func(ids ...int64) []interface{} {
			var out []interface{}
			for _, id := range ids {
				out = append(out, map[string]interface{}{"numaNode": id, "limits": map[string]interface{}{"memory": "562Mi"}})
			}
			return out
		}
		_, err = server.Resource(names.KubeletConfigs).Create(suiteCtx, kubeletConfigObj(dcKubelet, map[string]interface{}{"cpuManagerPolicy": "static", "reservedMemory": reserved(1, 1)}),
			metav1.CreateOptions{})
		byPolicy(err, "reservedMemory naming a NUMA node twice", "sets reservedMemory of KubeletConfig virt-advisor-dedicated-cpus with each NUMA node once")
		_, err = server.Resource(names.KubeletConfigs).Create(suiteCtx, kubeletConfigObj(dcKubelet, map[string]interface{}{"cpuManagerPolicy": "static", "reservedMemory": reserved(0, 1)}),
			metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		Expect(err).NotTo(HaveOccurred(), "the control: reservedMemory of two NUMA nodes is admitted")
		_, err = server.Resource(names.KubeletConfigs).Create(suiteCtx, kubeletConfigObj(dcKubelet, map[string]interface{}{"cpuManagerPolicy": "static"}),
			metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		Expect(err).NotTo(HaveOccurred(), "the control: what the profile writes is admitted")
		Expect(getObject(names.KubeletConfigs, "", "99-evil-kubelet")).To(BeNil())

		By("the profile's whole way as the server's service account")
		forbidden := func() int { return strings.Count(testEnv.Advisor().LogTail(1<<20), "is forbidden") }
		forbiddenBefore := forbidden()
		cnvWorld()
		configWith(dedicatedcpus.Name, dcSpec)
		reviewedPlan(dedicatedcpus.Name)
		approvePlan(dedicatedcpus.Name)
		waitPhase(dedicatedcpus.Name, v1alpha1.PhaseCompleted, 90*time.Second)
		Expect(forbidden()).To(Equal(forbiddenBefore), "the server never lacked a permission, nor was denied by the policy")
	})

	It("approved 5 s after hugepages for the same pool, reboots each node once for both (the coalescing pause covers the KubeletConfig's render)", func() {
		startAdvisorWithWindow("window-10-cnv", "10s")
		cnvWorld()
		const hpMC = "50-" + cnvPool + "-virt-advisor-hugepages"
		DeferCleanup(func() { _ = dyn().Resource(mcGVR).Delete(suiteCtx, hpMC, metav1.DeleteOptions{}) })
		configWith("hugepages", `{"profile":"hugepages","options":{"hugepages":{"pool":"worker-cnv","pageSize":"1G","memoryPercent":25}}}`)
		configWith(dedicatedcpus.Name, dcSpec)
		Expect(planItem(reviewedPlan("hugepages"), "configure-hugepages").Error).To(BeEmpty())
		Expect(planItem(reviewedPlan(dedicatedcpus.Name), dcItem).Error).To(BeEmpty())
		before := testEnv.FakeMCORollouts(cnvPool)

		approvePlan("hugepages")
		time.Sleep(5 * time.Second)
		approvePlan(dedicatedcpus.Name)
		waitPhase("hugepages", v1alpha1.PhaseCompleted, 90*time.Second)
		waitPhase(dedicatedcpus.Name, v1alpha1.PhaseCompleted, 90*time.Second)
		Expect(getObject(mcGVR, "", dcGenerate)).NotTo(BeNil(), "the fake MCO rendered the KubeletConfig")

		now := testEnv.FakeMCORollouts(cnvPool)
		Expect(now.Rollouts-before.Rollouts).To(Equal(1), "rollouts of pool %s", cnvPool)
		Expect(now.NodeUpdates).To(HaveLen(3))
		for i := range now.NodeUpdates {
			was := 0
			if i < len(before.NodeUpdates) {
				was = before.NodeUpdates[i]
			}
			Expect(now.NodeUpdates[i]-was).To(Equal(1), "node %d rebooted once for both changes", i)
		}
	})

	It("refuses worker without allowAllWorkers and unknown policies with their field paths (422)", func() {
		expectInvalid(createRaw(dedicatedcpus.Name, `{"profile":"dedicated-cpus","options":{"dedicatedCPUs":{"pool":"worker"}}}`),
			"spec.options.dedicatedCPUs.pool", "allowAllWorkers: true")
		expectInvalid(createRaw(dedicatedcpus.Name, `{"profile":"dedicated-cpus","options":{"dedicatedCPUs":{"pool":"worker-cnv","topologyManagerPolicy":"none"}}}`),
			"spec.options.dedicatedCPUs.topologyManagerPolicy", `"single-numa-node"`)
		expectInvalid(createRaw(dedicatedcpus.Name, `{"profile":"dedicated-cpus","options":{"dedicatedCPUs":{"pool":"worker-cnv","reservedCoresPerZone":9}}}`),
			"spec.options.dedicatedCPUs.reservedCoresPerZone", "between 1 and 8")
		expectInvalid(createRaw(dedicatedcpus.Name, `{"profile":"dedicated-cpus","options":{"dedicatedCPUs":{}}}`),
			"spec.options.dedicatedCPUs.pool", "name the MachineConfigPool")
	})
})

// patchNodeCPUs sets a node's CPU capacity and allocatable.
func patchNodeCPUs(name string, cpus int) {
	GinkgoHelper()
	Eventually(func() error {
		n, err := get(nodeGVR, "", name)
		if err != nil {
			return err
		}
		_ = unstructured.SetNestedField(n.Object, fmt.Sprint(cpus), "status", "capacity", "cpu")
		_ = unstructured.SetNestedField(n.Object, fmt.Sprint(cpus), "status", "allocatable", "cpu")
		_, err = dyn().Resource(nodeGVR).UpdateStatus(suiteCtx, n, metav1.UpdateOptions{})
		return err
	}).WithTimeout(10 * time.Second).Should(Succeed())
}
