package e2e

import (
	"fmt"
	"regexp"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	admissionv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"

	"github.com/kubevirt/virt-advisor/pkg/apis/advisor/v1alpha1"
	"github.com/kubevirt/virt-advisor/pkg/failpoint"
	"github.com/kubevirt/virt-advisor/pkg/generated/clientset/versioned"
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
		// kube-apiserver enforces policies from a cache: the next spec's
		// HyperConverged writes must not meet this one (a spec of
		// live-migration-limits did, right after it).
		cfg := rest.CopyConfig(testEnv.AdminConfig)
		cfg.Impersonate = rest.ImpersonationConfig{UserName: testEnv.AdvisorUser}
		asAdvisor, err := dynamic.NewForConfig(cfg)
		Expect(err).NotTo(HaveOccurred())
		Eventually(func() string {
			hco, err := get(hcoGVR, hcoNS, hcoName)
			if err != nil {
				return err.Error()
			}
			_, err = asAdvisor.Resource(hcoGVR).Namespace(hcoNS).Update(suiteCtx, hco, metav1.UpdateOptions{DryRun: []string{metav1.DryRunAll}})
			if err != nil {
				return err.Error()
			}
			return ""
		}).WithTimeout(30*time.Second).WithPolling(250*time.Millisecond).ShouldNot(ContainSubstring(name), "the policy is no longer enforced")
	})
}

