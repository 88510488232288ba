package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubevirt/virt-advisor/pkg/apis/advisor/v1alpha1"
	"github.com/kubevirt/virt-advisor/pkg/status"
)

const (
	leaseNamespace = "virt-advisor"
	leaseName      = "virt-advisor-controller"
)

func getConfig(name string) *v1alpha1.VirtPlatformConfig {
	GinkgoHelper()
	c, err := advisor.AdvisorV1alpha1().VirtPlatformConfigs().Get(suiteCtx, name, metav1.GetOptions{})
	Expect(err).NotTo(HaveOccurred())
	return c
}

// waitPhase waits for a phase and checks that exactly one phase condition is True.
func waitPhase(name string, phase v1alpha1.ConfigPhase, timeout time.Duration) *v1alpha1.VirtPlatformConfig {
	GinkgoHelper()
	var c *v1alpha1.VirtPlatformConfig
	Eventually(func() v1alpha1.ConfigPhase {
		c = getConfig(name)
		return c.Status.Phase
	}).WithTimeout(timeout).WithPolling(100*time.Millisecond).Should(Equal(phase), func() string {
		return fmt.Sprintf("status: %s", describeStatus(c))
	})
	expectOnePhaseTrue(c)
	return c
}

func expectOnePhaseTrue(c *v1alpha1.VirtPlatformConfig) {
	GinkgoHelper()
	phases := map[string]bool{}
	for _, p := range status.PhaseNames() {
		phases[p] = true
	}
	var trues []string
	for _, cond := range c.Status.Conditions {
		if phases[cond.Type] && cond.Status == metav1.ConditionTrue {
			trues = append(trues, cond.Type)
		}
	}
	Expect(trues).To(Equal([]string{string(c.Status.Phase)}), "exactly one phase condition is True")
}

func describeStatus(c *v1alpha1.VirtPlatformConfig) string {
	if c == nil {
		return "<none>"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "phase %s (%s)", c.Status.Phase, meta.FindStatusCondition(c.Status.Conditions, string(c.Status.Phase)))
	for _, it := range c.Status.Items {
		fmt.Fprintf(&b, "\n  %s: %s %s %q", it.Name, it.Operation, it.State, it.Message)
	}
	return b.String()
}

// itemMessage is the message of an item, "" while it does not exist; for
// use inside Eventually.
func itemMessage(name, itemName string) string {
	c, err := advisor.AdvisorV1alpha1().VirtPlatformConfigs().Get(suiteCtx, name, metav1.GetOptions{})
	if err != nil {
		return ""
	}
	for _, it := range c.Status.Items {
		if it.Name == itemName {
			return it.Message
		}
	}
	return ""
}

func item(c *v1alpha1.VirtPlatformConfig, name string) v1alpha1.VirtPlatformConfigItem {
	GinkgoHelper()
	for _, it := range c.Status.Items {
		if it.Name == name {
			return it
		}
	}
	Fail(fmt.Sprintf("no item %q in %s", name, describeStatus(c)))
	return v1alpha1.VirtPlatformConfigItem{}
}

// approveWithKubectl approves a plan hash as the user of kubeconfig the
// way the README says: kubectl create --raw with a JSON file.
func approveWithKubectl(kubeconfig, name, hash string) (string, error) {
	f := filepath.Join(GinkgoT().TempDir(), "approval.json")
	body := fmt.Sprintf(`{"apiVersion":"advisor.kubevirt.io/v1alpha1","kind":"Approval","metadata":{"name":%q},"spec":{"planHash":%q}}`, name, hash)
	Expect(os.WriteFile(f, []byte(body), 0o600)).To(Succeed())
	out, stderr, err := testEnv.Kubectl(suiteCtx, kubeconfig, "create", "--raw",
		"/apis/advisor.kubevirt.io/v1alpha1/virtplatformconfigs/"+name+"/approve", "-f", f)
	return out + stderr, err
}

