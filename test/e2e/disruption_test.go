package e2e

import (
	"fmt"
	"path/filepath"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kubevirt/virt-advisor/pkg/apis/advisor/v1alpha1"
	"github.com/kubevirt/virt-advisor/test/env"
	"github.com/kubevirt/virt-advisor/test/names"
)

const (
	psiItemName  = "enable-psi-metrics"
	swapItemName = "enable-kubelet-swap"
	vmNS         = "default"
)

// The four VMIs of the issue on the three worker nodes: one that migrates,
// two that are shut down, one that blocks the drain.
var (
	vmMigratable = env.VMI{Namespace: vmNS, Name: "vm-migratable", Node: "worker-0", EvictionStrategy: "LiveMigrate", Migratable: true}
	vmNone       = env.VMI{Namespace: vmNS, Name: "vm-none", Node: "worker-1", EvictionStrategy: "None", Migratable: true}
	vmDisk       = env.VMI{Namespace: vmNS, Name: "vm-disk", Node: "worker-1", EvictionStrategy: "LiveMigrateIfPossible", Reason: "DisksNotLiveMigratable"}
	vmGPU        = env.VMI{Namespace: vmNS, Name: "vm-gpu", Node: "worker-2", EvictionStrategy: "LiveMigrate", Reason: "HostDeviceNotLiveMigratable"}
)

// blockedOnGPU is the message of the PSI item waiting on vm-gpu.
const blockedOnGPU = "Waiting: writing MachineConfig '99-worker-psi-karg' would drain nodes that run a VM that would block the drain: default/vm-gpu (HostDeviceNotLiveMigratable, pool worker); " +
	"migrate, stop, or change its eviction strategy (or set spec.rollout.allowBlockingDrains: true to write it anyway); the change is written when no VM blocks"

// heldOnGPU is the message of the written PSI item whose paused pool
// vm-gpu keeps from resuming.
const heldOnGPU = "MachineConfigPool 'worker' is paused by virt-advisor: resuming its rollout would drain nodes that run a VM that would block the drain: " +
	"default/vm-gpu (HostDeviceNotLiveMigratable, pool worker); migrate, stop, or change its eviction strategy " +
	"(or set spec.rollout.allowBlockingDrains: true to resume it anyway); MachineConfigPool 'worker' stays paused until no VM blocks"

// psiVMNote is what the PSI item says of those four VMs.
const psiVMNote = "reboots: pool worker, 3 nodes, once; 1 VM live-migrates, 2 shut down: default/vm-disk (DisksNotLiveMigratable), default/vm-none (EvictionStrategyNone); " +
	"1 blocks the drain: default/vm-gpu (HostDeviceNotLiveMigratable)"

// withWorkerNodes gives the worker pool its three Nodes for the rest of the
// container (the fake MCO counts machines; the plan reads Nodes).
func withWorkerNodes() {
	GinkgoHelper()
	nodes, err := testEnv.CreateWorkerNodes(suiteCtx, "worker", names.BaselinePoolMachines)
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(func() {
		for _, n := range nodes {
			Expect(testEnv.DeleteNode(suiteCtx, n)).To(Succeed())
		}
	})
}

// runVMIs creates VMIs and deletes them when the spec ends.
func runVMIs(vmis ...env.VMI) {
	GinkgoHelper()
	for _, v := range vmis {
		Expect(testEnv.CreateVMI(suiteCtx, v)).To(Succeed())
		DeferCleanup(func() { Expect(testEnv.DeleteVMI(suiteCtx, v.Namespace, v.Name)).To(Succeed()) })
	}
}

// reviewedPlan waits for ReviewRequired and returns the live plan.
func reviewedPlan(name string) *v1alpha1.Plan {
	GinkgoHelper()
	waitPhase(name, v1alpha1.PhaseReviewRequired, 20*time.Second)
	return getPlan(name)
}

// fates are the VMs of a plan item's pools as "namespace/name fate (reason)".
func fates(it v1alpha1.PlanItem) []string {
	var out []string
	for _, r := range it.Reboots {
		for _, v := range r.VMImpacts {
			s := fmt.Sprintf("%s/%s on %s: %s", v.Namespace, v.Name, v.Node, v.Fate)
			if v.Reason != "" {
				s += " (" + v.Reason + ")"
			}
			out = append(out, s)
		}
	}
	return out
}

