package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"sigs.k8s.io/yaml"

	"github.com/kubevirt/virt-advisor/pkg/apis/advisor/v1alpha1"
	"github.com/kubevirt/virt-advisor/pkg/cluster"
	"github.com/kubevirt/virt-advisor/test/env"
	"github.com/kubevirt/virt-advisor/test/names"
)

var (
	mcGVR        = names.MachineConfigs
	mcpGVR       = names.MachineConfigPools
	kdGVR        = names.KubeDeschedulers
	hcoGVR       = names.HyperConvergedsV1beta1
	crdGVR       = names.CRDs
	configMapGVR = names.ConfigMaps
	kdNS         = names.DeschedulerNamespace
	hcoNS        = names.HCONamespace
	hcoName      = names.HCOName
)

func dyn() dynamic.Interface { return dynamic.NewForConfigOrDie(testEnv.AdminConfig) }

// configWith creates a config of the profile with the given spec JSON.
func configWith(profile, spec string) {
	GinkgoHelper()
	Expect(createRaw(profile, spec)).To(Succeed())
}

func getPlan(name string) *v1alpha1.Plan {
	GinkgoHelper()
	p, err := advisor.AdvisorV1alpha1().VirtPlatformConfigs().GetPlan(suiteCtx, name, metav1.GetOptions{})
	Expect(err).NotTo(HaveOccurred())
	return p
}

func planItem(p *v1alpha1.Plan, name string) v1alpha1.PlanItem {
	GinkgoHelper()
	for _, it := range p.Status.Items {
		if it.Name == name {
			return it
		}
	}
	Fail(fmt.Sprintf("plan has no item %q: %+v", name, p.Status.Items))
	return v1alpha1.PlanItem{}
}

// desired decodes an item's desired state.
func desired(it v1alpha1.PlanItem) map[string]interface{} {
	GinkgoHelper()
	Expect(it.DesiredState).NotTo(BeNil())
	var m map[string]interface{}
	Expect(json.Unmarshal(it.DesiredState.Raw, &m)).To(Succeed())
	return m
}

func nested(m map[string]interface{}, path ...string) interface{} {
	v, _, _ := unstructured.NestedFieldNoCopy(m, path...)
	return v
}

// patchObject merge-patches a main-cluster object as the admin (another manager).
func patchObject(gvr schema.GroupVersionResource, ns, name, patch string) {
	GinkgoHelper()
	var ri dynamic.ResourceInterface = dyn().Resource(gvr)
	if ns != "" {
		ri = dyn().Resource(gvr).Namespace(ns)
	}
	_, err := ri.Patch(suiteCtx, name, types.MergePatchType, []byte(patch), metav1.PatchOptions{FieldManager: "e2e-admin"})
	Expect(err).NotTo(HaveOccurred())
}

// auditOffset is where the main cluster's audit log ends now: the writes
// made from here on are those advisorWritesSince returns.
func auditOffset() int64 {
	GinkgoHelper()
	_, end, err := testEnv.AuditEvents(0)
	Expect(err).NotTo(HaveOccurred())
	return end
}

// advisorWritesSince lists the writes (not dry-runs) the advisor made to
// the main cluster since the audit log's offset from. The log is written
// before each answer leaves kube-apiserver, so a write the advisor made
// before this call is in it. Others' writes, such as the fake MCO's status
// updates of a pool still rolling out after an earlier spec, do not count.
func advisorWritesSince(from int64) []string {
	GinkgoHelper()
	events, _, err := testEnv.AuditEvents(from)
	Expect(err).NotTo(HaveOccurred())
	var writes []string
	for _, ev := range events {
		if ev.User.Username == testEnv.AdvisorUser && !env.IsDryRun(ev) {
			writes = append(writes, ev.Verb+" "+ev.RequestURI)
		}
	}
	return writes
}

const psiDiff = `--- /dev/null
+++ 99-worker-psi-karg (MachineConfig)
@@ -0,0 +1,11 @@
+apiVersion: machineconfiguration.openshift.io/v1
+kind: MachineConfig
+metadata:
+  labels:
+    advisor.kubevirt.io/managed-by: load-aware-rebalancing
+    machineconfiguration.openshift.io/role: worker
+  name: 99-worker-psi-karg
+spec:
+  kernelArguments:
+  - psi=1
+
`

