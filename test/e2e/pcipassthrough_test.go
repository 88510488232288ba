package e2e

import (
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubevirt/virt-advisor/pkg/apis/advisor/v1alpha1"
)

// pci-passthrough: the IOMMU kernel arguments of a pool's CPU vendor
// (docs/profiles/pci-passthrough.md), on a pool of its own.
var _ = Describe("pci-passthrough", func() {
	const (
		pp     = "pci-passthrough"
		ppItem = "configure-iommu"
		pool   = "e2e-pci"
		mcName = "50-e2e-pci-virt-advisor-pci-passthrough"
	)
	planned := func() v1alpha1.PlanItem {
		GinkgoHelper()
		var it v1alpha1.PlanItem
		Eventually(func(g Gomega) {
			it = planItem(getPlan(pp), ppItem)
			g.Expect(it.Error + it.Message).To(ContainSubstring("e2e-pci-1"))
		}).WithTimeout(20 * time.Second).Should(Succeed())
		GinkgoWriter.Printf("plan item message: %s\nerror: %s\ndiff:\n%s\n", it.Message, it.Error, it.Diff)
		return it
	}

	It("writes intel_iommu=on iommu=pt on an Intel pool and rolls it once per node to Completed", func() {
		addPool(pool, roleSelector(pool), nodeRole(pool), 2, 300*time.Millisecond, "00-"+pool)
		addNodes(pool, "", "GenuineIntel", "e2e-pci-0", "e2e-pci-1")
		DeferCleanup(func() { _ = dyn().Resource(mcGVR).Delete(suiteCtx, mcName, metav1.DeleteOptions{}) })
		before := testEnv.FakeMCORollouts(pool)
		configWith(pp, `{"profile":"pci-passthrough","options":{"pciPassthrough":{"pool":"e2e-pci"}}}`)
		it := planned()
		Expect(it.Error).To(BeEmpty())
		Expect(it.Message).To(ContainSubstring("MachineConfig '50-e2e-pci-virt-advisor-pci-passthrough' will be configured with kernel arguments intel_iommu=on iommu=pt for MachineConfigPool 'e2e-pci': its 2 node(s) (e2e-pci-0, e2e-pci-1) have CPU vendor GenuineIntel"))
		Expect(it.Diff).To(ContainSubstring("+  - intel_iommu=on"))
		Expect(it.Reboots).NotTo(BeEmpty())

		waitPhase(pp, v1alpha1.PhaseReviewRequired, 10*time.Second)
		approvePlan(pp)
		waitPhase(pp, v1alpha1.PhaseCompleted, 60*time.Second)
		mc := getObject(mcGVR, "", mcName)
		Expect(kernelArguments(mc)).To(Equal([]string{"intel_iommu=on", "iommu=pt"}))
		Expect(mc.GetLabels()).To(HaveKeyWithValue("machineconfiguration.openshift.io/role", pool))
		now := testEnv.FakeMCORollouts(pool)
		Expect(now.Rollouts - before.Rollouts).To(Equal(1))
		for i := range now.NodeUpdates {
			prev := 0
			if i < len(before.NodeUpdates) {
				prev = before.NodeUpdates[i]
			}
			Expect(now.NodeUpdates[i]-prev).To(Equal(1), "node %d rebooted once", i)
		}
	})

	It("plans iommu=pt alone on an AMD pool, whose IOMMU is on by default", func() {
		const pool = "e2e-pci-amd"
		addPool(pool, roleSelector(pool), nodeRole(pool), 2, 300*time.Millisecond, "00-"+pool)
		addNodes(pool, "", "AuthenticAMD", "e2e-pci-0", "e2e-pci-1")
		configWith(pp, `{"profile":"pci-passthrough","options":{"pciPassthrough":{"pool":"e2e-pci-amd"}}}`)
		it := planned()
		Expect(it.Error).To(BeEmpty())
		Expect(it.Message).To(ContainSubstring("kernel arguments iommu=pt for MachineConfigPool 'e2e-pci-amd': its 2 node(s) (e2e-pci-0, e2e-pci-1) have CPU vendor AuthenticAMD (the AMD IOMMU is on by default"))
		Expect(it.Diff).To(ContainSubstring("+  - iommu=pt"))
		Expect(it.Diff).NotTo(ContainSubstring("intel_iommu"))
	})

	It("refuses a pool of mixed vendors, naming the nodes, and writes nothing", func() {
		const pool = "e2e-pci-mixed"
		addPool(pool, roleSelector(pool), nodeRole(pool), 3, 300*time.Millisecond, "00-"+pool)
		addNodes(pool, "", "GenuineIntel", "e2e-pci-0", "e2e-pci-1")
		addNodes(pool, "", "AuthenticAMD", "e2e-pci-amd")
		mcsBefore := listNames(mcGVR)
		configWith(pp, `{"profile":"pci-passthrough","options":{"pciPassthrough":{"pool":"e2e-pci-mixed"}}}`)
		it := planned()
		Expect(it.Error).To(ContainSubstring("the nodes of MachineConfigPool 'e2e-pci-mixed' differ in CPU vendor: e2e-pci-0, e2e-pci-1 have GenuineIntel; e2e-pci-amd has AuthenticAMD"))
		Expect(listNames(mcGVR)).To(Equal(mcsBefore), "nothing written")
	})
})
