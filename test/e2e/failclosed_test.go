package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	admissionv1 "k8s.io/api/admissionregistration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/yaml"

	"github.com/kubevirt/virt-advisor/pkg/apis/advisor/v1alpha1"
	"github.com/kubevirt/virt-advisor/pkg/status"
	"github.com/kubevirt/virt-advisor/test/env"
)

// mcPolicy confines the server's MachineConfig writes
// (artifacts/deploy/05-admission-policy.yaml); its binding has its name.
const mcPolicy = admissionPolicy + "-machineconfigs"

// shippedBinding is the binding of that name in artifacts/deploy.
func shippedBinding(name string) *admissionv1.ValidatingAdmissionPolicyBinding {
	GinkgoHelper()
	raw, err := os.ReadFile(filepath.Join(testEnv.RepoRoot, "artifacts", "deploy", "05-admission-policy.yaml"))
	Expect(err).NotTo(HaveOccurred())
	for _, doc := range strings.Split(string(raw), "\n---\n") {
		b := &admissionv1.ValidatingAdmissionPolicyBinding{}
		Expect(yaml.Unmarshal([]byte(doc), b)).To(Succeed())
		if b.Kind == "ValidatingAdmissionPolicyBinding" && b.Name == name {
			return b
		}
	}
	Fail("no binding " + name + " in artifacts/deploy/05-admission-policy.yaml")
	return nil
}

// restoreBinding creates the shipped binding when it is missing and waits
// until kube-apiserver enforces it on the server's requests again (a
// dry-run create of a MachineConfig no profile writes, as the server with
// RBAC out of the way, refused by the policy).
func restoreBinding(name string) {
	GinkgoHelper()
	_, err := kube.AdmissionregistrationV1().ValidatingAdmissionPolicyBindings().Create(suiteCtx, shippedBinding(name), metav1.CreateOptions{})
	Expect(err == nil || apierrors.IsAlreadyExists(err)).To(BeTrue(), "%v", err)
	cfg := rest.CopyConfig(testEnv.AdminConfig)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: testEnv.AdvisorUser, Groups: []string{"system:masters"}}
	asServer := dynamic.NewForConfigOrDie(cfg)
	probe := &unstructured.Unstructured{Object: map[string]interface{}{
		"apiVersion": "machineconfiguration.openshift.io/v1", "kind": "MachineConfig",
		"metadata": map[string]interface{}{"name": "e2e-fail-closed-probe", "labels": map[string]interface{}{"machineconfiguration.openshift.io/role": "worker"}},
		"spec":     map[string]interface{}{},
	}}
	Eventually(func() string {
		_, err := asServer.Resource(mcGVR).Create(suiteCtx, probe, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		if err == nil {
			return "admitted"
		}
		return err.Error()
	}).WithTimeout(30*time.Second).WithPolling(250*time.Millisecond).Should(ContainSubstring("ValidatingAdmissionPolicy '"+mcPolicy+"'"), "the binding is enforced again")
}

// machineConfigWritesSince are the server's writes (not dry-runs) of
// MachineConfigs, KubeletConfigs and pools since the audit log's offset.
func machineConfigWritesSince(from int64) []string {
	GinkgoHelper()
	var writes []string
	for _, w := range advisorWritesSince(from) {
		if strings.Contains(w, "/machineconfiguration.openshift.io/") {
			writes = append(writes, w)
		}
	}
	return writes
}

// inForce reads the server's metric of a shipped binding.
func bindingInForce(name string) float64 {
	GinkgoHelper()
	m, err := env.ScrapeMetrics(suiteCtx, advisorDirect())
	Expect(err).NotTo(HaveOccurred())
	return m.Sum("virt_advisor_admission_policy_in_force", map[string]string{"kind": "ValidatingAdmissionPolicyBinding", "name": name})
}

