package e2e

import (
	"fmt"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	authorizationv1 "k8s.io/api/authorization/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"

	"github.com/kubevirt/virt-advisor/pkg/apis/advisor/v1alpha1"
	"github.com/kubevirt/virt-advisor/pkg/generated/clientset/versioned"
)

// waitBound waits until kube-apiserver's authorizer allows user what the
// first resource rule of the ClusterRole role grants: a binding just
// created takes a moment to reach its caches (a loaded CI machine saw a
// 403 right after one).
func waitBound(user, role string) {
	GinkgoHelper()
	r, err := kube.RbacV1().ClusterRoles().Get(suiteCtx, role, metav1.GetOptions{})
	Expect(err).NotTo(HaveOccurred())
	for _, rule := range r.Rules {
		if len(rule.Resources) == 0 || len(rule.APIGroups) == 0 || len(rule.Verbs) == 0 {
			continue
		}
		attrs := &authorizationv1.ResourceAttributes{Group: rule.APIGroups[0], Resource: rule.Resources[0], Verb: rule.Verbs[0]}
		if len(rule.ResourceNames) > 0 {
			attrs.Name = rule.ResourceNames[0]
		}
		Eventually(func() (bool, error) {
			sar, err := kube.AuthorizationV1().SubjectAccessReviews().Create(suiteCtx, &authorizationv1.SubjectAccessReview{
				Spec: authorizationv1.SubjectAccessReviewSpec{User: user, ResourceAttributes: attrs}}, metav1.CreateOptions{})
			return err == nil && sar.Status.Allowed, err
		}).WithTimeout(10*time.Second).WithPolling(100*time.Millisecond).Should(BeTrue(), "%s bound to %s", user, role)
		return
	}
}

// userClient returns a client for a fresh user bound to the roles ("" for
// none). Users are unique per call because the delegated authorizer
// caches decisions for 10 s.
func userClient(roles ...string) (versioned.Interface, string, string) {
	return namedUserClient(fmt.Sprintf("user-%d", time.Now().UnixNano()), roles...)
}

// namedUserClient is userClient for a user name of the caller's; a name
// must be new to the suite (the authorizer caches decisions per user).
func namedUserClient(user string, roles ...string) (versioned.Interface, string, string) {
	for _, role := range roles {
		if role == "" {
			continue
		}
		crb := &rbacv1.ClusterRoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: user + "-" + role},
			RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: role},
			Subjects:   []rbacv1.Subject{{APIGroup: "rbac.authorization.k8s.io", Kind: "User", Name: user}},
		}
		_, err := kube.RbacV1().ClusterRoleBindings().Create(suiteCtx, crb, metav1.CreateOptions{})
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(func() {
			_ = kube.RbacV1().ClusterRoleBindings().Delete(suiteCtx, crb.Name, metav1.DeleteOptions{})
		})
		waitBound(user, role)
	}
	cfg, kubeconfig, err := testEnv.UserConfig(user)
	Expect(err).NotTo(HaveOccurred())
	return versioned.NewForConfigOrDie(cfg), user, kubeconfig
}

