package e2e

import (
	"encoding/base64"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	kubeletconfigv1beta1 "k8s.io/kubelet/config/v1beta1"
	"sigs.k8s.io/yaml"

	"github.com/kubevirt/virt-advisor/pkg/apis/advisor/v1alpha1"
	"github.com/kubevirt/virt-advisor/test/env/fakemco"
	"github.com/kubevirt/virt-advisor/test/names"
)

var schedulerGVR = names.Schedulers

const (
	hcoCRDName       = "hyperconvergeds.hco.kubevirt.io"
	schedulerCRDName = "schedulers.config.openshift.io"
	mcCRDName        = "machineconfigs.machineconfiguration.openshift.io"
)

// hcoRelease is one HyperConverged CRD as an HCO release installs it.
type hcoRelease struct {
	name, file, version string
}

var (
	hco117 = hcoRelease{"HCO 1.17 (v1beta1)", filepath.Join("artifacts", "crds", "hyperconverged.yaml"), "v1beta1"}
	hco120 = hcoRelease{"HCO 1.20 (v1 only)", filepath.Join("artifacts", "testdata", "crds", "hyperconverged-1.20-v1.yaml"), "v1"}
)

func hcoGVRFor(version string) schema.GroupVersionResource {
	return schema.GroupVersionResource{Group: "hco.kubevirt.io", Version: version, Resource: "hyperconvergeds"}
}

// hcoPath is where a virtualization field of the HyperConverged spec lives.
func hcoPath(version string, field ...string) []string {
	if version == "v1" {
		return append([]string{"spec", "virtualization"}, field...)
	}
	return append([]string{"spec"}, field...)
}

// hcoPatch nests a merge patch of virtualization fields at the version's path.
func hcoPatch(version, fields string) string {
	if version == "v1" {
		return `{"spec":{"virtualization":` + fields + `}}`
	}
	return `{"spec":` + fields + `}`
}

func readManifest(rel string) *unstructured.Unstructured {
	GinkgoHelper()
	raw, err := os.ReadFile(filepath.Join(testEnv.RepoRoot, rel))
	Expect(err).NotTo(HaveOccurred())
	obj := &unstructured.Unstructured{}
	Expect(yaml.Unmarshal(raw, &obj.Object)).To(Succeed())
	return obj
}

func deleteCRD(name string) {
	GinkgoHelper()
	err := dyn().Resource(crdGVR).Delete(suiteCtx, name, metav1.DeleteOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		Expect(err).NotTo(HaveOccurred())
	}
	Eventually(func() bool { return getObject(crdGVR, "", name) == nil }).WithTimeout(60 * time.Second).Should(BeTrue())
}

// installCRD creates a CRD from a manifest and waits until it is Established.
func installCRD(rel string) {
	GinkgoHelper()
	crd := readManifest(rel)
	_, err := dyn().Resource(crdGVR).Create(suiteCtx, crd, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		Expect(err).NotTo(HaveOccurred())
	}
	Eventually(func() string {
		o := getObject(crdGVR, "", crd.GetName())
		conds, _, _ := unstructured.NestedSlice(o.Object, "status", "conditions")
		for _, c := range conds {
			if m := c.(map[string]interface{}); m["type"] == "Established" {
				return fmt.Sprint(m["status"])
			}
		}
		return ""
	}).WithTimeout(30 * time.Second).Should(Equal("True"))
}

// useHCO installs the HyperConverged CRD of a release, if another one is
// installed, with a fresh HyperConverged CR (spec {}: the CRD defaults).
// Without a conversion webhook the versions cannot share stored objects,
// so the CR goes with the old CRD.
func useHCO(r hcoRelease) {
	GinkgoHelper()
	if crd := getObject(crdGVR, "", hcoCRDName); crd != nil {
		versions, _, _ := unstructured.NestedSlice(crd.Object, "spec", "versions")
		if len(versions) == 1 && versions[0].(map[string]interface{})["name"] == r.version {
			if getObject(hcoGVRFor(r.version), hcoNS, hcoName) != nil {
				return
			}
		} else {
			deleteCRD(hcoCRDName)
		}
	}
	installCRD(r.file)
	cr := &unstructured.Unstructured{Object: map[string]interface{}{
		"apiVersion": "hco.kubevirt.io/" + r.version, "kind": "HyperConverged",
		"metadata": map[string]interface{}{"name": hcoName, "namespace": hcoNS},
		"spec":     map[string]interface{}{},
	}}
	// The CRD is Established before the new version is served everywhere.
	Eventually(func() error {
		_, err := dyn().Resource(hcoGVRFor(r.version)).Namespace(hcoNS).Create(suiteCtx, cr, metav1.CreateOptions{})
		if apierrors.IsAlreadyExists(err) {
			return nil
		}
		return err
	}).WithTimeout(30 * time.Second).Should(Succeed())
}

