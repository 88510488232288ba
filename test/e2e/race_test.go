package e2e

import (
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubevirt/virt-advisor/pkg/apis/advisor/v1alpha1"
	"github.com/kubevirt/virt-advisor/test/env"
)

// The server built with the race detector, through a whole workflow:
// startup, concurrent plans, approvals, the controller's workers and
// watches, a rollout, drift. The race detector reports to the log.
var _ = Describe("the server under the race detector", Ordered, func() {
	var racy *env.Advisor
	BeforeAll(func() {
		racy = serveThrough("race", env.RaceAdvisorBinary)
	})

	It("runs plan, approve, apply, rollout and drift without a data race", func() {
		Eventually(func() string { return racy.LogTail(1 << 20) }).WithTimeout(60 * time.Second).Should(ContainSubstring("Became leader"))
		configWith("load-aware-rebalancing", `{"profile":"load-aware-rebalancing"}`)
		waitPhase("load-aware-rebalancing", v1alpha1.PhaseReviewRequired, 60*time.Second)

		// Concurrent plan requests while the controller works.
		var wg sync.WaitGroup
		for i := 0; i < 8; i++ {
			wg.Add(1)
			go func() {
				defer GinkgoRecover()
				defer wg.Done()
				_, err := advisor.AdvisorV1alpha1().VirtPlatformConfigs().GetPlan(suiteCtx, "load-aware-rebalancing", metav1.GetOptions{})
				Expect(err).NotTo(HaveOccurred())
			}()
		}
		wg.Wait()
		Expect(approve(advisor, "load-aware-rebalancing", planHashOf("load-aware-rebalancing"))).To(Succeed())
		waitPhase("load-aware-rebalancing", v1alpha1.PhaseCompleted, 120*time.Second)

		patchObject(kdGVR, kdNS, "cluster", `{"spec":{"deschedulingIntervalSeconds":1234}}`)
		waitPhase("load-aware-rebalancing", v1alpha1.PhaseDrifted, 60*time.Second)
		deleteConfig("load-aware-rebalancing")

		Expect(racy.Exited()).To(BeFalse())
		Expect(racy.LogTail(1 << 22)).NotTo(ContainSubstring("DATA RACE"))
	})
})
