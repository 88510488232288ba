package e2e

import (
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kubevirt/virt-advisor/pkg/apis/advisor/v1alpha1"
	"github.com/kubevirt/virt-advisor/pkg/cluster"
	"github.com/kubevirt/virt-advisor/test/env"
)

// Scale (issue 25): plans read Nodes and VMIs from caches in the server;
// the look right before a drain reads them live, however far behind the
// caches are.
var _ = Describe("scale: plans read Nodes and VMs from caches, the last look before a drain is live", Ordered, func() {
	BeforeAll(withWorkerNodes)
	BeforeEach(resetCluster)
	AfterEach(resetCluster)

	It("a VM that becomes non-migratable between the approval and the drain, the VMI cache held stale, is caught by the live read before the write: StalePlan naming it, nothing written", func() {
		// Every change the VMI watch delivers is held 20 s: the cache
		// keeps the VM as it was approved.
		advisorHeldAt(cluster.VMIWatchFailpoint + "~20s")
		runVMIs(vmMigratable)
		// The worker pool is paused by someone else: the approved item
		// waits, unwritten, until it is unpaused.
		patchObject(mcpGVR, "", "worker", `{"spec":{"paused":true}}`)
		configWith("load-aware-rebalancing", `{"profile":"load-aware-rebalancing"}`)
		Expect(fates(planItem(reviewedPlan("load-aware-rebalancing"), psiItemName))).To(ConsistOf("default/vm-migratable on worker-0: LiveMigrate"))
		approvePlan("load-aware-rebalancing")
		Eventually(func() string { return itemMessage("load-aware-rebalancing", psiItemName) }).
			WithTimeout(20 * time.Second).Should(ContainSubstring("paused by someone else"))

		stuck := vmMigratable
		stuck.Migratable, stuck.Reason = false, "HostDeviceNotLiveMigratable"
		Expect(testEnv.UpdateVMI(suiteCtx, stuck)).To(Succeed())
		waitHeld(cluster.VMIWatchFailpoint, 1)
		Expect(fates(planItem(getPlan("load-aware-rebalancing"), psiItemName))).To(ConsistOf("default/vm-migratable on worker-0: LiveMigrate"),
			"the plan reads the cache, which does not have the change yet")

		patchObject(mcpGVR, "", "worker", `{"spec":{"paused":false}}`)
		c := waitPhase("load-aware-rebalancing", v1alpha1.PhaseFailed, 15*time.Second)
		Expect(testEnv.Advisor().LogTail(400)).NotTo(ContainSubstring("failpoint "+cluster.VMIWatchFailpoint+": slept"), "decided while the cache was still stale")
		Expect(staleMessage(c)).To(ContainSubstring("item 'enable-psi-metrics'"))
		Expect(item(c, psiItemName).Message).To(Equal("Not written: item 'enable-psi-metrics': MachineConfig '99-worker-psi-karg' would now drain nodes whose VMs the reviewed plan did not show with that fate: " +
			"default/vm-migratable (blocks the drain, HostDeviceNotLiveMigratable, pool worker)"))
		Consistently(func() *unstructured.Unstructured { return getObject(mcGVR, "", "99-worker-psi-karg") }).
			WithTimeout(2*time.Second).WithPolling(200*time.Millisecond).Should(BeNil(), "nothing written")
		Expect(getObject(mcpGVR, "", "worker").Object["spec"]).To(HaveKeyWithValue("paused", false), "no pool paused by the advisor")
	})

	It("a managed field edited by hand is Drifted from the watch, with no dry-run sent (kube-apiserver's audit log)", func() {
		configWith("example-profile", `{"profile":"example-profile","action":"Apply"}`)
		waitPhase("example-profile", v1alpha1.PhaseCompleted, 30*time.Second)
		// What the apply led to (its own plans) is done before the edit,
		// and so are the plans of a server that just started (its caches
		// syncing): three seconds without a dry-run.
		var from int64
		Eventually(func(g Gomega) {
			_, f, err := testEnv.AuditEvents(0)
			g.Expect(err).NotTo(HaveOccurred())
			time.Sleep(3 * time.Second)
			events, _, err := testEnv.AuditEvents(f)
			g.Expect(err).NotTo(HaveOccurred())
			for _, ev := range events {
				g.Expect(env.IsDryRun(ev)).To(BeFalse(), "still planning: %s %s", ev.Verb, ev.RequestURI)
			}
			from = f
		}).WithTimeout(30 * time.Second).Should(Succeed())

		patchObject(configMapGVR, hcoNS, "example-config", `{"data":{"example-key":"by-hand"}}`)
		c := waitPhase("example-profile", v1alpha1.PhaseDrifted, 5*time.Second)
		Expect(item(c, "configure-example-component").Message).To(Equal("Drifted: data no longer as applied"))
		Consistently(func() v1alpha1.ConfigPhase { return getConfig("example-profile").Status.Phase }).
			WithTimeout(time.Second).Should(Equal(v1alpha1.PhaseDrifted))

		var dryRuns []string
		Eventually(func(g Gomega) {
			events, _, err := testEnv.AuditEvents(from)
			g.Expect(err).NotTo(HaveOccurred())
			dryRuns = nil
			patched := false
			for _, ev := range events {
				if env.IsDryRun(ev) {
					dryRuns = append(dryRuns, ev.Verb+" "+ev.RequestURI)
				}
				patched = patched || (ev.Verb == "patch" && !env.IsDryRun(ev) && strings.Contains(ev.RequestURI, "/configmaps/example-config"))
			}
			g.Expect(patched).To(BeTrue(), "the edit is in the audit log")
		}).WithTimeout(5 * time.Second).Should(Succeed())
		Expect(dryRuns).To(BeEmpty(), "no dry-run between the edit and Drifted")
	})
})
