package e2e

import (
	"encoding/json"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubevirt/virt-advisor/pkg/apis/advisor/v1alpha1"
)

// Trust: what the approver is told is true, and what is written later
// still matches what was reviewed (docs/design.md, the governance
// invariant: "Checked just before every write", "Ownership the server can
// trust").

const managedBy = "advisor.kubevirt.io/managed-by"

// applyAs server-side applies a main-cluster object as another manager,
// as an administrator's tool would.
func applyAs(manager string, gvr schema.GroupVersionResource, ns, name, manifest string) {
	GinkgoHelper()
	_, err := dyn().Resource(gvr).Namespace(ns).Patch(suiteCtx, name, types.ApplyPatchType, []byte(manifest),
		metav1.PatchOptions{FieldManager: manager, Force: ptrTo(true)})
	Expect(err).NotTo(HaveOccurred())
}

// handMadeSwap is 90-worker-kubelet-swap as an administrator writes it.
const handMadeSwap = `{"apiVersion":"machineconfiguration.openshift.io/v1","kind":"MachineConfig","metadata":{"name":"90-worker-kubelet-swap",` +
	`"labels":{"machineconfiguration.openshift.io/role":"worker"}},"spec":{"kernelArguments":["admin=1"]}}`

// writtenObject is the record of what virt-advisor wrote to obj.
func writtenObject(c *v1alpha1.VirtPlatformConfig, obj *unstructured.Unstructured) *v1alpha1.WrittenObject {
	for i := range c.Status.WrittenObjects {
		if c.Status.WrittenObjects[i].UID == obj.GetUID() {
			return &c.Status.WrittenObjects[i]
		}
	}
	return nil
}

func expectStaysCompleted(name string) {
	GinkgoHelper()
	Consistently(func() v1alpha1.ConfigPhase { return getConfig(name).Status.Phase }).
		WithTimeout(5*time.Second).WithPolling(250*time.Millisecond).Should(Equal(v1alpha1.PhaseCompleted), "no false drift after the approved write")
	c := getConfig(name)
	if cond := meta.FindStatusCondition(c.Status.Conditions, "InputDependencyDrift"); cond != nil {
		Expect(cond.Status).NotTo(Equal(metav1.ConditionTrue), cond.Message)
	}
}

