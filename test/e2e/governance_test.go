package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	admissionv1 "k8s.io/api/admissionregistration/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/yaml"

	"github.com/kubevirt/virt-advisor/pkg/apis/advisor/v1alpha1"
	"github.com/kubevirt/virt-advisor/pkg/cluster"
	"github.com/kubevirt/virt-advisor/pkg/generated/clientset/versioned"
	"github.com/kubevirt/virt-advisor/pkg/plan"
	"github.com/kubevirt/virt-advisor/pkg/profiles/dedicatedcpus"
	"github.com/kubevirt/virt-advisor/test/env"
	"github.com/kubevirt/virt-advisor/test/env/fakemco"
)

// The governance invariant (docs/design.md): nothing is written to a target
// unless a user allowed to approve approved exactly that write. Every
// refusal here is checked by what was (not) written, not only its code.

func approve(c versioned.Interface, name, hash string) error {
	_, err := c.AdvisorV1alpha1().VirtPlatformConfigs().Approve(suiteCtx, name,
		&v1alpha1.Approval{Spec: v1alpha1.ApprovalSpec{PlanHash: hash}}, metav1.CreateOptions{})
	return err
}

// exampleConfigMap is the target of example-profile, nil while absent.
func exampleConfigMap() *unstructured.Unstructured {
	GinkgoHelper()
	return getObject(configMapGVR, hcoNS, "example-config")
}

// expectNothingWritten: neither the forged target nor the example's own
// was written, and the server is still running.
func expectNothingWritten() {
	GinkgoHelper()
	Consistently(func() error {
		_, err := get(configMapGVR, "default", "acc-forged")
		return err
	}).WithTimeout(2 * time.Second).Should(Satisfy(apierrors.IsNotFound))
	Expect(exampleConfigMap()).To(BeNil())
	Expect(testEnv.Advisor().Exited()).To(BeFalse())
}

// customRoleUser binds a fresh user to a ClusterRole made of rules.
func customRoleUser(rules ...rbacv1.PolicyRule) (versioned.Interface, string) {
	GinkgoHelper()
	user := fmt.Sprintf("custom-%d", time.Now().UnixNano())
	role := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: user}, Rules: rules}
	_, err := kube.RbacV1().ClusterRoles().Create(suiteCtx, role, metav1.CreateOptions{})
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(func() { _ = kube.RbacV1().ClusterRoles().Delete(suiteCtx, user, metav1.DeleteOptions{}) })
	binding := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: user},
		RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: user},
		Subjects:   []rbacv1.Subject{{APIGroup: "rbac.authorization.k8s.io", Kind: "User", Name: user}},
	}
	_, err = kube.RbacV1().ClusterRoleBindings().Create(suiteCtx, binding, metav1.CreateOptions{})
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(func() { _ = kube.RbacV1().ClusterRoleBindings().Delete(suiteCtx, user, metav1.DeleteOptions{}) })
	cfg, _, err := testEnv.UserConfig(user)
	Expect(err).NotTo(HaveOccurred())
	return versioned.NewForConfigOrDie(cfg), user
}

func advisorRule(verbs []string, resources ...string) rbacv1.PolicyRule {
	return rbacv1.PolicyRule{APIGroups: []string{"advisor.kubevirt.io"}, Resources: resources, Verbs: verbs}
}

var _ = Describe("governance: action Apply is an approval", func() {
	BeforeEach(resetCluster)
	AfterEach(resetCluster)

	It("refuses Apply from an editor (403 naming the permission, nothing written) and takes it from an editor who may approve", func() {
		configWith("example-profile", `{"profile":"example-profile"}`)
		waitPhase("example-profile", v1alpha1.PhaseReviewRequired, 15*time.Second)

		editor, _, _ := userClient("virt-advisor-editor")
		configs := editor.AdvisorV1alpha1().VirtPlatformConfigs()
		_, err := configs.Patch(suiteCtx, "example-profile", types.MergePatchType, []byte(`{"spec":{"action":"Apply"}}`), metav1.PatchOptions{})
		Expect(statusCode(err)).To(Equal(int32(403)), "%v", err)
		Expect(err.Error()).To(ContainSubstring("may not create virtplatformconfigs/approve"))
		Expect(err.Error()).To(ContainSubstring("/approve"))
		// Nor by creating the config with Apply, nor by server-side apply.
		deleteConfig("example-profile")
		withApply := newConfig("example-profile")
		withApply.Spec.Action = v1alpha1.PlanActionApply
		_, err = configs.Create(suiteCtx, withApply, metav1.CreateOptions{})
		Expect(statusCode(err)).To(Equal(int32(403)), "%v", err)
		_, err = configs.Patch(suiteCtx, "example-profile", types.ApplyPatchType,
			[]byte(`{"apiVersion":"advisor.kubevirt.io/v1alpha1","kind":"VirtPlatformConfig","metadata":{"name":"example-profile"},"spec":{"profile":"example-profile","action":"Apply"}}`),
			metav1.PatchOptions{FieldManager: "editor", Force: ptrTo(true)})
		Expect(statusCode(err)).To(Equal(int32(403)), "%v", err)
		Consistently(exampleConfigMap).WithTimeout(2*time.Second).Should(BeNil(), "the editor's Apply wrote nothing")

		both, user, _ := userClient("virt-advisor-editor", "virt-advisor-approver")
		_, err = both.AdvisorV1alpha1().VirtPlatformConfigs().Create(suiteCtx, withApply, metav1.CreateOptions{})
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(deleteConfig, "example-profile")
		c := waitPhase("example-profile", v1alpha1.PhaseCompleted, 20*time.Second)
		Expect(c.Status.Approval.ApprovedBy).To(Equal(user))
		Expect(exampleConfigMap()).NotTo(BeNil())
	})
})

var _ = Describe("governance: status is the controller's", func() {
	BeforeEach(resetCluster)

	It("refuses forged phases and items on /status from a status writer and a cluster admin; nothing is written, the server keeps running", func() {
		configWith("example-profile", `{"profile":"example-profile","waitTimeout":"1s"}`)
		waitPhase("example-profile", v1alpha1.PhaseReviewRequired, 15*time.Second)
		statusWriter, _ := customRoleUser(
			advisorRule([]string{"get", "list", "watch"}, "virtplatformconfigs"),
			advisorRule([]string{"get", "update", "patch"}, "virtplatformconfigs/status"))

		forged := `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"acc-forged","namespace":"default"},"data":{"x":"y"}}`
		patch := fmt.Sprintf(`{"status":{"phase":"InProgress","items":[{"name":"configure-example-component","state":"InProgress","message":"Applying",`+
			`"targetRef":{"apiVersion":"v1","kind":"ConfigMap","name":"acc-forged","namespace":"default"},"operation":"Create","desiredState":%s}]}}`, forged)
		for who, c := range map[string]versioned.Interface{"status writer": statusWriter, "cluster admin": advisor} {
			before := getConfig("example-profile")
			_, err := c.AdvisorV1alpha1().VirtPlatformConfigs().Patch(suiteCtx, "example-profile", types.MergePatchType, []byte(patch), metav1.PatchOptions{}, "status")
			Expect(statusCode(err)).To(Equal(int32(403)), "%s: %v", who, err)
			Expect(err.Error()).To(ContainSubstring("status is written only by the embedded controller"))
			forgedCfg := before.DeepCopy()
			forgedCfg.Status.Phase = v1alpha1.PhaseInProgress
			_, err = c.AdvisorV1alpha1().VirtPlatformConfigs().UpdateStatus(suiteCtx, forgedCfg, metav1.UpdateOptions{})
			Expect(statusCode(err)).To(Equal(int32(403)), "%s: %v", who, err)
			Expect(getConfig("example-profile").ResourceVersion).To(Equal(before.ResourceVersion), "%s: status unchanged", who)
		}
		expectNothingWritten()
		expectHealthy()
	})
})

