package e2e

import (
	"fmt"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kubevirt/virt-advisor/pkg/apis/advisor/v1alpha1"
	"github.com/kubevirt/virt-advisor/test/env"
)

// live-migration-limits: the HyperConverged liveMigrationConfig derived from
// the schedulable Nodes and the pools (docs/profiles/live-migration-limits.md).
var _ = Describe("live-migration-limits", Ordered, func() {
	const (
		lml    = "live-migration-limits"
		lmItem = "configure-live-migration-limits"
	)
	BeforeEach(func() { useHCO(hco117); resetCluster() })
	AfterEach(func() { useHCO(hco117); resetCluster() })

	It("is advertised with action Ignore, and kubectl explain describes its options", func() {
		// As the server advertised it at start: specs before this one in
		// the same process may have deleted it since.
		Expect(initialListing).To(MatchRegexp(`(?m)^live-migration-limits\s+Ignore\s+`))
		out := explain("virtplatformconfig.spec.options.liveMigrationLimits")
		flat := strings.Join(strings.Fields(out), " ")
		for _, f := range []string{"migrationNetworkGbps", "networkSharePercent", "parallelOutboundMigrationsPerNode", "completionTimeoutPerGiB", "progressTimeout"} {
			Expect(out).To(ContainSubstring(f))
		}
		Expect(flat).To(ContainSubstring("the rest stays with the VMs' own traffic"))
	})

	It("refuses options out of their ranges with their field paths (422)", func() {
		err := createRaw(lml, `{"profile":"live-migration-limits","options":{"liveMigrationLimits":{"networkSharePercent":5,"progressTimeout":10,"parallelOutboundMigrationsPerNode":11}}}`)
		expectInvalid(err, "spec.options.liveMigrationLimits.networkSharePercent", "must be between 10 and 100, inclusive")
		expectInvalid(err, "spec.options.liveMigrationLimits.progressTimeout", "must be between 30 and 3600, inclusive")
		expectInvalid(err, "spec.options.liveMigrationLimits.parallelOutboundMigrationsPerNode", "must be between 1 and 10, inclusive")
		err = createRaw(lml, `{"profile":"live-migration-limits","options":{"loadAware":{}}}`)
		expectInvalid(err, "spec.options.loadAware", "When profile is 'live-migration-limits', only options.liveMigrationLimits may be set")
	})

	// Three worker nodes through HCO 1.17, four through 1.20: the worker
	// pool drains one node at a time, so the cluster-wide limit is what the
	// nodes left can receive at the per-node default of each version (2 in
	// v1beta1: 4 for 2 nodes; 1 in v1: 3 for 3 nodes), below the HCO's 5.
	for i, r := range []hcoRelease{hco117, hco120} {
		extra := i
		It(fmt.Sprintf("derives the limits from %d nodes through %s, reboots nothing and reports drift", 3+extra, r.name), func() {
			useHCO(r)
			withWorkerNodes()
			if extra > 0 {
				Expect(testEnv.CreateNode(suiteCtx, "worker-extra", map[string]string{env.WorkerNodeLabel: ""})).To(Succeed())
				DeferCleanup(func() { Expect(testEnv.DeleteNode(suiteCtx, "worker-extra")).To(Succeed()) })
			}
			runVMIs(env.VMI{Namespace: "default", Name: "lm-a", Node: "worker-0", Migratable: true, Memory: "8Gi"},
				env.VMI{Namespace: "default", Name: "lm-b", Node: "worker-1", Migratable: true, Memory: "16Gi"})
			nodes := 3 + extra
			perNode := map[string]int{"v1beta1": 2, "v1": 1}[r.version]
			completion := map[string]int{"v1beta1": 150, "v1": 20}[r.version]
			bandwidth := fmt.Sprintf("%dMi", 596/perNode)
			perCluster := min(max(perNode, 5), perNode*(nodes-1))
			hco := hcoGVRFor(r.version)
			mcsBefore := listNames(mcGVR)

			configWith(lml, `{"profile":"live-migration-limits"}`)
			p := waitPlanThrough(lml, r.version)
			it := planItem(p, lmItem)
			Expect(it.Error).To(BeEmpty())
			Expect(it.TargetRef.APIVersion).To(Equal("hco.kubevirt.io/" + r.version))
			Expect(it.Reboots).To(BeEmpty(), "a HyperConverged change reboots no pool")
			Expect(nested(desired(it), hcoPath(r.version, "liveMigrationConfig")...)).To(Equal(map[string]interface{}{
				"parallelMigrationsPerCluster": float64(perCluster), "parallelOutboundMigrationsPerNode": float64(perNode),
				"bandwidthPerMigration": bandwidth, "completionTimeoutPerGiB": float64(completion), "progressTimeout": float64(150),
			}))
			Expect(it.Message).To(ContainSubstring(fmt.Sprintf("(from %d schedulable node(s): pool worker drains 1 node(s) at once, %d left to receive its VMs)", nodes, nodes-1)))
			Expect(it.Message).To(ContainSubstring(fmt.Sprintf("pool worker: 24Gi of VM memory on %d node(s), 1 at a time, about 42s", nodes)))
			GinkgoWriter.Printf("plan item message: %s\ndiff:\n%s\n", it.Message, it.Diff)

			waitPhase(lml, v1alpha1.PhaseReviewRequired, 10*time.Second)
			approvePlan(lml)
			waitPhase(lml, v1alpha1.PhaseCompleted, 30*time.Second)
			live := getObject(hco, hcoNS, hcoName).Object
			Expect(nested(live, hcoPath(r.version, "liveMigrationConfig", "parallelMigrationsPerCluster")...)).To(BeEquivalentTo(perCluster))
			Expect(nested(live, hcoPath(r.version, "liveMigrationConfig", "bandwidthPerMigration")...)).To(Equal(bandwidth))
			Expect(nested(live, hcoPath(r.version, "liveMigrationConfig", "allowPostCopy")...)).To(Equal(false), "the HCO's other settings stay")

			By("no reboot: no MachineConfig written, the worker pool still runs 00-worker only")
			Expect(listNames(mcGVR)).To(Equal(mcsBefore))
			waitPoolSettled("00-worker")

			By("a hand edit of a limit is drift")
			patchObject(hco, hcoNS, hcoName, hcoPatch(r.version, `{"liveMigrationConfig":{"parallelMigrationsPerCluster":50}}`))
			c := waitPhase(lml, v1alpha1.PhaseDrifted, 5*time.Second)
			Expect(condition(c, "Drifted").Reason).To(Equal("DriftDetected"))
			Expect(item(c, lmItem).Message).To(ContainSubstring("parallelMigrationsPerCluster"))
		})
	}
})

// listNames lists the names of a cluster-scoped resource.
func listNames(gvr schema.GroupVersionResource) []string {
	GinkgoHelper()
	list, err := dyn().Resource(gvr).List(suiteCtx, metav1.ListOptions{})
	Expect(err).NotTo(HaveOccurred())
	var out []string
	for _, o := range list.Items {
		out = append(out, o.GetName())
	}
	return out
}