var _ = Describe("disruption-aware rollouts: what a drain does to the VMs", Ordered, func() {
	BeforeAll(withWorkerNodes)
	BeforeEach(resetCluster)
	AfterEach(resetCluster)

	It("the PSI plan names each VM with its fate and warns; approving it waits with the blocking VM named; deleting that VMI lets the rollout complete", func() {
		runVMIs(vmMigratable, vmNone, vmDisk, vmGPU)
		configWith("load-aware-rebalancing", `{"profile":"load-aware-rebalancing"}`)
		p := reviewedPlan("load-aware-rebalancing")
		psi := planItem(p, psiItemName)
		Expect(psi.Message).To(HaveSuffix(psiVMNote))
		Expect(fates(psi)).To(Equal([]string{
			"default/vm-migratable on worker-0: LiveMigrate",
			"default/vm-disk on worker-1: ShutDown (DisksNotLiveMigratable)",
			"default/vm-none on worker-1: ShutDown (EvictionStrategyNone)",
			"default/vm-gpu on worker-2: BlocksDrain (HostDeviceNotLiveMigratable)",
		}))
		Expect(psi.Reboots).To(HaveLen(1))
		Expect(psi.Reboots[0]).To(And(HaveField("Pool", "worker"), HaveField("Disruption", v1alpha1.NodeDisruptionReboot), HaveField("Drains", true)))
		Expect(p.Status.Warnings).To(ContainElement(And(
			HavePrefix("item 'enable-psi-metrics': draining the nodes shuts down 2 VMs: default/vm-disk (shuts down, DisksNotLiveMigratable, pool worker), default/vm-none (shuts down, EvictionStrategyNone, pool worker)"),
			ContainSubstring("would block on 1 VM: default/vm-gpu (blocks the drain, HostDeviceNotLiveMigratable, pool worker); the change waits, unwritten, until no VM blocks"))))
		// kubectl prints the warning; the plugin shows the message and the warning.
		_, stderr, err := testEnv.Kubectl(suiteCtx, "", "get", "virtplatformconfig", "load-aware-rebalancing", "--subresource=plan")
		Expect(err).NotTo(HaveOccurred())
		Expect(stderr).To(ContainSubstring("Warning: item 'enable-psi-metrics': draining the nodes shuts down 2 VMs"))
		r := plugin("", "plan", "load-aware-rebalancing")
		Expect(r.stdout).To(And(ContainSubstring(psiVMNote), ContainSubstring("warning: item 'enable-psi-metrics': draining the nodes shuts down 2 VMs")))

		approvePlan("load-aware-rebalancing")
		Eventually(func() string { return itemMessage("load-aware-rebalancing", psiItemName) }).WithTimeout(20 * time.Second).Should(Equal(blockedOnGPU))
		Consistently(func(g Gomega) {
			g.Expect(getObject(mcGVR, "", "99-worker-psi-karg")).To(BeNil(), "nothing written while a VM would block the drain")
			paused, _ := pausedManagers(g)
			g.Expect(paused).To(BeFalse(), "the pool is not paused for an item that waits")
		}).WithTimeout(5 * time.Second).WithPolling(500 * time.Millisecond).Should(Succeed())
		Expect(item(getConfig("load-aware-rebalancing"), psiItemName).State).To(Equal(v1alpha1.ItemStatePending))

		Expect(testEnv.DeleteVMI(suiteCtx, vmNS, vmGPU.Name)).To(Succeed())
		c := waitPhase("load-aware-rebalancing", v1alpha1.PhaseCompleted, 90*time.Second)
		Expect(item(c, psiItemName).State).To(Equal(v1alpha1.ItemStateCompleted))
		waitPoolSettled("00-worker", "99-worker-psi-karg")
	})

	It("with spec.rollout.allowBlockingDrains: true the blocked rollout proceeds at once, and the plan binds the setting", func() {
		runVMIs(vmMigratable, vmGPU)
		configWith("load-aware-rebalancing", `{"profile":"load-aware-rebalancing","rollout":{"allowBlockingDrains":true}}`)
		p := reviewedPlan("load-aware-rebalancing")
		Expect(p.Status.Settings.AllowBlockingDrains).To(BeTrue())
		Expect(p.Status.Warnings).To(ContainElement(ContainSubstring("would block on 1 VM: default/vm-gpu (blocks the drain, HostDeviceNotLiveMigratable, pool worker); the change is written anyway (spec.rollout.allowBlockingDrains: true)")))
		table, err := kubectl("get", "virtplatformconfig", "load-aware-rebalancing", "--subresource=plan")
		Expect(err).NotTo(HaveOccurred())
		Expect(table).To(ContainSubstring("allowBlockingDrains true"))
		out := explain("virtplatformconfig.spec.rollout.allowBlockingDrains")
		Expect(out).To(And(MatchRegexp(`allowBlockingDrains\s*<boolean>`), ContainSubstring("allowBlockingDrains writes an approved MachineConfig change")))

		approvePlan("load-aware-rebalancing")
		c := waitPhase("load-aware-rebalancing", v1alpha1.PhaseCompleted, 60*time.Second)
		Expect(item(c, psiItemName).State).To(Equal(v1alpha1.ItemStateCompleted))
		waitPoolSettled("00-worker", "99-worker-psi-karg")
	})

	It("a VMI that becomes non-migratable between review and approval makes the reviewed plan stale (409); a VM that merely migrates does not", func() {
		runVMIs(vmMigratable, vmNone)
		configWith("load-aware-rebalancing", `{"profile":"load-aware-rebalancing"}`)
		reviewed := reviewedPlan("load-aware-rebalancing").Status.PlanHash

		// A new VM that migrates changes what is shown, not what is approved.
		another := env.VMI{Namespace: vmNS, Name: "vm-another", Node: "worker-2", EvictionStrategy: "LiveMigrate", Migratable: true}
		runVMIs(another)
		// Plans read the VMs from the server's cache, milliseconds behind.
		var p *v1alpha1.Plan
		Eventually(func() []string {
			p = getPlan("load-aware-rebalancing")
			return fates(planItem(p, psiItemName))
		}).WithTimeout(5 * time.Second).Should(ContainElement("default/vm-another on worker-2: LiveMigrate"))
		Expect(p.Status.PlanHash).To(Equal(reviewed), "migrating VMs are shown but not hashed")

		stuck := vmMigratable
		stuck.Migratable, stuck.Reason = false, "HostDeviceNotLiveMigratable"
		Expect(testEnv.UpdateVMI(suiteCtx, stuck)).To(Succeed())
		Eventually(func() string { return getPlan("load-aware-rebalancing").Status.PlanHash }).
			WithTimeout(5*time.Second).ShouldNot(Equal(reviewed), "the server's cache has the change")
		err := approve(advisor, "load-aware-rebalancing", reviewed)
		Expect(statusCode(err)).To(Equal(int32(409)), "%v", err)
		Expect(err.Error()).To(ContainSubstring("you approved plan " + reviewed))
		Expect(getConfig("load-aware-rebalancing").Status.Approval).To(BeNil(), "nothing approved")
	})

	It("a VM that would now block the drain and was not reviewed so fails the waiting item as a stale plan before anything is written", func() {
		runVMIs(vmMigratable, vmGPU)
		configWith("load-aware-rebalancing", `{"profile":"load-aware-rebalancing"}`)
		reviewedPlan("load-aware-rebalancing")
		approvePlan("load-aware-rebalancing")
		Eventually(func() string { return itemMessage("load-aware-rebalancing", psiItemName) }).WithTimeout(20 * time.Second).Should(HavePrefix("Waiting: writing MachineConfig '99-worker-psi-karg'"))

		stuck := vmMigratable
		stuck.Migratable, stuck.Reason = false, "DisksNotLiveMigratable"
		Expect(testEnv.UpdateVMI(suiteCtx, stuck)).To(Succeed())
		c := waitPhase("load-aware-rebalancing", v1alpha1.PhaseFailed, 30*time.Second)
		Expect(condition(c, string(v1alpha1.PhaseFailed)).Reason).To(Equal("StalePlan"))
		Expect(item(c, psiItemName).Message).To(Equal("Not written: item 'enable-psi-metrics': MachineConfig '99-worker-psi-karg' would now drain nodes whose VMs the reviewed plan did not show with that fate: " +
			"default/vm-migratable (blocks the drain, DisksNotLiveMigratable, pool worker)"))
		Expect(getObject(mcGVR, "", "99-worker-psi-karg")).To(BeNil())
	})

	It("a VM that comes during the coalescing pause and would block the drain keeps the pool paused past the pause's end, and the item and config say why; once it is gone the rollout resumes", func() {
		// A coalescing window long enough to start a VM in.
		startAdvisorWithWindow("resume-look", "25s")
		configWith("load-aware-rebalancing", `{"profile":"load-aware-rebalancing"}`)
		reviewedPlan("load-aware-rebalancing")
		before := testEnv.FakeMCORollouts("worker")
		since := time.Now().Add(-time.Second).Truncate(time.Second)
		approvePlan("load-aware-rebalancing")

		// Written with no VM in the way, into the pool we paused.
		var until time.Time
		Eventually(func(g Gomega) {
			g.Expect(getObject(mcGVR, "", "99-worker-psi-karg")).NotTo(BeNil())
			paused, managers := pausedManagers(g)
			g.Expect(paused).To(BeTrue())
			g.Expect(managers).To(ContainElement(ourManager))
			pool, err := get(mcpGVR, "", "worker")
			g.Expect(err).NotTo(HaveOccurred())
			until, err = time.Parse(time.RFC3339, pool.GetAnnotations()[pausedUntilAnnotation])
			g.Expect(err).NotTo(HaveOccurred())
		}).WithTimeout(30 * time.Second).WithPolling(200 * time.Millisecond).Should(Succeed())
		runVMIs(vmGPU)
		Expect(time.Now()).To(BeTemporally("<", until), "vm-gpu starts during the pause")

		// The pause ends; the look before the unpause finds vm-gpu.
		Eventually(func() string { return itemMessage("load-aware-rebalancing", psiItemName) }).
			WithTimeout(time.Until(until) + 30*time.Second).WithPolling(500 * time.Millisecond).Should(Equal(heldOnGPU))
		Expect(time.Now()).To(BeTemporally(">", until), "held past the end of the pause")
		c := getConfig("load-aware-rebalancing")
		Expect(c.Status.Phase).To(Equal(v1alpha1.PhaseInProgress))
		Expect(item(c, psiItemName).State).To(Equal(v1alpha1.ItemStateInProgress))
		waiting := condition(c, "Waiting")
		Expect(waiting.Reason).To(Equal("DrainBlocked"))
		Expect(waiting.Message).To(Equal("Waiting to resume the rollout of item 'enable-psi-metrics': " + heldOnGPU))
		Consistently(func(g Gomega) {
			paused, managers := pausedManagers(g)
			g.Expect(paused).To(BeTrue())
			g.Expect(managers).To(ContainElement(ourManager))
			n, nodes := rolloutsSince(before)
			g.Expect(n).To(BeZero(), "no rollout started")
			g.Expect(nodes).NotTo(ContainElement(BeNumerically(">", 0)), "no node updated, none drained")
		}).WithTimeout(5 * time.Second).WithPolling(500 * time.Millisecond).Should(Succeed())
		Expect(eventReasonsSince("worker", since)).To(ContainElement("ResumeHeldByVirtAdvisor"))

		Expect(testEnv.DeleteVMI(suiteCtx, vmNS, vmGPU.Name)).To(Succeed())
		c = waitPhase("load-aware-rebalancing", v1alpha1.PhaseCompleted, 90*time.Second)
		Expect(item(c, psiItemName).State).To(Equal(v1alpha1.ItemStateCompleted))
		waitPoolSettled("00-worker", "99-worker-psi-karg")
		n, nodes := rolloutsSince(before)
		Expect(n).To(Equal(1), "one rollout of the worker pool")
		Expect(nodes).To(Equal([]int{1, 1, 1}), "each worker node updated once")
		expectUnpausedByUs()
	})

	It("a node disruption policy of None for the swap drop-in's paths and units: the swap item drains no node and affects no VM; the PSI item (kernel arguments) still reboots", func() {
		runVMIs(vmMigratable, vmNone, vmGPU)
		setNodeDisruptionPolicies(
			[]interface{}{noneFor("path", "/etc/find-swap-partition"), noneFor("path", "/etc/openshift/kubelet.conf.d/90-swap.conf")},
			[]interface{}{noneFor("name", "swap-provision.service"), noneFor("name", "cgroup-system-slice-config.service")})

		configWith("virt-higher-density", `{"profile":"virt-higher-density"}`)
		swap := planItem(reviewedPlan("virt-higher-density"), swapItemName)
		Expect(swap.Message).To(HaveSuffix("; reboots: none; pool worker, 3 nodes: not drained, None (node disruption policies: None for /etc/find-swap-partition, " +
			"/etc/openshift/kubelet.conf.d/90-swap.conf, cgroup-system-slice-config.service, swap-provision.service); not drained: no VM is affected"))
		Expect(swap.Reboots).To(HaveLen(1))
		Expect(swap.Reboots[0]).To(And(HaveField("Disruption", v1alpha1.NodeDisruptionNone), HaveField("Drains", false),
			HaveField("VMImpacts", BeEmpty()), HaveField("VMSummary", "not drained: no VM is affected")))
		Expect(getPlan("virt-higher-density").Status.Warnings).NotTo(ContainElement(ContainSubstring("draining the nodes")))
		// Nothing drains: vm-gpu does not hold the write.
		approvePlan("virt-higher-density")
		waitPhase("virt-higher-density", v1alpha1.PhaseCompleted, 60*time.Second)

		configWith("load-aware-rebalancing", `{"profile":"load-aware-rebalancing"}`)
		psi := planItem(reviewedPlan("load-aware-rebalancing"), psiItemName)
		Expect(psi.Message).To(ContainSubstring("; reboots: pool worker, 3 nodes, once; 1 VM live-migrates, 1 shuts down: default/vm-none (EvictionStrategyNone); 1 blocks the drain: default/vm-gpu (HostDeviceNotLiveMigratable)"))
		Expect(psi.Reboots[0]).To(And(HaveField("Disruption", v1alpha1.NodeDisruptionReboot), HaveField("Drains", true),
			HaveField("DisruptionReason", "kernelArguments changed: always a reboot")))
		deleteConfig("virt-higher-density") // before the reset: its drift correction stays out of the way
	})

	It("a cluster upgrade in progress (ClusterVersion Progressing=True) makes the due item wait; once Progressing is False it is written", func() {
		setClusterVersion("True", "Working towards 4.20.2: 512 of 903 done (56% complete)")
		configWith("load-aware-rebalancing", `{"profile":"load-aware-rebalancing"}`)
		reviewedPlan("load-aware-rebalancing")
		approvePlan("load-aware-rebalancing")
		Eventually(func() string { return itemMessage("load-aware-rebalancing", psiItemName) }).WithTimeout(20 * time.Second).
			Should(Equal("Waiting: cluster upgrade in progress (ClusterVersion version Progressing: Working towards 4.20.2: 512 of 903 done (56% complete)); the change is written when it is done"))
		Consistently(func() *unstructured.Unstructured { return getObject(mcGVR, "", "99-worker-psi-karg") }).
			WithTimeout(4*time.Second).WithPolling(500*time.Millisecond).Should(BeNil(), "nothing written during the upgrade")

		setClusterVersion("False", "Cluster version is 4.20.2")
		c := waitPhase("load-aware-rebalancing", v1alpha1.PhaseCompleted, 60*time.Second)
		Expect(item(c, psiItemName).State).To(Equal(v1alpha1.ItemStateCompleted))
		waitPoolSettled("00-worker", "99-worker-psi-karg")
	})
})