// get reads a main-cluster object.
func get(gvr schema.GroupVersionResource, ns, name string) (*unstructured.Unstructured, error) {
	return dyn().Resource(gvr).Namespace(ns).Get(suiteCtx, name, metav1.GetOptions{})
}

// baselineKubeDescheduler is the spec of artifacts/testdata/baseline.yaml.
var baselineKubeDescheduler = map[string]interface{}{
	"managementState": "Managed", "deschedulingIntervalSeconds": int64(3600),
	"profiles": []interface{}{"AffinityAndTaints", "LifecycleAndUtilization"},
}

// resetCluster puts the targets back to the baseline and waits for the
// worker pool to settle, so specs do not see each other's changes.
func resetCluster() { resetClusterWithin(30 * time.Second) }

// profileMachineConfigs are the MachineConfigs the profiles write.
var profileMachineConfigs = []string{"99-worker-psi-karg", "90-worker-kubelet-swap", "90-worker-ksm-zero-pages", "90-worker-thp-madvise"}

// Every spec leaves what the profiles write as resetCluster leaves it, so
// that the many specs that do not reset (most of api_test.go) start from
// the baseline: a spec that leaks fails itself, not a later one that
// happens to run after it in the same process. Ordered containers carry
// state from spec to spec and reset when they end. Registered first, the
// check runs last: after every AfterEach and the spec's own cleanups.
var _ = BeforeEach(func() { DeferCleanup(expectNothingLeft) })

func expectNothingLeft() {
	r := CurrentSpecReport()
	if r.IsInOrderedContainer || r.Failed() {
		return
	}
	Expect(exampleConfigMap()).To(BeNil(), "the spec left the ConfigMap example-config behind: reset the cluster after it (AfterEach(resetCluster))")
	for _, name := range profileMachineConfigs {
		Expect(getObject(mcGVR, "", name)).To(BeNil(), "the spec left the MachineConfig %s behind: reset the cluster after it (AfterEach(resetCluster))", name)
	}
}

// afterOutage is how long the pool may take to settle after the main API
// server was away: client-go's reflectors (the fake MCO's, as the real
// operator's) back off up to 60 s while it is, and one may see the reset
// only that long after the server came back.
const afterOutage = 90 * time.Second

// resetClusterWithin is resetCluster waiting up to settle for the pool.
func resetClusterWithin(settle time.Duration) {
	for _, name := range profileMachineConfigs {
		err := dyn().Resource(mcGVR).Delete(suiteCtx, name, metav1.DeleteOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			Expect(err).NotTo(HaveOccurred())
		}
	}
	replaceSpec(kdGVR, kdNS, "cluster", baselineKubeDescheduler)
	replaceSpec(hcoGVR, hcoNS, hcoName, map[string]interface{}{})
	_ = dyn().Resource(configMapGVR).Namespace(hcoNS).Delete(suiteCtx, "example-config", metav1.DeleteOptions{})
	patchObject(mcpGVR, "", "worker", `{"metadata":{"annotations":{"fake-mco.virt-advisor.io/degraded":null,"advisor.kubevirt.io/paused-until":null,"advisor.kubevirt.io/paused-for-window":null,"fake-mco.virt-advisor.io/step-time":null}},"spec":{"paused":false}}`)
	waitPoolSettledWithin(settle, "00-worker")
}

func replaceSpec(gvr schema.GroupVersionResource, ns, name string, spec map[string]interface{}) {
	Eventually(func() error {
		o, err := get(gvr, ns, name)
		if err != nil {
			return err
		}
		o.Object["spec"] = runtime.DeepCopyJSONValue(spec)
		_, err = dyn().Resource(gvr).Namespace(ns).Update(suiteCtx, o, metav1.UpdateOptions{FieldManager: "e2e-reset"})
		return err
	}).WithTimeout(10 * time.Second).Should(Succeed())
}

// waitPoolSettled waits until the worker pool runs exactly these MachineConfigs.
func waitPoolSettled(sources ...string) {
	GinkgoHelper()
	waitPoolSettledWithin(30*time.Second, sources...)
}

