package e2e

import (
	"fmt"
	"time"

	"github.com/chromedp/chromedp"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubevirt/virt-advisor/pkg/apis/advisor/v1alpha1"
	"github.com/kubevirt/virt-advisor/pkg/status"
)

// waitingReader lets the dashboard's user read the pools, nodes and events
// the rollout page shows.
const waitingReader = "waiting-e2e-cluster-reader"

// The rollout page of a waiting plan is one of the docs' screenshots
// (make screenshots: its focus, "kubectl advisor dashboard", matches).
func init() { docScreenshots["rollout-waiting"] = true }

// What an approved plan waits for is said where a user looks: the
// config's conditions and phase message, kubectl get, and the dashboard.
var _ = Describe("kubectl advisor dashboard, kubectl get and the status of a plan approved into a closed maintenance window", Ordered, func() {
	BeforeAll(func() {
		startBrowser()
		role := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: waitingReader}, Rules: []rbacv1.PolicyRule{
			{APIGroups: []string{"machineconfiguration.openshift.io"}, Resources: []string{"machineconfigpools", "machineconfigs"}, Verbs: []string{"get", "list", "watch"}},
			{APIGroups: []string{""}, Resources: []string{"nodes", "events"}, Verbs: []string{"get", "list", "watch"}},
		}}
		_, err := kube.RbacV1().ClusterRoles().Create(suiteCtx, role, metav1.CreateOptions{})
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(func() { _ = kube.RbacV1().ClusterRoles().Delete(suiteCtx, waitingReader, metav1.DeleteOptions{}) })
	})
	BeforeEach(resetCluster)
	AfterEach(resetCluster)

	It("is said to wait for it in the conditions, kubectl get and the dashboard; a spec change lets a new plan be approved; nothing is written", func() {
		const name = "load-aware-rebalancing"
		berlin, err := time.LoadLocation("Europe/Berlin")
		Expect(err).NotTo(HaveOccurred())
		// Opens in 12 hours for an hour: closed now.
		opens := time.Now().In(berlin).Add(12 * time.Hour)
		w := workerWindow("e2e-weekend", fmt.Sprintf("%d %d * * *", opens.Minute(), opens.Hour()), time.Hour, v1alpha1.MaintenanceWindowKindAllow)
		w.Spec.TimeZone = "Europe/Berlin"
		createWindow(w)
		GinkgoWriter.Printf("window %s: %s, %s, %s, closed now\n", w.Name, w.Spec.Schedule, w.Spec.Duration.Duration, w.Spec.TimeZone)
		configWith(name, `{"profile":"load-aware-rebalancing"}`)
		waitPhase(name, v1alpha1.PhaseReviewRequired, 20*time.Second)
		hash := planHashOf(name)
		approvePlan(name)

		By("the config: phase InProgress, its message and the Waiting condition say what it waits for, with the opening's time only")
		// The stored text has no relative time: it would go stale.
		stored := `^Waiting for maintenance window 'e2e-weekend' \(opens \w{3} \d{1,2} \w{3} \d\d:\d\d CES?T \((\w{3} \d{1,2} \w{3} )?\d\d:\d\d UTC\)\) before writing item 'enable-psi-metrics'`
		var c *v1alpha1.VirtPlatformConfig
		Eventually(func(g Gomega) {
			c = getConfig(name)
			g.Expect(meta.IsStatusConditionTrue(c.Status.Conditions, status.ConditionWaiting)).To(BeTrue(), describeStatus(c))
		}).WithTimeout(15 * time.Second).WithPolling(200 * time.Millisecond).Should(Succeed())
		Expect(c.Status.Phase).To(Equal(v1alpha1.PhaseInProgress))
		waiting := meta.FindStatusCondition(c.Status.Conditions, status.ConditionWaiting)
		Expect(waiting.Reason).To(Equal(status.WaitingMaintenanceWindow))
		Expect(waiting.Message).To(MatchRegexp(stored + `$`))
		phase := meta.FindStatusCondition(c.Status.Conditions, string(v1alpha1.PhaseInProgress))
		Expect(phase.Reason).To(Equal("Waiting"))
		Expect(phase.Message).To(MatchRegexp(stored + `; plan ` + hash[:12] + ` approved by \S+, nothing written yet$`))
		Expect(phase.Message).NotTo(ContainSubstring("Applying"))
		GinkgoWriter.Printf("InProgress: %s\nWaiting: %s %s\n", phase.Message, waiting.Reason, waiting.Message)
		Eventually(func() []string { return eventReasons(name) }).WithTimeout(10*time.Second).Should(ContainElement("Waiting"), "the wait is an Event")

		By("kubectl get: PHASE says it waits, -o wide's MESSAGE when the window opens, computed as it is read")
		out, err := kubectl("get", "virtplatformconfigs", name)
		Expect(err).NotTo(HaveOccurred(), out)
		GinkgoWriter.Printf("$ kubectl get virtplatformconfigs %s\n%s", name, out)
		Expect(out).To(ContainSubstring("InProgress (Waiting: MaintenanceWindow)"))
		out, err = kubectl("get", "virtplatformconfigs", name, "-o", "wide")
		Expect(err).NotTo(HaveOccurred(), out)
		GinkgoWriter.Printf("$ kubectl get virtplatformconfigs %s -o wide\n%s", name, out)
		Expect(out).To(MatchRegexp(`UTC\), in 1[12]h(\d+m)?\) before writing item 'enable-psi-metrics'; plan ` + hash[:12] + ` approved by \S+, nothing written yet`))
		jsonpath := `{range .status.conditions[?(@.status=="True")]}{.type} {.reason}: {.message}{"\n"}{end}`
		out, err = kubectl("get", "vpc", name, "-o", "jsonpath="+jsonpath)
		Expect(err).NotTo(HaveOccurred(), out)
		GinkgoWriter.Printf("$ kubectl get vpc %s -o jsonpath='%s'\n%s", name, jsonpath, out)
		Expect(out).To(Equal("InProgress Waiting: " + phase.Message + "\nWaiting MaintenanceWindow: " + waiting.Message + "\n"))

		By("the dashboard: the rollout page says it waits, the pool is not shown updated, the plan page says why it takes no approval")
		_, kubeconfig := dashboardUser("carol", "virt-advisor-approver", waitingReader)
		d := startDashboard(kubeconfig)
		tab := newTab()
		resp := load(tab, chromedp.Navigate(d.url))
		Expect(resp.Status).To(BeEquivalentTo(200), pageText(tab))
		Expect(textOf(tab, `tr[data-config="`+name+`"]`)).To(ContainSubstring("Waiting for a maintenance window"))
		resp = load(tab, chromedp.Navigate(d.base+"/configs/"+name+"/rollout"))
		Expect(resp.Status).To(BeEquivalentTo(200), pageText(tab))
		Expect(textOf(tab, "#summary")).To(SatisfyAll(ContainSubstring("InProgress"), ContainSubstring("Waiting for a maintenance window"),
			MatchRegexp(`Waiting for maintenance window 'e2e-weekend' \(opens .* UTC\), in 1[12]h(\d+m)?\) before writing item 'enable-psi-metrics'; plan `+hash[:12]+` approved by \S+, nothing written yet`)))
		pool := textOf(tab, `[data-pool="worker"]`)
		Expect(pool).To(SatisfyAll(ContainSubstring("Not started: nothing written yet (3 nodes on "), ContainSubstring("window 'e2e-weekend' opens"),
			ContainSubstring("0 updated · 0 updating · 3 waiting · 0 degraded")))
		Expect(pool).NotTo(ContainSubstring("Updated ("), "no success shown for a rollout that has not started")
		Expect(textOf(tab, "#events")).To(ContainSubstring("Waiting for maintenance window 'e2e-weekend'"))
		screenshot(tab, "rollout-waiting")
		resp = load(tab, chromedp.Navigate(d.base+"/configs/"+name))
		Expect(resp.Status).To(BeEquivalentTo(200), pageText(tab))
		text := pageText(tab)()
		Expect(text).To(SatisfyAll(ContainSubstring("The server takes no approval now: plan "+hash[:12]+" approved by"),
			ContainSubstring("is waiting (MaintenanceWindow: "), ContainSubstring("nothing of it is written yet"), ContainSubstring("change the spec")))
		Expect(text).NotTo(ContainSubstring("a plan is being applied"))
		screenshot(tab, "plan-waiting")

		By("a spec change: the approval lapses with nothing written, the advice fits action DryRun, and the new plan is approved")
		out, err = kubectl("patch", "virtplatformconfig", name, "--type=merge", "-p", `{"spec":{"waitTimeout":"2h"}}`)
		Expect(err).NotTo(HaveOccurred(), out)
		c = waitPhase(name, v1alpha1.PhaseFailed, 15*time.Second)
		failed := status.PhaseMessage(&c.Status)
		Expect(failed).To(SatisfyAll(ContainSubstring("Nothing was written: the spec changed after plan "+hash[:12]),
			ContainSubstring("Review the plan of the current spec and approve it: GET .../virtplatformconfigs/"+name+"/plan, then POST its planHash to .../approve")))
		Expect(failed).NotTo(ContainSubstring("spec.action to DryRun"))
		Expect(meta.IsStatusConditionTrue(c.Status.Conditions, status.ConditionWaiting)).To(BeFalse())
		approvePlan(name)
		Eventually(func(g Gomega) {
			c = getConfig(name)
			g.Expect(c.Status.Phase).To(Equal(v1alpha1.PhaseInProgress))
			g.Expect(meta.IsStatusConditionTrue(c.Status.Conditions, status.ConditionWaiting)).To(BeTrue(), describeStatus(c))
		}).WithTimeout(15 * time.Second).WithPolling(200 * time.Millisecond).Should(Succeed())
		Expect(getObject(mcGVR, "", "99-worker-psi-karg")).To(BeNil(), "nothing is written while the window is closed")
	})
})