var _ = Describe("RBAC per subresource", func() {
	var existing *v1alpha1.VirtPlatformConfig
	BeforeEach(func() {
		existing = createConfig(newConfig("example-profile"))
	})

	It("lets a viewer read but not write, read status-only writes or the plan", func() {
		c, user, kubeconfig := userClient("virt-advisor-viewer")
		configs := c.AdvisorV1alpha1().VirtPlatformConfigs()

		_, err := configs.Get(suiteCtx, "example-profile", metav1.GetOptions{})
		Expect(err).NotTo(HaveOccurred())
		_, err = configs.List(suiteCtx, metav1.ListOptions{})
		Expect(err).NotTo(HaveOccurred())
		w, err := configs.Watch(suiteCtx, metav1.ListOptions{})
		Expect(err).NotTo(HaveOccurred())
		w.Stop()

		_, err = configs.Create(suiteCtx, newConfig("virt-higher-density"), metav1.CreateOptions{})
		Expect(statusCode(err)).To(Equal(int32(403)), "create: %v", err)
		_, err = configs.UpdateStatus(suiteCtx, existing, metav1.UpdateOptions{})
		Expect(statusCode(err)).To(Equal(int32(403)), "status update: %v", err)
		_, err = configs.GetPlan(suiteCtx, "example-profile", metav1.GetOptions{})
		Expect(statusCode(err)).To(Equal(int32(403)), "plan: %v", err)
		_, err = configs.Approve(suiteCtx, "example-profile", &v1alpha1.Approval{Spec: v1alpha1.ApprovalSpec{PlanHash: "x"}}, metav1.CreateOptions{})
		Expect(statusCode(err)).To(Equal(int32(403)), "approve: %v", err)

		out, _, err := testEnv.Kubectl(suiteCtx, kubeconfig, "auth", "can-i", "get", "virtplatformconfigs", "--subresource=plan")
		Expect(out).To(ContainSubstring("no"), "%s %v", user, err)
	})

	It("lets an editor change the spec and records who did", func() {
		c, user, _ := userClient("virt-advisor-editor")
		configs := c.AdvisorV1alpha1().VirtPlatformConfigs()
		got, err := configs.Patch(suiteCtx, "example-profile", types.MergePatchType, []byte(`{"spec":{"action":"Ignore"}}`), metav1.PatchOptions{})
		Expect(err).NotTo(HaveOccurred())
		Expect(got.Status.SpecChangedBy).To(Equal(user))
		_, err = configs.UpdateStatus(suiteCtx, got, metav1.UpdateOptions{})
		Expect(statusCode(err)).To(Equal(int32(403)), "an editor does not write status: %v", err)
		_, err = configs.Approve(suiteCtx, "example-profile", &v1alpha1.Approval{Spec: v1alpha1.ApprovalSpec{PlanHash: "x"}}, metav1.CreateOptions{})
		Expect(statusCode(err)).To(Equal(int32(403)), "an editor does not approve: %v", err)
	})

	It("lets an approver approve but not edit the spec", func() {
		c, _, kubeconfig := userClient("virt-advisor-approver")
		configs := c.AdvisorV1alpha1().VirtPlatformConfigs()
		_, err := configs.Patch(suiteCtx, "example-profile", types.MergePatchType, []byte(`{"spec":{"action":"Apply"}}`), metav1.PatchOptions{})
		Expect(statusCode(err)).To(Equal(int32(403)), "%v", err)
		out, _, err := testEnv.Kubectl(suiteCtx, kubeconfig, "auth", "can-i", "create", "virtplatformconfigs", "--subresource=approve")
		Expect(err).NotTo(HaveOccurred(), out)
		Expect(out).To(ContainSubstring("yes"))
	})

	It("denies everything to a user without a binding", func() {
		c, _, _ := userClient("")
		configs := c.AdvisorV1alpha1().VirtPlatformConfigs()
		_, err := configs.Get(suiteCtx, "example-profile", metav1.GetOptions{})
		Expect(statusCode(err)).To(Equal(int32(403)), "get: %v", err)
		_, err = configs.List(suiteCtx, metav1.ListOptions{})
		Expect(statusCode(err)).To(Equal(int32(403)), "list: %v", err)
		_, err = configs.Create(suiteCtx, newConfig("virt-higher-density"), metav1.CreateOptions{})
		Expect(statusCode(err)).To(Equal(int32(403)), "create: %v", err)
		err = configs.Delete(suiteCtx, "example-profile", metav1.DeleteOptions{})
		Expect(statusCode(err)).To(Equal(int32(403)), "delete: %v", err)
		_, err = configs.GetPlan(suiteCtx, "example-profile", metav1.GetOptions{})
		Expect(statusCode(err)).To(Equal(int32(403)), "plan: %v", err)
	})
})

var _ = Describe("anonymous requests", func() {
	It("get nothing from the API, through the aggregator or directly; probes stay open", func() {
		// No client certificate, no token: trust the server, say nothing.
		anonymous := func(host string, tls rest.TLSClientConfig) *rest.Config {
			return &rest.Config{Host: host, TLSClientConfig: rest.TLSClientConfig{CAFile: tls.CAFile, CAData: tls.CAData}}
		}
		for _, cfg := range []*rest.Config{
			anonymous(testEnv.AdminConfig.Host, testEnv.AdminConfig.TLSClientConfig),
			anonymous(testEnv.Advisor().URL, rest.TLSClientConfig{CAFile: testEnv.ServingCAFile}),
		} {
			_, err := versioned.NewForConfigOrDie(cfg).AdvisorV1alpha1().VirtPlatformConfigs().List(suiteCtx, metav1.ListOptions{})
			Expect(statusCode(err)).To(BeElementOf(int32(401), int32(403)), "%s: %v", cfg.Host, err)
		}
		cfg := &rest.Config{Host: testEnv.Advisor().URL, TLSClientConfig: rest.TLSClientConfig{CAFile: testEnv.ServingCAFile}}
		raw, err := versioned.NewForConfigOrDie(cfg).AdvisorV1alpha1().RESTClient().Get().AbsPath("/readyz").DoRaw(suiteCtx)
		Expect(err).NotTo(HaveOccurred())
		Expect(string(raw)).To(Equal("ok"))
	})
})
