package e2e

import (
	"encoding/json"
	"encoding/pem"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	admissionv1 "k8s.io/api/admission/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubevirt/virt-advisor/test/env"
)

// advisorUser is the identity the server writes to the main cluster with.
const advisorUser = "system:serviceaccount:" + env.Namespace + ":" + env.AdvisorServiceAccount

// advisorViaProxy restarts the registered server so that it reaches
// kube-apiserver through a new Proxy (its own API stays served through
// kube-apiserver's aggregation, and its storage is its embedded etcd: a
// stalled proxy leaves both readable), with the flags of replace too
// (e.g. "--leader-elect": "false"). The normal server is back when the
// spec ends.
func advisorViaProxy(replace map[string]string) *env.Proxy {
	GinkgoHelper()
	u, err := url.Parse(testEnv.KubeAPIServerURL)
	Expect(err).NotTo(HaveOccurred())
	proxy, err := env.NewProxy(u.Host)
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(proxy.Close)
	via, err := testEnv.KubeconfigVia(testEnv.AdvisorKubeconfig, proxy.Addr())
	Expect(err).NotTo(HaveOccurred())
	args := map[string]string{"--kubeconfig": via}
	for k, v := range replace {
		args[k] = v
	}
	Expect(testEnv.RestartAdvisorWith(suiteCtx, nil, args)).To(Succeed())
	DeferCleanup(func() {
		proxy.Resume() // a stalled proxy would hold the graceful stop's requests
		Expect(testEnv.RestartAdvisorWith(suiteCtx, nil, nil)).To(Succeed())
	})
	return proxy
}

// heldWrite holds the first write by the server to a kind in a real
// validating webhook of kube-apiserver, so that a spec knows the write is
// in flight: Arrived is closed when it arrives. The write stays held until
// Release or until kube-apiserver gives up on the webhook (timeoutSeconds;
// the write then fails and is not made). Later writes and everyone else's
// (dry-runs included) pass at once.
type heldWrite struct {
	Arrived  <-chan struct{}
	arrived  chan struct{}
	released chan struct{}
	once     sync.Once
	mu       sync.Mutex
	taken    bool
	calls    int
}

// Calls is how many admission requests the webhook answered or holds.
func (h *heldWrite) Calls() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.calls
}

// Release lets the held write (and every later one) through.
func (h *heldWrite) Release() { h.once.Do(func() { close(h.released) }) }

// holdFirstWrite installs the webhook on writes (create, update) of
// group/resource for the spec.
func holdFirstWrite(group, resource string, timeoutSeconds int32) *heldWrite {
	GinkgoHelper()
	h := &heldWrite{arrived: make(chan struct{}), released: make(chan struct{})}
	h.Arrived = h.arrived
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var review admissionv1.AdmissionReview
		if err := json.NewDecoder(r.Body).Decode(&review); err != nil || review.Request == nil {
			http.Error(w, "not an AdmissionReview", http.StatusBadRequest)
			return
		}
		req := review.Request
		h.mu.Lock()
		h.calls++
		h.mu.Unlock()
		if req.UserInfo.Username == advisorUser && (req.DryRun == nil || !*req.DryRun) {
			h.mu.Lock()
			first := !h.taken
			h.taken = true
			h.mu.Unlock()
			if first {
				close(h.arrived)
				select {
				case <-h.released:
				case <-r.Context().Done():
					return
				}
			}
		}
		review.Response = &admissionv1.AdmissionResponse{UID: req.UID, Allowed: true}
		review.Request = nil
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(&review)
	}))
	const name = "e2e-hold-first-write"
	DeferCleanup(func() {
		_ = kube.AdmissionregistrationV1().ValidatingWebhookConfigurations().Delete(suiteCtx, name, metav1.DeleteOptions{})
		h.Release()
		srv.CloseClientConnections()
		srv.Close()
	})
	caBundle := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
	hook := srv.URL + "/validate"
	cfg := &admissionregistrationv1.ValidatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Webhooks: []admissionregistrationv1.ValidatingWebhook{{
			Name:         "hold.e2e.virt-advisor.io",
			ClientConfig: admissionregistrationv1.WebhookClientConfig{URL: &hook, CABundle: caBundle},
			Rules: []admissionregistrationv1.RuleWithOperations{{
				Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create, admissionregistrationv1.Update},
				Rule:       admissionregistrationv1.Rule{APIGroups: []string{group}, APIVersions: []string{"*"}, Resources: []string{resource}},
			}},
			FailurePolicy:           ptrTo(admissionregistrationv1.Fail),
			SideEffects:             ptrTo(admissionregistrationv1.SideEffectClassNone),
			AdmissionReviewVersions: []string{"v1"},
			TimeoutSeconds:          &timeoutSeconds,
		}},
	}
	_, err := kube.AdmissionregistrationV1().ValidatingWebhookConfigurations().Create(suiteCtx, cfg, metav1.CreateOptions{})
	Expect(err).NotTo(HaveOccurred())
	return h
}

// webhookActive waits until kube-apiserver calls the webhook: plan GETs
// of config make the server dry-run its writes, which pass through it.
func (h *heldWrite) webhookActive(config string) {
	GinkgoHelper()
	Eventually(func() int {
		_ = getPlan(config)
		return h.Calls()
	}).WithTimeout(15 * time.Second).WithPolling(500 * time.Millisecond).Should(BeNumerically(">", 0))
}
