package e2e

import (
	"strings"
	"syscall"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	admissionv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kubevirt/virt-advisor/pkg/apis/advisor/v1alpha1"
	"github.com/kubevirt/virt-advisor/test/env"
)

// denyPSIMachineConfig makes the main cluster refuse the PSI MachineConfig
// with a ValidatingAdmissionPolicy: a real rejection, dry-runs included.
func denyPSIMachineConfig() {
	policy := &admissionv1.ValidatingAdmissionPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "e2e-deny-psi"},
		Spec: admissionv1.ValidatingAdmissionPolicySpec{
			FailurePolicy: ptrTo(admissionv1.Fail),
			MatchConstraints: &admissionv1.MatchResources{ResourceRules: []admissionv1.NamedRuleWithOperations{{
				RuleWithOperations: admissionv1.RuleWithOperations{
					Operations: []admissionv1.OperationType{admissionv1.Create, admissionv1.Update},
					Rule:       admissionv1.Rule{APIGroups: []string{"machineconfiguration.openshift.io"}, APIVersions: []string{"v1"}, Resources: []string{"machineconfigs"}},
				},
			}}},
			Validations: []admissionv1.Validation{{Expression: "object.metadata.name != '99-worker-psi-karg'", Message: "PSI is forbidden on this cluster (e2e policy)"}},
		},
	}
	binding := &admissionv1.ValidatingAdmissionPolicyBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "e2e-deny-psi"},
		Spec:       admissionv1.ValidatingAdmissionPolicyBindingSpec{PolicyName: "e2e-deny-psi", ValidationActions: []admissionv1.ValidationAction{admissionv1.Deny}},
	}
	_, err := kube.AdmissionregistrationV1().ValidatingAdmissionPolicies().Create(suiteCtx, policy, metav1.CreateOptions{})
	Expect(err).NotTo(HaveOccurred())
	_, err = kube.AdmissionregistrationV1().ValidatingAdmissionPolicyBindings().Create(suiteCtx, binding, metav1.CreateOptions{})
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(func() {
		_ = kube.AdmissionregistrationV1().ValidatingAdmissionPolicyBindings().Delete(suiteCtx, "e2e-deny-psi", metav1.DeleteOptions{})
		_ = kube.AdmissionregistrationV1().ValidatingAdmissionPolicies().Delete(suiteCtx, "e2e-deny-psi", metav1.DeleteOptions{})
		// The policy is enforced from a cache: wait until it is gone.
		mc := &unstructured.Unstructured{Object: map[string]interface{}{
			"apiVersion": "machineconfiguration.openshift.io/v1", "kind": "MachineConfig",
			"metadata": map[string]interface{}{"name": "99-worker-psi-karg"},
		}}
		Eventually(func() error {
			_, err := dyn().Resource(mcGVR).Create(suiteCtx, mc, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
			return err
		}).WithTimeout(30 * time.Second).Should(Succeed())
	})
}

// annotatePool sets or removes a fake MCO annotation on the worker pool.
func setPool(patch string) {
	patchObject(mcpGVR, "", "worker", patch)
}

var _ = Describe("failures", Ordered, func() {
	BeforeEach(resetCluster)
	AfterEach(resetCluster)

	DescribeTable("applies the failure policy to an item the cluster refuses",
		func(policy string, phase v1alpha1.ConfigPhase, descheduler bool) {
			denyPSIMachineConfig()
			configWith("load-aware-rebalancing", `{"profile":"load-aware-rebalancing","failurePolicy":"`+policy+`"}`)
			Eventually(func() string { return planItem(getPlan("load-aware-rebalancing"), "enable-psi-metrics").Error }).
				WithTimeout(15 * time.Second).Should(ContainSubstring("PSI is forbidden on this cluster"))
			before := getObject(kdGVR, kdNS, "cluster").GetResourceVersion()
			waitPhase("load-aware-rebalancing", v1alpha1.PhaseReviewRequired, 15*time.Second)
			_, err := advisor.AdvisorV1alpha1().VirtPlatformConfigs().Approve(suiteCtx, "load-aware-rebalancing",
				&v1alpha1.Approval{Spec: v1alpha1.ApprovalSpec{PlanHash: planHashOf("load-aware-rebalancing")}}, metav1.CreateOptions{})
			Expect(err).NotTo(HaveOccurred())
			c := waitPhase("load-aware-rebalancing", phase, 30*time.Second)
			Expect(item(c, "enable-psi-metrics").State).To(Equal(v1alpha1.ItemStateFailed))
			if descheduler {
				Expect(item(c, "enable-load-aware-descheduling").State).To(Equal(v1alpha1.ItemStateCompleted))
				Expect(getObject(kdGVR, kdNS, "cluster").GetResourceVersion()).NotTo(Equal(before))
			} else {
				Expect(item(c, "enable-load-aware-descheduling").State).To(Equal(v1alpha1.ItemStatePending), "later items untouched")
				Expect(getObject(kdGVR, kdNS, "cluster").GetResourceVersion()).To(Equal(before))
				Expect(meta.FindStatusCondition(c.Status.Conditions, "Failed").Message).To(HavePrefix("Item 'enable-psi-metrics' failed: "))
			}
			Expect(getObject(mcGVR, "", "99-worker-psi-karg")).To(BeNil())
		},
		Entry("Continue: CompletedWithErrors", "Continue", v1alpha1.PhaseCompletedWithErrors, true),
		Entry("Abort: Failed", "Abort", v1alpha1.PhaseFailed, false),
	)

	DescribeTable("reports a pool that does not roll out, then fails after waitTimeout",
		func(poolPatch, message string) {
			setPool(poolPatch) // resetCluster restores the pool
			configWith("load-aware-rebalancing", `{"profile":"load-aware-rebalancing","action":"Apply","waitTimeout":"4s"}`)
			Eventually(func() string { return itemMessage("load-aware-rebalancing", "enable-psi-metrics") }).
				WithTimeout(20 * time.Second).Should(ContainSubstring(message))
			Expect(getConfig("load-aware-rebalancing").Status.Phase).To(Equal(v1alpha1.PhaseInProgress))
			c := waitPhase("load-aware-rebalancing", v1alpha1.PhaseFailed, 20*time.Second)
			Expect(item(c, "enable-psi-metrics").Message).To(MatchRegexp(`^Timeout waiting for resource to become healthy \(waited \d+s, timeout 4s\): `))
		},
		Entry("degraded", `{"metadata":{"annotations":{"fake-mco.virt-advisor.io/degraded":"true"}}}`, "MachineConfigPool 'worker' is degraded (1 degraded machines)"),
		Entry("paused", `{"spec":{"paused":true}}`, "MachineConfigPool 'worker' is paused"),
	)
})