var _ = Describe("disruption-aware rollouts: a cluster without KubeVirt's VMI API", Ordered, func() {
	BeforeAll(func() {
		withWorkerNodes()
		deleteCRD(names.VirtualMachineInstanceCRD)
		DeferCleanup(func() {
			Expect(testEnv.InstallCRD(suiteCtx, filepath.Join("artifacts", "crds", "virtualmachineinstance.yaml"))).To(Succeed())
			// Served again, through discovery, before the next spec.
			Eventually(func() error {
				_, err := dyn().Resource(names.VirtualMachineInstances).List(suiteCtx, metav1.ListOptions{})
				return err
			}).WithTimeout(30 * time.Second).Should(Succeed())
		})
	})
	BeforeEach(resetCluster)
	AfterEach(resetCluster)

	It("plans work and say VM impact is unknown; the rollout is not held", func() {
		configWith("load-aware-rebalancing", `{"profile":"load-aware-rebalancing"}`)
		waitPhase("load-aware-rebalancing", v1alpha1.PhaseReviewRequired, 20*time.Second)
		Eventually(func(g Gomega) {
			p, err := advisor.AdvisorV1alpha1().VirtPlatformConfigs().GetPlan(suiteCtx, "load-aware-rebalancing", metav1.GetOptions{})
			g.Expect(err).NotTo(HaveOccurred())
			psi := planItem(p, psiItemName)
			g.Expect(psi.Message).To(HaveSuffix("; reboots: pool worker, 3 nodes, once; VM impact unknown: kubevirt.io/v1 VirtualMachineInstance not served"))
			g.Expect(psi.Reboots[0].VMImpactUnknown).To(Equal("kubevirt.io/v1 VirtualMachineInstance not served"))
		}).WithTimeout(30 * time.Second).Should(Succeed())
		approvePlan("load-aware-rebalancing")
		c := waitPhase("load-aware-rebalancing", v1alpha1.PhaseCompleted, 60*time.Second)
		Expect(item(c, psiItemName).State).To(Equal(v1alpha1.ItemStateCompleted))
	})
})