func waitPoolSettledWithin(settle time.Duration, sources ...string) {
	GinkgoHelper()
	Eventually(func(g Gomega) {
		pool, err := get(mcpGVR, "", "worker")
		g.Expect(err).NotTo(HaveOccurred())
		var names []string
		src, _, _ := unstructured.NestedSlice(pool.Object, "status", "configuration", "source")
		for _, s := range src {
			names = append(names, s.(map[string]interface{})["name"].(string))
		}
		g.Expect(names).To(ConsistOf(sources))
		specName, _, _ := unstructured.NestedString(pool.Object, "spec", "configuration", "name")
		statusName, _, _ := unstructured.NestedString(pool.Object, "status", "configuration", "name")
		g.Expect(statusName).To(Equal(specName))
		updated, _, _ := unstructured.NestedInt64(pool.Object, "status", "updatedMachineCount")
		g.Expect(updated).To(BeEquivalentTo(3))
	}).WithTimeout(settle).WithPolling(200 * time.Millisecond).Should(Succeed())
}

// pauseController takes the controller's Lease away, so that the API is
// served but nothing is applied, and waits until the leader let go.
func pauseController() {
	GinkgoHelper()
	adv := testEnv.Advisor()
	lost := strings.Count(adv.LogTail(100000), "Lost leadership")
	Eventually(func() error {
		lease, err := kube.CoordinationV1().Leases(leaseNamespace).Get(suiteCtx, leaseName, metav1.GetOptions{})
		if err != nil {
			return err
		}
		now := metav1.NewMicroTime(time.Now())
		lease.Spec.HolderIdentity = ptrTo("e2e-pause")
		lease.Spec.LeaseDurationSeconds = ptrTo(int32(3600))
		lease.Spec.RenewTime, lease.Spec.AcquireTime = &now, &now
		_, err = kube.CoordinationV1().Leases(leaseNamespace).Update(suiteCtx, lease, metav1.UpdateOptions{})
		return err
	}).WithTimeout(10 * time.Second).Should(Succeed())
	Eventually(func() int { return strings.Count(adv.LogTail(100000), "Lost leadership") }).
		WithTimeout(15*time.Second).Should(BeNumerically(">", lost), "the leader must stop before the test goes on")
	DeferCleanup(resumeController)
}

// resumeController gives the Lease back.
func resumeController() {
	err := kube.CoordinationV1().Leases(leaseNamespace).Delete(suiteCtx, leaseName, metav1.DeleteOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		Expect(err).NotTo(HaveOccurred())
	}
}

// seenMessages records every item message while waiting for a phase.
func waitPhaseRecording(name string, phase v1alpha1.ConfigPhase, timeout time.Duration, seen map[string]bool) *v1alpha1.VirtPlatformConfig {
	GinkgoHelper()
	var c *v1alpha1.VirtPlatformConfig
	Eventually(func() v1alpha1.ConfigPhase {
		c = getConfig(name)
		for _, it := range c.Status.Items {
			seen[it.Message] = true
		}
		return c.Status.Phase
	}).WithTimeout(timeout).WithPolling(50*time.Millisecond).Should(Equal(phase), func() string { return describeStatus(c) })
	expectOnePhaseTrue(c)
	return c
}

func planHashOf(name string) string {
	GinkgoHelper()
	out, err := kubectl("get", "virtplatformconfig", name, "--subresource=plan", "-o", "jsonpath={.status.planHash}")
	Expect(err).NotTo(HaveOccurred(), out)
	Expect(out).To(MatchRegexp(`^[0-9a-f]{64}$`))
	return out
}

func eventReasons(name string) []string {
	GinkgoHelper()
	return eventReasonsSince(name, time.Time{})
}