var _ = Describe("resilience", Ordered, func() {
	BeforeEach(resetCluster)
	AfterEach(resetCluster)

	It("resumes a rollout after virt-advisor-apiserver is killed, without losing the approval", func() {
		configWith("load-aware-rebalancing", `{"profile":"load-aware-rebalancing"}`)
		waitPhase("load-aware-rebalancing", v1alpha1.PhaseReviewRequired, 15*time.Second)
		_, err := advisor.AdvisorV1alpha1().VirtPlatformConfigs().Approve(suiteCtx, "load-aware-rebalancing",
			&v1alpha1.Approval{Spec: v1alpha1.ApprovalSpec{PlanHash: planHashOf("load-aware-rebalancing")}}, metav1.CreateOptions{})
		Expect(err).NotTo(HaveOccurred())
		Eventually(func() string { return itemMessage("load-aware-rebalancing", "enable-psi-metrics") }).
			WithTimeout(20 * time.Second).Should(ContainSubstring("is updating"))
		mcBefore := getObject(mcGVR, "", "99-worker-psi-karg")

		adv := testEnv.Advisor()
		Expect(adv.Stop(syscall.SIGKILL)).To(Succeed())
		restarted, err := testEnv.StartAdvisor(suiteCtx, adv.Name)
		Expect(err).NotTo(HaveOccurred())
		Expect(testEnv.RegisterAdvisor(suiteCtx, restarted)).To(Succeed())

		c := waitPhase("load-aware-rebalancing", v1alpha1.PhaseCompleted, 60*time.Second)
		Expect(c.Status.Approval.ApprovedBy).To(Equal("admin"), "the approval survived")
		mcAfter := getObject(mcGVR, "", "99-worker-psi-karg")
		Expect(mcAfter.GetGeneration()).To(Equal(mcBefore.GetGeneration()), "the MachineConfig was not changed again")
	})

	It("runs the controller on exactly one of two replicas sharing an etcd, and fails over", func() {
		args := []string{"--etcd-servers=" + testEnv.EtcdURL, "--etcd-prefix=/ha-" + strings.ToLower(randomSuffix()),
			"--leader-elect-resource-name=virt-advisor-ha"}
		a, err := testEnv.StartAdvisor(suiteCtx, "ha-a", args...)
		Expect(err).NotTo(HaveOccurred())
		b, err := testEnv.StartAdvisor(suiteCtx, "ha-b", args...)
		Expect(err).NotTo(HaveOccurred())
		main := testEnv.Advisor()
		DeferCleanup(func() {
			Expect(testEnv.RegisterAdvisor(suiteCtx, main)).To(Succeed())
			_ = a.Stop(syscall.SIGTERM)
			_ = b.Stop(syscall.SIGTERM)
		})
		Expect(testEnv.RegisterAdvisor(suiteCtx, a)).To(Succeed())

		leader := func() *env.Advisor {
			for _, r := range []*env.Advisor{a, b} {
				if !r.Exited() && strings.Contains(r.LogTail(100000), "Became leader") {
					return r
				}
			}
			return nil
		}
		Eventually(leader).WithTimeout(30 * time.Second).ShouldNot(BeNil())
		first := leader()
		standby := a
		if first == a {
			standby = b
		}
		Eventually(func() string { return standby.LogTail(100000) }).WithTimeout(30 * time.Second).Should(ContainSubstring("Not the leader: standing by"))

		configWith("virt-higher-density", `{"profile":"virt-higher-density","action":"Apply"}`)
		Eventually(func() string { return itemMessage("virt-higher-density", "enable-kubelet-swap") }).
			WithTimeout(20 * time.Second).Should(ContainSubstring("MachineConfigPool 'worker' is"))
		Expect(strings.Contains(standby.LogTail(100000), "Became leader")).To(BeFalse(), "only one replica applies")

		Expect(first.Stop(syscall.SIGKILL)).To(Succeed())
		if first == a {
			Expect(testEnv.RegisterAdvisor(suiteCtx, b)).To(Succeed())
		}
		waitPhase("virt-higher-density", v1alpha1.PhaseCompleted, 90*time.Second)
		Expect(standby.LogTail(100000)).To(ContainSubstring("Became leader"))
		deleteConfig("virt-higher-density")
	})
})

func randomSuffix() string {
	return strings.ReplaceAll(time.Now().Format("150405.000000"), ".", "")
}
