package e2e

import (
	"fmt"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kubevirt/virt-advisor/test/env/fakemco"
)

// The fake MCO's node model against the real API: a pool that steps its
// Nodes moves them through the daemon's annotations, cordon and Ready
// condition, at most maxUnavailable at a time, and the failures a test
// injects after a reboot hold the pool as they would on a cluster.
var _ = Describe("the fake MCO stepping a pool's Nodes", func() {
	It("updates at most maxUnavailable nodes at a time, and a node left NotReady or Degraded after its reboot holds the pool", func() {
		const pool = "stepping"
		nodes := addSteppingPool(pool, 4, 2)

		By("a node left NotReady after its reboot: updated, unavailable, the pool not Updated")
		setNodeAnnotation(nodes[1], fakemco.NotReadyAfterRebootAnnotation, "true")
		before := poolSpecName(pool)
		most := rollOut(pool, "50-stepping-karg", before, nodes, func(g Gomega, p *unstructured.Unstructured) {
			g.Expect(nested(p.Object, "status", "updatedMachineCount")).To(BeEquivalentTo(4))
			g.Expect(nested(p.Object, "status", "readyMachineCount")).To(BeEquivalentTo(3))
			g.Expect(nested(p.Object, "status", "unavailableMachineCount")).To(BeEquivalentTo(1))
		})
		Expect(most).To(Equal(2), "maxUnavailable 2: two nodes at once, never more")
		Expect(nodeReady(nodes[1])).To(BeFalse())
		Expect(fakemco.ConditionStatus(getObject(mcpGVR, "", pool), "Updated")).To(Equal("False"))
		setNodeAnnotation(nodes[1], fakemco.NotReadyAfterRebootAnnotation, "")
		waitSettled(pool, 4)
		Expect(nodeReady(nodes[1])).To(BeTrue())

		By("a node Degraded after its reboot, maxUnavailable 1: the pool stops there, Degraded, until it is fixed")
		patchObject(mcpGVR, "", pool, `{"spec":{"maxUnavailable":1}}`)
		setNodeAnnotation(nodes[2], fakemco.DegradeAfterRebootAnnotation, "e2e: injected failure")
		before = poolSpecName(pool)
		most = rollOut(pool, "60-stepping-karg", before, nodes, func(g Gomega, p *unstructured.Unstructured) {
			g.Expect(nested(p.Object, "status", "degradedMachineCount")).To(BeEquivalentTo(1))
			g.Expect(nested(p.Object, "status", "updatedMachineCount")).To(BeEquivalentTo(2))
			g.Expect(fakemco.ConditionStatus(p, "NodeDegraded")).To(Equal("True"))
		})
		Expect(most).To(Equal(1))
		n := getNode(nodes[2])
		Expect(n.Annotations[fakemco.StateAnnotation]).To(Equal(fakemco.StateDegraded))
		Expect(n.Annotations[fakemco.ReasonAnnotation]).To(Equal("e2e: injected failure"))
		Expect(n.Spec.Unschedulable).To(BeTrue(), "a failed update leaves the node cordoned")
		Expect(getNode(nodes[3]).Annotations[fakemco.DesiredConfigAnnotation]).To(Equal(before), "no node after the degraded one is targeted")
		setNodeAnnotation(nodes[2], fakemco.DegradeAfterRebootAnnotation, "")
		waitSettled(pool, 4)
		for _, name := range nodes {
			n := getNode(name)
			Expect(n.Annotations[fakemco.CurrentConfigAnnotation]).To(Equal(poolSpecName(pool)), name)
			Expect(n.Spec.Unschedulable).To(BeFalse(), name)
		}
	})
})

// addSteppingPool creates a pool stepping n Nodes of its own, maxUnavailable
// at a time, 1 s per node, and removes it all when the spec ends.
func addSteppingPool(name string, n, maxUnavailable int) []string {
	GinkgoHelper()
	var nodes []string
	for i := range n {
		node := fmt.Sprintf("%s-%d", name, i)
		Expect(testEnv.CreateNode(suiteCtx, node, map[string]string{"node-role.kubernetes.io/" + name: ""})).To(Succeed())
		DeferCleanup(func() { _ = testEnv.DeleteNode(suiteCtx, node) })
		nodes = append(nodes, node)
	}
	addMachineConfig("00-"+name, name, nil)
	pool := &unstructured.Unstructured{Object: map[string]interface{}{
		"apiVersion": "machineconfiguration.openshift.io/v1", "kind": "MachineConfigPool",
		"metadata": map[string]interface{}{"name": name, "annotations": map[string]interface{}{
			fakemco.StepNodesAnnotation: "true", fakemco.StepTimeAnnotation: "1s"}},
		"spec": map[string]interface{}{"machineConfigSelector": roleSelector(name), "nodeSelector": nodeRole(name),
			"maxUnavailable": int64(maxUnavailable)},
	}}
	_, err := dyn().Resource(mcpGVR).Create(suiteCtx, pool, metav1.CreateOptions{})
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(func() { _ = dyn().Resource(mcpGVR).Delete(suiteCtx, name, metav1.DeleteOptions{}) })
	waitSettled(name, n)
	for _, node := range nodes {
		Expect(getNode(node).Annotations[fakemco.CurrentConfigAnnotation]).To(Equal(poolSpecName(name)), "the nodes are adopted on the pool's config")
	}
	return nodes
}