// noneFor is a node disruption policy entry (a file's path or a unit's
// name) with the action None.
func noneFor(key, value string) interface{} {
	return map[string]interface{}{key: value, "actions": []interface{}{map[string]interface{}{"type": "None"}}}
}

// setNodeDisruptionPolicies creates the MachineConfiguration cluster with
// these policies and writes its status as the MachineConfig operator does
// (clusterPolicies: the defaults merged with them; here just them), and
// removes it when the spec ends.
func setNodeDisruptionPolicies(files, units []interface{}) {
	GinkgoHelper()
	mc := &unstructured.Unstructured{Object: map[string]interface{}{
		"apiVersion": "operator.openshift.io/v1", "kind": "MachineConfiguration",
		"metadata": map[string]interface{}{"name": "cluster"},
		"spec": map[string]interface{}{"managementState": "Managed",
			"nodeDisruptionPolicy": map[string]interface{}{"files": files, "units": units}},
	}}
	ri := dyn().Resource(names.MachineConfigurations)
	created, err := ri.Create(suiteCtx, mc, metav1.CreateOptions{})
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(func() { _ = ri.Delete(suiteCtx, "cluster", metav1.DeleteOptions{}) })
	created.Object["status"] = map[string]interface{}{
		"observedGeneration": created.GetGeneration(),
		"nodeDisruptionPolicyStatus": map[string]interface{}{"clusterPolicies": map[string]interface{}{
			"files": files, "units": units,
			"sshkey": map[string]interface{}{"actions": []interface{}{map[string]interface{}{"type": "None"}}}}},
	}
	_, err = ri.UpdateStatus(suiteCtx, created, metav1.UpdateOptions{})
	Expect(err).NotTo(HaveOccurred())
}