var _ = Describe("the live plan", func() {
	It("lists the advertised profiles right after start", func() {
		Expect(initialListing).To(MatchRegexp(`(?m)^load-aware-rebalancing\s+Ignore\s+`))
		Expect(initialListing).To(MatchRegexp(`(?m)^virt-higher-density\s+Ignore\s+`))
		Expect(initialListing).NotTo(ContainSubstring("example-profile"), "example-profile is not advertised")
	})

	It("takes kubectl apply of a sample onto an advertised config without a warning", func() {
		Expect(firstApply).To(Equal("virtplatformconfig.advisor.kubevirt.io/load-aware-rebalancing configured (server dry run)\n" +
			"virtplatformconfig.advisor.kubevirt.io/virt-higher-density configured (server dry run)\n"))
	})

	It("shows load-aware-rebalancing as a table and as YAML with the seed's diffs", func() {
		configWith("load-aware-rebalancing", `{"profile":"load-aware-rebalancing"}`)
		from := auditOffset()

		out, err := kubectl("get", "virtplatformconfig", "load-aware-rebalancing", "--subresource=plan")
		Expect(err).NotTo(HaveOccurred(), out)
		lines := strings.Split(strings.TrimSpace(out), "\n")
		Expect(strings.Fields(lines[0])).To(Equal([]string{"ITEM", "KIND", "TARGET", "OPERATION", "IMPACT", "CHANGES"}))
		Expect(lines[1]).To(MatchRegexp(`^enable-psi-metrics\s+MachineConfig\s+99-worker-psi-karg\s+Create\s+High\s+\+10 -0$`))
		Expect(lines[2]).To(MatchRegexp(`^enable-load-aware-descheduling\s+KubeDescheduler\s+openshift-kube-descheduler-operator/cluster\s+Update\s+Low\s+\+\d+ -\d+$`))

		out, err = kubectl("get", "virtplatformconfig", "load-aware-rebalancing", "--subresource=plan", "-o", "yaml")
		Expect(err).NotTo(HaveOccurred(), out)
		var p v1alpha1.Plan
		Expect(yaml.Unmarshal([]byte(out), &p)).To(Succeed())
		Expect(p.Kind).To(Equal("Plan"))
		Expect(p.Status.Profile).To(Equal("load-aware-rebalancing"))
		Expect(p.Status.PlanHash).To(MatchRegexp(`^[0-9a-f]{64}$`))
		Expect(p.Status.ImpactSeverity).To(Equal(v1alpha1.ImpactHigh))
		Expect(p.Status.Prerequisites).To(HaveEach(HaveField("Satisfied", true)))

		psi := planItem(&p, "enable-psi-metrics")
		Expect(psi.Error).To(BeEmpty())
		Expect(psi.Diff).To(Equal(psiDiff))
		Expect(psi.Message).To(Equal("MachineConfig '99-worker-psi-karg' will be configured to enable PSI metrics; reboots: pool worker, 3 nodes, once"))
		Expect(psi.ManagedFields).To(Equal([]string{"spec.kernelArguments"}))

		kd := planItem(&p, "enable-load-aware-descheduling")
		Expect(kd.Error).To(BeEmpty())
		Expect(kd.Message).To(Equal("KubeDescheduler 'cluster' will be configured with profile 'KubeVirtRelieveAndMigrate'"))
		Expect(kd.Diff).To(HavePrefix("--- cluster (KubeDescheduler)\n+++ cluster (KubeDescheduler)\n@@ "))
		Expect(kd.Diff).To(ContainSubstring("-  deschedulingIntervalSeconds: 3600\n+  deschedulingIntervalSeconds: 60\n"))
		Expect(kd.Diff).To(ContainSubstring("+  evictionLimits:\n+    node: 2\n+    total: 5\n"))
		Expect(kd.Diff).To(ContainSubstring("-  mode: Predictive\n+  mode: Automatic\n"))
		Expect(kd.Diff).To(ContainSubstring("   - AffinityAndTaints\n-  - LifecycleAndUtilization\n+  - KubeVirtRelieveAndMigrate\n"))
		Expect(kd.Diff).To(ContainSubstring("+    devDeviationThresholds: AsymmetricLow\n+    devEnableEvictionsInBackground: true\n+    devEnableSoftTainter: true\n"))
		spec := desired(kd)["spec"].(map[string]interface{})
		Expect(spec["profiles"]).To(Equal([]interface{}{"AffinityAndTaints", "KubeVirtRelieveAndMigrate"}))
		Expect(kd.ManagedFields).To(Equal([]string{"spec.managementState", "spec.deschedulingIntervalSeconds", "spec.mode", "spec.profiles", "spec.profileCustomizations", "spec.evictionLimits"}))

		Expect(advisorWritesSince(from)).To(BeEmpty(), "a plan GET must not write to the cluster")
		Expect(getPlan("load-aware-rebalancing").Status.PlanHash).To(Equal(p.Status.PlanHash), "same cluster, same hash")
	})

	It("shows virt-higher-density: the swap MachineConfig and the HCO overcommit", func() {
		configWith("virt-higher-density", `{"profile":"virt-higher-density"}`)
		p := getPlan("virt-higher-density")
		swap := planItem(p, "enable-kubelet-swap")
		Expect(swap.Error).To(BeEmpty())
		Expect(swap.Operation).To(Equal(v1alpha1.OperationCreate))
		Expect(swap.ImpactSeverity).To(Equal(v1alpha1.ImpactHigh))
		Expect(swap.Diff).To(HavePrefix("--- /dev/null\n+++ 90-worker-kubelet-swap (MachineConfig)\n@@ -0,0 +1,54 @@\n"))
		Expect(swap.Diff).To(ContainSubstring("+      - contents: |\n"))
		Expect(swap.Diff).To(ContainSubstring("swap-provision.service"))

		hco := planItem(p, "configure-higher-density")
		Expect(hco.Error).To(BeEmpty())
		Expect(hco.Operation).To(Equal(v1alpha1.OperationUpdate))
		Expect(hco.Message).To(HavePrefix("HyperConverged 'kubevirt-hyperconverged' (hco.kubevirt.io/v1beta1) will be configured with memoryOvercommitPercentage=150 and KSM enabled. Swap coverage: "))
		Expect(hco.Diff).To(HavePrefix("--- kubevirt-hyperconverged (HyperConverged hco.kubevirt.io/v1beta1)\n+++ kubevirt-hyperconverged (HyperConverged hco.kubevirt.io/v1beta1)\n"))
		Expect(hco.Diff).To(ContainSubstring("-    memoryOvercommitPercentage: 100\n+    memoryOvercommitPercentage: 150\n"))
		Expect(hco.Diff).To(ContainSubstring("+  ksmConfiguration:\n+    nodeLabelSelector: {}\n"))
	})

	It("follows option changes", func() {
		configWith("load-aware-rebalancing", `{"profile":"load-aware-rebalancing","options":{"loadAware":{"deschedulingIntervalSeconds":120,"devDeviationThresholds":"High","evictionLimitTotal":12,"evictionLimitNode":3,"mode":"Predictive"}}}`)
		kd := desired(planItem(getPlan("load-aware-rebalancing"), "enable-load-aware-descheduling"))
		Expect(nested(kd, "spec", "deschedulingIntervalSeconds")).To(BeEquivalentTo(120))
		Expect(nested(kd, "spec", "mode")).To(Equal("Predictive"))
		Expect(nested(kd, "spec", "profileCustomizations", "devDeviationThresholds")).To(Equal("High"))
		Expect(nested(kd, "spec", "evictionLimits")).To(Equal(map[string]interface{}{"total": float64(12), "node": float64(3)}), "explicit limits are not scaled")

		configWith("virt-higher-density", `{"profile":"virt-higher-density","options":{"virtHigherDensity":{"memoryToRequestRatio":200,"ksmConfiguration":{"nodeLabelSelector":{"matchLabels":{"ksm":"on"}}}}}}`)
		hco := desired(planItem(getPlan("virt-higher-density"), "configure-higher-density"))
		Expect(nested(hco, "spec", "higherWorkloadDensity", "memoryOvercommitPercentage")).To(BeEquivalentTo(200))
		Expect(nested(hco, "spec", "ksmConfiguration", "nodeLabelSelector", "matchLabels")).To(Equal(map[string]interface{}{"ksm": "on"}))
	})

	It("scales HCO migration limits and tracks live edits in the diff and the hash", func() {
		configWith("load-aware-rebalancing", `{"profile":"load-aware-rebalancing"}`)
		first := getPlan("load-aware-rebalancing")

		patchObject(hcoGVR, hcoNS, hcoName, `{"spec":{"liveMigrationConfig":{"parallelMigrationsPerCluster":20}}}`)
		DeferCleanup(patchObject, hcoGVR, hcoNS, hcoName, `{"spec":{"liveMigrationConfig":{"parallelMigrationsPerCluster":5}}}`)
		p := getPlan("load-aware-rebalancing")
		Expect(nested(desired(planItem(p, "enable-load-aware-descheduling")), "spec", "evictionLimits", "total")).To(BeEquivalentTo(18))
		Expect(p.Status.PlanHash).NotTo(Equal(first.Status.PlanHash))

		patchObject(kdGVR, kdNS, "cluster", `{"spec":{"deschedulingIntervalSeconds":1800}}`)
		DeferCleanup(patchObject, kdGVR, kdNS, "cluster", `{"spec":{"deschedulingIntervalSeconds":3600}}`)
		edited := getPlan("load-aware-rebalancing")
		Expect(planItem(edited, "enable-load-aware-descheduling").Diff).To(ContainSubstring("-  deschedulingIntervalSeconds: 1800\n"))
		Expect(edited.Status.PlanHash).NotTo(Equal(p.Status.PlanHash), "a live edit of a managed field changes the hash")
		Expect(getPlan("load-aware-rebalancing").Status.PlanHash).To(Equal(edited.Status.PlanHash))
	})

	It("plans the deletion of an owned object the profile no longer wants, and only of owned ones", func() {
		configWith("virt-higher-density", `{"profile":"virt-higher-density","options":{"virtHigherDensity":{"enableSwap":false,"memoryToRequestRatio":100}}}`)
		p := getPlan("virt-higher-density")
		Expect(p.Status.Items).To(HaveLen(1), "no swap MachineConfig exists: nothing to delete")

		mc := &unstructured.Unstructured{Object: map[string]interface{}{
			"apiVersion": "machineconfiguration.openshift.io/v1", "kind": "MachineConfig",
			"metadata": map[string]interface{}{"name": "90-worker-kubelet-swap", "labels": map[string]interface{}{
				"machineconfiguration.openshift.io/role": "worker", "advisor.kubevirt.io/managed-by": "virt-higher-density"}},
			"spec": map[string]interface{}{"config": map[string]interface{}{"ignition": map[string]interface{}{"version": "3.2.0"}}},
		}}
		// Written only under our field manager, as the earlier operator
		// did: ours (the label alone would prove nothing).
		_, err := dyn().Resource(mcGVR).Create(suiteCtx, mc, metav1.CreateOptions{FieldManager: cluster.FieldManager})
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(func() { _ = dyn().Resource(mcGVR).Delete(suiteCtx, "90-worker-kubelet-swap", metav1.DeleteOptions{}) })

		swap := planItem(getPlan("virt-higher-density"), "enable-kubelet-swap")
		Expect(swap.Operation).To(Equal(v1alpha1.OperationDelete))
		Expect(swap.Diff).To(HavePrefix("--- 90-worker-kubelet-swap (MachineConfig)\n+++ /dev/null\n@@ -1,12 +0,0 @@\n"))

		// Someone else writes to it: no longer only ours.
		patchObject(mcGVR, "", "90-worker-kubelet-swap", `{"metadata":{"labels":{"advisor.kubevirt.io/managed-by":null,"owner":"admin"}}}`)
		kept := planItem(getPlan("virt-higher-density"), "enable-kubelet-swap")
		Expect(kept.Operation).To(Equal(v1alpha1.OperationNone), "an object we did not create is never deleted")
		Expect(kept.Message).To(Equal("MachineConfig '90-worker-kubelet-swap' was not created by virt-advisor: it is left in place (delete it yourself if it is no longer wanted)"))
		Expect(kept.Diff).To(HaveSuffix("(no changes)\n"))
	})

	It("answers 200 with the unsatisfied prerequisites and their install hints", func() {
		configWith("load-aware-rebalancing", `{"profile":"load-aware-rebalancing"}`)
		crd, err := dyn().Resource(crdGVR).Get(suiteCtx, "kubedeschedulers.operator.openshift.io", metav1.GetOptions{})
		Expect(err).NotTo(HaveOccurred())
		kd, err := dyn().Resource(kdGVR).Namespace(kdNS).Get(suiteCtx, "cluster", metav1.GetOptions{})
		Expect(err).NotTo(HaveOccurred())
		Expect(dyn().Resource(crdGVR).Delete(suiteCtx, crd.GetName(), metav1.DeleteOptions{})).To(Succeed())
		DeferCleanup(restoreDescheduler, crd, kd)

		var p *v1alpha1.Plan
		Eventually(func() []v1alpha1.Prerequisite {
			p = getPlan("load-aware-rebalancing")
			return p.Status.Prerequisites
		}).WithTimeout(30 * time.Second).Should(ContainElement(v1alpha1.Prerequisite{
			Kind: "KubeDescheduler", APIVersion: "operator.openshift.io/v1", Description: "Please install the Descheduler Operator via OLM", Satisfied: false,
		}))
		Expect(p.Status.Items).To(BeEmpty())
		out, err := kubectl("get", "virtplatformconfig", "load-aware-rebalancing", "--subresource=plan")
		Expect(err).NotTo(HaveOccurred(), out)
		Expect(out).To(MatchRegexp(`prerequisite\s+KubeDescheduler\s+operator.openshift.io/v1\s+Missing\s+-\s+Please install the Descheduler Operator via OLM`))
	})

	It("answers 404 for an unknown config and lets approvers and editors read plans", func() {
		_, err := advisor.AdvisorV1alpha1().VirtPlatformConfigs().GetPlan(suiteCtx, "nope", metav1.GetOptions{})
		Expect(statusCode(err)).To(Equal(int32(404)))

		// No spec leaves the ConfigMap behind (expectNothingLeft): the
		// plan previews creating it.
		configWith("example-profile", `{"profile":"example-profile","action":"Ignore"}`)
		for _, role := range []string{"virt-advisor-approver", "virt-advisor-editor"} {
			c, _, _ := userClient(role)
			p, err := c.AdvisorV1alpha1().VirtPlatformConfigs().GetPlan(suiteCtx, "example-profile", metav1.GetOptions{})
			Expect(err).NotTo(HaveOccurred(), role)
			Expect(planItem(p, "configure-example-component").Operation).To(Equal(v1alpha1.OperationCreate), "Ignore still previews the plan")
		}
	})
})

