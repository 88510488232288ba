package e2e

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"sync"
	"syscall"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/kubevirt/virt-advisor/pkg/generated/clientset/versioned"
)

// planAnswer is what a client sees of one GET …/plan, without client-go's
// retries on 429.
type planAnswer struct {
	code       int
	retryAfter string
	body       string
	took       time.Duration
}

// concurrentPlanGETs sends n GETs of the plans of names (round robin) at
// once to host as the admin and returns every answer.
func concurrentPlanGETs(host, caFile string, names []string, n int) []planAnswer {
	GinkgoHelper()
	cfg := rest.CopyConfig(testEnv.AdminConfig)
	if host != "" {
		cfg.Host = host
		cfg.TLSClientConfig.CAData, cfg.TLSClientConfig.CAFile = nil, caFile
	}
	client, err := rest.HTTPClientFor(cfg)
	Expect(err).NotTo(HaveOccurred())
	answers := make([]planAnswer, n)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		wg.Go(func() {
			url := fmt.Sprintf("%s/apis/advisor.kubevirt.io/v1alpha1/virtplatformconfigs/%s/plan", cfg.Host, names[i%len(names)])
			req, err := http.NewRequestWithContext(suiteCtx, http.MethodGet, url, nil)
			if err != nil {
				answers[i] = planAnswer{code: -1, body: err.Error()}
				return
			}
			<-start
			t0 := time.Now()
			resp, err := client.Do(req)
			if err != nil {
				answers[i] = planAnswer{code: -1, body: err.Error()}
				return
			}
			defer resp.Body.Close()
			body, _ := io.ReadAll(resp.Body)
			answers[i] = planAnswer{code: resp.StatusCode, retryAfter: resp.Header.Get("Retry-After"), body: string(body), took: time.Since(t0)}
		})
	}
	close(start)
	wg.Wait()
	return answers
}

func getLease() *coordinationv1.Lease {
	GinkgoHelper()
	lease, err := kube.CoordinationV1().Leases(leaseNamespace).Get(suiteCtx, leaseName, metav1.GetOptions{})
	Expect(err).NotTo(HaveOccurred())
	return lease
}