var _ = Describe("governance: fail closed without the admission policy", func() {
	BeforeEach(resetCluster)
	AfterEach(resetCluster)

	It("writes nothing of an approved PSI plan while the MachineConfig policy's binding is missing, says why on the config, and writes it once the binding is back", func() {
		const profile = "load-aware-rebalancing"
		expectShippedPolicy()
		Expect(bindingInForce(mcPolicy)).To(Equal(1.0), "the binding is in force as shipped")

		By("the binding deleted, the server restarted as its ServiceAccount with the shipped RBAC")
		Expect(kube.AdmissionregistrationV1().ValidatingAdmissionPolicyBindings().Delete(suiteCtx, mcPolicy, metav1.DeleteOptions{})).To(Succeed())
		DeferCleanup(func() { restoreBinding(mcPolicy) })
		Expect(testEnv.RestartAdvisorWith(suiteCtx, nil, map[string]string{"--kubeconfig": testEnv.AdvisorKubeconfig})).To(Succeed())
		Expect(testEnv.Advisor().Args).To(ContainElement("--kubeconfig=" + testEnv.AdvisorKubeconfig))
		Eventually(func() string { return probe(testEnv.Advisor(), "/readyz/"+env.AdmissionPoliciesCheck) }).WithTimeout(20*time.Second).
			Should(ContainSubstring("internal server error"), "the readyz check fails")
		Expect(testEnv.Advisor().LogTail(200)).To(ContainSubstring("ValidatingAdmissionPolicyBinding " + mcPolicy + " is missing"))
		Eventually(func() float64 { return bindingInForce(mcPolicy) }).WithTimeout(20 * time.Second).Should(Equal(0.0))

		By("a PSI plan approved: nothing written, the config says why")
		configWith(profile, `{"profile":"`+profile+`"}`)
		waitPhase(profile, v1alpha1.PhaseReviewRequired, 30*time.Second)
		from := auditOffset()
		Expect(approve(advisor, profile, planHashOf(profile))).To(Succeed())
		var waiting metav1.Condition
		Eventually(func() string {
			c := getConfig(profile)
			if w := meta.FindStatusCondition(c.Status.Conditions, status.ConditionWaiting); w != nil && w.Status == metav1.ConditionTrue {
				waiting = *w
				return w.Reason
			}
			return string(c.Status.Phase) + ": " + status.PhaseMessage(&c.Status)
		}).WithTimeout(30 * time.Second).WithPolling(250 * time.Millisecond).Should(Equal(status.WaitingAdmissionPolicy))
		Expect(waiting.Message).To(ContainSubstring("Item 'enable-psi-metrics' is not written: virt-advisor writes no machineconfigs.machineconfiguration.openshift.io while the admission policy that confines its writes there is not in force: ValidatingAdmissionPolicyBinding " + mcPolicy + " is missing"))
		Expect(waiting.Message).To(ContainSubstring("Apply artifacts/deploy/05-admission-policy.yaml as shipped"))
		Consistently(func() []string { return machineConfigWritesSince(from) }).WithTimeout(5*time.Second).WithPolling(time.Second).Should(BeEmpty(), "no MachineConfig nor pool written")
		Expect(getObject(mcGVR, "", "99-worker-psi-karg")).To(BeNil())
		paused, _, _ := unstructured.NestedBool(getObject(mcpGVR, "", "worker").Object, "spec", "paused")
		Expect(paused).To(BeFalse(), "the pool is not paused for a write that waits")
		c := getConfig(profile)
		Expect(c.Status.Phase).To(Equal(v1alpha1.PhaseInProgress))
		Expect(status.PhaseMessage(&c.Status)).To(ContainSubstring("ValidatingAdmissionPolicyBinding " + mcPolicy + " is missing"))
		for _, it := range c.Status.Items {
			if it.Name == "enable-psi-metrics" {
				Expect(it.State).To(Equal(v1alpha1.ItemStatePending))
				Expect(it.Message).To(HavePrefix("Not written: virt-advisor writes no machineconfigs"))
			}
		}
		Expect(eventReasons(profile)).To(ContainElement("Waiting"))

		By("the binding restored: the plan proceeds")
		restoreBinding(mcPolicy)
		c = waitPhase(profile, v1alpha1.PhaseCompleted, 90*time.Second)
		for _, it := range c.Status.Items {
			Expect(it.State).To(Equal(v1alpha1.ItemStateCompleted), "%s: %s", it.Name, it.Message)
		}
		Expect(getObject(mcGVR, "", "99-worker-psi-karg")).NotTo(BeNil(), "the PSI MachineConfig is written")
		Expect(probe(testEnv.Advisor(), "/readyz/"+env.AdmissionPoliciesCheck)).To(Equal("ok"))
		Expect(bindingInForce(mcPolicy)).To(Equal(1.0))
		deleteConfig(profile)
	})
})