// restoreDescheduler puts back the KubeDescheduler CRD and object.
func restoreDescheduler(crd, kd *unstructured.Unstructured) {
	for _, o := range []*unstructured.Unstructured{crd, kd} {
		unstructured.RemoveNestedField(o.Object, "metadata", "resourceVersion")
		unstructured.RemoveNestedField(o.Object, "metadata", "uid")
		unstructured.RemoveNestedField(o.Object, "metadata", "managedFields")
		unstructured.RemoveNestedField(o.Object, "metadata", "creationTimestamp")
		unstructured.RemoveNestedField(o.Object, "status")
	}
	Eventually(func() error {
		_, err := dyn().Resource(crdGVR).Create(suiteCtx, crd, metav1.CreateOptions{})
		return err
	}).WithTimeout(30 * time.Second).Should(Succeed())
	Eventually(func() error {
		_, err := dyn().Resource(kdGVR).Namespace(kdNS).Create(suiteCtx, kd, metav1.CreateOptions{})
		return err
	}).WithTimeout(30 * time.Second).Should(Succeed())
}

// installDeschedulerLevel replaces the KubeDescheduler CRD with one of an
// older operator level.
func installDeschedulerLevel(level string) {
	GinkgoHelper()
	raw, err := os.ReadFile(filepath.Join(testEnv.RepoRoot, "artifacts", "testdata", "descheduler-levels", level+".yaml"))
	Expect(err).NotTo(HaveOccurred())
	obj := &unstructured.Unstructured{}
	Expect(yaml.Unmarshal(raw, &obj.Object)).To(Succeed())
	data, err := json.Marshal(obj.Object)
	Expect(err).NotTo(HaveOccurred())
	_, err = dyn().Resource(crdGVR).Patch(suiteCtx, obj.GetName(), types.ApplyPatchType, data, metav1.PatchOptions{FieldManager: "e2e-level", Force: ptrTo(true)})
	Expect(err).NotTo(HaveOccurred())
	waitDeschedulerSchemaServed(obj)
}