func approvePlan(name string) {
	GinkgoHelper()
	_, err := advisor.AdvisorV1alpha1().VirtPlatformConfigs().Approve(suiteCtx, name,
		&v1alpha1.Approval{Spec: v1alpha1.ApprovalSpec{PlanHash: planHashOf(name)}}, metav1.CreateOptions{})
	Expect(err).NotTo(HaveOccurred())
}

// waitPlanThrough waits until virt-advisor's discovery serves the
// HyperConverged in the version (the CRD watch resets its RESTMapper).
func waitPlanThrough(name, version string) *v1alpha1.Plan {
	GinkgoHelper()
	var p *v1alpha1.Plan
	Eventually(func(g Gomega) {
		var err error
		p, err = advisor.AdvisorV1alpha1().VirtPlatformConfigs().GetPlan(suiteCtx, name, metav1.GetOptions{})
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(p.Status.Prerequisites).To(ContainElement(And(HaveField("Kind", "HyperConverged"),
			HaveField("APIVersion", "hco.kubevirt.io/"+version), HaveField("Satisfied", true))))
		g.Expect(p.Status.Items).NotTo(BeEmpty())
	}).WithTimeout(30 * time.Second).Should(Succeed())
	return p
}

var _ = Describe("real clusters: HyperConverged v1beta1 and v1", Ordered, func() {
	BeforeEach(func() { useHCO(hco117); resetCluster() })
	AfterEach(func() { useHCO(hco117); resetCluster() })

	for _, r := range []hcoRelease{hco117, hco120} {
		It("plans, applies and follows input drift through "+r.name, func() {
			useHCO(r)
			hco := hcoGVRFor(r.version)
			defaults := map[string]interface{}{"v1beta1": int64(2), "v1": int64(1)}[r.version]
			Expect(nested(getObject(hco, hcoNS, hcoName).Object, hcoPath(r.version, "liveMigrationConfig", "parallelOutboundMigrationsPerNode")...)).
				To(Equal(defaults), "the CRD defaults of the release")
			patchObject(hco, hcoNS, hcoName, hcoPatch(r.version, `{"liveMigrationConfig":{"parallelMigrationsPerCluster":20,"parallelOutboundMigrationsPerNode":4}}`))

			By("load-aware-rebalancing: eviction limits from the HCO migration limits, 20/4 => 18/4")
			configWith("load-aware-rebalancing", `{"profile":"load-aware-rebalancing","options":{"loadAware":{"enablePSIMetrics":false}}}`)
			p := waitPlanThrough("load-aware-rebalancing", r.version)
			Expect(nested(desired(planItem(p, "enable-load-aware-descheduling")), "spec", "evictionLimits")).
				To(Equal(map[string]interface{}{"total": float64(18), "node": float64(4)}))
			waitPhase("load-aware-rebalancing", v1alpha1.PhaseReviewRequired, 10*time.Second)
			approvePlan("load-aware-rebalancing")
			waitPhase("load-aware-rebalancing", v1alpha1.PhaseCompleted, 20*time.Second)
			Expect(nested(getObject(kdGVR, kdNS, "cluster").Object, "spec", "evictionLimits")).
				To(Equal(map[string]interface{}{"total": int64(18), "node": int64(4)}))

			By("an HCO limits change is input drift: the items show the new plan")
			patchObject(hco, hcoNS, hcoName, hcoPatch(r.version, `{"liveMigrationConfig":{"parallelMigrationsPerCluster":30}}`))
			c := waitPhase("load-aware-rebalancing", v1alpha1.PhaseReviewRequired, 10*time.Second)
			Expect(condition(c, "InputDependencyDrift").Message).To(Equal("Input dependency changed: HCO parallelMigrationsPerCluster changed (scaled 18 -> 26)"))
			kd := item(c, "enable-load-aware-descheduling")
			Expect(kd.State).To(Equal(v1alpha1.ItemStatePending))
			Expect(nested(rawJSONMap(kd.DesiredState.Raw), "spec", "evictionLimits", "total")).To(BeEquivalentTo(26))
			Expect(kd.Diff).To(ContainSubstring("-    total: 18\n+    total: 26\n"))
			approvePlan("load-aware-rebalancing")
			c = waitPhase("load-aware-rebalancing", v1alpha1.PhaseCompleted, 20*time.Second)
			Expect(item(c, "enable-load-aware-descheduling").State).To(Equal(v1alpha1.ItemStateCompleted))
			Expect(nested(getObject(kdGVR, kdNS, "cluster").Object, "spec", "evictionLimits", "total")).To(BeEquivalentTo(26))

			By("virt-higher-density: the HCO item written through " + r.version)
			configWith("virt-higher-density", `{"profile":"virt-higher-density"}`)
			p = waitPlanThrough("virt-higher-density", r.version)
			it := planItem(p, "configure-higher-density")
			Expect(it.Error).To(BeEmpty())
			Expect(it.TargetRef.APIVersion).To(Equal("hco.kubevirt.io/" + r.version))
			Expect(it.Message).To(HavePrefix(fmt.Sprintf("HyperConverged 'kubevirt-hyperconverged' (hco.kubevirt.io/%s) will be configured with memoryOvercommitPercentage=150 and KSM enabled", r.version)))
			Expect(it.Diff).To(HavePrefix(fmt.Sprintf("--- kubevirt-hyperconverged (HyperConverged hco.kubevirt.io/%s)\n", r.version)))
			Expect(it.ManagedFields).To(Equal([]string{
				strings.Join(hcoPath(r.version, "higherWorkloadDensity", "memoryOvercommitPercentage"), "."),
				strings.Join(hcoPath(r.version, "ksmConfiguration"), "."),
			}))
			waitPhase("virt-higher-density", v1alpha1.PhaseReviewRequired, 10*time.Second)
			approvePlan("virt-higher-density")
			waitPhase("virt-higher-density", v1alpha1.PhaseCompleted, 60*time.Second)
			live := getObject(hco, hcoNS, hcoName).Object
			Expect(nested(live, hcoPath(r.version, "higherWorkloadDensity", "memoryOvercommitPercentage")...)).To(BeEquivalentTo(150))
			Expect(nested(live, hcoPath(r.version, "ksmConfiguration", "nodeLabelSelector")...)).To(Equal(map[string]interface{}{}))
		})
	}

	It("with action Apply: an HCO limits change redrafts the items for review; reverting it goes back to Completed", func() {
		configWith("load-aware-rebalancing", `{"profile":"load-aware-rebalancing","action":"Apply","options":{"loadAware":{"enablePSIMetrics":false}}}`)
		c := waitPhase("load-aware-rebalancing", v1alpha1.PhaseCompleted, 30*time.Second)
		Expect(c.Status.AppliedItems).To(ContainElement(HaveField("Name", "enable-load-aware-descheduling")))

		patchObject(hcoGVR, hcoNS, hcoName, `{"spec":{"liveMigrationConfig":{"parallelMigrationsPerCluster":12}}}`)
		c = waitPhase("load-aware-rebalancing", v1alpha1.PhaseReviewRequired, 10*time.Second)
		Expect(condition(c, "InputDependencyDrift").Status).To(Equal(metav1.ConditionTrue))
		kd := item(c, "enable-load-aware-descheduling")
		Expect(kd.State).To(Equal(v1alpha1.ItemStatePending))
		Expect(nested(rawJSONMap(kd.DesiredState.Raw), "spec", "evictionLimits", "total")).To(BeEquivalentTo(11))
		Expect(kd.Diff).To(ContainSubstring("-    total: 5\n+    total: 11\n"))
		Expect(nested(getObject(kdGVR, kdNS, "cluster").Object, "spec", "evictionLimits", "total")).To(BeEquivalentTo(5), "nothing applied without review")

		By("reverting the input instead of approving")
		patchObject(hcoGVR, hcoNS, hcoName, `{"spec":{"liveMigrationConfig":{"parallelMigrationsPerCluster":5}}}`)
		c = waitPhase("load-aware-rebalancing", v1alpha1.PhaseCompleted, 10*time.Second)
		Expect(condition(c, "InputDependencyDrift").Reason).To(Equal("DriftResolved"))
		kd = item(c, "enable-load-aware-descheduling")
		Expect(kd.State).To(Equal(v1alpha1.ItemStateCompleted))
		Expect(nested(rawJSONMap(kd.DesiredState.Raw), "spec", "evictionLimits", "total")).To(BeEquivalentTo(5))

		By("changing it again and approving")
		patchObject(hcoGVR, hcoNS, hcoName, `{"spec":{"liveMigrationConfig":{"parallelMigrationsPerCluster":12}}}`)
		waitPhase("load-aware-rebalancing", v1alpha1.PhaseReviewRequired, 10*time.Second)
		approvePlan("load-aware-rebalancing")
		c = waitPhase("load-aware-rebalancing", v1alpha1.PhaseCompleted, 20*time.Second)
		Expect(nested(getObject(kdGVR, kdNS, "cluster").Object, "spec", "evictionLimits", "total")).To(BeEquivalentTo(11))
		Expect(nested(rawJSONMap(item(c, "enable-load-aware-descheduling").DesiredState.Raw), "spec", "evictionLimits", "total")).To(BeEquivalentTo(11))
	})
})