var _ = Describe("trust: an approved plan is applied and ends Completed; someone else's object never becomes ours", Ordered, func() {
	BeforeEach(resetCluster)
	AfterEach(resetCluster)
	swapOff := `{"profile":"virt-higher-density","options":{"virtHigherDensity":{"enableSwap":false,"memoryToRequestRatio":100}}}`

	It("approving an Update of a ConfigMap an administrator wrote by hand after the draft writes it, ends Completed and never labels it ours", func() {
		configWith("example-profile", `{"profile":"example-profile"}`)
		waitPhase("example-profile", v1alpha1.PhaseReviewRequired, 15*time.Second)
		Expect(planItem(getPlan("example-profile"), "configure-example-component").Operation).To(Equal(v1alpha1.OperationCreate))

		applyAs("someone", configMapGVR, hcoNS, "example-config",
			`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"example-config","namespace":"openshift-cnv"},"data":{"example-key":"by-hand"}}`)
		var p *v1alpha1.Plan
		Eventually(func() v1alpha1.Operation {
			p = getPlan("example-profile")
			return planItem(p, "configure-example-component").Operation
		}).WithTimeout(10 * time.Second).Should(Equal(v1alpha1.OperationUpdate))
		Expect(desired(planItem(p, "configure-example-component"))).NotTo(
			HaveKeyWithValue("metadata", HaveKeyWithValue("labels", HaveKey(managedBy))), "an object someone else made is not labelled ours")
		Expect(approve(advisor, "example-profile", p.Status.PlanHash)).To(Succeed())

		c := waitPhase("example-profile", v1alpha1.PhaseCompleted, 20*time.Second)
		cm := exampleConfigMap()
		Expect(cm.Object["data"]).To(HaveKeyWithValue("example-key", "example-value"))
		Expect(cm.GetLabels()).NotTo(HaveKey(managedBy))
		rec := writtenObject(c, cm)
		Expect(rec).NotTo(BeNil(), "the write is recorded by UID")
		Expect(rec.Created).To(BeFalse(), "recorded as written over, not created")
		expectStaysCompleted("example-profile")

		// Our force-apply took over its only field: it still is not ours.
		next := getPlan("example-profile")
		it := planItem(next, "configure-example-component")
		Expect(it.Operation).To(Equal(v1alpha1.OperationNone), it.Diff)
		Expect(desired(it)).NotTo(HaveKeyWithValue("metadata", HaveKeyWithValue("labels", HaveKey(managedBy))))
		Expect(exampleConfigMap().GetLabels()).NotTo(HaveKey(managedBy))
	})

	It("a swap MachineConfig created by hand between drafting and approval: the drafted Create is refused, the live Update is applied, never pruned", func() {
		configWith("virt-higher-density", `{"profile":"virt-higher-density"}`)
		waitPhase("virt-higher-density", v1alpha1.PhaseReviewRequired, 20*time.Second)
		drafted := getPlan("virt-higher-density")
		Expect(planItem(drafted, "enable-kubelet-swap").Operation).To(Equal(v1alpha1.OperationCreate))

		applyAs("cluster-admin-tool", mcGVR, "", "90-worker-kubelet-swap", handMadeSwap)
		err := approve(advisor, "virt-higher-density", drafted.Status.PlanHash)
		Expect(statusCode(err)).To(Equal(int32(409)), "the reviewed Create is no longer the plan: %v", err)

		var live *v1alpha1.Plan
		Eventually(func() v1alpha1.Operation {
			live = getPlan("virt-higher-density")
			return planItem(live, "enable-kubelet-swap").Operation
		}).WithTimeout(10 * time.Second).Should(Equal(v1alpha1.OperationUpdate))
		Expect(approve(advisor, "virt-higher-density", live.Status.PlanHash)).To(Succeed())
		c := waitPhase("virt-higher-density", v1alpha1.PhaseCompleted, 60*time.Second)
		mc := getObject(mcGVR, "", "90-worker-kubelet-swap")
		Expect(mc.GetLabels()).NotTo(HaveKey(managedBy))
		Expect(mc.Object["spec"]).To(HaveKeyWithValue("kernelArguments", ConsistOf("admin=1")), "the administrator's own fields are kept")
		Expect(writtenObject(c, mc)).NotTo(BeNil())
		Expect(writtenObject(c, mc).Created).To(BeFalse())
		expectStaysCompleted("virt-higher-density")

		configWith("virt-higher-density", swapOff)
		waitPhase("virt-higher-density", v1alpha1.PhaseReviewRequired, 20*time.Second)
		it := planItem(getPlan("virt-higher-density"), "enable-kubelet-swap")
		Expect(it.Operation).To(Equal(v1alpha1.OperationNone), "never pruned")
		Expect(it.Message).To(ContainSubstring("was not created by virt-advisor"))
	})

	It("a managed-by label set by hand on an administrator's MachineConfig does not make it ours: never pruned", func() {
		applyAs("cluster-admin-tool", mcGVR, "", "90-worker-kubelet-swap", handMadeSwap)
		// Someone who may patch this one MachineConfig labels it ours.
		patchObject(mcGVR, "", "90-worker-kubelet-swap", `{"metadata":{"labels":{"advisor.kubevirt.io/managed-by":"virt-higher-density"}}}`)
		configWith("virt-higher-density", swapOff)
		waitPhase("virt-higher-density", v1alpha1.PhaseReviewRequired, 20*time.Second)
		p := getPlan("virt-higher-density")
		it := planItem(p, "enable-kubelet-swap")
		Expect(it.Operation).To(Equal(v1alpha1.OperationNone))
		Expect(it.Message).To(ContainSubstring("was not created by virt-advisor"))
		Expect(approve(advisor, "virt-higher-density", p.Status.PlanHash)).To(Succeed())
		waitPhase("virt-higher-density", v1alpha1.PhaseCompleted, 60*time.Second)
		Expect(getObject(mcGVR, "", "90-worker-kubelet-swap")).NotTo(BeNil(), "the administrator's MachineConfig survived")
	})

	It("the Delete of a swap MachineConfig says which pool and nodes it reboots", func() {
		configWith("virt-higher-density", `{"profile":"virt-higher-density"}`)
		waitPhase("virt-higher-density", v1alpha1.PhaseReviewRequired, 20*time.Second)
		Expect(approve(advisor, "virt-higher-density", planHashOf("virt-higher-density"))).To(Succeed())
		waitPhase("virt-higher-density", v1alpha1.PhaseCompleted, 60*time.Second)

		configWith("virt-higher-density", swapOff)
		waitPhase("virt-higher-density", v1alpha1.PhaseReviewRequired, 20*time.Second)
		it := planItem(getPlan("virt-higher-density"), "enable-kubelet-swap")
		Expect(it.Operation).To(Equal(v1alpha1.OperationDelete))
		Expect(it.Message).To(ContainSubstring("reboots: pool worker, 3 nodes, once"))
		Expect(it.Message).NotTo(ContainSubstring("reboots: none"))
		Expect(it.Reboots).To(HaveLen(1))
		Expect(it.Reboots[0]).To(And(HaveField("Pool", "worker"), HaveField("Nodes", int64(3)),
			HaveField("Disruption", v1alpha1.NodeDisruptionReboot), HaveField("Drains", true)))
		Expect(item(getConfig("virt-higher-density"), "enable-kubelet-swap").Message).To(ContainSubstring("reboots: pool worker, 3 nodes, once"))
	})
})

