package e2e

import (
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	admissionv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubevirt/virt-advisor/pkg/apis/advisor/v1alpha1"
	"github.com/kubevirt/virt-advisor/pkg/failpoint"
)

// Resilience: failures of what the server talks to never leave status
// lying about the cluster.

// denyAdvisorHCOWrites makes the main cluster refuse every HyperConverged
// write by virt-advisor's service account (a real, permanent 403 from a
// ValidatingAdmissionPolicy); other users, the e2e reset included, pass.
func denyAdvisorHCOWrites() {
	GinkgoHelper()
	const name = "e2e-deny-advisor-hco"
	policy := &admissionv1.ValidatingAdmissionPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: admissionv1.ValidatingAdmissionPolicySpec{
			FailurePolicy: ptrTo(admissionv1.Fail),
			MatchConstraints: &admissionv1.MatchResources{ResourceRules: []admissionv1.NamedRuleWithOperations{{
				RuleWithOperations: admissionv1.RuleWithOperations{
					Operations: []admissionv1.OperationType{admissionv1.Update},
					Rule:       admissionv1.Rule{APIGroups: []string{"hco.kubevirt.io"}, APIVersions: []string{"*"}, Resources: []string{"hyperconvergeds"}},
				},
			}}},
			Validations: []admissionv1.Validation{{
				Expression: "request.userInfo.username != 'system:serviceaccount:virt-advisor:virt-advisor-apiserver'",
				Message:    "the HyperConverged is frozen on this cluster (e2e policy)",
			}},
		},
	}
	binding := &admissionv1.ValidatingAdmissionPolicyBinding{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec:       admissionv1.ValidatingAdmissionPolicyBindingSpec{PolicyName: name, ValidationActions: []admissionv1.ValidationAction{admissionv1.Deny}},
	}
	_, err := kube.AdmissionregistrationV1().ValidatingAdmissionPolicies().Create(suiteCtx, policy, metav1.CreateOptions{})
	Expect(err).NotTo(HaveOccurred())
	_, err = kube.AdmissionregistrationV1().ValidatingAdmissionPolicyBindings().Create(suiteCtx, binding, metav1.CreateOptions{})
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(func() {
		_ = kube.AdmissionregistrationV1().ValidatingAdmissionPolicyBindings().Delete(suiteCtx, name, metav1.DeleteOptions{})
		_ = kube.AdmissionregistrationV1().ValidatingAdmissionPolicies().Delete(suiteCtx, name, metav1.DeleteOptions{})
	})
}

var _ = Describe("resilience: a permanent failure after a write", Ordered, func() {
	BeforeEach(resetCluster)
	AfterEach(resetCluster)

	It("fails with PartiallyApplied naming what was written, and keeps tracking the written MachineConfig's rollout to its end", func() {
		configWith("virt-higher-density", `{"profile":"virt-higher-density"}`)
		waitPhase("virt-higher-density", v1alpha1.PhaseReviewRequired, 20*time.Second)
		pauseController()
		Expect(approve(advisor, "virt-higher-density", planHashOf("virt-higher-density"))).To(Succeed())
		denyAdvisorHCOWrites()
		// The policy is enforced from a cache: give it a moment.
		time.Sleep(2 * time.Second)
		resumeController()

		c := waitPhase("virt-higher-density", v1alpha1.PhaseFailed, 60*time.Second)
		hco := item(c, "configure-higher-density")
		Expect(hco.State).To(Equal(v1alpha1.ItemStateFailed))
		Expect(hco.Message).To(ContainSubstring("the HyperConverged is frozen on this cluster"))
		Expect(hco.Retry).To(BeNil(), "a 403 is not retried")
		partial := meta.FindStatusCondition(c.Status.Conditions, "PartiallyApplied")
		Expect(partial).NotTo(BeNil())
		Expect(partial.Status).To(Equal(metav1.ConditionTrue))
		Expect(partial.Message).To(HavePrefix("1 of 2 items were written: 'enable-kubelet-swap' (MachineConfig 90-worker-kubelet-swap); not written: 'configure-higher-density' (HyperConverged kubevirt-hyperconverged); the cluster is partially configured"))
		Expect(meta.FindStatusCondition(c.Status.Conditions, "Failed").Message).To(ContainSubstring("the cluster is partially configured"))

		// Status follows reality: the written MachineConfig rolls out and
		// its item says so, although the config is Failed.
		Eventually(func() v1alpha1.ItemState { return item(getConfig("virt-higher-density"), "enable-kubelet-swap").State }).
			WithTimeout(60*time.Second).Should(Equal(v1alpha1.ItemStateCompleted), "the rollout is followed to its end")
		Expect(getConfig("virt-higher-density").Status.Phase).To(Equal(v1alpha1.PhaseFailed))
		waitPoolSettled("00-worker", "90-worker-kubelet-swap")
		Expect(item(getConfig("virt-higher-density"), "enable-kubelet-swap").Message).NotTo(ContainSubstring("paused by virt-advisor until"))
		deleteConfig("virt-higher-density")
	})
})