// addPool creates a MachineConfigPool the fake MCO runs with the given
// machine count and per-node step time, and removes it when the spec ends.
func addPool(name string, mcSelector, nodeSelector map[string]interface{}, machines int, step time.Duration, baseMC string) {
	GinkgoHelper()
	if baseMC != "" {
		mc := &unstructured.Unstructured{Object: map[string]interface{}{
			"apiVersion": "machineconfiguration.openshift.io/v1", "kind": "MachineConfig",
			"metadata": map[string]interface{}{"name": baseMC, "labels": map[string]interface{}{"machineconfiguration.openshift.io/role": name}},
			"spec":     map[string]interface{}{"config": map[string]interface{}{"ignition": map[string]interface{}{"version": "3.2.0"}}},
		}}
		_, err := dyn().Resource(mcGVR).Create(suiteCtx, mc, metav1.CreateOptions{})
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(func() { _ = dyn().Resource(mcGVR).Delete(suiteCtx, baseMC, metav1.DeleteOptions{}) })
	}
	pool := &unstructured.Unstructured{Object: map[string]interface{}{
		"apiVersion": "machineconfiguration.openshift.io/v1", "kind": "MachineConfigPool",
		"metadata": map[string]interface{}{"name": name, "annotations": map[string]interface{}{
			fakemco.MachinesAnnotation: fmt.Sprint(machines), fakemco.StepTimeAnnotation: step.String()}},
		"spec": map[string]interface{}{"machineConfigSelector": mcSelector, "nodeSelector": nodeSelector},
	}}
	_, err := dyn().Resource(mcpGVR).Create(suiteCtx, pool, metav1.CreateOptions{})
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(func() { _ = dyn().Resource(mcpGVR).Delete(suiteCtx, name, metav1.DeleteOptions{}) })
	waitSettled(name, machines)
}

