package e2e

import (
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kubevirt/virt-advisor/pkg/machineconfig"
	"github.com/kubevirt/virt-advisor/test/env/fakemco"
	"github.com/kubevirt/virt-advisor/test/names"
)

// kubeletConfigObj is a KubeletConfig for the worker pool, selected by
// the pool's own label, as a user or a profile writes it.
func kubeletConfigObj(name string, kubelet map[string]interface{}) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]interface{}{
		"apiVersion": "machineconfiguration.openshift.io/v1", "kind": "KubeletConfig",
		"metadata": map[string]interface{}{"name": name},
		"spec": map[string]interface{}{
			"machineConfigPoolSelector": map[string]interface{}{"matchLabels": map[string]interface{}{machineconfig.PoolLabelPrefix + "worker": ""}},
			"kubeletConfig":             kubelet,
		},
	}}
}

// lastKubeletCondition is the type and message of a KubeletConfig's last
// condition (the MachineConfig operator appends one per sync).
func lastKubeletCondition(g Gomega, name string) (string, string) {
	kc, err := get(names.KubeletConfigs, "", name)
	g.Expect(err).NotTo(HaveOccurred())
	conds, _, _ := unstructured.NestedSlice(kc.Object, "status", "conditions")
	g.Expect(conds).NotTo(BeEmpty())
	last := conds[len(conds)-1].(map[string]interface{})
	msg, _ := last["message"].(string)
	return last["type"].(string), msg
}