var _ = Describe("trust: every write is checked against the review just before it is made", Ordered, func() {
	BeforeEach(resetCluster)
	AfterEach(resetCluster)

	It("an item that waited for a pool paused by an administrator is not written over a MachineConfig created by hand meanwhile (StalePlan)", func() {
		patchObject(mcpGVR, "", "worker", `{"spec":{"paused":true}}`)
		configWith("load-aware-rebalancing", `{"profile":"load-aware-rebalancing"}`)
		waitPhase("load-aware-rebalancing", v1alpha1.PhaseReviewRequired, 20*time.Second)
		Expect(planItem(getPlan("load-aware-rebalancing"), "enable-psi-metrics").Operation).To(Equal(v1alpha1.OperationCreate))
		Expect(approve(advisor, "load-aware-rebalancing", planHashOf("load-aware-rebalancing"))).To(Succeed())
		Eventually(func() string { return itemMessage("load-aware-rebalancing", "enable-psi-metrics") }).
			WithTimeout(20 * time.Second).Should(ContainSubstring("paused by someone else"))

		applyAs("cluster-admin-tool", mcGVR, "", "99-worker-psi-karg",
			`{"apiVersion":"machineconfiguration.openshift.io/v1","kind":"MachineConfig","metadata":{"name":"99-worker-psi-karg",`+
				`"labels":{"machineconfiguration.openshift.io/role":"worker"}},"spec":{"kernelArguments":["psi=0","admin=1"]}}`)
		handMade := getObject(mcGVR, "", "99-worker-psi-karg")
		c := waitPhase("load-aware-rebalancing", v1alpha1.PhaseFailed, 20*time.Second)
		cond := meta.FindStatusCondition(c.Status.Conditions, string(v1alpha1.PhaseFailed))
		Expect(cond.Reason).To(Equal("StalePlan"))
		Expect(cond.Message).To(ContainSubstring("Plan is stale"))
		Expect(cond.Message).To(ContainSubstring("item 'enable-psi-metrics': MachineConfig '99-worker-psi-karg' was created by someone else after the plan was reviewed"))
		Expect(item(c, "enable-psi-metrics").State).To(Equal(v1alpha1.ItemStateFailed))

		patchObject(mcpGVR, "", "worker", `{"spec":{"paused":false}}`)
		Consistently(func() string { return getObject(mcGVR, "", "99-worker-psi-karg").GetResourceVersion() }).
			WithTimeout(3*time.Second).Should(Equal(handMade.GetResourceVersion()), "the hand-made MachineConfig is untouched")
		mc := getObject(mcGVR, "", "99-worker-psi-karg")
		Expect(mc.GetLabels()).NotTo(HaveKey(managedBy))
		Expect(mc.Object["spec"]).To(HaveKeyWithValue("kernelArguments", ConsistOf("psi=0", "admin=1")))

		// The new plan adopts nothing and says what it will do.
		it := planItem(getPlan("load-aware-rebalancing"), "enable-psi-metrics")
		Expect(it.Operation).To(Equal(v1alpha1.OperationUpdate))
		Expect(desired(it)).NotTo(HaveKeyWithValue("metadata", HaveKeyWithValue("labels", HaveKey(managedBy))))
		Expect(it.Diff).To(ContainSubstring("psi=1"))
	})

	It("an approval computed for a config that was deleted and created again (same name, same generation) is refused; nothing written", func() {
		configWith("example-profile", `{"profile":"example-profile"}`)
		waitPhase("example-profile", v1alpha1.PhaseReviewRequired, 15*time.Second)
		old := getPlan("example-profile")
		oldUID := getConfig("example-profile").UID

		configWith("example-profile", `{"profile":"example-profile"}`) // deletes and creates it again
		c := waitPhase("example-profile", v1alpha1.PhaseReviewRequired, 15*time.Second)
		Expect(c.UID).NotTo(Equal(oldUID))
		Expect(c.Generation).To(Equal(old.Status.Generation), "the generation matches; only the UID tells them apart")
		err := approve(advisor, "example-profile", old.Status.PlanHash)
		Expect(statusCode(err)).To(Equal(int32(409)), "%v", err)
		Expect(getPlan("example-profile").Status.PlanHash).NotTo(Equal(old.Status.PlanHash))
		Consistently(exampleConfigMap).WithTimeout(2*time.Second).Should(BeNil(), "nothing written")
		Expect(getConfig("example-profile").Status.Approval).To(BeNil())
	})

	It("action Apply with bypassOptimisticLock stops at review when an input changes; nothing is written until a new approval", func() {
		configWith("load-aware-rebalancing", `{"profile":"load-aware-rebalancing","action":"Apply","bypassOptimisticLock":true}`)
		waitPhase("load-aware-rebalancing", v1alpha1.PhaseCompleted, 60*time.Second)
		before := getObject(kdGVR, kdNS, "cluster").GetResourceVersion()

		patchObject(hcoGVR, hcoNS, hcoName, `{"spec":{"liveMigrationConfig":{"parallelMigrationsPerCluster":20}}}`)
		DeferCleanup(patchObject, hcoGVR, hcoNS, hcoName, `{"spec":{"liveMigrationConfig":null}}`)
		c := waitPhase("load-aware-rebalancing", v1alpha1.PhaseReviewRequired, 20*time.Second)
		Expect(condition(c, "InputDependencyDrift").Status).To(Equal(metav1.ConditionTrue))
		Consistently(func() string { return getObject(kdGVR, kdNS, "cluster").GetResourceVersion() }).
			WithTimeout(3*time.Second).Should(Equal(before), "the changed input is not applied without a review")

		Expect(approve(advisor, "load-aware-rebalancing", planHashOf("load-aware-rebalancing"))).To(Succeed())
		waitPhase("load-aware-rebalancing", v1alpha1.PhaseCompleted, 30*time.Second)
		Expect(getObject(kdGVR, kdNS, "cluster").GetResourceVersion()).NotTo(Equal(before))
		// Before the reset: drift correction would put the targets back.
		deleteConfig("load-aware-rebalancing")
	})
})