// waitSettled waits until a pool runs its rendered config on every machine.
func waitSettled(name string, machines int) {
	GinkgoHelper()
	Eventually(func(g Gomega) {
		pool, err := get(mcpGVR, "", name)
		g.Expect(err).NotTo(HaveOccurred())
		specName, _, _ := unstructured.NestedString(pool.Object, "spec", "configuration", "name")
		statusName, _, _ := unstructured.NestedString(pool.Object, "status", "configuration", "name")
		g.Expect(specName).NotTo(BeEmpty())
		g.Expect(statusName).To(Equal(specName))
		updated, _, _ := unstructured.NestedInt64(pool.Object, "status", "updatedMachineCount")
		g.Expect(updated).To(BeEquivalentTo(machines))
	}).WithTimeout(30*time.Second).WithPolling(200*time.Millisecond).Should(Succeed(), func() string { return fakeMCOLines(name) })
}

// fakeMCOLines are the fake MCO's log lines about pool (the last 40, and
// its CRD lines): why a pool did not settle.
func fakeMCOLines(pool string) string {
	b, err := os.ReadFile(filepath.Join(testEnv.Dir, "logs", "fake-mco.log"))
	if err != nil {
		return fmt.Sprintf("the fake MCO's log cannot be read: %v", err)
	}
	var lines []string
	for _, l := range strings.Split(string(b), "\n") {
		if strings.Contains(l, pool) || strings.Contains(l, "CRD") || strings.Contains(l, "error") {
			lines = append(lines, l)
		}
	}
	if len(lines) > 40 {
		lines = lines[len(lines)-40:]
	}
	return "fake MCO log about " + pool + ":\n" + strings.Join(lines, "\n")
}