// The test environment's MachineConfig operator renders KubeletConfigs as
// the real kubelet-config controller does, so that KubeletConfig items
// roll pools there as they would on OpenShift.
var _ = Describe("KubeletConfigs in the fake MachineConfig operator", Label("kubeletconfig"), func() {
	It("renders one into 99-<pool>-generated-kubelet, a second into -1, rolls the pool once per node for each, and removes them with the KubeletConfigs", func() {
		first, second := "e2e-kubelet-cpu", "e2e-kubelet-pods"
		DeferCleanup(func() {
			for _, n := range []string{first, second} {
				_ = dyn().Resource(names.KubeletConfigs).Delete(suiteCtx, n, metav1.DeleteOptions{})
			}
			waitPoolSettled("00-worker")
		})
		// An earlier spec's rollout may still be walking the nodes: its
		// updates would be counted as this one's.
		waitPoolSettled("00-worker")
		before := testEnv.FakeMCORollouts("worker")
		_, err := dyn().Resource(names.KubeletConfigs).Create(suiteCtx, kubeletConfigObj(first, map[string]interface{}{"cpuManagerPolicy": "static", "reservedSystemCPUs": "0,32"}), metav1.CreateOptions{})
		Expect(err).NotTo(HaveOccurred())
		gen := machineconfig.GeneratedKubeletName("worker", "")
		Eventually(func(g Gomega) {
			typ, msg := lastKubeletCondition(g, first)
			g.Expect(typ).To(Equal(machineconfig.KubeletConfigSuccess), msg)
		}).WithTimeout(20 * time.Second).WithPolling(200 * time.Millisecond).Should(Succeed())
		kc, err := get(names.KubeletConfigs, "", first)
		Expect(err).NotTo(HaveOccurred())
		Expect(kc.GetAnnotations()).To(HaveKeyWithValue(machineconfig.MCNameSuffixAnnotation, ""))
		Expect(kc.GetFinalizers()).To(ConsistOf(gen))
		mc, err := get(mcGVR, "", gen)
		Expect(err).NotTo(HaveOccurred())
		Expect(mc.GetLabels()).To(HaveKeyWithValue(machineconfig.RoleLabel, "worker"))
		Expect(mc.GetOwnerReferences()).To(HaveLen(1))
		Expect(mc.GetOwnerReferences()[0].UID).To(Equal(kc.GetUID()))
		waitPoolSettled("00-worker", gen)
		rollouts, nodes := rolloutsSince(before)
		Expect(rollouts).To(Equal(1))
		Expect(nodes).To(Equal([]int{1, 1, 1}))

		// A second KubeletConfig of the pool gets the next suffix.
		_, err = dyn().Resource(names.KubeletConfigs).Create(suiteCtx, kubeletConfigObj(second, map[string]interface{}{"maxPods": int64(500)}), metav1.CreateOptions{})
		Expect(err).NotTo(HaveOccurred())
		Eventually(func(g Gomega) {
			kc, err := get(names.KubeletConfigs, "", second)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(kc.GetAnnotations()).To(HaveKeyWithValue(machineconfig.MCNameSuffixAnnotation, "1"))
		}).WithTimeout(20 * time.Second).WithPolling(200 * time.Millisecond).Should(Succeed())
		waitPoolSettled("00-worker", gen, gen+"-1")

		// Deleting them deletes what they were rendered into (their
		// finalizers hold them until then).
		for _, n := range []string{first, second} {
			Expect(dyn().Resource(names.KubeletConfigs).Delete(suiteCtx, n, metav1.DeleteOptions{})).To(Succeed())
		}
		Eventually(func(g Gomega) {
			for _, n := range []string{gen, gen + "-1"} {
				_, err := dyn().Resource(mcGVR).Get(suiteCtx, n, metav1.GetOptions{})
				g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "MachineConfig %s still there", n)
			}
			for _, n := range []string{first, second} {
				_, err := dyn().Resource(names.KubeletConfigs).Get(suiteCtx, n, metav1.GetOptions{})
				g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "KubeletConfig %s still there", n)
			}
		}).WithTimeout(20 * time.Second).WithPolling(200 * time.Millisecond).Should(Succeed())
		waitPoolSettled("00-worker")
	})

	It("reports Failure, renders nothing, for a field the kubelet-config controller refuses and for a selector that matches no pool", func() {
		refused, nowhere := "e2e-kubelet-refused", "e2e-kubelet-nowhere"
		DeferCleanup(func() {
			for _, n := range []string{refused, nowhere} {
				_ = dyn().Resource(names.KubeletConfigs).Delete(suiteCtx, n, metav1.DeleteOptions{})
			}
		})
		before := testEnv.FakeMCORollouts("worker")
		_, err := dyn().Resource(names.KubeletConfigs).Create(suiteCtx, kubeletConfigObj(refused, map[string]interface{}{"cgroupDriver": "cgroupfs"}), metav1.CreateOptions{})
		Expect(err).NotTo(HaveOccurred())
		obj := kubeletConfigObj(nowhere, map[string]interface{}{"maxPods": int64(300)})
		_ = unstructured.SetNestedStringMap(obj.Object, map[string]string{machineconfig.PoolLabelPrefix + "no-such-pool": ""}, "spec", "machineConfigPoolSelector", "matchLabels")
		_, err = dyn().Resource(names.KubeletConfigs).Create(suiteCtx, obj, metav1.CreateOptions{})
		Expect(err).NotTo(HaveOccurred())
		Eventually(func(g Gomega) {
			typ, msg := lastKubeletCondition(g, refused)
			g.Expect(typ).To(Equal(machineconfig.KubeletConfigFailure))
			g.Expect(msg).To(Equal("Error: KubeletConfiguration: cgroupDriver is not allowed to be set, but contains: cgroupfs"))
			typ, msg = lastKubeletCondition(g, nowhere)
			g.Expect(typ).To(Equal(machineconfig.KubeletConfigFailure))
			g.Expect(msg).To(Equal("Error: KubeletConfig " + nowhere + " does not match any MachineConfigPools"))
		}).WithTimeout(20 * time.Second).WithPolling(200 * time.Millisecond).Should(Succeed())
		_, err = dyn().Resource(mcGVR).Get(suiteCtx, machineconfig.GeneratedKubeletName("worker", ""), metav1.GetOptions{})
		Expect(apierrors.IsNotFound(err)).To(BeTrue(), "a refused KubeletConfig was rendered")
		Consistently(func() fakemco.Rollouts { return testEnv.FakeMCORollouts("worker") }).WithTimeout(time.Second).Should(Equal(before))
	})
})