var _ = Describe("resilience: outages and crashes", Ordered, func() {
	BeforeEach(resetCluster)
	AfterEach(resetCluster)

	It("kube-apiserver down for 20 s right after the swap MachineConfig is written: the plan ends Completed, every node updated once, nothing failed", func() {
		configWith("virt-higher-density", `{"profile":"virt-higher-density"}`)
		waitPhase("virt-higher-density", v1alpha1.PhaseReviewRequired, 20*time.Second)
		before := testEnv.FakeMCORollouts("worker")
		Expect(approve(advisor, "virt-higher-density", planHashOf("virt-higher-density"))).To(Succeed())
		Eventually(func() bool { return getObject(mcGVR, "", "90-worker-kubelet-swap") != nil }).
			WithTimeout(20 * time.Second).WithPolling(20 * time.Millisecond).Should(BeTrue())
		Expect(testEnv.RestartKubeAPIServer(suiteCtx, 20*time.Second)).To(Succeed())

		c := waitPhase("virt-higher-density", v1alpha1.PhaseCompleted, 120*time.Second)
		for _, it := range c.Status.Items {
			Expect(it.State).To(Equal(v1alpha1.ItemStateCompleted), "%s: %s", it.Name, it.Message)
			Expect(it.Retry).To(BeNil())
		}
		waitPoolSettled("00-worker", "90-worker-kubelet-swap")
		_, nodes := rolloutsSince(before)
		Expect(nodes).To(Equal([]int{1, 1, 1}), "each worker node updated once")
		Expect(testEnv.Advisor().Exited()).To(BeFalse())
		deleteConfig("virt-higher-density")
	})

	It("the main cluster's etcd restarted mid-rollout: the plan ends Completed, every node updated once", func() {
		configWith("load-aware-rebalancing", `{"profile":"load-aware-rebalancing"}`)
		waitPhase("load-aware-rebalancing", v1alpha1.PhaseReviewRequired, 20*time.Second)
		before := testEnv.FakeMCORollouts("worker")
		Expect(approve(advisor, "load-aware-rebalancing", planHashOf("load-aware-rebalancing"))).To(Succeed())
		Eventually(func() bool { return getObject(mcGVR, "", "99-worker-psi-karg") != nil }).
			WithTimeout(20 * time.Second).WithPolling(20 * time.Millisecond).Should(BeTrue())
		Expect(testEnv.RestartEtcd(suiteCtx, 5*time.Second)).To(Succeed())

		c := waitPhase("load-aware-rebalancing", v1alpha1.PhaseCompleted, 120*time.Second)
		for _, it := range c.Status.Items {
			Expect(it.State).To(Equal(v1alpha1.ItemStateCompleted), "%s: %s", it.Name, it.Message)
		}
		waitPoolSettled("00-worker", "99-worker-psi-karg")
		_, nodes := rolloutsSince(before)
		Expect(nodes).To(Equal([]int{1, 1, 1}), "each worker node updated once")
		deleteConfig("load-aware-rebalancing")
	})

	It("SIGKILL of the server after the write and before the status update: the restarted server does not write again, and completes", func() {
		configWith("example-profile", `{"profile":"example-profile"}`)
		waitPhase("example-profile", v1alpha1.PhaseReviewRequired, 15*time.Second)
		Expect(testEnv.RestartAdvisorWith(suiteCtx, []string{failpoint.EnvVar + "=after-write"}, nil)).To(Succeed())
		DeferCleanup(func() { _ = testEnv.RestartAdvisorWith(suiteCtx, nil, nil) })
		Expect(approve(advisor, "example-profile", planHashOf("example-profile"))).To(Succeed())
		Eventually(testEnv.Advisor().Exited).WithTimeout(30*time.Second).Should(BeTrue(), "killed by the failpoint after the write")
		written := exampleConfigMap()
		Expect(written).NotTo(BeNil(), "the write was made before the crash")
		Expect(testEnv.Advisor().LogTail(50)).To(ContainSubstring("after-write"))

		Expect(testEnv.RestartAdvisorWith(suiteCtx, nil, nil)).To(Succeed())
		c := waitPhase("example-profile", v1alpha1.PhaseCompleted, 60*time.Second)
		Expect(exampleConfigMap().GetResourceVersion()).To(Equal(written.GetResourceVersion()), "no second write")
		Expect(writtenObject(c, written)).NotTo(BeNil(), "the write is recorded after the restart")
		Expect(writtenObject(c, written).Created).To(BeTrue())
	})
})