// waitDeschedulerSchemaServed waits until kube-apiserver validates
// KubeDeschedulers with the enums of crd. A CRD's new schema is served a
// moment after it is stored (the old storage is replaced asynchronously,
// later on a loaded machine): a spec that started meanwhile would plan on
// one schema and write on the other, and its plan would go stale.
func waitDeschedulerSchemaServed(crd *unstructured.Unstructured) {
	GinkgoHelper()
	versions, _, _ := unstructured.NestedSlice(crd.Object, "spec", "versions")
	Expect(versions).NotTo(BeEmpty())
	props, _, _ := unstructured.NestedMap(versions[0].(map[string]interface{}), "schema", "openAPIV3Schema", "properties", "spec", "properties")
	probes := []struct {
		field string // as kube-apiserver names it in an error
		enum  []interface{}
		patch map[string]interface{}
	}{
		{"spec.profiles[0]", nestedSlice(props, "profiles", "items", "enum"),
			map[string]interface{}{"profiles": []interface{}{"e2e-probe"}}},
		{"spec.profileCustomizations.devDeviationThresholds", nestedSlice(props, "profileCustomizations", "properties", "devDeviationThresholds", "enum"),
			map[string]interface{}{"profileCustomizations": map[string]interface{}{"devDeviationThresholds": "e2e-probe"}}},
	}
	for _, p := range probes {
		if p.enum == nil {
			continue // not in this level's schema
		}
		data, err := json.Marshal(map[string]interface{}{"spec": p.patch})
		Expect(err).NotTo(HaveOccurred())
		Eventually(func(g Gomega) {
			_, err := dyn().Resource(kdGVR).Namespace(kdNS).Patch(suiteCtx, "cluster", types.MergePatchType, data, metav1.PatchOptions{DryRun: []string{metav1.DryRunAll}})
			g.Expect(err).To(HaveOccurred(), "a value outside the enum of %s must be refused", p.field)
			g.Expect(supportedValues(err.Error(), p.field)).To(ConsistOf(p.enum...), "the enum of %s kube-apiserver validates with", p.field)
		}).WithTimeout(30 * time.Second).WithPolling(200 * time.Millisecond).Should(Succeed())
	}
}