var _ = Describe("trust: what the hash binds is shown", func() {
	BeforeEach(resetCluster)

	It("the Plan, its table and kubectl advisor plan/approve show action, failurePolicy, bypassOptimisticLock and waitTimeout", func() {
		configWith("example-profile", `{"profile":"example-profile","failurePolicy":"Continue","bypassOptimisticLock":true,"waitTimeout":"5m"}`)
		waitPhase("example-profile", v1alpha1.PhaseReviewRequired, 15*time.Second)
		p := getPlan("example-profile")
		Expect(p.Status.Settings).To(Equal(v1alpha1.PlanSettings{Action: v1alpha1.PlanActionDryRun, FailurePolicy: v1alpha1.FailurePolicyContinue,
			BypassOptimisticLock: true, WaitTimeout: "5m"}))
		const shown = "action DryRun, failurePolicy Continue, bypassOptimisticLock true, waitTimeout 5m"

		By("the Plan's JSON carries every bound setting, false ones included: false is not 'not bound'")
		raw, err := adminRaw.Get().Resource("virtplatformconfigs").Name("example-profile").SubResource("plan").DoRaw(suiteCtx)
		Expect(err).NotTo(HaveOccurred())
		var body struct {
			Status struct {
				Settings map[string]interface{} `json:"settings"`
			} `json:"status"`
		}
		Expect(json.Unmarshal(raw, &body)).To(Succeed(), string(raw))
		Expect(body.Status.Settings).To(Equal(map[string]interface{}{"action": "DryRun", "failurePolicy": "Continue",
			"bypassOptimisticLock": true, "waitTimeout": "5m", "allowBlockingDrains": false}), string(raw))

		table, err := kubectl("get", "virtplatformconfig", "example-profile", "--subresource=plan")
		Expect(err).NotTo(HaveOccurred(), table)
		Expect(table).To(ContainSubstring("approving also approves " + shown))

		r := plugin("", "plan", "example-profile")
		Expect(r.stdout).To(ContainSubstring("Approving it also approves " + shown))
		r = plugin("n\n", "approve", "example-profile")
		Expect(r.stdout).To(ContainSubstring("Approving it also approves " + shown))
		Expect(getConfig("example-profile").Status.Approval).To(BeNil(), "answered no")
	})
})

var _ = Describe("trust: viewers", func() {
	BeforeEach(resetCluster)

	It("read the drafted plan in status (items, diffs) but cannot have a live plan computed", func() {
		configWith("example-profile", `{"profile":"example-profile"}`)
		waitPhase("example-profile", v1alpha1.PhaseReviewRequired, 15*time.Second)
		viewer, _, _ := userClient("virt-advisor-viewer")
		c, err := viewer.AdvisorV1alpha1().VirtPlatformConfigs().Get(suiteCtx, "example-profile", metav1.GetOptions{})
		Expect(err).NotTo(HaveOccurred())
		Expect(c.Status.Items).NotTo(BeEmpty())
		Expect(c.Status.Items[0].Diff).To(ContainSubstring("+  example-key: example-value"))
		_, err = viewer.AdvisorV1alpha1().VirtPlatformConfigs().GetPlan(suiteCtx, "example-profile", metav1.GetOptions{})
		Expect(statusCode(err)).To(Equal(int32(403)), "%v", err)
	})
})