var _ = Describe("resilience: a permanent failure after a write", func() {
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

var _ = Describe("resilience: outages and crashes", startFirst, func() {
	BeforeEach(resetCluster)
	AfterEach(func() { resetClusterWithin(afterOutage) })

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

// connectionError matches what a client sees of a main API server that is
// gone or cut off.
var connectionError = MatchRegexp(`connection refused|connection reset|EOF|broken pipe|client connection lost|TLS handshake timeout|i/o timeout|context deadline exceeded|Client.Timeout exceeded`)

// retryMessage is the message of an item whose write is being retried.
var retryMessage = regexp.MustCompile(`^Retrying in [0-9.]+m?s \(attempt ([0-9]+)\): `)

// advisorDirectClient reads configs from the server itself, not through
// kube-apiserver's aggregation: it answers while kube-apiserver is down
// (the admin is in system:masters, which the server authorizes without
// asking kube-apiserver, and its storage is its own).
func advisorDirectClient() versioned.Interface {
	GinkgoHelper()
	cfg := rest.CopyConfig(testEnv.AdminConfig)
	cfg.Host = testEnv.Advisor().URL
	cfg.TLSClientConfig.CAData, cfg.TLSClientConfig.CAFile = nil, testEnv.ServingCAFile
	c, err := versioned.NewForConfig(cfg)
	Expect(err).NotTo(HaveOccurred())
	return c
}

var _ = Describe("resilience: retries across outages", startFirst, func() {
	BeforeEach(resetCluster)
	AfterEach(resetCluster)

	It("kube-apiserver down while the HyperConverged write is in flight: the item says it is retrying and why, then the plan ends Completed, every node updated once", func() {
		// Leader election would stop the controller for the outage (its
		// Lease cannot be renewed): without it the retries go on, and each
		// attempt is seen.
		Expect(testEnv.RestartAdvisorWith(suiteCtx, nil, map[string]string{"--leader-elect": "false"})).To(Succeed())
		DeferCleanup(func() { Expect(testEnv.RestartAdvisorWith(suiteCtx, nil, nil)).To(Succeed()) })
		configWith("virt-higher-density", `{"profile":"virt-higher-density"}`)
		waitPhase("virt-higher-density", v1alpha1.PhaseReviewRequired, 20*time.Second)
		hold := holdFirstWrite("hco.kubevirt.io", "hyperconvergeds", 2)
		hold.webhookActive("virt-higher-density")
		before := testEnv.FakeMCORollouts("worker")
		Expect(approve(advisor, "virt-higher-density", planHashOf("virt-higher-density"))).To(Succeed())

		// The swap MachineConfig is written; the HyperConverged write is
		// in kube-apiserver when it goes down (it waits for the write, then
		// stops listening).
		Eventually(hold.Arrived).WithTimeout(30 * time.Second).Should(BeClosed())
		Expect(getObject(mcGVR, "", "90-worker-kubelet-swap")).NotTo(BeNil())
		Expect(testEnv.StopKubeAPIServer()).To(Succeed())
		down := time.Now()
		restarted := false
		DeferCleanup(func() {
			if !restarted {
				Expect(testEnv.StartKubeAPIServer(suiteCtx)).To(Succeed())
			}
		})

		direct := advisorDirectClient()
		messages := map[string]bool{}
		var retrying v1alpha1.VirtPlatformConfigItem
		Eventually(func(g Gomega) {
			c, err := direct.AdvisorV1alpha1().VirtPlatformConfigs().Get(suiteCtx, "virt-higher-density", metav1.GetOptions{})
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(c.Status.Phase).To(Equal(v1alpha1.PhaseInProgress), describeStatus(c))
			retrying = item(c, "configure-higher-density")
			messages[retrying.Message] = true
			g.Expect(retrying.Message).To(MatchRegexp(retryMessage.String() + `.*connection refused`))
			g.Expect(retrying.Retry).NotTo(BeNil())
			g.Expect(retrying.Retry.Attempts).To(BeNumerically(">=", 2))
		}).WithTimeout(20*time.Second).WithPolling(100*time.Millisecond).Should(Succeed(), "messages seen: %v", messages)
		Expect(retrying.State).To(Equal(v1alpha1.ItemStateInProgress))
		Expect(retrying.Retry.LastError).To(ContainSubstring("connection refused"))
		Expect(retrying.Message).To(HaveSuffix(": " + retrying.Retry.LastError))
		AddReportEntry("retrying during the outage", fmt.Sprintf("%q, %v after kube-apiserver went down", retrying.Message, time.Since(down).Round(100*time.Millisecond)))
		// The attempts keep their backoff (1 s, 2 s, 4 s, … ±20 %): over
		// 12 s of outage that is at most 5 of them, not one per status write.
		time.Sleep(time.Until(down.Add(12 * time.Second)))
		c, err := direct.AdvisorV1alpha1().VirtPlatformConfigs().Get(suiteCtx, "virt-higher-density", metav1.GetOptions{})
		Expect(err).NotTo(HaveOccurred())
		Expect(item(c, "configure-higher-density").Retry).NotTo(BeNil())
		Expect(item(c, "configure-higher-density").Retry.Attempts).To(BeNumerically("<=", 5), item(c, "configure-higher-density").Message)

		Expect(testEnv.StartKubeAPIServer(suiteCtx)).To(Succeed())
		restarted = true
		c = waitPhase("virt-higher-density", v1alpha1.PhaseCompleted, 120*time.Second)
		for _, it := range c.Status.Items {
			Expect(it.State).To(Equal(v1alpha1.ItemStateCompleted), "%s: %s", it.Name, it.Message)
			Expect(it.Retry).To(BeNil(), it.Name)
		}
		Expect(item(c, "configure-higher-density").Message).To(Equal("Applied successfully"))
		waitPoolSettled("00-worker", "90-worker-kubelet-swap")
		_, nodes := rolloutsSince(before)
		Expect(nodes).To(Equal([]int{1, 1, 1}), "each worker node updated once")
		deleteConfig("virt-higher-density")
	})

	It("kube-apiserver stalled (proxy) for longer than --transient-error-deadline: the item fails with the last transient error and the deadline", func() {
		proxy := advisorViaProxy(map[string]string{"--transient-error-deadline": "15s", "--leader-elect": "false"})
		configWith("virt-higher-density", `{"profile":"virt-higher-density"}`)
		waitPhase("virt-higher-density", v1alpha1.PhaseReviewRequired, 20*time.Second)
		hold := holdFirstWrite("hco.kubevirt.io", "hyperconvergeds", 30)
		hold.webhookActive("virt-higher-density")
		hcoBefore := getObject(hcoGVR, hcoNS, hcoName)
		Expect(approve(advisor, "virt-higher-density", planHashOf("virt-higher-density"))).To(Succeed())
		Eventually(hold.Arrived).WithTimeout(30 * time.Second).Should(BeClosed())
		proxy.Stall()
		stalled := time.Now()

		c := waitPhase("virt-higher-density", v1alpha1.PhaseFailed, 5*time.Minute)
		took := time.Since(stalled)
		hco := item(c, "configure-higher-density")
		Expect(hco.State).To(Equal(v1alpha1.ItemStateFailed))
		Expect(hco.Retry).NotTo(BeNil())
		Expect(hco.Message).To(MatchRegexp(`^Failed to apply: gave up after retrying for [0-9.hms]+ \(attempt [0-9]+; the deadline is 15s, --transient-error-deadline\): `))
		Expect(hco.Message).To(HaveSuffix(": " + hco.Retry.LastError))
		Expect(hco.Retry.LastError).To(connectionError)
		partial := meta.FindStatusCondition(c.Status.Conditions, "PartiallyApplied")
		Expect(partial).NotTo(BeNil())
		Expect(partial.Message).To(HavePrefix("1 of 2 items were written: 'enable-kubelet-swap'"))
		AddReportEntry("stall to Failed", fmt.Sprintf("%v (deadline 15s): %q", took.Round(time.Second), hco.Message))
		Expect(getObject(hcoGVR, hcoNS, hcoName).GetResourceVersion()).To(Equal(hcoBefore.GetResourceVersion()), "the HyperConverged was not written")

		// Reachable again: the written MachineConfig's rollout is followed
		// to its end; the failed item stays failed.
		proxy.Resume()
		Eventually(func() v1alpha1.ItemState { return item(getConfig("virt-higher-density"), "enable-kubelet-swap").State }).
			WithTimeout(90*time.Second).Should(Equal(v1alpha1.ItemStateCompleted), "the rollout is followed to its end")
		waitPoolSettled("00-worker", "90-worker-kubelet-swap")
		Expect(getConfig("virt-higher-density").Status.Phase).To(Equal(v1alpha1.PhaseFailed))
		Expect(getObject(hcoGVR, hcoNS, hcoName).GetResourceVersion()).To(Equal(hcoBefore.GetResourceVersion()), "nothing retried after the failure")
		deleteConfig("virt-higher-density")
	})

	It("after a kube-apiserver restart the watches resume (drift is seen), one replica holds the Lease again, and nothing is written twice", func() {
		configWith("load-aware-rebalancing", noPSI)
		waitPhase("load-aware-rebalancing", v1alpha1.PhaseCompleted, 60*time.Second)
		kd := getObject(kdGVR, kdNS, "cluster")
		ours := managerTime(kd, ourManager)
		Expect(ours).NotTo(BeEmpty(), "the KubeDescheduler was written by the server")
		adv := testEnv.Advisor()
		leaderships := strings.Count(adv.LogTail(1<<20), "Became leader")
		leaseBefore := getLease()

		// Longer than the Lease (4 s in e2e): the leader loses it.
		restart := time.Now()
		Expect(testEnv.RestartKubeAPIServer(suiteCtx, 8*time.Second)).To(Succeed())
		servedAgain(60 * time.Second)

		Eventually(func() int { return strings.Count(adv.LogTail(1<<20), "Became leader") }).
			WithTimeout(60*time.Second).Should(Equal(leaderships+1), "leadership is lost in the outage and taken again once")
		identity := regexp.MustCompile(`Became leader, starting the controller" identity="([^"]+)"`).FindAllStringSubmatch(adv.LogTail(1<<20), -1)
		Expect(identity).NotTo(BeEmpty())
		lease := getLease()
		Expect(lease.Spec.HolderIdentity).NotTo(BeNil())
		Expect(*lease.Spec.HolderIdentity).To(Equal(identity[len(identity)-1][1]), "the one replica holds the Lease")
		Expect(lease.Spec.RenewTime.After(restart)).To(BeTrue(), "the Lease is renewed after the restart")
		Expect(ptrValue(lease.Spec.LeaseTransitions)).To(BeNumerically(">=", ptrValue(leaseBefore.Spec.LeaseTransitions)))
		Expect(adv.Exited()).To(BeFalse())

		// Nothing was written again by the restart.
		Consistently(func() string { return getObject(kdGVR, kdNS, "cluster").GetResourceVersion() }).
			WithTimeout(3*time.Second).Should(Equal(kd.GetResourceVersion()), "no write after the restart")
		Expect(getConfig("load-aware-rebalancing").Status.Phase).To(Equal(v1alpha1.PhaseCompleted))

		// The watches resumed: a managed field edited now is drift, seen
		// and resolved when put back; the server writes nothing. Each
		// watch retries within 2 s of the API answering (client-go's
		// default backoff let an edit go unseen for up to a minute).
		patchObject(kdGVR, kdNS, "cluster", `{"spec":{"mode":"Predictive"}}`)
		c := waitPhase("load-aware-rebalancing", v1alpha1.PhaseDrifted, 5*time.Second)
		Expect(item(c, "enable-load-aware-descheduling").Message).To(ContainSubstring("spec.mode"))
		patchObject(kdGVR, kdNS, "cluster", `{"spec":{"mode":"Automatic"}}`)
		waitPhase("load-aware-rebalancing", v1alpha1.PhaseCompleted, 5*time.Second)
		Expect(managerTime(getObject(kdGVR, kdNS, "cluster"), ourManager)).To(Equal(ours), "the server wrote the KubeDescheduler once, before the restart")
	})
})

// managerTime is when manager last wrote obj (its managedFields entries'
// times, by operation and subresource), to tell whether it wrote again.
func managerTime(obj *unstructured.Unstructured, manager string) string {
	var times []string
	for _, mf := range obj.GetManagedFields() {
		if mf.Manager == manager && mf.Time != nil {
			times = append(times, fmt.Sprintf("%s/%s@%s", mf.Operation, mf.Subresource, mf.Time.UTC().Format(time.RFC3339)))
		}
	}
	return strings.Join(times, ",")
}

func ptrValue[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}