// setClusterVersion creates or updates the ClusterVersion version with
// its Progressing condition, and removes it when the spec ends.
func setClusterVersion(progressing, message string) {
	GinkgoHelper()
	ri := dyn().Resource(names.ClusterVersions)
	cv := getObject(names.ClusterVersions, "", "version")
	if cv == nil {
		var err error
		cv, err = ri.Create(suiteCtx, &unstructured.Unstructured{Object: map[string]interface{}{
			"apiVersion": "config.openshift.io/v1", "kind": "ClusterVersion",
			"metadata": map[string]interface{}{"name": "version"},
			"spec":     map[string]interface{}{"clusterID": "7b6c1a2e-4a3c-4f0e-9d1e-2f5e0c8b9a11", "channel": "stable-4.20"},
		}}, metav1.CreateOptions{})
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(func() { _ = ri.Delete(suiteCtx, "version", metav1.DeleteOptions{}) })
	}
	now := time.Now().UTC().Format(time.RFC3339)
	cv.Object["status"] = map[string]interface{}{
		"availableUpdates": nil, "observedGeneration": cv.GetGeneration(), "versionHash": "e2e",
		"desired": map[string]interface{}{"version": "4.20.2", "image": "quay.io/openshift-release-dev/ocp-release:4.20.2-x86_64"},
		"conditions": []interface{}{
			map[string]interface{}{"type": "Available", "status": "True", "lastTransitionTime": now, "message": "Done applying 4.20.1"},
			map[string]interface{}{"type": "Progressing", "status": progressing, "lastTransitionTime": now, "message": message},
		},
	}
	_, err := ri.UpdateStatus(suiteCtx, cv, metav1.UpdateOptions{})
	Expect(err).NotTo(HaveOccurred())
}
