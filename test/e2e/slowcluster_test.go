package e2e

import (
	"encoding/pem"
	"net/http"
	"net/http/httptest"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	admissionv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubevirt/virt-advisor/pkg/apis/advisor/v1alpha1"
)

// slowWebhook makes kube-apiserver call a validating webhook that answers
// after delay for MachineConfigs: a slow main cluster, for real.
func slowWebhook(delay time.Duration, timeoutSeconds int32) {
	stop := make(chan struct{})
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-time.After(delay):
		case <-r.Context().Done():
		case <-stop:
		}
		http.Error(w, "too slow", http.StatusServiceUnavailable)
	}))
	DeferCleanup(func() {
		close(stop)
		srv.CloseClientConnections() // kube-apiserver keeps them alive
		srv.Close()
	})
	caBundle := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
	url := srv.URL + "/validate"
	cfg := &admissionv1.ValidatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: "e2e-slow"},
		Webhooks: []admissionv1.ValidatingWebhook{{
			Name:                    "slow.e2e.virt-advisor.io",
			ClientConfig:            admissionv1.WebhookClientConfig{URL: &url, CABundle: caBundle},
			Rules:                   []admissionv1.RuleWithOperations{{Operations: []admissionv1.OperationType{admissionv1.Create, admissionv1.Update}, Rule: admissionv1.Rule{APIGroups: []string{"machineconfiguration.openshift.io"}, APIVersions: []string{"v1"}, Resources: []string{"machineconfigs"}}}},
			FailurePolicy:           ptrTo(admissionv1.Fail),
			SideEffects:             ptrTo(admissionv1.SideEffectClassNone),
			AdmissionReviewVersions: []string{"v1"},
			TimeoutSeconds:          &timeoutSeconds,
		}},
	}
	_, err := kube.AdmissionregistrationV1().ValidatingWebhookConfigurations().Create(suiteCtx, cfg, metav1.CreateOptions{})
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(func() {
		_ = kube.AdmissionregistrationV1().ValidatingWebhookConfigurations().Delete(suiteCtx, "e2e-slow", metav1.DeleteOptions{})
	})
}

var _ = Describe("a slow main cluster", func() {
	It("answers the plan within the request time with a clear per-item error, never hangs", func() {
		slowWebhook(30*time.Second, 2)
		configWith("load-aware-rebalancing", `{"profile":"load-aware-rebalancing","action":"Ignore"}`)
		var it v1alpha1.PlanItem
		Eventually(func() string {
			start := time.Now()
			p := getPlan("load-aware-rebalancing")
			Expect(time.Since(start)).To(BeNumerically("<", 10*time.Second), "the plan must not hang on a slow dependency")
			it = planItem(p, "enable-psi-metrics")
			return it.Error
		}).WithTimeout(30 * time.Second).Should(ContainSubstring("slow.e2e.virt-advisor.io"))
		Expect(it.Error).To(ContainSubstring("server-side apply dry-run of MachineConfig 99-worker-psi-karg was rejected"))
		p := getPlan("load-aware-rebalancing")
		Expect(planItem(p, "enable-load-aware-descheduling").Error).To(BeEmpty(), "other items are still planned")
		out, err := kubectl("get", "virtplatformconfig", "load-aware-rebalancing", "--subresource=plan")
		Expect(err).NotTo(HaveOccurred(), out)
		Expect(out).To(MatchRegexp(`enable-psi-metrics\s+MachineConfig\s+99-worker-psi-karg\s+Error\s+`))
	})
})
