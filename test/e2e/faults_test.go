package e2e

import (
	"fmt"
	"net/url"
	"os"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubevirt/virt-advisor/test/env"
)

// servedAgain waits until both the aggregated API and a kind stored in the
// main cluster's etcd answer through kube-apiserver, and returns how long
// that took.
func servedAgain(timeout time.Duration) time.Duration {
	GinkgoHelper()
	start := time.Now()
	Eventually(func() error {
		if _, err := kubectl("get", "virtplatformconfigs"); err != nil {
			return err
		}
		_, err := kubectl("get", "machineconfigpools")
		return err
	}).WithTimeout(timeout).WithPolling(250 * time.Millisecond).Should(Succeed())
	return time.Since(start)
}

// environOf is the environment of a running process (Linux).
func environOf(pid int) []string {
	GinkgoHelper()
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", pid))
	Expect(err).NotTo(HaveOccurred())
	return strings.Split(strings.TrimRight(string(data), "\x00"), "\x00")
}

// The harness the resilience specs of issue 17 build on, proven on the real
// control plane: components restart in place and clients find them again,
// and a proxy between the advisor and kube-apiserver holds its requests.
var _ = Describe("fault harness", Ordered, func() {
	It("restarts kube-apiserver in place; the aggregated API is served again and the advisor survives", func() {
		adv := testEnv.Advisor()
		start := time.Now()
		Expect(testEnv.RestartKubeAPIServer(suiteCtx, 5*time.Second)).To(Succeed())
		ready := time.Since(start)
		back := servedAgain(60 * time.Second)
		AddReportEntry("kube-apiserver restart", fmt.Sprintf("ready %v after the stop (5s down), aggregated API %v later", ready.Round(100*time.Millisecond), back.Round(100*time.Millisecond)))
		Expect(adv.Exited()).To(BeFalse(), "the advisor exited:\n%s", adv.LogTail(40))
		Expect(testEnv.Advisor().Pid()).To(Equal(adv.Pid()), "the same advisor process serves")
	})

	It("restarts the main cluster's etcd in place; kube-apiserver and the advisor carry on", func() {
		adv := testEnv.Advisor()
		start := time.Now()
		Expect(testEnv.RestartEtcd(suiteCtx, 3*time.Second)).To(Succeed())
		ready := time.Since(start)
		back := servedAgain(60 * time.Second)
		AddReportEntry("etcd restart", fmt.Sprintf("healthy %v after the stop (3s down), served through kube-apiserver %v later", ready.Round(100*time.Millisecond), back.Round(100*time.Millisecond)))
		Expect(adv.Exited()).To(BeFalse(), "the advisor exited:\n%s", adv.LogTail(40))
	})

	It("runs the advisor through a proxy whose stall holds a plan GET until it resumes", func() {
		u, err := url.Parse(testEnv.KubeAPIServerURL)
		Expect(err).NotTo(HaveOccurred())
		proxy, err := env.NewProxy(u.Host)
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(proxy.Close)
		via, err := testEnv.KubeconfigVia(testEnv.AdvisorKubeconfig, proxy.Addr())
		Expect(err).NotTo(HaveOccurred())

		const mark = "VIRT_ADVISOR_E2E_FAULT_HARNESS=1"
		Expect(testEnv.RestartAdvisorWith(suiteCtx, []string{mark}, map[string]string{"--kubeconfig": via})).To(Succeed())
		DeferCleanup(func() {
			Expect(testEnv.RestartAdvisorWith(suiteCtx, nil, nil)).To(Succeed())
			adv := testEnv.Advisor()
			Expect(adv.Args).To(ContainElement("--kubeconfig=" + testEnv.AdvisorKubeconfig))
			Expect(environOf(adv.Pid())).NotTo(ContainElement(mark))
		})
		adv := testEnv.Advisor()
		Expect(adv.Args).To(ContainElement("--kubeconfig=" + via))
		Expect(environOf(adv.Pid())).To(ContainElement(mark))
		Expect(proxy.Conns()).To(BeNumerically(">", 0), "the advisor reaches kube-apiserver through the proxy")

		createConfig(newConfig("example-profile"))
		Eventually(func() error {
			_, err := advisor.AdvisorV1alpha1().VirtPlatformConfigs().GetPlan(suiteCtx, "example-profile", metav1.GetOptions{})
			return err
		}).WithTimeout(15 * time.Second).Should(Succeed())

		proxy.Stall()
		stalled := time.Now()
		done := make(chan error, 1)
		go func() {
			defer GinkgoRecover()
			_, err := advisor.AdvisorV1alpha1().VirtPlatformConfigs().GetPlan(suiteCtx, "example-profile", metav1.GetOptions{})
			done <- err
		}()
		// The plan reads the main cluster live: it cannot finish while the
		// proxy holds every byte.
		Consistently(done).WithTimeout(4 * time.Second).ShouldNot(Receive())
		proxy.Resume()
		var got error
		Eventually(done).WithTimeout(20 * time.Second).Should(Receive(&got))
		Expect(got).NotTo(HaveOccurred())
		AddReportEntry("plan GET across a stall", fmt.Sprintf("answered %v after the stall began (4s stall)", time.Since(stalled).Round(100*time.Millisecond)))
		Expect(adv.Exited()).To(BeFalse(), "the advisor exited:\n%s", adv.LogTail(40))
	})
})