func roleSelector(roles ...interface{}) map[string]interface{} {
	return map[string]interface{}{"matchExpressions": []interface{}{map[string]interface{}{
		"key": "machineconfiguration.openshift.io/role", "operator": "In", "values": roles}}}
}

func nodeRole(role string) map[string]interface{} {
	return map[string]interface{}{"matchLabels": map[string]interface{}{"node-role.kubernetes.io/" + role: ""}}
}

var _ = Describe("real clusters: pools and nodes", Ordered, startFirst, func() {
	BeforeEach(resetCluster)
	AfterEach(resetCluster)

	It("tracks a worker MachineConfig on every pool that selects it: a slower worker-cnv pool keeps the item InProgress", func() {
		addPool("worker-cnv", roleSelector("worker", "worker-cnv"), nodeRole("worker-cnv"), 2, 2*time.Second, "")
		configWith("load-aware-rebalancing", `{"profile":"load-aware-rebalancing","action":"Apply"}`)

		// worker (3 × 300 ms) is done long before worker-cnv (2 × 2 s).
		var seen []string
		Eventually(func() string {
			var it v1alpha1.VirtPlatformConfigItem
			for _, i := range getConfig("load-aware-rebalancing").Status.Items {
				if i.Name == "enable-psi-metrics" {
					it = i
				}
			}
			seen = append(seen, string(it.State)+" "+it.Message)
			return string(it.State) + " " + it.Message
		}).WithTimeout(20 * time.Second).WithPolling(100 * time.Millisecond).
			Should(Equal("InProgress MachineConfigPool 'worker-cnv' is updating (Updated: 1/2, Ready: 1/2)"))
		pool, err := get(mcpGVR, "", "worker")
		Expect(err).NotTo(HaveOccurred())
		Expect(conditionStatusOf(pool, "Updated")).To(Equal("True"), "worker has rolled out; the item still waits for worker-cnv")

		c := waitPhase("load-aware-rebalancing", v1alpha1.PhaseCompleted, 30*time.Second)
		psi := item(c, "enable-psi-metrics")
		Expect(psi.Message).To(Equal("MachineConfigPool 'worker' is ready (all 3 nodes updated); MachineConfigPool 'worker-cnv' is ready (all 2 nodes updated)"))
		Expect(psi.PoolConfigsBefore).To(ConsistOf(HaveField("Pool", "worker"), HaveField("Pool", "worker-cnv")))
		for _, s := range seen {
			Expect(s).NotTo(HavePrefix("Completed"), "never Completed while worker-cnv rolls out: %v", seen)
		}
	})

	It("reports a paused pool among those selecting the MachineConfig, and waitTimeout covers every pool", func() {
		DeferCleanup(func() { _ = dyn().Resource(mcGVR).Delete(suiteCtx, "99-worker-psi-karg", metav1.DeleteOptions{}) })
		addPool("worker-cnv", roleSelector("worker", "worker-cnv"), nodeRole("worker-cnv"), 2, 300*time.Millisecond, "")
		patchObject(mcpGVR, "", "worker-cnv", `{"spec":{"paused":true}}`)
		configWith("load-aware-rebalancing", `{"profile":"load-aware-rebalancing","action":"Apply","waitTimeout":"4s"}`)
		c := waitPhase("load-aware-rebalancing", v1alpha1.PhaseFailed, 30*time.Second)
		psi := item(c, "enable-psi-metrics")
		Expect(psi.State).To(Equal(v1alpha1.ItemStateFailed))
		Expect(psi.Message).To(HavePrefix("Timeout waiting for resource to become healthy"))
		// A pool paused by someone else is waited for before the write
		// (one reboot per node): nothing is written to any pool.
		Expect(psi.Message).To(ContainSubstring("MachineConfigPool 'worker-cnv' is paused by someone else (field manager e2e-admin)"))
		Expect(psi.Message).To(HaveSuffix("nothing was written"))
		Expect(getObject(mcGVR, "", "99-worker-psi-karg")).To(BeNil())
	})

	It("with mastersSchedulable: true plans, applies and tracks PSI on the master pool; flipping it back prunes it", func() {
		configWith("load-aware-rebalancing", `{"profile":"load-aware-rebalancing"}`)
		Expect(getPlan("load-aware-rebalancing").Status.Items).NotTo(ContainElement(HaveField("Name", "enable-psi-metrics-master")), "no Scheduler CRD")

		installCRD(filepath.Join("artifacts", "testdata", "crds", "scheduler.yaml"))
		DeferCleanup(deleteCRD, schedulerCRDName)
		addPool("master", roleSelector("master"), nodeRole("master"), 3, 300*time.Millisecond, "00-master")
		DeferCleanup(func() { _ = dyn().Resource(mcGVR).Delete(suiteCtx, "99-master-psi-karg", metav1.DeleteOptions{}) })
		sched := &unstructured.Unstructured{Object: map[string]interface{}{
			"apiVersion": "config.openshift.io/v1", "kind": "Scheduler", "metadata": map[string]interface{}{"name": "cluster"},
			"spec": map[string]interface{}{"mastersSchedulable": false},
		}}
		Eventually(func() error {
			_, err := dyn().Resource(schedulerGVR).Create(suiteCtx, sched, metav1.CreateOptions{})
			return err
		}).WithTimeout(20 * time.Second).Should(Succeed())
		Expect(getPlan("load-aware-rebalancing").Status.Items).NotTo(ContainElement(HaveField("Name", "enable-psi-metrics-master")), "mastersSchedulable: false")

		patchObject(schedulerGVR, "", "cluster", `{"spec":{"mastersSchedulable":true}}`)
		var master v1alpha1.PlanItem
		Eventually(func(g Gomega) {
			p, err := advisor.AdvisorV1alpha1().VirtPlatformConfigs().GetPlan(suiteCtx, "load-aware-rebalancing", metav1.GetOptions{})
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(p.Status.Items).To(ContainElement(HaveField("Name", "enable-psi-metrics-master"), &master))
		}).WithTimeout(30*time.Second).Should(Succeed(), "the plan follows mastersSchedulable: true on a Scheduler CRD installed moments ago")
		Expect(master.Operation).To(Equal(v1alpha1.OperationCreate))
		Expect(master.ImpactSeverity).To(Equal(v1alpha1.ImpactHigh))
		Expect(master.TargetRef.Name).To(Equal("99-master-psi-karg"))
		Expect(master.Message).To(ContainSubstring("reboots control-plane nodes one at a time"))
		Expect(nested(desired(master), "metadata", "labels", "machineconfiguration.openshift.io/role")).To(Equal("master"))

		setAction("load-aware-rebalancing", "Apply")
		c := waitPhase("load-aware-rebalancing", v1alpha1.PhaseCompleted, 60*time.Second)
		Expect(item(c, "enable-psi-metrics-master").Message).To(Equal("MachineConfigPool 'master' is ready (all 3 nodes updated)"))
		Expect(item(c, "enable-psi-metrics-master").PoolConfigsBefore).To(ConsistOf(HaveField("Pool", "master")))
		mc := getObject(mcGVR, "", "99-master-psi-karg")
		Expect(mc.GetLabels()).To(HaveKeyWithValue("advisor.kubevirt.io/managed-by", "load-aware-rebalancing"))
		pool := getObject(mcpGVR, "", "master")
		src, _, _ := unstructured.NestedSlice(pool.Object, "status", "configuration", "source")
		Expect(src).To(ContainElement(HaveKeyWithValue("name", "99-master-psi-karg")))

		By("flipping mastersSchedulable back: the plan removes the MachineConfig it created")
		patchObject(schedulerGVR, "", "cluster", `{"spec":{"mastersSchedulable":false}}`)
		c = waitPhase("load-aware-rebalancing", v1alpha1.PhaseReviewRequired, 10*time.Second)
		Expect(item(c, "enable-psi-metrics-master").Operation).To(Equal(v1alpha1.OperationDelete))
		approvePlan("load-aware-rebalancing")
		waitPhase("load-aware-rebalancing", v1alpha1.PhaseCompleted, 60*time.Second)
		Expect(getObject(mcGVR, "", "99-master-psi-karg")).To(BeNil())
		Expect(getPlan("load-aware-rebalancing").Status.Items).NotTo(ContainElement(HaveField("Name", "enable-psi-metrics-master")))
	})

	It("sends a kubelet drop-in that decodes to a KubeletConfiguration with failSwapOn: false and LimitedSwap", func() {
		configWith("virt-higher-density", `{"profile":"virt-higher-density"}`)
		swap := desired(planItem(getPlan("virt-higher-density"), "enable-kubelet-swap"))
		files := nested(swap, "spec", "config", "storage", "files").([]interface{})
		var dropIn string
		for _, f := range files {
			if f.(map[string]interface{})["path"] == "/etc/openshift/kubelet.conf.d/90-swap.conf" {
				dropIn = nested(f.(map[string]interface{}), "contents", "source").(string)
			}
		}
		b64, ok := strings.CutPrefix(dropIn, "data:text/plain;charset=utf-8;base64,")
		Expect(ok).To(BeTrue(), dropIn)
		raw, err := base64.StdEncoding.DecodeString(b64)
		Expect(err).NotTo(HaveOccurred())
		var kc kubeletconfigv1beta1.KubeletConfiguration
		Expect(yaml.UnmarshalStrict(raw, &kc)).To(Succeed(), string(raw))
		Expect(kc.Kind).To(Equal("KubeletConfiguration"))
		Expect(kc.FailSwapOn).To(HaveValue(BeFalse()))
		Expect(kc.MemorySwap.SwapBehavior).To(Equal("LimitedSwap"))
	})

	It("accepts enableSwap: false alone and plans the swap MachineConfig's deletion; an explicit ratio 150 without swap is a 422", func() {
		configWith("virt-higher-density", `{"profile":"virt-higher-density","action":"Apply"}`)
		waitPhase("virt-higher-density", v1alpha1.PhaseCompleted, 60*time.Second)
		Expect(getObject(mcGVR, "", "90-worker-kubelet-swap")).NotTo(BeNil())

		_, err := advisor.AdvisorV1alpha1().VirtPlatformConfigs().Patch(suiteCtx, "virt-higher-density", "application/merge-patch+json",
			[]byte(`{"spec":{"action":"DryRun","options":{"virtHigherDensity":{"enableSwap":false}}}}`), metav1.PatchOptions{})
		Expect(err).NotTo(HaveOccurred())
		c := getConfig("virt-higher-density")
		Expect(*c.Spec.Options.VirtHigherDensity.MemoryToRequestRatio).To(BeEquivalentTo(100), "the default follows enableSwap")
		p := getPlan("virt-higher-density")
		Expect(planItem(p, "enable-kubelet-swap").Operation).To(Equal(v1alpha1.OperationDelete))
		Expect(nested(desired(planItem(p, "configure-higher-density")), "spec", "higherWorkloadDensity", "memoryOvercommitPercentage")).To(BeEquivalentTo(100))

		_, err = advisor.AdvisorV1alpha1().VirtPlatformConfigs().Patch(suiteCtx, "virt-higher-density", "application/merge-patch+json",
			[]byte(`{"spec":{"options":{"virtHigherDensity":{"enableSwap":false,"memoryToRequestRatio":150}}}}`), metav1.PatchOptions{})
		expectInvalid(err, "spec.options.virtHigherDensity.memoryToRequestRatio", "memoryToRequestRatio > 120 requires enableSwap=true")
	})

	It("without the MachineConfig API, enablePSIMetrics: false plans no PSI item and applies the descheduler", func() {
		mcCRD := getObject(crdGVR, "", mcCRDName)
		baseMC := getObject(mcGVR, "", "00-worker")
		deleteCRD(mcCRDName)
		DeferCleanup(func() {
			installCRD(filepath.Join("artifacts", "crds", "machineconfig.yaml"))
			Expect(mcCRD).NotTo(BeNil())
			mc := &unstructured.Unstructured{Object: map[string]interface{}{
				"apiVersion": baseMC.GetAPIVersion(), "kind": baseMC.GetKind(),
				"metadata": map[string]interface{}{"name": baseMC.GetName(), "labels": baseMC.GetLabels()},
				"spec":     baseMC.Object["spec"],
			}}
			Eventually(func() error {
				_, err := dyn().Resource(mcGVR).Create(suiteCtx, mc, metav1.CreateOptions{})
				if apierrors.IsAlreadyExists(err) {
					return nil
				}
				return err
			}).WithTimeout(30 * time.Second).Should(Succeed())
		})

		configWith("load-aware-rebalancing", noPSI)
		c := waitPhase("load-aware-rebalancing", v1alpha1.PhaseCompleted, 30*time.Second)
		Expect(c.Status.Items).To(HaveLen(1))
		Expect(item(c, "enable-load-aware-descheduling").State).To(Equal(v1alpha1.ItemStateCompleted))
		for _, it := range getPlan("load-aware-rebalancing").Status.Items {
			Expect(it.Error).To(BeEmpty(), it.Name)
		}
	})

	It("warns when the swap the worker nodes report cannot back the overcommit", func() {
		const gi = int64(1) << 30
		for _, name := range []string{"worker-0", "worker-1"} {
			n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"node-role.kubernetes.io/worker": ""}}}
			_, err := kube.CoreV1().Nodes().Create(suiteCtx, n, metav1.CreateOptions{})
			Expect(err).NotTo(HaveOccurred())
			DeferCleanup(func() { _ = kube.CoreV1().Nodes().Delete(suiteCtx, name, metav1.DeleteOptions{}) })
		}
		setSwap := func(swap *int64) {
			GinkgoHelper()
			for _, name := range []string{"worker-0", "worker-1"} {
				n, err := kube.CoreV1().Nodes().Get(suiteCtx, name, metav1.GetOptions{})
				Expect(err).NotTo(HaveOccurred())
				n.Status.Capacity = corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("8Gi")}
				n.Status.NodeInfo.Swap = nil
				if swap != nil {
					n.Status.NodeInfo.Swap = &corev1.NodeSwapStatus{Capacity: swap}
				}
				_, err = kube.CoreV1().Nodes().UpdateStatus(suiteCtx, n, metav1.UpdateOptions{})
				Expect(err).NotTo(HaveOccurred())
			}
		}
		configWith("virt-higher-density", `{"profile":"virt-higher-density"}`)

		// Plans read Nodes from a watch (docs/disruption.md, what "live"
		// means): a node's change shows once the watch delivered it.
		planSays := func(what string) *v1alpha1.Plan {
			GinkgoHelper()
			var p *v1alpha1.Plan
			Eventually(func() string {
				p = getPlan("virt-higher-density")
				return planItem(p, "configure-higher-density").Message
			}).WithTimeout(10 * time.Second).Should(ContainSubstring(what))
			return p
		}
		setSwap(ptrTo(2 * gi))
		p := planSays("WARNING: swap in MachineConfigPool 'worker' does not cover memoryToRequestRatio 150")
		hco := planItem(p, "configure-higher-density")
		Expect(p.Status.Warnings).To(ConsistOf(ContainSubstring("node 'worker-0' has 2 GiB of swap, 4 GiB needed (8 GiB of memory)")))
		Expect(hco.Message).To(ContainSubstring("WARNING: swap in MachineConfigPool 'worker' does not cover memoryToRequestRatio 150"))
		Expect(hco.ImpactSeverity).To(Equal(v1alpha1.ImpactMedium), "a warning, not a block")
		_, stderr, err := testEnv.Kubectl(suiteCtx, testEnv.Kubeconfig, "get", "virtplatformconfig", "virt-higher-density", "--subresource=plan")
		Expect(err).NotTo(HaveOccurred())
		Expect(stderr).To(ContainSubstring("Warning: item 'configure-higher-density': WARNING: swap in MachineConfigPool 'worker' does not cover"), "kubectl shows the warning")

		setSwap(ptrTo(4 * gi))
		p = planSays("swap in MachineConfigPool 'worker' covers memoryToRequestRatio 150 on all 2 nodes")
		Expect(p.Status.Warnings).To(BeEmpty())

		setSwap(nil)
		p = planSays("cannot verify MachineConfigPool 'worker': 2 of 2 nodes report no swap")
		Expect(p.Status.Warnings).To(BeEmpty())
	})
})

// conditionStatusOf reads a condition of a main-cluster object.
func conditionStatusOf(obj *unstructured.Unstructured, typ string) string {
	conds, _, _ := unstructured.NestedSlice(obj.Object, "status", "conditions")
	for _, c := range conds {
		if m, ok := c.(map[string]interface{}); ok && m["type"] == typ {
			return fmt.Sprint(m["status"])
		}
	}
	return ""
}
