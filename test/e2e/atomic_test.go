package e2e

import (
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/meta"

	"github.com/kubevirt/virt-advisor/pkg/apis/advisor/v1alpha1"
	"github.com/kubevirt/virt-advisor/pkg/failpoint"
)

// Atomic: a write carries the read its checks judged, so that nothing
// changed between the last check and the write is written over, and the
// approval is read again after the pools' gate, before every write
// (issue 24: defects 2, 3 and 4). Failpoints armed with a duration hold
// the server between a check and its write while the spec changes the
// cluster or the config.

// advisorHeldAt restarts the server with the failpoints armed and
// restores it after the spec.
func advisorHeldAt(points string) {
	GinkgoHelper()
	Expect(testEnv.RestartAdvisorWith(suiteCtx, []string{failpoint.EnvVar + "=" + points}, nil)).To(Succeed())
	DeferCleanup(func() { Expect(testEnv.RestartAdvisorWith(suiteCtx, nil, nil)).To(Succeed()) })
}

// waitHeld waits until the server logs that it sleeps at the point for
// the nth time.
func waitHeld(point string, hit int) {
	GinkgoHelper()
	Eventually(func() string { return testEnv.Advisor().LogTail(400) }).WithTimeout(30 * time.Second).WithPolling(100 * time.Millisecond).
		Should(MatchRegexp(`failpoint %s: sleeping [0-9.]+m?s \(hit %d\)`, point, hit))
}

func staleMessage(c *v1alpha1.VirtPlatformConfig) string {
	GinkgoHelper()
	cond := meta.FindStatusCondition(c.Status.Conditions, string(v1alpha1.PhaseFailed))
	Expect(cond).NotTo(BeNil(), describeStatus(c))
	Expect(cond.Reason).To(Equal("StalePlan"), cond.Message)
	return cond.Message
}

const adminConfigMap = `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"example-config","namespace":"openshift-cnv"},"data":{"example-key":"by-hand"}}`