// eventReasonsSince lists the reasons of the events about the object
// (cluster-scoped objects' events are in default) last seen at or after since.
func eventReasonsSince(name string, since time.Time) []string {
	GinkgoHelper()
	list, err := kube.CoreV1().Events("default").List(suiteCtx, metav1.ListOptions{FieldSelector: "involvedObject.name=" + name})
	Expect(err).NotTo(HaveOccurred())
	var reasons []string
	for _, e := range list.Items {
		if e.LastTimestamp.Time.Before(since) {
			continue
		}
		reasons = append(reasons, e.Reason)
	}
	return reasons
}

var _ = Describe("the seed workflow", Ordered, func() {
	BeforeEach(resetCluster)
	AfterEach(resetCluster)

	It("load-aware-rebalancing: Ignore, DryRun, review, approve, roll out node by node, Completed", func() {
		configWith("load-aware-rebalancing", `{"profile":"load-aware-rebalancing","action":"Ignore"}`)
		c := waitPhase("load-aware-rebalancing", v1alpha1.PhaseIgnored, 10*time.Second)
		Expect(c.Status.ImpactSeverity).To(Equal(v1alpha1.ImpactHigh))
		Expect(meta.FindStatusCondition(c.Status.Conditions, "Drafting").Message).To(Equal("Not applicable - configuration is ignored"))

		out, err := kubectl("patch", "virtplatformconfig", "load-aware-rebalancing", "--type=json",
			"-p", `[{"op": "replace", "path": "/spec/action", "value":"DryRun"}]`)
		Expect(err).NotTo(HaveOccurred(), out)
		c = waitPhase("load-aware-rebalancing", v1alpha1.PhaseReviewRequired, 15*time.Second)
		Expect(c.Status.ObservedGeneration).To(Equal(c.Generation))
		Expect(c.Status.SourceSnapshotHash).To(MatchRegexp(`^[0-9a-f]{64}$`))
		Expect(c.Status.OperatorVersion).NotTo(BeEmpty())
		Expect(c.Status.Items).To(HaveLen(2))
		Expect(item(c, "enable-psi-metrics").Diff).To(Equal(psiDiff))
		Expect(item(c, "enable-psi-metrics").State).To(Equal(v1alpha1.ItemStatePending))
		Expect(meta.FindStatusCondition(c.Status.Conditions, "ReviewRequired").Message).To(HavePrefix("Plan ready for review."))
		Expect(getObject(mcGVR, "", "99-worker-psi-karg")).To(BeNil(), "nothing is applied before approval")

		hash := planHashOf("load-aware-rebalancing")
		out, err = approveWithKubectl(testEnv.Kubeconfig, "load-aware-rebalancing", hash)
		Expect(err).NotTo(HaveOccurred(), out)
		Expect(out).To(ContainSubstring(`"approvedBy":"admin"`))
		Expect(out).To(ContainSubstring(hash))
		Expect(out).NotTo(ContainSubstring("managedFields"))

		seen := map[string]bool{}
		c = waitPhaseRecording("load-aware-rebalancing", v1alpha1.PhaseCompleted, 60*time.Second, seen)
		Expect(seen).To(HaveKey("MachineConfigPool 'worker' is updating (Updated: 1/3, Ready: 1/3)"))
		Expect(seen).To(HaveKey("MachineConfigPool 'worker' is updating (Updated: 2/3, Ready: 2/3)"))
		Expect(meta.FindStatusCondition(c.Status.Conditions, "Completed").Message).To(Equal("Configuration successfully applied and in sync"))
		Expect(item(c, "enable-psi-metrics").State).To(Equal(v1alpha1.ItemStateCompleted))
		Expect(item(c, "enable-psi-metrics").Message).To(Equal("MachineConfigPool 'worker' is ready (all 3 nodes updated)"))
		Expect(item(c, "enable-load-aware-descheduling").Message).To(Equal("Applied successfully"))
		Expect(c.Status.Approval).NotTo(BeNil())
		Expect(c.Status.Approval.ApprovedBy).To(Equal("admin"))
		Expect(c.Status.Approval.PlanHash).To(Equal(hash))
		Expect(c.Status.AppliedOptions.LoadAware.DevDeviationThresholds).To(Equal("AsymmetricLow"))

		mc := getObject(mcGVR, "", "99-worker-psi-karg")
		Expect(nested(mc.Object, "spec", "kernelArguments")).To(Equal([]interface{}{"psi=1"}))
		Expect(mc.GetLabels()).To(HaveKeyWithValue("advisor.kubevirt.io/managed-by", "load-aware-rebalancing"))
		kd := getObject(kdGVR, kdNS, "cluster")
		Expect(nested(kd.Object, "spec", "profiles")).To(Equal([]interface{}{"AffinityAndTaints", "KubeVirtRelieveAndMigrate"}))
		Expect(nested(kd.Object, "spec", "evictionLimits")).To(Equal(map[string]interface{}{"total": int64(5), "node": int64(2)}))
		waitPoolSettled("00-worker", "99-worker-psi-karg")

		p := getPlan("load-aware-rebalancing")
		for _, it := range p.Status.Items {
			Expect(it.Operation).To(Equal(v1alpha1.OperationNone), it.Name)
			Expect(it.Diff).To(HaveSuffix("(no changes)\n"))
			// Nothing to write: no disruption, and no promise of one.
			Expect(it.ImpactSeverity).To(Equal(v1alpha1.ImpactNone), it.Name)
			Expect(it.Message).NotTo(ContainSubstring("will be configured"), it.Name)
		}
		Expect(p.Status.ImpactSeverity).To(Equal(v1alpha1.ImpactNone))
		Expect(planItem(p, "enable-load-aware-descheduling").Message).To(Equal("KubeDescheduler 'cluster' is already configured with profile 'KubeVirtRelieveAndMigrate'; nothing to change"))
		Eventually(func() []string { return eventReasons("load-aware-rebalancing") }).WithTimeout(10 * time.Second).
			Should(ContainElements("Ignored", "ReviewRequired", "Approved", "InProgress", "Completed"))
	})

	It("virt-higher-density: swap MachineConfig rollout and the HCO, through action Apply", func() {
		configWith("virt-higher-density", `{"profile":"virt-higher-density","action":"DryRun"}`)
		waitPhase("virt-higher-density", v1alpha1.PhaseReviewRequired, 15*time.Second)
		out, err := kubectl("patch", "virtplatformconfig", "virt-higher-density", "--type=merge", "-p", `{"spec":{"action":"Apply"}}`)
		Expect(err).NotTo(HaveOccurred(), out)
		seen := map[string]bool{}
		c := waitPhaseRecording("virt-higher-density", v1alpha1.PhaseCompleted, 60*time.Second, seen)
		Expect(seen).To(HaveKey(ContainSubstring("is updating (Updated: 1/3")))
		Expect(c.Status.Approval.ApprovedBy).To(Equal("admin"), "action Apply is a standing approval by the spec's author")
		Expect(item(c, "enable-kubelet-swap").State).To(Equal(v1alpha1.ItemStateCompleted))
		hco := getObject(hcoGVR, hcoNS, hcoName)
		Expect(nested(hco.Object, "spec", "higherWorkloadDensity", "memoryOvercommitPercentage")).To(BeEquivalentTo(150))
		Expect(nested(hco.Object, "spec", "ksmConfiguration", "nodeLabelSelector")).To(Equal(map[string]interface{}{}))
		waitPoolSettled("00-worker", "90-worker-kubelet-swap")
	})

	It("refuses stale, unauthorized and dry-run approvals without applying anything", func() {
		configWith("example-profile", `{"profile":"example-profile"}`)
		waitPhase("example-profile", v1alpha1.PhaseReviewRequired, 15*time.Second)
		hash := planHashOf("example-profile")

		stale := strings.Repeat("0", 64)
		_, err := advisor.AdvisorV1alpha1().VirtPlatformConfigs().Approve(suiteCtx, "example-profile",
			&v1alpha1.Approval{Spec: v1alpha1.ApprovalSpec{PlanHash: stale}}, metav1.CreateOptions{})
		Expect(statusCode(err)).To(Equal(int32(409)), "%v", err)
		Expect(err.Error()).To(ContainSubstring(stale))
		Expect(err.Error()).To(ContainSubstring(hash))
		Expect(err.Error()).To(ContainSubstring("GET the plan again"))

		_, err = advisor.AdvisorV1alpha1().VirtPlatformConfigs().Approve(suiteCtx, "example-profile",
			&v1alpha1.Approval{Spec: v1alpha1.ApprovalSpec{PlanHash: hash}}, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		Expect(err).NotTo(HaveOccurred())

		viewer, _, _ := userClient("virt-advisor-viewer")
		_, err = viewer.AdvisorV1alpha1().VirtPlatformConfigs().Approve(suiteCtx, "example-profile",
			&v1alpha1.Approval{Spec: v1alpha1.ApprovalSpec{PlanHash: hash}}, metav1.CreateOptions{})
		Expect(statusCode(err)).To(Equal(int32(403)), "%v", err)

		Consistently(func() *v1alpha1.ApprovalRecord { return getConfig("example-profile").Status.Approval }).
			WithTimeout(time.Second).Should(BeNil(), "refused and dry-run approvals record nothing")
		Expect(getConfig("example-profile").Status.Phase).To(Equal(v1alpha1.PhaseReviewRequired))
		_, err = get(configMapGVR, hcoNS, "example-config")
		Expect(apierrors.IsNotFound(err)).To(BeTrue(), "nothing applied")

		approver, user, kubeconfig := userClient("virt-advisor-approver")
		_, err = approver.AdvisorV1alpha1().VirtPlatformConfigs().Patch(suiteCtx, "example-profile", types.MergePatchType,
			[]byte(`{"spec":{"action":"Apply"}}`), metav1.PatchOptions{})
		Expect(statusCode(err)).To(Equal(int32(403)), "an approver cannot edit the spec")
		out, err := approveWithKubectl(kubeconfig, "example-profile", hash)
		Expect(err).NotTo(HaveOccurred(), out)
		c := waitPhase("example-profile", v1alpha1.PhaseCompleted, 15*time.Second)
		Expect(c.Status.Approval.ApprovedBy).To(Equal(user))
	})

	DescribeTable("rejects bad approvals with a clear 4xx",
		func(body string, code int, message string) {
			configWith("example-profile", `{"profile":"example-profile"}`)
			res := adminRaw.Post().AbsPath("/apis/advisor.kubevirt.io/v1alpha1/virtplatformconfigs/example-profile/approve").
				SetHeader("Content-Type", "application/json").Body([]byte(body)).Do(suiteCtx)
			var got int
			res.StatusCode(&got)
			raw, _ := res.Raw()
			Expect(got).To(Equal(code), string(raw))
			Expect(string(raw)).To(ContainSubstring(message))
		},
		Entry("name differs from the URL", `{"metadata":{"name":"virt-higher-density"},"spec":{"planHash":"abc"}}`, 400,
			`must equal the VirtPlatformConfig name \"example-profile\" in the URL`),
		Entry("planHash missing", `{"spec":{}}`, 422, "spec.planHash: Required value"),
		Entry("malformed JSON", `{"spec":`, 400, ""),
		Entry("wrong kind", `{"apiVersion":"advisor.kubevirt.io/v1alpha1","kind":"VirtPlatformConfig","spec":{"planHash":"x"}}`, 400, ""),
	)

	It("refuses approvals while ignored, and for unknown configs", func() {
		configWith("example-profile", `{"profile":"example-profile","action":"Ignore"}`)
		_, err := advisor.AdvisorV1alpha1().VirtPlatformConfigs().Approve(suiteCtx, "example-profile",
			&v1alpha1.Approval{Spec: v1alpha1.ApprovalSpec{PlanHash: "abc"}}, metav1.CreateOptions{})
		Expect(statusCode(err)).To(Equal(int32(409)))
		Expect(err.Error()).To(ContainSubstring("Ignore"))
		_, err = advisor.AdvisorV1alpha1().VirtPlatformConfigs().Approve(suiteCtx, "nope",
			&v1alpha1.Approval{Spec: v1alpha1.ApprovalSpec{PlanHash: "abc"}}, metav1.CreateOptions{})
		Expect(statusCode(err)).To(Equal(int32(404)))
	})

	It("fails a plan whose targets changed between approval and apply, and applies it with bypassOptimisticLock", func() {
		configWith("load-aware-rebalancing", `{"profile":"load-aware-rebalancing","options":{"loadAware":{"enablePSIMetrics":false}}}`)
		waitPhase("load-aware-rebalancing", v1alpha1.PhaseReviewRequired, 15*time.Second)
		pauseController()
		_, err := advisor.AdvisorV1alpha1().VirtPlatformConfigs().Approve(suiteCtx, "load-aware-rebalancing",
			&v1alpha1.Approval{Spec: v1alpha1.ApprovalSpec{PlanHash: planHashOf("load-aware-rebalancing")}}, metav1.CreateOptions{})
		Expect(err).NotTo(HaveOccurred())
		patchObject(kdGVR, kdNS, "cluster", `{"spec":{"deschedulingIntervalSeconds":1234}}`)
		edited := getObject(kdGVR, kdNS, "cluster")
		resumeController()

		c := waitPhase("load-aware-rebalancing", v1alpha1.PhaseFailed, 30*time.Second)
		Expect(meta.FindStatusCondition(c.Status.Conditions, "Failed").Message).To(Equal(
			"Plan is stale: target resources have been modified since plan generation. Please regenerate the plan by changing action to DryRun, then review and re-approve. " +
				"Nothing was written for item 'enable-load-aware-descheduling': KubeDescheduler 'openshift-kube-descheduler-operator/cluster' changed after the plan was reviewed (spec.deschedulingIntervalSeconds)."))
		Expect(getObject(kdGVR, kdNS, "cluster").GetResourceVersion()).To(Equal(edited.GetResourceVersion()), "no write to the target")

		// Same again, with bypassOptimisticLock: the approved state is applied.
		_, err = advisor.AdvisorV1alpha1().VirtPlatformConfigs().Patch(suiteCtx, "load-aware-rebalancing", types.MergePatchType,
			[]byte(`{"spec":{"bypassOptimisticLock":true}}`), metav1.PatchOptions{})
		Expect(err).NotTo(HaveOccurred())
		waitPhase("load-aware-rebalancing", v1alpha1.PhaseReviewRequired, 15*time.Second)
		pauseController()
		_, err = advisor.AdvisorV1alpha1().VirtPlatformConfigs().Approve(suiteCtx, "load-aware-rebalancing",
			&v1alpha1.Approval{Spec: v1alpha1.ApprovalSpec{PlanHash: planHashOf("load-aware-rebalancing")}}, metav1.CreateOptions{})
		Expect(err).NotTo(HaveOccurred())
		patchObject(kdGVR, kdNS, "cluster", `{"spec":{"deschedulingIntervalSeconds":4321}}`)
		resumeController()
		waitPhase("load-aware-rebalancing", v1alpha1.PhaseCompleted, 30*time.Second)
		Expect(nested(getObject(kdGVR, kdNS, "cluster").Object, "spec", "deschedulingIntervalSeconds")).To(BeEquivalentTo(60))
	})
})

// getObject returns a main-cluster object, or nil when it does not exist.
func getObject(gvr schema.GroupVersionResource, ns, name string) *unstructured.Unstructured {
	GinkgoHelper()
	o, err := get(gvr, ns, name)
	if apierrors.IsNotFound(err) {
		return nil
	}
	Expect(err).NotTo(HaveOccurred())
	return o
}