// Serial: 50 concurrent plan GETs take both cores; with other processes'
// specs beside them the Lease-renewal check would measure their load.
var _ = Describe("load on the main API server", Serial, func() {
	It("answers 50 concurrent plan GETs with 200 or 429, shares their computations and keeps renewing the Lease", func() {
		const name, requests = "load-aware-rebalancing", 50
		configWith(name, `{"profile":"load-aware-rebalancing","action":"Ignore"}`)
		dryRunsPerPlan := 0
		for _, it := range getPlan(name).Status.Items {
			if it.DesiredState != nil { // a Delete item sends no dry-run
				dryRunsPerPlan++
			}
		}
		Expect(dryRunsPerPlan).To(BeNumerically(">", 0))

		// The controller holds the Lease (another spec may have taken it
		// away for a while).
		var before *coordinationv1.Lease
		Eventually(func(g Gomega) {
			var err error
			before, err = kube.CoordinationV1().Leases(leaseNamespace).Get(suiteCtx, leaseName, metav1.GetOptions{})
			g.Expect(err).NotTo(HaveOccurred(), "the Lease is back (another spec may have deleted it)")
			g.Expect(before.Spec.HolderIdentity).NotTo(BeNil())
			g.Expect(*before.Spec.HolderIdentity).NotTo(BeElementOf("", "e2e-pause"))
			g.Expect(before.Spec.RenewTime.Time).To(BeTemporally(">", time.Now().Add(-2*time.Second)))
		}).WithTimeout(20 * time.Second).Should(Succeed())
		holder := *before.Spec.HolderIdentity

		// Who holds the Lease, read while the GETs run.
		watching, stopWatching := context.WithCancel(suiteCtx)
		var holders []string
		watched := make(chan struct{})
		go func() {
			defer close(watched)
			for watching.Err() == nil {
				if l, err := kube.CoordinationV1().Leases(leaseNamespace).Get(watching, leaseName, metav1.GetOptions{}); err == nil && l.Spec.HolderIdentity != nil {
					holders = append(holders, *l.Spec.HolderIdentity)
				}
				time.Sleep(100 * time.Millisecond)
			}
		}()

		dryRunsBefore, err := testEnv.DryRunApplies(suiteCtx)
		Expect(err).NotTo(HaveOccurred())
		burstStart := time.Now()
		answers := concurrentPlanGETs("", "", []string{name}, requests)
		burstEnd := time.Now()
		dryRunsAfter, err := testEnv.DryRunApplies(suiteCtx)
		Expect(err).NotTo(HaveOccurred())

		codes := map[int]int{}
		for i, a := range answers {
			codes[a.code]++
			Expect(a.code).To(BeElementOf(http.StatusOK, http.StatusTooManyRequests), "request %d: %s", i, a.body)
			if a.code == http.StatusTooManyRequests {
				Expect(a.retryAfter).NotTo(BeEmpty(), "a 429 says when to retry")
			}
		}
		dryRuns := dryRunsAfter - dryRunsBefore
		separate := float64(requests * dryRunsPerPlan)
		GinkgoWriter.Printf("%d concurrent plan GETs in %v: answers %v; kube-apiserver received %.0f dry-runs (%d separate computations would send %.0f)\n",
			requests, burstEnd.Sub(burstStart).Round(time.Millisecond), codes, dryRuns, requests, separate)
		Expect(codes[http.StatusOK]).To(BeNumerically(">", 0))
		Expect(dryRuns).To(BeNumerically(">=", dryRunsPerPlan), "at least one computation reached kube-apiserver")
		Expect(dryRuns).To(BeNumerically("<=", separate/5), "concurrent GETs of one revision share their computations")

		// The Lease was renewed after the burst by the same holder, and
		// nobody else held it meanwhile.
		Eventually(func(g Gomega) {
			l := getLease()
			g.Expect(l.Spec.RenewTime.Time).To(BeTemporally(">", burstEnd))
		}).WithTimeout(5 * time.Second).WithPolling(100 * time.Millisecond).Should(Succeed())
		stopWatching()
		<-watched
		after := getLease()
		Expect(*after.Spec.HolderIdentity).To(Equal(holder))
		Expect(after.Spec.LeaseTransitions).To(Equal(before.Spec.LeaseTransitions), "no leadership change")
		Expect(holders).NotTo(BeEmpty())
		for _, h := range holders {
			Expect(h).To(Equal(holder), "the Lease changed hands during the burst")
		}
	})

	It("puts the Lease requests of virt-advisor in the leader-election priority level, apart from its plans", func() {
		schema, err := kube.FlowcontrolV1().FlowSchemas().Get(suiteCtx, "virt-advisor-leader-election", metav1.GetOptions{})
		Expect(err).NotTo(HaveOccurred(), "artifacts/deploy installs the FlowSchema")
		level, err := kube.FlowcontrolV1().PriorityLevelConfigurations().Get(suiteCtx, "leader-election", metav1.GetOptions{})
		Expect(err).NotTo(HaveOccurred())

		cfg, err := clientcmd.BuildConfigFromFlags("", testEnv.AdvisorKubeconfig)
		Expect(err).NotTo(HaveOccurred())
		client, err := rest.HTTPClientFor(cfg)
		Expect(err).NotTo(HaveOccurred())
		// kube-apiserver names the FlowSchema and priority level it
		// classified a request into in the response headers.
		classify := func(path string) (string, string) {
			GinkgoHelper()
			resp, err := client.Get(cfg.Host + path)
			Expect(err).NotTo(HaveOccurred())
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			Expect(resp.StatusCode).To(BeElementOf(http.StatusOK, http.StatusNotFound), path)
			return resp.Header.Get("X-Kubernetes-PF-FlowSchema-UID"), resp.Header.Get("X-Kubernetes-PF-PriorityLevel-UID")
		}
		fs, pl := classify("/apis/coordination.k8s.io/v1/namespaces/" + leaseNamespace + "/leases/" + leaseName)
		Expect(fs).To(Equal(string(schema.UID)))
		Expect(pl).To(Equal(string(level.UID)))
		// What a plan reads stays where it was.
		fs, pl = classify("/apis/operator.openshift.io/v1/namespaces/" + kdNS + "/kubedeschedulers/cluster")
		Expect(fs).NotTo(Equal(string(schema.UID)))
		Expect(pl).NotTo(Equal(string(level.UID)))
	})

	It("answers 429 with Retry-After when every plan slot stays taken, never 5xx", func() {
		// A replica of its own that computes one plan at a time and waits
		// for a slot for 1 ms only; it stands outside the controller's
		// election.
		adv, err := testEnv.StartAdvisor(suiteCtx, "load-limited",
			"--leader-elect=false", "--max-concurrent-plans=1", "--plan-wait-timeout=1ms")
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(func() { Expect(adv.Stop(syscall.SIGTERM)).To(Succeed()) })

		// Two configs (the ones it advertises), so two computations compete
		// for the one slot.
		names := []string{"load-aware-rebalancing", "virt-higher-density"}
		cfg := rest.CopyConfig(testEnv.AdminConfig)
		cfg.Host = adv.URL
		cfg.TLSClientConfig.CAData, cfg.TLSClientConfig.CAFile = nil, testEnv.ServingCAFile
		direct := versioned.NewForConfigOrDie(cfg)
		Eventually(func(g Gomega) {
			for _, name := range names {
				_, err := direct.AdvisorV1alpha1().VirtPlatformConfigs().Get(suiteCtx, name, metav1.GetOptions{})
				g.Expect(err).NotTo(HaveOccurred())
			}
		}).WithTimeout(20 * time.Second).Should(Succeed())
		answers := concurrentPlanGETs(adv.URL, testEnv.ServingCAFile, names, 30)
		codes := map[int]int{}
		for i, a := range answers {
			codes[a.code]++
			Expect(a.code).To(BeElementOf(http.StatusOK, http.StatusTooManyRequests), "request %d: %s", i, a.body)
			if a.code == http.StatusTooManyRequests {
				Expect(a.retryAfter).To(Equal("1"))
				Expect(a.body).To(ContainSubstring("--max-concurrent-plans"))
				Expect(a.body).To(ContainSubstring("retry in 1s"))
			}
		}
		GinkgoWriter.Printf("answers of the limited replica: %v\n", codes)
		Expect(codes[http.StatusOK]).To(BeNumerically(">", 0))
		Expect(codes[http.StatusTooManyRequests]).To(BeNumerically(">", 0))
	})
})