var _ = Describe("trust: checks and writes are atomic", Ordered, func() {
	BeforeEach(resetCluster)
	AfterEach(resetCluster)

	It("a Create never writes over an object made after its last check: StalePlan, the object untouched", func() {
		advisorHeldAt("before-write~4s")
		configWith("example-profile", `{"profile":"example-profile"}`)
		waitPhase("example-profile", v1alpha1.PhaseReviewRequired, 20*time.Second)
		Expect(planItem(getPlan("example-profile"), "configure-example-component").Operation).To(Equal(v1alpha1.OperationCreate))
		Expect(approve(advisor, "example-profile", planHashOf("example-profile"))).To(Succeed())

		waitHeld("before-write", 1)
		applyAs("someone", configMapGVR, hcoNS, "example-config", adminConfigMap)
		handMade := exampleConfigMap()

		c := waitPhase("example-profile", v1alpha1.PhaseFailed, 30*time.Second)
		Expect(staleMessage(c)).To(ContainSubstring("item 'configure-example-component': ConfigMap 'openshift-cnv/example-config' was created by someone else after the plan was reviewed (field managers: someone)"))
		cm := exampleConfigMap()
		Expect(cm.GetResourceVersion()).To(Equal(handMade.GetResourceVersion()), "the object made meanwhile is untouched")
		Expect(cm.Object["data"]).To(HaveKeyWithValue("example-key", "by-hand"))
		Expect(cm.GetLabels()).NotTo(HaveKey(managedBy))
		for _, m := range cm.GetManagedFields() {
			Expect(m.Manager).To(Equal("someone"))
		}
	})

	It("an Update never writes over a managed field changed after its last check: StalePlan naming the field, the value kept", func() {
		advisorHeldAt("before-write~4s")
		applyAs("someone", configMapGVR, hcoNS, "example-config", adminConfigMap)
		configWith("example-profile", `{"profile":"example-profile"}`)
		waitPhase("example-profile", v1alpha1.PhaseReviewRequired, 20*time.Second)
		Expect(planItem(getPlan("example-profile"), "configure-example-component").Operation).To(Equal(v1alpha1.OperationUpdate))
		Expect(approve(advisor, "example-profile", planHashOf("example-profile"))).To(Succeed())

		waitHeld("before-write", 1)
		patchObject(configMapGVR, hcoNS, "example-config", `{"data":{"example-key":"changed-meanwhile"}}`)
		changed := exampleConfigMap()

		c := waitPhase("example-profile", v1alpha1.PhaseFailed, 30*time.Second)
		Expect(staleMessage(c)).To(ContainSubstring("item 'configure-example-component': ConfigMap 'openshift-cnv/example-config' changed after the plan was reviewed (data)"))
		cm := exampleConfigMap()
		Expect(cm.GetResourceVersion()).To(Equal(changed.GetResourceVersion()), "nothing written after the change")
		Expect(cm.Object["data"]).To(HaveKeyWithValue("example-key", "changed-meanwhile"))
	})

	It("the labels a write sets are reviewed: a MachineConfig relabelled while its item waits for a pool is not relabelled back (StalePlan)", func() {
		applyAs("cluster-admin-tool", mcGVR, "", "99-worker-psi-karg",
			`{"apiVersion":"machineconfiguration.openshift.io/v1","kind":"MachineConfig","metadata":{"name":"99-worker-psi-karg",`+
				`"labels":{"machineconfiguration.openshift.io/role":"worker"}},"spec":{"kernelArguments":["psi=0"]}}`)
		patchObject(mcpGVR, "", "worker", `{"spec":{"paused":true}}`)
		configWith("load-aware-rebalancing", `{"profile":"load-aware-rebalancing"}`)
		waitPhase("load-aware-rebalancing", v1alpha1.PhaseReviewRequired, 20*time.Second)
		Expect(planItem(getPlan("load-aware-rebalancing"), "enable-psi-metrics").Operation).To(Equal(v1alpha1.OperationUpdate))
		Expect(approve(advisor, "load-aware-rebalancing", planHashOf("load-aware-rebalancing"))).To(Succeed())
		Eventually(func() string { return itemMessage("load-aware-rebalancing", "enable-psi-metrics") }).
			WithTimeout(20 * time.Second).Should(ContainSubstring("paused by someone else"))

		patchObject(mcGVR, "", "99-worker-psi-karg", `{"metadata":{"labels":{"machineconfiguration.openshift.io/role":"infra"}}}`)
		relabelled := getObject(mcGVR, "", "99-worker-psi-karg")
		patchObject(mcpGVR, "", "worker", `{"spec":{"paused":false}}`)

		c := waitPhase("load-aware-rebalancing", v1alpha1.PhaseFailed, 20*time.Second)
		Expect(staleMessage(c)).To(ContainSubstring("item 'enable-psi-metrics': MachineConfig '99-worker-psi-karg' changed after the plan was reviewed (metadata.labels[machineconfiguration.openshift.io/role])"))
		mc := getObject(mcGVR, "", "99-worker-psi-karg")
		Expect(mc.GetResourceVersion()).To(Equal(relabelled.GetResourceVersion()), "nothing written after the relabel")
		Expect(mc.GetLabels()).To(HaveKeyWithValue("machineconfiguration.openshift.io/role", "infra"))
	})

	It("a retried MachineConfig write reads the approval again after the pools' gate: action Ignore set during the gate writes nothing", func() {
		// Without leader election the controller keeps going while the
		// spec holds it (a held worker cannot renew the Lease in time).
		Expect(testEnv.RestartAdvisorWith(suiteCtx, []string{failpoint.EnvVar + "=after-pool-pause@2~5s"}, map[string]string{"--leader-elect": "false"})).To(Succeed())
		DeferCleanup(func() { Expect(testEnv.RestartAdvisorWith(suiteCtx, nil, nil)).To(Succeed()) })
		configWith("load-aware-rebalancing", `{"profile":"load-aware-rebalancing"}`)
		waitPhase("load-aware-rebalancing", v1alpha1.PhaseReviewRequired, 20*time.Second)
		// The first write of the MachineConfig is held by a webhook past
		// its timeout: kube-apiserver answers 500, the write is retried.
		hold := holdFirstWrite("machineconfiguration.openshift.io", "machineconfigs", 2)
		hold.webhookActive("load-aware-rebalancing")
		Expect(approve(advisor, "load-aware-rebalancing", planHashOf("load-aware-rebalancing"))).To(Succeed())
		Eventually(hold.Arrived).WithTimeout(30 * time.Second).Should(BeClosed())
		Eventually(func() string { return itemMessage("load-aware-rebalancing", "enable-psi-metrics") }).
			WithTimeout(20 * time.Second).Should(MatchRegexp(retryMessage.String()))

		waitHeld("after-pool-pause", 2) // the retry passed the gate
		setAction("load-aware-rebalancing", "Ignore")

		waitPhase("load-aware-rebalancing", v1alpha1.PhaseIgnored, 30*time.Second)
		Consistently(func() bool { return getObject(mcGVR, "", "99-worker-psi-karg") == nil }).
			WithTimeout(3*time.Second).Should(BeTrue(), "the MachineConfig is not written after the action became Ignore")
		Expect(testEnv.Advisor().LogTail(400)).To(ContainSubstring("failpoint after-pool-pause: slept"))
	})
})