var _ = Describe("governance: the approval binds the spec and the items", Ordered, func() {
	BeforeEach(resetCluster)
	AfterEach(resetCluster)

	DescribeTable("a spec change after review makes the reviewed hash stale (409), nothing recorded",
		func(patch string) {
			configWith("example-profile", `{"profile":"example-profile"}`)
			waitPhase("example-profile", v1alpha1.PhaseReviewRequired, 15*time.Second)
			reviewed := planHashOf("example-profile")
			_, err := advisor.AdvisorV1alpha1().VirtPlatformConfigs().Patch(suiteCtx, "example-profile", types.MergePatchType, []byte(patch), metav1.PatchOptions{})
			Expect(err).NotTo(HaveOccurred())
			err = approve(advisor, "example-profile", reviewed)
			Expect(statusCode(err)).To(Equal(int32(409)), "%v", err)
			Expect(err.Error()).To(ContainSubstring(reviewed))
			Expect(planHashOf("example-profile")).NotTo(Equal(reviewed), "the same items under another spec are another plan")
			Expect(getConfig("example-profile").Status.Approval).To(BeNil())
			Expect(exampleConfigMap()).To(BeNil())
		},
		Entry("bypassOptimisticLock", `{"spec":{"bypassOptimisticLock":true}}`),
		Entry("failurePolicy", `{"spec":{"failurePolicy":"Continue"}}`),
		Entry("waitTimeout", `{"spec":{"waitTimeout":"5m"}}`),
	)

	It("fails the plan, writing nothing, when the spec changed between the approval and the first write", func() {
		configWith("example-profile", `{"profile":"example-profile"}`)
		waitPhase("example-profile", v1alpha1.PhaseReviewRequired, 15*time.Second)
		pauseController()
		Expect(approve(advisor, "example-profile", planHashOf("example-profile"))).To(Succeed())
		_, err := advisor.AdvisorV1alpha1().VirtPlatformConfigs().Patch(suiteCtx, "example-profile", types.MergePatchType,
			[]byte(`{"spec":{"failurePolicy":"Continue"}}`), metav1.PatchOptions{})
		Expect(err).NotTo(HaveOccurred())
		resumeController()

		c := waitPhase("example-profile", v1alpha1.PhaseFailed, 20*time.Second)
		Expect(meta.FindStatusCondition(c.Status.Conditions, "Failed").Message).To(
			ContainSubstring("the spec changed after plan"))
		Consistently(exampleConfigMap).WithTimeout(2*time.Second).Should(BeNil(), "nothing written")
	})

	It("fails the plan, writing nothing, when the approved items were changed in storage", func() {
		configWith("example-profile", `{"profile":"example-profile","waitTimeout":"1s"}`)
		waitPhase("example-profile", v1alpha1.PhaseReviewRequired, 15*time.Second)
		pauseController()
		Expect(approve(advisor, "example-profile", planHashOf("example-profile"))).To(Succeed())
		Expect(getConfig("example-profile").Status.Approval.ItemsHash).To(MatchRegexp(`^[0-9a-f]{64}$`))

		// Someone with access to etcd points the approved item elsewhere,
		// and drops its transition time (which once crashed the server).
		Expect(testEnv.Advisor().EditStoredConfig(suiteCtx, "example-profile", func(obj map[string]any) error {
			it := obj["status"].(map[string]any)["items"].([]any)[0].(map[string]any)
			it["targetRef"] = map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "name": "acc-forged", "namespace": "default"}
			it["desiredState"] = json.RawMessage(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"acc-forged","namespace":"default"},"data":{"x":"y"}}`)
			delete(it, "lastTransitionTime")
			return nil
		})).To(Succeed())
		resumeController()

		c := waitPhase("example-profile", v1alpha1.PhaseFailed, 20*time.Second)
		Expect(meta.FindStatusCondition(c.Status.Conditions, "Failed").Message).To(
			ContainSubstring("are not the items of plan"))
		expectNothingWritten()
	})

	It("writes an approved plan left untouched in storage (the control for the two specs above)", func() {
		configWith("example-profile", `{"profile":"example-profile"}`)
		waitPhase("example-profile", v1alpha1.PhaseReviewRequired, 15*time.Second)
		pauseController()
		Expect(approve(advisor, "example-profile", planHashOf("example-profile"))).To(Succeed())
		c := getConfig("example-profile")
		got, err := plan.ItemsHash(c.Status.Items)
		Expect(err).NotTo(HaveOccurred())
		Expect(got).To(Equal(c.Status.Approval.ItemsHash))
		resumeController()
		waitPhase("example-profile", v1alpha1.PhaseCompleted, 20*time.Second)
		Expect(exampleConfigMap()).NotTo(BeNil())
	})
})

var _ = Describe("governance: approving needs reading", func() {
	BeforeEach(resetCluster)

	It("refuses a principal that may only create approvals, for any hash, without naming the live hash", func() {
		configWith("example-profile", `{"profile":"example-profile"}`)
		waitPhase("example-profile", v1alpha1.PhaseReviewRequired, 15*time.Second)
		live := planHashOf("example-profile")
		approveOnly, _ := customRoleUser(advisorRule([]string{"create"}, "virtplatformconfigs/approve"))
		for _, hash := range []string{"0000", live} {
			err := approve(approveOnly, "example-profile", hash)
			Expect(statusCode(err)).To(Equal(int32(403)), "%v", err)
			Expect(err.Error()).To(ContainSubstring("get virtplatformconfigs/plan"))
			Expect(err.Error()).NotTo(ContainSubstring(live))
		}
		Expect(getConfig("example-profile").Status.Approval).To(BeNil())
		Expect(exampleConfigMap()).To(BeNil())
	})
})

var _ = Describe("governance: four eyes (--require-distinct-approver)", Ordered, func() {
	BeforeAll(func() {
		serveThrough("four-eyes", env.AdvisorBinary, "--require-distinct-approver")
	})

	It("refuses the author's own approval and applies a second approver's", func() {
		author, authorName, _ := userClient("virt-advisor-editor", "virt-advisor-approver")
		_, err := author.AdvisorV1alpha1().VirtPlatformConfigs().Create(suiteCtx, newConfig("example-profile"), metav1.CreateOptions{})
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(deleteConfig, "example-profile")
		waitPhase("example-profile", v1alpha1.PhaseReviewRequired, 20*time.Second)
		hash := planHashOf("example-profile")

		err = approve(author, "example-profile", hash)
		Expect(statusCode(err)).To(Equal(int32(403)), "%v", err)
		Expect(err.Error()).To(ContainSubstring("second person"))
		Expect(err.Error()).To(ContainSubstring(authorName))
		Expect(exampleConfigMap()).To(BeNil())

		second, secondName, _ := userClient("virt-advisor-approver")
		Expect(approve(second, "example-profile", hash)).To(Succeed())
		c := waitPhase("example-profile", v1alpha1.PhaseCompleted, 20*time.Second)
		Expect(c.Status.Approval.ApprovedBy).To(Equal(secondName))
		Expect(exampleConfigMap()).NotTo(BeNil())
	})

	It("never lets the author's action Apply approve by itself", func() {
		resetCluster()
		author, _, _ := userClient("virt-advisor-editor", "virt-advisor-approver")
		withApply := newConfig("example-profile")
		withApply.Spec.Action = v1alpha1.PlanActionApply
		_, err := author.AdvisorV1alpha1().VirtPlatformConfigs().Create(suiteCtx, withApply, metav1.CreateOptions{})
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(deleteConfig, "example-profile")
		c := waitPhase("example-profile", v1alpha1.PhaseReviewRequired, 20*time.Second)
		Expect(meta.FindStatusCondition(c.Status.Conditions, "ReviewRequired").Message).To(ContainSubstring("--require-distinct-approver"))
		Expect(c.Status.Approval).To(BeNil())
		Consistently(exampleConfigMap).WithTimeout(3*time.Second).Should(BeNil(), "Apply by the author wrote nothing")
	})
})

var _ = Describe("governance: prune only what virt-advisor made", Ordered, func() {
	BeforeEach(resetCluster)
	AfterEach(resetCluster)

	swapOff := `{"profile":"virt-higher-density","options":{"virtHigherDensity":{"enableSwap":false,"memoryToRequestRatio":100}}}`
	approveLive := func(name string) {
		GinkgoHelper()
		Expect(approve(advisor, name, planHashOf(name))).To(Succeed())
	}
	// createMachineConfig makes 90-worker-kubelet-swap as manager, unlabelled.
	createMachineConfig := func(manager string) {
		GinkgoHelper()
		mc := `{"apiVersion":"machineconfiguration.openshift.io/v1","kind":"MachineConfig","metadata":{"name":"90-worker-kubelet-swap",` +
			`"labels":{"machineconfiguration.openshift.io/role":"worker"}},"spec":{"kernelArguments":["admin=1"]}}`
		_, err := dyn().Resource(mcGVR).Patch(suiteCtx, "90-worker-kubelet-swap", types.ApplyPatchType, []byte(mc),
			metav1.PatchOptions{FieldManager: manager, Force: ptrTo(true)})
		Expect(err).NotTo(HaveOccurred())
	}

	It("keeps an administrator's own MachineConfig when the option is turned off", func() {
		createMachineConfig("cluster-admin-tool")
		configWith("virt-higher-density", `{"profile":"virt-higher-density"}`)
		waitPhase("virt-higher-density", v1alpha1.PhaseReviewRequired, 20*time.Second)
		Expect(desired(planItem(getPlan("virt-higher-density"), "enable-kubelet-swap"))).NotTo(
			HaveKeyWithValue("metadata", HaveKeyWithValue("labels", HaveKey("advisor.kubevirt.io/managed-by"))), "never labelled ours")
		approveLive("virt-higher-density")
		waitPhase("virt-higher-density", v1alpha1.PhaseCompleted, 60*time.Second)
		Expect(getObject(mcGVR, "", "90-worker-kubelet-swap").GetLabels()).NotTo(HaveKey("advisor.kubevirt.io/managed-by"))

		configWith("virt-higher-density", swapOff)
		waitPhase("virt-higher-density", v1alpha1.PhaseReviewRequired, 20*time.Second)
		it := planItem(getPlan("virt-higher-density"), "enable-kubelet-swap")
		Expect(it.Operation).To(Equal(v1alpha1.OperationNone))
		Expect(it.Message).To(ContainSubstring("was not created by virt-advisor"))
		approveLive("virt-higher-density")
		c := waitPhase("virt-higher-density", v1alpha1.PhaseCompleted, 60*time.Second)
		Expect(item(c, "enable-kubelet-swap").Message).To(ContainSubstring("left in place"))
		Expect(getObject(mcGVR, "", "90-worker-kubelet-swap")).NotTo(BeNil(), "the administrator's MachineConfig survived")
	})

	It("prunes a MachineConfig virt-advisor created", func() {
		configWith("virt-higher-density", `{"profile":"virt-higher-density"}`)
		waitPhase("virt-higher-density", v1alpha1.PhaseReviewRequired, 20*time.Second)
		Expect(planItem(getPlan("virt-higher-density"), "enable-kubelet-swap").Operation).To(Equal(v1alpha1.OperationCreate))
		approveLive("virt-higher-density")
		waitPhase("virt-higher-density", v1alpha1.PhaseCompleted, 60*time.Second)
		Expect(getObject(mcGVR, "", "90-worker-kubelet-swap").GetLabels()).To(HaveKeyWithValue("advisor.kubevirt.io/managed-by", "virt-higher-density"))

		configWith("virt-higher-density", swapOff)
		waitPhase("virt-higher-density", v1alpha1.PhaseReviewRequired, 20*time.Second)
		Expect(planItem(getPlan("virt-higher-density"), "enable-kubelet-swap").Operation).To(Equal(v1alpha1.OperationDelete))
		approveLive("virt-higher-density")
		waitPhase("virt-higher-density", v1alpha1.PhaseCompleted, 60*time.Second)
		Expect(getObject(mcGVR, "", "90-worker-kubelet-swap")).To(BeNil())
	})

	It("adopts and prunes a MachineConfig whose only manager is virt-advisor-operator (made by the earlier operator)", func() {
		createMachineConfig(cluster.FieldManager)
		configWith("virt-higher-density", swapOff)
		waitPhase("virt-higher-density", v1alpha1.PhaseReviewRequired, 20*time.Second)
		Expect(planItem(getPlan("virt-higher-density"), "enable-kubelet-swap").Operation).To(Equal(v1alpha1.OperationDelete))
		approveLive("virt-higher-density")
		waitPhase("virt-higher-density", v1alpha1.PhaseCompleted, 60*time.Second)
		Expect(getObject(mcGVR, "", "90-worker-kubelet-swap")).To(BeNil())
	})
})

var _ = Describe("governance: the server's own identity", Ordered, func() {
	BeforeEach(resetCluster)
	AfterEach(resetCluster)

	It("runs as its ServiceAccount with a TokenRequest token, exactly the shipped RBAC and the shipped admission policy", func() {
		// An RBAC refusal and a denial of the admission policy both read
		// "… is forbidden: …".
		forbidden := func() int { return strings.Count(testEnv.Advisor().LogTail(1<<20), "is forbidden") }
		forbiddenBefore := forbidden()
		expectShippedPolicy()
		kc, err := clientcmd.LoadFromFile(testEnv.AdvisorKubeconfig)
		Expect(err).NotTo(HaveOccurred())
		auth := kc.AuthInfos[kc.Contexts[kc.CurrentContext].AuthInfo]
		Expect(auth.Token).NotTo(BeEmpty(), "a token, no client certificate")
		Expect(auth.ClientCertificateData).To(BeEmpty())
		review, err := kube.AuthenticationV1().TokenReviews().Create(suiteCtx,
			&authenticationv1.TokenReview{Spec: authenticationv1.TokenReviewSpec{Token: auth.Token}}, metav1.CreateOptions{})
		Expect(err).NotTo(HaveOccurred())
		Expect(review.Status.User.Username).To(Equal("system:serviceaccount:virt-advisor:virt-advisor-apiserver"))
		Expect(review.Status.User.Groups).NotTo(ContainElement("system:masters"))
		Expect(testEnv.Advisor().Args).To(ContainElement("--kubeconfig=" + testEnv.AdvisorKubeconfig))

		canI := func(args ...string) string {
			out, stderr, _ := testEnv.Kubectl(suiteCtx, testEnv.AdvisorKubeconfig, append([]string{"auth", "can-i"}, args...)...)
			return strings.TrimSpace(out + stderr)
		}
		for _, q := range [][]string{
			{"create", "configmaps", "-n", "default"},
			{"delete", "configmaps/kube-root-ca.crt", "-n", "default"},
			{"delete", "configmaps/kube-root-ca.crt", "-n", "openshift-cnv"},
			{"update", "virtplatformconfigs.advisor.kubevirt.io/example-profile", "--subresource=status"},
			{"update", "machineconfigpools.machineconfiguration.openshift.io/worker"},
			{"delete", "machineconfigpools.machineconfiguration.openshift.io/worker"},
			{"patch", "machineconfigpools.machineconfiguration.openshift.io/worker", "--subresource=status"},
			{"delete", "kubeletconfigs.machineconfiguration.openshift.io/set-max-pods"},
			{"patch", "noderesourcetopologies.topology.node.k8s.io/cnv-0"},
		} {
			Expect(canI(q...)).To(HavePrefix("no"), "can-i %v", q)
		}
		for _, q := range [][]string{
			{"patch", "machineconfigs.machineconfiguration.openshift.io/99-worker-psi-karg"},
			{"delete", "machineconfigs.machineconfiguration.openshift.io/90-worker-kubelet-swap"},
			// MachineConfigs named after a pool the options choose
			// (hugepages, pci-passthrough): RBAC cannot name them; the
			// admission policy confines them (the spec below).
			{"patch", "machineconfigs.machineconfiguration.openshift.io/50-worker-cnv-virt-advisor-hugepages"},
			{"delete", "machineconfigs.machineconfiguration.openshift.io/50-worker-virt-advisor-pci-passthrough"},
			{"patch", "kubedeschedulers.operator.openshift.io/cluster", "-n", kdNS},
			{"patch", "hyperconvergeds.hco.kubevirt.io/kubevirt-hyperconverged", "-n", hcoNS},
			// Pausing pools: any pool, custom pools such as worker-cnv included.
			{"patch", "machineconfigpools.machineconfiguration.openshift.io/worker"},
			{"patch", "machineconfigpools.machineconfiguration.openshift.io/worker-cnv"},
			// dedicated-cpus: its one KubeletConfig, and reading what it derives from.
			{"patch", "kubeletconfigs.machineconfiguration.openshift.io/" + dedicatedcpus.KubeletConfigName},
			{"delete", "kubeletconfigs.machineconfiguration.openshift.io/" + dedicatedcpus.KubeletConfigName},
			{"list", "noderesourcetopologies.topology.node.k8s.io"},
		} {
			Expect(canI(q...)).To(HavePrefix("yes"), "can-i %v", q)
		}

		// The advertised profiles, the whole way: plan, approve, apply, rollout
		// (live-migration-limits derives from the worker Nodes, created last
		// so the others plan as they always have).
		for _, profile := range []string{"load-aware-rebalancing", "virt-higher-density", "live-migration-limits"} {
			if profile == "live-migration-limits" {
				withWorkerNodes()
			}
			configWith(profile, fmt.Sprintf(`{"profile":%q}`, profile))
			waitPhase(profile, v1alpha1.PhaseReviewRequired, 20*time.Second)
			p := getPlan(profile)
			for _, it := range p.Status.Items {
				Expect(it.Error).To(BeEmpty(), "%s/%s", profile, it.Name)
			}
			Expect(approve(advisor, profile, p.Status.PlanHash)).To(Succeed())
			c := waitPhase(profile, v1alpha1.PhaseCompleted, 90*time.Second)
			for _, it := range c.Status.Items {
				Expect(it.State).To(Equal(v1alpha1.ItemStateCompleted), "%s/%s: %s", profile, it.Name, it.Message)
			}
			deleteConfig(profile)
		}
		// dedicated-cpus: a KubeletConfig derived from a pool's nodes and
		// their NodeResourceTopologies, rolled through the generated
		// MachineConfig, then deleted by turning it off.
		cnvWorld()
		configWith(dedicatedcpus.Name, dcSpec)
		waitPhase(dedicatedcpus.Name, v1alpha1.PhaseReviewRequired, 20*time.Second)
		Expect(planItem(getPlan(dedicatedcpus.Name), dcItem).Error).To(BeEmpty())
		Expect(approve(advisor, dedicatedcpus.Name, planHashOf(dedicatedcpus.Name))).To(Succeed())
		waitPhase(dedicatedcpus.Name, v1alpha1.PhaseCompleted, 90*time.Second)
		_, err = advisor.AdvisorV1alpha1().VirtPlatformConfigs().Patch(suiteCtx, dedicatedcpus.Name, types.MergePatchType,
			[]byte(`{"spec":{"options":{"dedicatedCPUs":{"enabled":false}}}}`), metav1.PatchOptions{})
		Expect(err).NotTo(HaveOccurred())
		waitPhase(dedicatedcpus.Name, v1alpha1.PhaseReviewRequired, 20*time.Second)
		Expect(approve(advisor, dedicatedcpus.Name, planHashOf(dedicatedcpus.Name))).To(Succeed())
		waitPhase(dedicatedcpus.Name, v1alpha1.PhaseCompleted, 90*time.Second)
		Expect(getObject(kubeletConfigsGVR, "", dcKubelet)).To(BeNil())
		deleteConfig(dedicatedcpus.Name)
		// hugepages and pci-passthrough: MachineConfigs named after a pool
		// of Intel nodes the options choose.
		const saPool = "e2e-sa-pool"
		addPool(saPool, roleSelector(saPool), nodeRole(saPool), 2, 300*time.Millisecond, "00-"+saPool)
		addNodes(saPool, "64Gi", "GenuineIntel", "e2e-sa-0", "e2e-sa-1")
		for profile, options := range map[string]string{
			"hugepages":       `{"hugepages":{"pool":"e2e-sa-pool","pageSize":"2M","memoryPercent":25}}`,
			"pci-passthrough": `{"pciPassthrough":{"pool":"e2e-sa-pool"}}`,
		} {
			mc := "50-" + saPool + "-virt-advisor-" + profile
			DeferCleanup(func() { _ = dyn().Resource(mcGVR).Delete(suiteCtx, mc, metav1.DeleteOptions{}) })
			configWith(profile, fmt.Sprintf(`{"profile":%q,"options":%s}`, profile, options))
			waitPhase(profile, v1alpha1.PhaseReviewRequired, 20*time.Second)
			for _, it := range getPlan(profile).Status.Items {
				Expect(it.Error).To(BeEmpty(), "%s/%s", profile, it.Name)
			}
			Expect(approve(advisor, profile, planHashOf(profile))).To(Succeed())
			waitPhase(profile, v1alpha1.PhaseCompleted, 90*time.Second)
			Expect(getObject(mcGVR, "", mc)).NotTo(BeNil(), "%s written", mc)
			deleteConfig(profile)
		}
		// virt-higher-density's kernel tunings: KSM zero pages, THP madvise.
		configWith("virt-higher-density", `{"profile":"virt-higher-density","options":{"virtHigherDensity":{`+
			`"ksmConfiguration":{"enabled":true,"useZeroPages":true},"thpMadvise":true}}}`)
		waitPhase("virt-higher-density", v1alpha1.PhaseReviewRequired, 20*time.Second)
		Expect(approve(advisor, "virt-higher-density", planHashOf("virt-higher-density"))).To(Succeed())
		waitPhase("virt-higher-density", v1alpha1.PhaseCompleted, 90*time.Second)
		Expect(getObject(mcGVR, "", "90-worker-ksm-zero-pages")).NotTo(BeNil())
		Expect(getObject(mcGVR, "", "90-worker-thp-madvise")).NotTo(BeNil())
		deleteConfig("virt-higher-density")
		// Pruning: the delete of a MachineConfig it created (by name).
		configWith("virt-higher-density", `{"profile":"virt-higher-density","options":{"virtHigherDensity":{"enableSwap":false,"memoryToRequestRatio":100}}}`)
		waitPhase("virt-higher-density", v1alpha1.PhaseReviewRequired, 20*time.Second)
		Expect(planItem(getPlan("virt-higher-density"), "enable-kubelet-swap").Operation).To(Equal(v1alpha1.OperationDelete))
		Expect(approve(advisor, "virt-higher-density", planHashOf("virt-higher-density"))).To(Succeed())
		waitPhase("virt-higher-density", v1alpha1.PhaseCompleted, 60*time.Second)
		Expect(getObject(mcGVR, "", "90-worker-kubelet-swap")).To(BeNil())
		Expect(getObject(mcGVR, "", "90-worker-ksm-zero-pages")).To(BeNil())
		Expect(getObject(mcGVR, "", "90-worker-thp-madvise")).To(BeNil())
		deleteConfig("virt-higher-density")
		Expect(forbidden()).To(Equal(forbiddenBefore), "the server never lacked a permission, nor was denied by the policy")
	})

	It("is refused by the shipped admission policy, naming it, what its RBAC allows and no profile writes", func() {
		expectShippedPolicy()
		cfg, err := clientcmd.BuildConfigFromFlags("", testEnv.AdvisorKubeconfig)
		Expect(err).NotTo(HaveOccurred())
		server := dynamic.NewForConfigOrDie(cfg)
		canI := func(args ...string) string {
			out, stderr, _ := testEnv.Kubectl(suiteCtx, testEnv.AdvisorKubeconfig, append([]string{"auth", "can-i"}, args...)...)
			return strings.TrimSpace(out + stderr)
		}
		byPolicy := func(err error, what string) {
			GinkgoHelper()
			Expect(err).To(HaveOccurred(), what)
			GinkgoWriter.Printf("%s: %v\n", what, err)
			Expect(err.Error()).To(MatchRegexp(deniedByPolicy), what)
		}

		By("a MachineConfig no profile writes: 00-worker-evil")
		Expect(canI("create", "machineconfigs.machineconfiguration.openshift.io")).To(HavePrefix("yes"), "RBAC cannot name objects on create")
		evil := &unstructured.Unstructured{Object: map[string]interface{}{
			"apiVersion": "machineconfiguration.openshift.io/v1", "kind": "MachineConfig",
			"metadata": map[string]interface{}{"name": "00-worker-evil", "labels": map[string]interface{}{"machineconfiguration.openshift.io/role": "worker"}},
			"spec":     map[string]interface{}{"kernelArguments": []interface{}{"init=/bin/sh"}},
		}}
		_, err = server.Resource(mcGVR).Create(suiteCtx, evil, metav1.CreateOptions{})
		byPolicy(err, "create 00-worker-evil")
		Expect(err.Error()).To(ContainSubstring("writes only the machineconfiguration.openshift.io/machineconfigs 99-worker-psi-karg, 99-master-psi-karg, 90-worker-kubelet-swap, 90-worker-ksm-zero-pages, 90-worker-thp-madvise, 50-<pool>-virt-advisor-hugepages, 50-<pool>-virt-advisor-pci-passthrough, not 00-worker-evil"))
		Expect(getObject(mcGVR, "", "00-worker-evil")).To(BeNil())
		_, err = dyn().Resource(mcGVR).Create(suiteCtx, evil, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		Expect(err).NotTo(HaveOccurred(), "the control: the cluster admin is not confined")

		By("00-worker, which RBAC lets it patch and delete for the MachineConfigs named after a pool")
		Expect(canI("delete", "machineconfigs.machineconfiguration.openshift.io/00-worker")).To(HavePrefix("yes"))
		_, err = server.Resource(mcGVR).Patch(suiteCtx, "00-worker", types.MergePatchType, []byte(`{"spec":{"kernelArguments":["init=/bin/sh"]}}`), metav1.PatchOptions{})
		byPolicy(err, "patch 00-worker")
		Expect(err.Error()).To(ContainSubstring("not 00-worker"))
		err = server.Resource(mcGVR).Delete(suiteCtx, "00-worker", metav1.DeleteOptions{})
		byPolicy(err, "delete 00-worker")
		Expect(getObject(mcGVR, "", "00-worker")).NotTo(BeNil())

		By("a MachineConfig named after a pool, with a kernel argument no profile writes")
		hp := &unstructured.Unstructured{Object: map[string]interface{}{
			"apiVersion": "machineconfiguration.openshift.io/v1", "kind": "MachineConfig",
			"metadata": map[string]interface{}{"name": "50-worker-virt-advisor-hugepages", "labels": map[string]interface{}{"machineconfiguration.openshift.io/role": "worker"}},
			"spec":     map[string]interface{}{"kernelArguments": []interface{}{"hugepages=8", "init=/bin/sh"}},
		}}
		_, err = server.Resource(mcGVR).Create(suiteCtx, hp, metav1.CreateOptions{})
		byPolicy(err, "create 50-worker-virt-advisor-hugepages with init=/bin/sh")
		Expect(err.Error()).To(ContainSubstring("adds no kernel argument to 50-worker-virt-advisor-hugepages but those matching"))
		By("... or labelled for another pool")
		hp.Object["spec"] = map[string]interface{}{"kernelArguments": []interface{}{"hugepages=8"}}
		hp.SetLabels(map[string]string{"machineconfiguration.openshift.io/role": "master"})
		_, err = server.Resource(mcGVR).Create(suiteCtx, hp, metav1.CreateOptions{})
		byPolicy(err, "create 50-worker-virt-advisor-hugepages for master")
		Expect(err.Error()).To(ContainSubstring("writes MachineConfig 50-worker-virt-advisor-hugepages only for pool worker"))
		Expect(getObject(mcGVR, "", "50-worker-virt-advisor-hugepages")).To(BeNil())

		By("a pool's spec.maxUnavailable")
		Expect(canI("patch", "machineconfigpools.machineconfiguration.openshift.io/worker")).To(HavePrefix("yes"), "RBAC cannot name fields on patch")
		poolBefore := getObject(mcpGVR, "", "worker")
		_, err = server.Resource(mcpGVR).Patch(suiteCtx, "worker", types.MergePatchType, []byte(`{"spec":{"maxUnavailable":3}}`), metav1.PatchOptions{})
		byPolicy(err, "set maxUnavailable")
		Expect(err.Error()).To(ContainSubstring("changes only spec.paused of machineconfiguration.openshift.io/machineconfigpools worker"))
		Expect(getObject(mcpGVR, "", "worker").GetResourceVersion()).To(Equal(poolBefore.GetResourceVersion()), "the pool is untouched")

		By("an HCO field no profile manages")
		Expect(canI("patch", "hyperconvergeds.hco.kubevirt.io/"+hcoName, "-n", hcoNS)).To(HavePrefix("yes"))
		hcoBefore := getObject(hcoGVR, hcoNS, hcoName)
		_, err = server.Resource(hcoGVR).Namespace(hcoNS).Patch(suiteCtx, hcoName, types.MergePatchType,
			[]byte(`{"spec":{"liveMigrationConfig":{"allowPostCopy":true}}}`), metav1.PatchOptions{})
		byPolicy(err, "change liveMigrationConfig.allowPostCopy")
		Expect(err.Error()).To(ContainSubstring("changes only evictionStrategy, higherWorkloadDensity.memoryOvercommitPercentage, ksmConfiguration, liveMigrationConfig.bandwidthPerMigration"))
		Expect(getObject(hcoGVR, hcoNS, hcoName).GetResourceVersion()).To(Equal(hcoBefore.GetResourceVersion()), "the HCO is untouched")

		By("the same token still makes the writes the controller makes: pause and unpause a pool, apply an HCO field of ours (dry-run), create and delete a MachineConfig of ours")
		apply := func(gvr schema.GroupVersionResource, ns, name, body string) error {
			_, err := server.Resource(gvr).Namespace(ns).Patch(suiteCtx, name, types.ApplyPatchType, []byte(body),
				metav1.PatchOptions{FieldManager: cluster.FieldManager, Force: ptrTo(true), DryRun: []string{metav1.DryRunAll}})
			return err
		}
		Expect(apply(mcpGVR, "", "worker", `{"apiVersion":"machineconfiguration.openshift.io/v1","kind":"MachineConfigPool","metadata":{"name":"worker",`+
			`"annotations":{"advisor.kubevirt.io/paused-until":"2030-01-01T00:00:00Z"}},"spec":{"paused":true}}`)).To(Succeed(), "pause")
		Expect(apply(hcoGVR, hcoNS, hcoName, `{"apiVersion":"hco.kubevirt.io/v1beta1","kind":"HyperConverged","metadata":{"name":"`+hcoName+`","namespace":"`+hcoNS+`"},`+
			`"spec":{"higherWorkloadDensity":{"memoryOvercommitPercentage":150}}}`)).To(Succeed(), "memoryOvercommitPercentage")
		_, err = server.Resource(mcGVR).Create(suiteCtx, &unstructured.Unstructured{Object: map[string]interface{}{
			"apiVersion": "machineconfiguration.openshift.io/v1", "kind": "MachineConfig",
			"metadata": map[string]interface{}{"name": "99-worker-psi-karg", "labels": map[string]interface{}{"machineconfiguration.openshift.io/role": "worker"}},
			"spec":     map[string]interface{}{"kernelArguments": []interface{}{"psi=1"}},
		}}, metav1.CreateOptions{})
		Expect(err).NotTo(HaveOccurred(), "create 99-worker-psi-karg")
		Expect(server.Resource(mcGVR).Delete(suiteCtx, "99-worker-psi-karg", metav1.DeleteOptions{})).To(Succeed(), "delete 99-worker-psi-karg")
		unpause := `{"apiVersion":"machineconfiguration.openshift.io/v1","kind":"MachineConfigPool","metadata":{"name":"worker"}}`
		Expect(apply(mcpGVR, "", "worker", unpause)).To(Succeed(), "unpause")
	})

	It("is refused fields and keys no profile writes and the end of an administrator's pause, and still pauses and unpauses a pool itself", func() {
		expectShippedPolicy()
		cfg, err := clientcmd.BuildConfigFromFlags("", testEnv.AdvisorKubeconfig)
		Expect(err).NotTo(HaveOccurred())
		server := dynamic.NewForConfigOrDie(cfg)
		byPolicy := func(err error, what, message string) {
			GinkgoHelper()
			Expect(err).To(HaveOccurred(), what)
			GinkgoWriter.Printf("%s: %v\n", what, err)
			Expect(err.Error()).To(MatchRegexp(deniedByPolicy), what)
			Expect(err.Error()).To(ContainSubstring(message), what)
		}
		merge := func(gvr schema.GroupVersionResource, ns, name, patch string) error {
			_, err := server.Resource(gvr).Namespace(ns).Patch(suiteCtx, name, types.MergePatchType, []byte(patch), metav1.PatchOptions{})
			return err
		}
		apply := func(gvr schema.GroupVersionResource, ns, name, body string) error {
			_, err := server.Resource(gvr).Namespace(ns).Patch(suiteCtx, name, types.ApplyPatchType, []byte(body),
				metav1.PatchOptions{FieldManager: cluster.FieldManager, Force: ptrTo(true)})
			return err
		}

		By("the KubeDescheduler: a customization and a field no profile sets")
		kdBefore := getObject(kdGVR, kdNS, "cluster")
		byPolicy(merge(kdGVR, kdNS, "cluster", `{"spec":{"profileCustomizations":{"devLowNodeUtilizationThresholds":"High"}}}`),
			"profileCustomizations.devLowNodeUtilizationThresholds High",
			"changes in spec.profileCustomizations of the KubeDescheduler only devDeviationThresholds")
		byPolicy(merge(kdGVR, kdNS, "cluster", `{"spec":{"logLevel":"Debug"}}`),
			"logLevel Debug", "changes only spec.managementState, spec.deschedulingIntervalSeconds, spec.mode, spec.profiles")
		Expect(getObject(kdGVR, kdNS, "cluster").GetResourceVersion()).To(Equal(kdBefore.GetResourceVersion()), "the KubeDescheduler is untouched")

		By("the HyperConverged: a field no profile sets")
		hcoBefore := getObject(hcoGVR, hcoNS, hcoName)
		byPolicy(merge(hcoGVR, hcoNS, hcoName, `{"spec":{"liveMigrationConfig":{"allowPostCopy":true}}}`),
			"liveMigrationConfig.allowPostCopy true", "changes only evictionStrategy, higherWorkloadDensity.memoryOvercommitPercentage, ksmConfiguration")
		Expect(getObject(hcoGVR, hcoNS, hcoName).GetResourceVersion()).To(Equal(hcoBefore.GetResourceVersion()), "the HCO is untouched")

		By("the example ConfigMap: a key example-profile does not write")
		_, err = server.Resource(configMapGVR).Namespace(hcoNS).Create(suiteCtx, &unstructured.Unstructured{Object: map[string]interface{}{
			"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]interface{}{"name": "example-config", "namespace": hcoNS},
			"data": map[string]interface{}{"other": "evil"},
		}}, metav1.CreateOptions{})
		byPolicy(err, "data.other evil", "changes in the data of ConfigMap openshift-cnv/example-config only example-key")
		Expect(exampleConfigMap()).To(BeNil())

		By("a pool an administrator paused: neither unpaused nor adopted")
		patchObject(mcpGVR, "", "worker", `{"spec":{"paused":true}}`)
		pausedBefore := getObject(mcpGVR, "", "worker")
		byPolicy(apply(mcpGVR, "", "worker", `{"apiVersion":"machineconfiguration.openshift.io/v1","kind":"MachineConfigPool","metadata":{"name":"worker"},"spec":{"paused":false}}`),
			"apply paused: false", "unpauses only a MachineConfigPool it paused (annotation advisor.kubevirt.io/paused-until or advisor.kubevirt.io/paused-for-window): worker was paused by someone else")
		byPolicy(merge(mcpGVR, "", "worker", `{"spec":{"paused":false}}`), "merge paused: false", "unpauses only a MachineConfigPool it paused")
		byPolicy(merge(mcpGVR, "", "worker", `{"metadata":{"annotations":{"advisor.kubevirt.io/paused-until":"2030-01-01T00:00:00Z"}}}`),
			"annotate the administrator's pause", "sets advisor.kubevirt.io/paused-until or advisor.kubevirt.io/paused-for-window on MachineConfigPool worker only in the write that pauses it")
		// (The fake MCO writes the pool's status meanwhile: its spec and
		// metadata are compared.)
		after := getObject(mcpGVR, "", "worker")
		Expect(after.Object["spec"]).To(Equal(pausedBefore.Object["spec"]), "the pool's spec is untouched: still paused")
		Expect(after.GetAnnotations()).To(Equal(pausedBefore.GetAnnotations()), "no annotation of ours")
		Expect(after.GetAnnotations()).NotTo(HaveKey("advisor.kubevirt.io/paused-until"))
		paused, _, _ := unstructured.NestedBool(after.Object, "spec", "paused")
		Expect(paused).To(BeTrue(), "still paused")
		patchObject(mcpGVR, "", "worker", `{"spec":{"paused":false}}`)

		By("its own pause and unpause, for real")
		Expect(apply(mcpGVR, "", "worker", `{"apiVersion":"machineconfiguration.openshift.io/v1","kind":"MachineConfigPool","metadata":{"name":"worker",`+
			`"annotations":{"advisor.kubevirt.io/paused-until":"2030-01-01T00:00:00Z"}},"spec":{"paused":true}}`)).To(Succeed(), "pause")
		Expect(apply(mcpGVR, "", "worker", `{"apiVersion":"machineconfiguration.openshift.io/v1","kind":"MachineConfigPool","metadata":{"name":"worker"}}`)).To(Succeed(), "unpause")
		after = getObject(mcpGVR, "", "worker")
		paused, _, _ = unstructured.NestedBool(after.Object, "spec", "paused")
		Expect(paused).To(BeFalse(), "unpaused")
		Expect(after.GetAnnotations()).NotTo(HaveKey("advisor.kubevirt.io/paused-until"))
	})
})

// The server installed into another namespace than artifacts/deploy's:
// the policy names no namespace, so it confines the server there too.
var _ = Describe("governance: the server installed in another namespace", Ordered, func() {
	const elsewhere = "virt-advisor-elsewhere"
	var other *env.Env

	BeforeAll(func() {
		dir, err := os.MkdirTemp("", "virt-advisor-e2e-elsewhere-")
		Expect(err).NotTo(HaveOccurred())
		ctx, cancel := context.WithTimeout(suiteCtx, 3*time.Minute)
		defer cancel()
		// Start waits until the policy confines the server's identity (a
		// dry-run create of a MachineConfig no profile writes, as the
		// ServiceAccount, refused): with a namespace in the policy it fails here.
		other, err = env.Start(ctx, env.Options{Dir: dir, Log: GinkgoWriter, Namespace: elsewhere,
			FakeMCO:     fakemco.Options{RenderDelay: 200 * time.Millisecond, StepTime: 300 * time.Millisecond},
			AdvisorArgs: []string{"--leader-elect-lease-duration=4s", "--leader-elect-renew-deadline=3s", "--leader-elect-retry-period=500ms", "--rollout-coalesce-window=3s"},
		})
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(func() {
			other.Stop()
			if !CurrentSpecReport().Failed() {
				_ = os.RemoveAll(dir)
			}
		})
	})

	It("runs as the ServiceAccount of that namespace, is refused what no profile writes, and applies a profile", func() {
		kubeOther := kubernetes.NewForConfigOrDie(other.AdminConfig)
		_, err := kubeOther.CoreV1().Namespaces().Get(suiteCtx, env.Namespace, metav1.GetOptions{})
		Expect(apierrors.IsNotFound(err)).To(BeTrue(), "nothing is installed in %s: %v", env.Namespace, err)
		kc, err := clientcmd.LoadFromFile(other.AdvisorKubeconfig)
		Expect(err).NotTo(HaveOccurred())
		review, err := kubeOther.AuthenticationV1().TokenReviews().Create(suiteCtx,
			&authenticationv1.TokenReview{Spec: authenticationv1.TokenReviewSpec{Token: kc.AuthInfos[kc.Contexts[kc.CurrentContext].AuthInfo].Token}}, metav1.CreateOptions{})
		Expect(err).NotTo(HaveOccurred())
		Expect(review.Status.User.Username).To(Equal("system:serviceaccount:" + elsewhere + ":virt-advisor-apiserver"))

		cfg, err := clientcmd.BuildConfigFromFlags("", other.AdvisorKubeconfig)
		Expect(err).NotTo(HaveOccurred())
		server := dynamic.NewForConfigOrDie(cfg)
		admin := dynamic.NewForConfigOrDie(other.AdminConfig)
		byPolicy := func(err error, what, message string) {
			GinkgoHelper()
			Expect(err).To(HaveOccurred(), what)
			GinkgoWriter.Printf("%s: %v\n", what, err)
			Expect(err.Error()).To(MatchRegexp(deniedByPolicy+regexp.QuoteMeta(message)), what)
		}
		By("a MachineConfig no profile writes")
		_, err = server.Resource(mcGVR).Create(suiteCtx, &unstructured.Unstructured{Object: map[string]interface{}{
			"apiVersion": "machineconfiguration.openshift.io/v1", "kind": "MachineConfig",
			"metadata": map[string]interface{}{"name": "00-worker-evil", "labels": map[string]interface{}{"machineconfiguration.openshift.io/role": "worker"}},
			"spec":     map[string]interface{}{"kernelArguments": []interface{}{"init=/bin/sh"}},
		}}, metav1.CreateOptions{})
		byPolicy(err, "create 00-worker-evil", "writes only the machineconfiguration.openshift.io/machineconfigs 99-worker-psi-karg, 99-master-psi-karg, 90-worker-kubelet-swap, 90-worker-ksm-zero-pages, 90-worker-thp-madvise, 50-<pool>-virt-advisor-hugepages, 50-<pool>-virt-advisor-pci-passthrough, not 00-worker-evil")
		By("a KubeDescheduler customization no profile sets")
		_, err = server.Resource(kdGVR).Namespace(kdNS).Patch(suiteCtx, "cluster", types.MergePatchType,
			[]byte(`{"spec":{"profileCustomizations":{"devLowNodeUtilizationThresholds":"High"}}}`), metav1.PatchOptions{})
		byPolicy(err, "profileCustomizations.devLowNodeUtilizationThresholds High", "changes in spec.profileCustomizations of the KubeDescheduler only devDeviationThresholds")

		By("load-aware-rebalancing from review to Completed: the profile's writes, a pause and an unpause pass")
		client := versioned.NewForConfigOrDie(other.AdminConfig)
		const profile = "load-aware-rebalancing"
		// The advertised profile's config is there, ignored: replaced.
		err = client.AdvisorV1alpha1().VirtPlatformConfigs().Delete(suiteCtx, profile, metav1.DeleteOptions{})
		Expect(err == nil || apierrors.IsNotFound(err)).To(BeTrue(), "%v", err)
		Eventually(func() (*v1alpha1.VirtPlatformConfig, error) {
			return client.AdvisorV1alpha1().VirtPlatformConfigs().Create(suiteCtx, newConfig(profile), metav1.CreateOptions{})
		}).WithTimeout(10 * time.Second).WithPolling(200 * time.Millisecond).ShouldNot(BeNil())
		phase := func(want v1alpha1.ConfigPhase, timeout time.Duration) {
			GinkgoHelper()
			Eventually(func() (v1alpha1.ConfigPhase, error) {
				c, err := client.AdvisorV1alpha1().VirtPlatformConfigs().Get(suiteCtx, profile, metav1.GetOptions{})
				if err != nil {
					return "", err
				}
				return c.Status.Phase, nil
			}).WithTimeout(timeout).WithPolling(200 * time.Millisecond).Should(Equal(want))
		}
		phase(v1alpha1.PhaseReviewRequired, 30*time.Second)
		p, err := client.AdvisorV1alpha1().VirtPlatformConfigs().GetPlan(suiteCtx, profile, metav1.GetOptions{})
		Expect(err).NotTo(HaveOccurred())
		_, err = client.AdvisorV1alpha1().VirtPlatformConfigs().Approve(suiteCtx, profile,
			&v1alpha1.Approval{Spec: v1alpha1.ApprovalSpec{PlanHash: p.Status.PlanHash}}, metav1.CreateOptions{})
		Expect(err).NotTo(HaveOccurred())
		phase(v1alpha1.PhaseCompleted, 90*time.Second)
		c, err := client.AdvisorV1alpha1().VirtPlatformConfigs().Get(suiteCtx, profile, metav1.GetOptions{})
		Expect(err).NotTo(HaveOccurred())
		for _, it := range c.Status.Items {
			Expect(it.State).To(Equal(v1alpha1.ItemStateCompleted), "%s: %s", it.Name, it.Message)
		}
		_, err = admin.Resource(mcGVR).Get(suiteCtx, "99-worker-psi-karg", metav1.GetOptions{})
		Expect(err).NotTo(HaveOccurred(), "the PSI MachineConfig was written")
		Expect(other.Advisor().LogTail(1<<20)).NotTo(ContainSubstring("is forbidden"), "the server never lacked a permission, nor was denied by the policy")
	})
})

// admissionPolicy confines the server's ServiceAccount (artifacts/deploy),
// applied per resource by the policies named after it with the resource.
const admissionPolicy = "virt-advisor-apiserver-writes"

// deniedByPolicy is the start of a denial by one of those policies.
const deniedByPolicy = `ValidatingAdmissionPolicy '` + admissionPolicy + `(-[a-z]+)?' with binding '` + admissionPolicy + `(-[a-z]+)?' denied request: virt-advisor-apiserver `

// unscoped are rules without their scope, which the server defaults.
func unscoped(rules []admissionv1.NamedRuleWithOperations) []admissionv1.NamedRuleWithOperations {
	out := append([]admissionv1.NamedRuleWithOperations(nil), rules...)
	for i := range out {
		out[i].Scope = nil
	}
	return out
}

// expectShippedPolicy: the admission policies installed are those of
// artifacts/deploy, each with its binding.
func expectShippedPolicy() {
	GinkgoHelper()
	raw, err := os.ReadFile(filepath.Join(testEnv.RepoRoot, "artifacts", "deploy", "05-admission-policy.yaml"))
	Expect(err).NotTo(HaveOccurred())
	var shipped []admissionv1.ValidatingAdmissionPolicy
	for _, doc := range strings.Split(string(raw), "\n---\n") {
		var p admissionv1.ValidatingAdmissionPolicy
		Expect(yaml.Unmarshal([]byte(doc), &p)).To(Succeed())
		if p.Kind == "ValidatingAdmissionPolicy" {
			shipped = append(shipped, p)
		}
	}
	Expect(shipped).NotTo(BeEmpty())
	Expect(shipped[0].Name).To(Equal(admissionPolicy))
	for _, want := range shipped {
		Expect(want.Name).To(HavePrefix(admissionPolicy))
		policy, err := kube.AdmissionregistrationV1().ValidatingAdmissionPolicies().Get(suiteCtx, want.Name, metav1.GetOptions{})
		Expect(err).NotTo(HaveOccurred())
		Expect(policy.Spec.Validations).To(Equal(want.Spec.Validations), want.Name)
		Expect(policy.Spec.Variables).To(Equal(want.Spec.Variables), want.Name)
		Expect(policy.Spec.MatchConditions).To(Equal(want.Spec.MatchConditions), want.Name)
		Expect(unscoped(policy.Spec.MatchConstraints.ResourceRules)).To(Equal(unscoped(want.Spec.MatchConstraints.ResourceRules)), want.Name)
		Expect(unscoped(policy.Spec.MatchConstraints.ExcludeResourceRules)).To(Equal(unscoped(want.Spec.MatchConstraints.ExcludeResourceRules)), want.Name)
		if tc := policy.Status.TypeChecking; tc != nil && len(tc.ExpressionWarnings) > 0 {
			// Warnings only: the HyperConverged's schema of one version lacks
			// the other's fields, which the policy reads optionally.
			GinkgoWriter.Printf("type checking of %s: %+v\n", want.Name, tc.ExpressionWarnings)
		}
		binding, err := kube.AdmissionregistrationV1().ValidatingAdmissionPolicyBindings().Get(suiteCtx, want.Name, metav1.GetOptions{})
		Expect(err).NotTo(HaveOccurred())
		Expect(binding.Spec.PolicyName).To(Equal(want.Name))
		Expect(binding.Spec.ValidationActions).To(ConsistOf(admissionv1.Deny))
	}
}

var _ = Describe("governance: anonymous requests", func() {
	It("are unauthenticated (401, so no SubjectAccessReview is made) except for the probes", func() {
		direct := &rest.Config{Host: testEnv.Advisor().URL, TLSClientConfig: rest.TLSClientConfig{CAFile: testEnv.ServingCAFile}}
		_, err := versioned.NewForConfigOrDie(direct).AdvisorV1alpha1().VirtPlatformConfigs().List(suiteCtx, metav1.ListOptions{})
		Expect(statusCode(err)).To(Equal(int32(401)), "%v", err)
		cs := kubernetes.NewForConfigOrDie(direct)
		for _, path := range []string{"/apis", "/metrics", "/openapi/v2", "/version"} {
			err := cs.Discovery().RESTClient().Get().AbsPath(path).Do(suiteCtx).Error()
			Expect(statusCode(err)).To(Equal(int32(401)), "%s: %v", path, err)
		}
		for _, path := range []string{"/healthz", "/livez", "/readyz"} {
			body, err := cs.Discovery().RESTClient().Get().AbsPath(path).DoRaw(suiteCtx)
			Expect(err).NotTo(HaveOccurred(), path)
			Expect(string(body)).To(Equal("ok"))
		}
	})
})