// addMachineConfig creates a MachineConfig of a role, removed when the spec
// ends.
func addMachineConfig(name, role string, kargs []interface{}) {
	GinkgoHelper()
	spec := map[string]interface{}{"config": map[string]interface{}{"ignition": map[string]interface{}{"version": "3.2.0"}}}
	if kargs != nil {
		spec = map[string]interface{}{"kernelArguments": kargs}
	}
	mc := &unstructured.Unstructured{Object: map[string]interface{}{
		"apiVersion": "machineconfiguration.openshift.io/v1", "kind": "MachineConfig",
		"metadata": map[string]interface{}{"name": name, "labels": map[string]interface{}{"machineconfiguration.openshift.io/role": role}},
		"spec":     spec,
	}}
	_, err := dyn().Resource(mcGVR).Create(suiteCtx, mc, metav1.CreateOptions{})
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(func() { _ = dyn().Resource(mcGVR).Delete(suiteCtx, name, metav1.DeleteOptions{}) })
}

// rollOut adds a MachineConfig to the pool and watches its nodes until held
// holds of the pool; it returns the most nodes seen unavailable (cordoned,
// NotReady or with an update pending) at once.
func rollOut(pool, mc, before string, nodes []string, held func(Gomega, *unstructured.Unstructured)) int {
	GinkgoHelper()
	addMachineConfig(mc, pool, []interface{}{"e2e=" + mc})
	most := 0
	Eventually(func(g Gomega) {
		// One list: the nodes as they all were at one instant (Nodes read
		// one by one may count a node done before the next one started).
		list, err := kube.CoreV1().Nodes().List(suiteCtx, metav1.ListOptions{LabelSelector: "node-role.kubernetes.io/" + pool})
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(list.Items).To(HaveLen(len(nodes)))
		unavailable := 0
		for i := range list.Items {
			n := &list.Items[i]
			if n.Spec.Unschedulable || !readyOf(n) || n.Annotations[fakemco.DesiredConfigAnnotation] != n.Annotations[fakemco.CurrentConfigAnnotation] {
				unavailable++
			}
		}
		most = max(most, unavailable)
		p := getObject(mcpGVR, "", pool)
		specName, _, _ := unstructured.NestedString(p.Object, "spec", "configuration", "name")
		g.Expect(specName).NotTo(Equal(before), "not rendered yet")
		held(g, p)
	}).WithTimeout(30 * time.Second).WithPolling(100 * time.Millisecond).Should(Succeed())
	// Held: it stays so.
	Consistently(func(g Gomega) { held(g, getObject(mcpGVR, "", pool)) }).WithTimeout(2 * time.Second).WithPolling(200 * time.Millisecond).Should(Succeed())
	return most
}

func poolSpecName(pool string) string {
	GinkgoHelper()
	name, _, _ := unstructured.NestedString(getObject(mcpGVR, "", pool).Object, "spec", "configuration", "name")
	return name
}

func getNode(name string) *corev1.Node {
	GinkgoHelper()
	n, err := kube.CoreV1().Nodes().Get(suiteCtx, name, metav1.GetOptions{})
	Expect(err).NotTo(HaveOccurred())
	return n
}

func readyOf(n *corev1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return true // no kubelet reports here: a Node without the condition counts as Ready
}

func nodeReady(name string) bool { return readyOf(getNode(name)) }

// setNodeAnnotation sets an annotation on a Node; "" removes it.
func setNodeAnnotation(node, key, value string) {
	GinkgoHelper()
	v := "null"
	if value != "" {
		v = fmt.Sprintf("%q", value)
	}
	_, err := kube.CoreV1().Nodes().Patch(suiteCtx, node, "application/merge-patch+json",
		[]byte(fmt.Sprintf(`{"metadata":{"annotations":{%q:%s}}}`, key, v)), metav1.PatchOptions{})
	Expect(err).NotTo(HaveOccurred())
}