func nestedSlice(obj map[string]interface{}, fields ...string) []interface{} {
	s, _, _ := unstructured.NestedSlice(obj, fields...)
	return s
}

// supportedValues are the values an "Unsupported value" error of field lists.
func supportedValues(message, field string) []interface{} {
	m := regexp.MustCompile(regexp.QuoteMeta(field) + `: Unsupported value: "e2e-probe": supported values: ((?:"[^"]*"(?:, )?)+)`).FindStringSubmatch(message)
	if m == nil {
		return nil
	}
	var out []interface{}
	for _, v := range regexp.MustCompile(`"([^"]*)"`).FindAllStringSubmatch(m[1], -1) {
		out = append(out, v[1])
	}
	return out
}

func ptrTo[T any](v T) *T { return &v }

var _ = Describe("adapting to the installed descheduler operator", Ordered, func() {
	AfterAll(func() { installDeschedulerLevel("5.3.3") })

	DescribeTable("chooses the profile and sends only fields the level accepts",
		func(level, profile string, thresholds interface{}, node bool, softTainter bool, messageNote string) {
			installDeschedulerLevel(level)
			configWith("load-aware-rebalancing", `{"profile":"load-aware-rebalancing"}`)
			var kd v1alpha1.PlanItem
			// kube-apiserver takes a moment to serve a replaced schema.
			Eventually(func(g Gomega) {
				kd = planItem(getPlan("load-aware-rebalancing"), "enable-load-aware-descheduling")
				g.Expect(kd.Error).To(BeEmpty(), "the dry-run must be accepted by the level's CRD")
				spec := desired(kd)["spec"].(map[string]interface{})
				g.Expect(spec["profiles"]).To(Equal([]interface{}{"AffinityAndTaints", profile}))
				if thresholds == nil {
					g.Expect(nested(spec, "profileCustomizations", "devDeviationThresholds")).To(BeNil())
				} else {
					g.Expect(nested(spec, "profileCustomizations", "devDeviationThresholds")).To(Equal(thresholds))
				}
				g.Expect(nested(spec, "evictionLimits", "node") != nil).To(Equal(node))
				g.Expect(nested(spec, "profileCustomizations", "devEnableSoftTainter") != nil).To(Equal(softTainter))
			}).WithTimeout(30 * time.Second).WithPolling(time.Second).Should(Succeed())
			Expect(kd.Message).To(ContainSubstring(messageNote))
		},
		Entry("5.1.0: LongLifecycle only", "5.1.0", "LongLifecycle", nil, false, false, "profile 'LongLifecycle'"),
		Entry("5.1.2: Dev profile, AsymmetricLow falls back to Low", "5.1.2", "DevKubeVirtRelieveAndMigrate", "Low", false, false,
			"devDeviationThresholds AsymmetricLow is not supported by the installed operator, using Low"),
		Entry("5.2.x: Dev profile, no evictionLimits.node", "5.2.x", "DevKubeVirtRelieveAndMigrate", "AsymmetricLow", false, true,
			"evictionLimits.node is not supported by the installed operator"),
		Entry("5.3.3: KubeVirtRelieveAndMigrate with everything", "5.3.3", "KubeVirtRelieveAndMigrate", "AsymmetricLow", true, true,
			"profile 'KubeVirtRelieveAndMigrate'"),
	)
})
