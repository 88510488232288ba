package e2e

import (
	"fmt"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/kubevirt/virt-advisor/pkg/apis/advisor/v1alpha1"
	"github.com/kubevirt/virt-advisor/test/env"
)

// vm-eviction-strategy: the HyperConverged's cluster-wide default
// evictionStrategy (docs/profiles/vm-eviction-strategy.md).
var _ = Describe("vm-eviction-strategy", Ordered, func() {
	const (
		ves    = "vm-eviction-strategy"
		esItem = "configure-eviction-strategy"
	)
	BeforeEach(func() { useHCO(hco117); resetCluster() })
	AfterEach(func() { useHCO(hco117); resetCluster() })

	It("refuses a strategy the HyperConverged does not know, with its field path (422)", func() {
		err := createRaw(ves, `{"profile":"vm-eviction-strategy","options":{"vmEvictionStrategy":{"strategy":"Migrate"}}}`)
		expectInvalid(err, "spec.options.vmEvictionStrategy.strategy", `Unsupported value: "Migrate"`)
	})

	for _, r := range []hcoRelease{hco117, hco120} {
		It(fmt.Sprintf("plans, writes and reports drift of evictionStrategy through %s, naming the VMs that follow it", r.name), func() {
			useHCO(r)
			withWorkerNodes()
			runVMIs(env.VMI{Namespace: "default", Name: "es-a", Node: "worker-0", Migratable: true, Memory: "1Gi"})
			hco := hcoGVRFor(r.version)

			configWith(ves, `{"profile":"vm-eviction-strategy","options":{"vmEvictionStrategy":{"strategy":"LiveMigrateIfPossible"}}}`)
			p := waitPlanThrough(ves, r.version)
			it := planItem(p, esItem)
			Expect(it.Error).To(BeEmpty())
			Expect(it.TargetRef.APIVersion).To(Equal("hco.kubevirt.io/" + r.version))
			Expect(it.Reboots).To(BeEmpty(), "a HyperConverged change reboots no pool")
			Expect(nested(desired(it), hcoPath(r.version, "evictionStrategy")...)).To(Equal("LiveMigrateIfPossible"))
			Expect(it.Message).To(ContainSubstring("1 running VM(s) without their own evictionStrategy are handled as LiveMigrateIfPossible: default/es-a"))
			GinkgoWriter.Printf("plan item message: %s\ndiff:\n%s\n", it.Message, it.Diff)

			waitPhase(ves, v1alpha1.PhaseReviewRequired, 10*time.Second)
			approvePlan(ves)
			waitPhase(ves, v1alpha1.PhaseCompleted, 30*time.Second)
			Expect(nested(getObject(hco, hcoNS, hcoName).Object, hcoPath(r.version, "evictionStrategy")...)).To(Equal("LiveMigrateIfPossible"))

			By("a hand edit of the strategy is drift")
			patchObject(hco, hcoNS, hcoName, hcoPatch(r.version, `{"evictionStrategy":"None"}`))
			c := waitPhase(ves, v1alpha1.PhaseDrifted, 5*time.Second)
			Expect(condition(c, "Drifted").Reason).To(Equal("DriftDetected"))
			Expect(item(c, esItem).Message).To(ContainSubstring("evictionStrategy"))
		})
	}
})
