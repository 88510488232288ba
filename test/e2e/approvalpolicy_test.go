package e2e

import (
	"fmt"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	authorizationv1 "k8s.io/api/authorization/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubevirt/virt-advisor/pkg/apis/advisor/v1alpha1"
	"github.com/kubevirt/virt-advisor/pkg/generated/clientset/versioned"
	"github.com/kubevirt/virt-advisor/test/env"
)

// newPolicy is a policy covering configs: impact Low, no reboot, live
// migration only (the defaults) unless mutate says otherwise.
func newPolicy(name string, configs []string, mutate func(*v1alpha1.ApprovalPolicySpec)) *v1alpha1.ApprovalPolicy {
	p := &v1alpha1.ApprovalPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec:       v1alpha1.ApprovalPolicySpec{Configs: v1alpha1.PolicyConfigs{Names: configs}},
	}
	if mutate != nil {
		mutate(&p.Spec)
	}
	return p
}

// rebootsInWindow allows any impact and reboots only of pools one of the
// trusted windows governs.
func rebootsInWindow(trusted ...string) func(*v1alpha1.ApprovalPolicySpec) {
	return func(s *v1alpha1.ApprovalPolicySpec) {
		s.Bounds.MaxImpact, s.Bounds.Reboots = v1alpha1.ImpactHigh, v1alpha1.RebootBoundInWindow
		s.TrustedWindows = &v1alpha1.PolicyWindows{Names: trusted}
	}
}

func deletePolicy(name string) {
	err := advisor.AdvisorV1alpha1().ApprovalPolicies().Delete(suiteCtx, name, metav1.DeleteOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		Expect(err).NotTo(HaveOccurred())
	}
}

// createPolicy creates a policy as the user of c and deletes it when the
// spec ends: a policy left behind would approve other specs' plans.
func createPolicy(c versioned.Interface, p *v1alpha1.ApprovalPolicy) *v1alpha1.ApprovalPolicy {
	GinkgoHelper()
	deletePolicy(p.Name)
	created, err := c.AdvisorV1alpha1().ApprovalPolicies().Create(suiteCtx, p, metav1.CreateOptions{})
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(deletePolicy, p.Name)
	return created
}

func getPolicy(name string) *v1alpha1.ApprovalPolicy {
	GinkgoHelper()
	p, err := advisor.AdvisorV1alpha1().ApprovalPolicies().Get(suiteCtx, name, metav1.GetOptions{})
	Expect(err).NotTo(HaveOccurred())
	return p
}

// policySetter is a user who may approve every config and write policies.
func policySetter() (versioned.Interface, string) {
	c, user, _ := userClient("virt-advisor-approver", "virt-advisor-policy-admin")
	return c, user
}

// policyApprovals is virt_advisor_policy_approvals_total of a policy.
func policyApprovals(g Gomega, policy string) float64 {
	var sum float64
	for _, v := range samples(scrape(g), "virt_advisor_policy_approvals_total", map[string]string{"policy": policy}) {
		sum += v
	}
	return sum
}

// eventMessages are the messages of the events about a config with reason.
func eventMessages(name, reason string) []string {
	GinkgoHelper()
	list, err := kube.CoreV1().Events("default").List(suiteCtx, metav1.ListOptions{FieldSelector: "involvedObject.name=" + name})
	Expect(err).NotTo(HaveOccurred())
	var out []string
	for _, e := range list.Items {
		if e.Reason == reason {
			out = append(out, e.Message)
		}
	}
	return out
}

func loadAwareSpec(psi bool, interval int) string {
	return fmt.Sprintf(`{"profile":"load-aware-rebalancing","options":{"loadAware":{"enablePSIMetrics":%t,"deschedulingIntervalSeconds":%d}}}`, psi, interval)
}

var _ = Describe("approval policies", Ordered, func() {
	BeforeEach(resetCluster)
	AfterEach(resetCluster)

	It("approve a Low change with no person, as policy/<name> (set by <author>) with an Event and a metric; a reboot stops at ReviewRequired naming the bound, and a person's approval completes it", func() {
		setter, setterName := policySetter()
		p := createPolicy(setter, newPolicy("e2e-quiet-tuning", []string{"load-aware-rebalancing"}, nil))
		Expect(p.Status.Author).To(Equal(setterName), "the author comes from the request")
		Expect(p.Spec.Bounds.MaxImpact).To(Equal(v1alpha1.ImpactLow))
		Expect(p.Spec.Bounds.Reboots).To(Equal(v1alpha1.RebootBoundNone))
		var before float64
		Eventually(func(g Gomega) { before = policyApprovals(g, "e2e-quiet-tuning") }).Should(Succeed())
		approvedBy := "policy/e2e-quiet-tuning (set by " + setterName + ")"

		configWith("load-aware-rebalancing", loadAwareSpec(false, 1200))
		c := waitPhase("load-aware-rebalancing", v1alpha1.PhaseCompleted, 60*time.Second)
		Expect(c.Status.Approval.ApprovedBy).To(Equal(approvedBy))
		Expect(nested(getObject(kdGVR, kdNS, "cluster").Object, "spec", "deschedulingIntervalSeconds")).To(BeEquivalentTo(1200))

		// Changing the interval: approved by the policy again, no person.
		c = updateConfig("load-aware-rebalancing", func(c *v1alpha1.VirtPlatformConfig) {
			c.Spec.Options.LoadAware.DeschedulingIntervalSeconds = ptrTo(int32(1500))
		})
		Eventually(func() interface{} {
			return nested(getObject(kdGVR, kdNS, "cluster").Object, "spec", "deschedulingIntervalSeconds")
		}).WithTimeout(30 * time.Second).Should(BeEquivalentTo(1500))
		done := waitPhase("load-aware-rebalancing", v1alpha1.PhaseCompleted, 30*time.Second)
		a := done.Status.Approval
		Expect(a.ApprovedBy).To(Equal(approvedBy))
		Expect(a.Generation).To(Equal(c.Generation), "the approval binds the changed spec")
		Expect(a.UID).To(Equal(c.UID))
		Expect(a.PlanHash).To(MatchRegexp(`^[0-9a-f]{64}$`))
		Expect(a.ItemsHash).To(MatchRegexp(`^[0-9a-f]{64}$`))
		Eventually(func() []string { return eventMessages("load-aware-rebalancing", "Approved") }).WithTimeout(10 * time.Second).
			Should(ContainElement("Plan " + a.PlanHash + " approved by " + approvedBy))
		Eventually(func(g Gomega) { g.Expect(policyApprovals(g, "e2e-quiet-tuning")).To(BeNumerically(">=", before+2)) }).
			WithTimeout(10 * time.Second).Should(Succeed())

		got := getPolicy("e2e-quiet-tuning")
		Expect(got.Status.Configs).To(Equal([]string{"load-aware-rebalancing"}))
		Expect(got.Status.LastApproved).NotTo(BeNil())
		Expect(got.Status.LastApproved.Config).To(Equal("load-aware-rebalancing"))
		Expect(got.Status.LastApproved.PlanHash).To(Equal(a.PlanHash))
		out, err := kubectl("get", "approvalpolicies")
		Expect(err).NotTo(HaveOccurred(), out)
		Expect(strings.Fields(strings.Split(out, "\n")[0])).To(Equal([]string{"NAME", "CONFIGS", "BOUNDS", "WINDOW", "LAST-APPROVED"}))
		Expect(out).To(MatchRegexp(`e2e-quiet-tuning\s+load-aware-rebalancing\s+impact<=Low reboots=None vms=LiveMigrate\s+<any>\s+load-aware-rebalancing \(\S+ ago\)`))

		// Enabling PSI reboots the worker pool: beyond the bounds.
		updateConfig("load-aware-rebalancing", func(c *v1alpha1.VirtPlatformConfig) {
			c.Spec.Options.LoadAware.EnablePSIMetrics = ptrTo(true)
		})
		c = waitPhase("load-aware-rebalancing", v1alpha1.PhaseReviewRequired, 30*time.Second)
		review := condition(c, "ReviewRequired")
		Expect(review.Reason).To(Equal("PolicyBoundExceeded"))
		Expect(review.Message).To(ContainSubstring("reboots pool worker; policy 'e2e-quiet-tuning' allows no reboot"))
		Expect(review.Message).To(ContainSubstring("impact High; policy 'e2e-quiet-tuning' allows at most Low"))
		Expect(c.Status.Approval.Generation).NotTo(Equal(c.Generation), "no approval of this spec")
		Consistently(func() interface{} { return getObject(mcGVR, "", "99-worker-psi-karg") }).WithTimeout(2 * time.Second).Should(BeNil())
		r := plugin("", "plan", "load-aware-rebalancing", "--no-color")
		Expect(r.stdout).To(ContainSubstring("approval policies: none would approve this plan: "), r.stderr)
		Expect(r.stdout).To(ContainSubstring("reboots pool worker; policy 'e2e-quiet-tuning' allows no reboot; a person approves it"))
		refused := getPolicy("e2e-quiet-tuning").Status.LastRefused
		Expect(refused).NotTo(BeNil())
		Expect(refused.Config).To(Equal("load-aware-rebalancing"))
		Expect(refused.Message).To(ContainSubstring("allows no reboot"))

		// A person approves it as today.
		approvePlan("load-aware-rebalancing")
		c = waitPhase("load-aware-rebalancing", v1alpha1.PhaseCompleted, 90*time.Second)
		Expect(c.Status.Approval.ApprovedBy).NotTo(HavePrefix("policy/"))
		Expect(getObject(mcGVR, "", "99-worker-psi-karg")).NotTo(BeNil())
	})

	It("approve a reboot into a window: the PSI change approved by the policy is written only while the window is open", func() {
		createWindow(workerWindow("e2e-policy-every-minute", "* * * * *", 20*time.Second, v1alpha1.MaintenanceWindowKindAllow))
		setter, setterName := policySetter()
		createPolicy(setter, newPolicy("e2e-reboots-in-window", []string{"load-aware-rebalancing"}, rebootsInWindow("e2e-policy-every-minute")))
		untilSecond(25, 45) // the window is closed
		configWith("load-aware-rebalancing", `{"profile":"load-aware-rebalancing"}`)
		c := waitPhase("load-aware-rebalancing", v1alpha1.PhaseInProgress, 20*time.Second)
		Expect(c.Status.Approval.ApprovedBy).To(Equal("policy/e2e-reboots-in-window (set by " + setterName + ")"))
		Eventually(func() string { return itemMessage("load-aware-rebalancing", "enable-psi-metrics") }).WithTimeout(10 * time.Second).
			Should(MatchRegexp(`^Waiting: MachineConfigPool 'worker': window 'e2e-policy-every-minute' opens .*; the change is written when it opens$`))
		Consistently(func() interface{} { return getObject(mcGVR, "", "99-worker-psi-karg") }).
			WithTimeout(time.Duration(58-time.Now().Second())*time.Second).WithPolling(500*time.Millisecond).
			Should(BeNil(), "nothing is written while the window is closed")
		var mc interface{ GetCreationTimestamp() metav1.Time }
		Eventually(func() interface{} {
			if o := getObject(mcGVR, "", "99-worker-psi-karg"); o != nil {
				mc = o
				return o
			}
			return nil
		}).WithTimeout(15*time.Second).ShouldNot(BeNil(), "written when the window opens")
		Expect(mc.GetCreationTimestamp().Second()).To(BeNumerically("<", 20), "written inside the window (open from :00 to :20)")
		waitPhase("load-aware-rebalancing", v1alpha1.PhaseCompleted, 120*time.Second)
		expectUnpausedByUs()
	})

	It("stop approving in the name of an author who lost the approve permission: the config asks a person and says why", func() {
		setter, setterName := policySetter()
		createPolicy(setter, newPolicy("e2e-author-revoked", []string{"load-aware-rebalancing"}, nil))
		Expect(getPolicy("e2e-author-revoked").Status.AuthorGroups).To(ContainElement("system:authenticated"), "the author's groups come from the request")
		configWith("load-aware-rebalancing", loadAwareSpec(false, 1200))
		c := waitPhase("load-aware-rebalancing", v1alpha1.PhaseCompleted, 60*time.Second)
		Expect(c.Status.Approval.ApprovedBy).To(Equal("policy/e2e-author-revoked (set by " + setterName + ")"))

		// The author is no longer an approver.
		Expect(kube.RbacV1().ClusterRoleBindings().Delete(suiteCtx, setterName+"-virt-advisor-approver", metav1.DeleteOptions{})).To(Succeed())
		Eventually(func() (bool, error) {
			sar, err := kube.AuthorizationV1().SubjectAccessReviews().Create(suiteCtx, &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
				User: setterName, Groups: []string{"system:authenticated"}, ResourceAttributes: &authorizationv1.ResourceAttributes{
					Group: "advisor.kubevirt.io", Resource: "virtplatformconfigs", Subresource: "approve", Verb: "create", Name: "load-aware-rebalancing"}}}, metav1.CreateOptions{})
			return err == nil && !sar.Status.Allowed, err
		}).WithTimeout(10 * time.Second).Should(BeTrue())
		time.Sleep(11 * time.Second) // the server caches its authorizer's decisions for 10 s

		updateConfig("load-aware-rebalancing", func(c *v1alpha1.VirtPlatformConfig) {
			c.Spec.Options.LoadAware.DeschedulingIntervalSeconds = ptrTo(int32(1500))
		})
		c = waitPhase("load-aware-rebalancing", v1alpha1.PhaseReviewRequired, 30*time.Second)
		review := condition(c, "ReviewRequired")
		Expect(review.Reason).To(Equal("PolicyBoundExceeded"))
		Expect(review.Message).To(ContainSubstring(fmt.Sprintf(`user %q, who set policy 'e2e-author-revoked', may no longer create virtplatformconfigs/approve on VirtPlatformConfig 'load-aware-rebalancing'`, setterName)))
		Expect(c.Status.Approval.Generation).NotTo(Equal(c.Generation), "no approval of this spec")
		Consistently(func() interface{} {
			return nested(getObject(kdGVR, kdNS, "cluster").Object, "spec", "deschedulingIntervalSeconds")
		}).WithTimeout(2*time.Second).Should(BeEquivalentTo(1200), "nothing written")

		// A person who may approve does.
		approvePlan("load-aware-rebalancing")
		c = waitPhase("load-aware-rebalancing", v1alpha1.PhaseCompleted, 60*time.Second)
		Expect(c.Status.Approval.ApprovedBy).NotTo(HavePrefix("policy/"))
	})

	It("approve a reboot only into a window they trust: an open Allow window a window editor creates does not widen the policy; the trusted window opening does", func() {
		setter, setterName := policySetter()
		createPolicy(setter, newPolicy("e2e-trusts-a", []string{"load-aware-rebalancing"}, rebootsInWindow("e2e-trusted-a")))
		configWith("load-aware-rebalancing", `{"profile":"load-aware-rebalancing"}`)
		c := waitPhase("load-aware-rebalancing", v1alpha1.PhaseReviewRequired, 30*time.Second)
		bound := "reboots pool worker, which no Allow maintenance window it trusts governs; policy 'e2e-trusts-a' allows reboots only in the maintenance windows it trusts (e2e-trusted-a)"
		Expect(condition(c, "ReviewRequired").Message).To(ContainSubstring(bound))

		// A window editor, who may not approve anything, opens window B for
		// the pool, open now and all minute long.
		windowEditor, _, _ := userClient("virt-advisor-maintenance-window-editor")
		b := workerWindow("e2e-untrusted-b", "* * * * *", time.Minute, v1alpha1.MaintenanceWindowKindAllow)
		deleteWindow(b.Name)
		_, err := windowEditor.AdvisorV1alpha1().MaintenanceWindows().Create(suiteCtx, b, metav1.CreateOptions{})
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(deleteWindow, b.Name)
		Consistently(func(g Gomega) {
			c := getConfig("load-aware-rebalancing")
			g.Expect(c.Status.Phase).To(Equal(v1alpha1.PhaseReviewRequired))
			g.Expect(c.Status.Approval).To(BeNil())
			g.Expect(condition(c, "ReviewRequired").Message).To(ContainSubstring(bound))
			g.Expect(getObject(mcGVR, "", "99-worker-psi-karg")).To(BeNil())
		}).WithTimeout(5*time.Second).WithPolling(500*time.Millisecond).Should(Succeed(), "window B does not make the policy approve")
		Expect(getPolicy("e2e-trusts-a").Status.LastRefused.Message).To(ContainSubstring(bound))

		// The window the policy trusts governs the pool, open now: approved.
		createWindow(workerWindow("e2e-trusted-a", "* * * * *", time.Minute, v1alpha1.MaintenanceWindowKindAllow))
		c = waitPhase("load-aware-rebalancing", v1alpha1.PhaseCompleted, 90*time.Second)
		Expect(c.Status.Approval.ApprovedBy).To(Equal("policy/e2e-trusts-a (set by " + setterName + ")"))
		Expect(getObject(mcGVR, "", "99-worker-psi-karg")).NotTo(BeNil())
	})

	It("write a plan they approved into a trusted window only in one: an untrusted Allow window open meanwhile does not let the write in", func() {
		createWindow(workerWindow("e2e-trusted-every-minute", "* * * * *", 20*time.Second, v1alpha1.MaintenanceWindowKindAllow))
		setter, setterName := policySetter()
		createPolicy(setter, newPolicy("e2e-trusts-every-minute", []string{"load-aware-rebalancing"}, rebootsInWindow("e2e-trusted-every-minute")))
		untilSecond(25, 40) // the trusted window is closed
		configWith("load-aware-rebalancing", `{"profile":"load-aware-rebalancing"}`)
		c := waitPhase("load-aware-rebalancing", v1alpha1.PhaseInProgress, 20*time.Second)
		Expect(c.Status.Approval.ApprovedBy).To(Equal("policy/e2e-trusts-every-minute (set by " + setterName + ")"))

		windowEditor, _, _ := userClient("virt-advisor-maintenance-window-editor")
		open := workerWindow("e2e-untrusted-open", "* * * * *", time.Minute, v1alpha1.MaintenanceWindowKindAllow)
		deleteWindow(open.Name)
		_, err := windowEditor.AdvisorV1alpha1().MaintenanceWindows().Create(suiteCtx, open, metav1.CreateOptions{})
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(deleteWindow, open.Name)
		Consistently(func() interface{} { return getObject(mcGVR, "", "99-worker-psi-karg") }).
			WithTimeout(time.Duration(58-time.Now().Second())*time.Second).WithPolling(500*time.Millisecond).
			Should(BeNil(), "nothing is written while the trusted window is closed, whatever other window is open")
		Expect(itemMessage("load-aware-rebalancing", "enable-psi-metrics")).To(ContainSubstring("window 'e2e-trusted-every-minute' opens"))
		var mc interface{ GetCreationTimestamp() metav1.Time }
		Eventually(func() interface{} {
			if o := getObject(mcGVR, "", "99-worker-psi-karg"); o != nil {
				mc = o
				return o
			}
			return nil
		}).WithTimeout(15*time.Second).ShouldNot(BeNil(), "written when the trusted window opens")
		Expect(mc.GetCreationTimestamp().Second()).To(BeNumerically("<", 20), "written inside the trusted window (open from :00 to :20)")
	})

	It("write nothing more once the approving policy is deleted: the PSI change it approved waits for its window, the policy goes, the window opens, and the config is back at ReviewRequired naming the policy", func() {
		createWindow(workerWindow("e2e-policy-lapse-window", "* * * * *", 20*time.Second, v1alpha1.MaintenanceWindowKindAllow))
		setter, setterName := policySetter()
		createPolicy(setter, newPolicy("e2e-policy-lapsing", []string{"load-aware-rebalancing"}, rebootsInWindow("e2e-policy-lapse-window")))
		untilSecond(25, 40) // the window is closed
		configWith("load-aware-rebalancing", `{"profile":"load-aware-rebalancing"}`)
		c := waitPhase("load-aware-rebalancing", v1alpha1.PhaseInProgress, 20*time.Second)
		Expect(c.Status.Approval.ApprovedBy).To(Equal("policy/e2e-policy-lapsing (set by " + setterName + ")"))
		Expect(c.Status.Approval.Policy).NotTo(BeNil())
		Expect(c.Status.Approval.Policy.Generation).To(BeNumerically(">", 0))
		Eventually(func() string { return itemMessage("load-aware-rebalancing", "enable-psi-metrics") }).WithTimeout(10 * time.Second).
			Should(ContainSubstring("window 'e2e-policy-lapse-window' opens"))

		deletePolicy("e2e-policy-lapsing")
		// Through the next opening of the window, and a little into it.
		now := time.Now()
		open := now.Truncate(time.Minute).Add(time.Minute + 8*time.Second)
		Consistently(func() interface{} { return getObject(mcGVR, "", "99-worker-psi-karg") }).
			WithTimeout(open.Sub(now)).WithPolling(500*time.Millisecond).
			Should(BeNil(), "nothing is written once the policy that approved it is gone, window open or not")
		c = waitPhase("load-aware-rebalancing", v1alpha1.PhaseReviewRequired, 5*time.Second)
		cond := condition(c, "ReviewRequired")
		Expect(cond.Reason).To(Equal("PolicyApprovalLapsed"))
		Expect(cond.Message).To(MatchRegexp(`^approval policy 'e2e-policy-lapsing' was deleted before items .*'enable-psi-metrics'.* were written; nothing further was written\. `))
		Expect(c.Status.Approval).To(BeNil())
	})

	It("approve only while one of their windows is open: closed, the plan waits naming the window; opened, it is approved", func() {
		createWindow(newWindow("e2e-policy-new-year", "0 0 1 1 *", time.Hour, ""))
		setter, setterName := policySetter()
		createPolicy(setter, newPolicy("e2e-policy-windowed", []string{"load-aware-rebalancing"}, func(s *v1alpha1.ApprovalPolicySpec) {
			s.Windows = []string{"e2e-policy-new-year"}
		}))
		configWith("load-aware-rebalancing", loadAwareSpec(false, 1200))
		c := waitPhase("load-aware-rebalancing", v1alpha1.PhaseReviewRequired, 30*time.Second)
		// Stored: the opening's time, never how far away it was.
		Expect(condition(c, "ReviewRequired").Message).To(MatchRegexp(`policy 'e2e-policy-windowed' approves only while window e2e-policy-new-year is open; the next opens \w{3} 1 Jan( \d{4})? 00:00 UTC\. `))
		Expect(getPolicy("e2e-policy-windowed").Status.LastRefused.Message).NotTo(ContainSubstring("opens in"))
		Expect(c.Status.Approval).To(BeNil())

		_, err := advisor.AdvisorV1alpha1().MaintenanceWindows().Patch(suiteCtx, "e2e-policy-new-year", types.MergePatchType,
			[]byte(`{"spec":{"schedule":"* * * * *","duration":"1m"}}`), metav1.PatchOptions{})
		Expect(err).NotTo(HaveOccurred())
		c = waitPhase("load-aware-rebalancing", v1alpha1.PhaseCompleted, 30*time.Second)
		Expect(c.Status.Approval.ApprovedBy).To(Equal("policy/e2e-policy-windowed (set by " + setterName + ")"))
	})

	It("hold a policy's approval to every check a person's passes: status cannot be forged, and a target that appeared after the approval fails the plan with nothing written", func() {
		createWindow(workerWindow("e2e-policy-always", "* * * * *", time.Minute, v1alpha1.MaintenanceWindowKindAllow))
		createWindow(workerWindow("e2e-policy-freeze", "* * * * *", time.Minute, v1alpha1.MaintenanceWindowKindDeny))
		setter, setterName := policySetter()
		createPolicy(setter, newPolicy("e2e-policy-checked", []string{"load-aware-rebalancing"}, rebootsInWindow("e2e-policy-always")))
		configWith("load-aware-rebalancing", `{"profile":"load-aware-rebalancing"}`)
		c := waitPhase("load-aware-rebalancing", v1alpha1.PhaseInProgress, 20*time.Second)
		Expect(c.Status.Approval.ApprovedBy).To(Equal("policy/e2e-policy-checked (set by " + setterName + ")"))
		Expect(c.Status.Approval.UID).To(Equal(c.UID))
		Eventually(func() string { return itemMessage("load-aware-rebalancing", "enable-psi-metrics") }).WithTimeout(10 * time.Second).
			Should(ContainSubstring("freeze 'e2e-policy-freeze'"))

		// Nobody writes an approval by a policy into status.
		forged := `{"status":{"approval":{"planHash":"0000","approvedBy":"policy/e2e-policy-checked (set by ` + setterName + `)","approvedAt":"2026-01-01T00:00:00Z","generation":1}}}`
		_, err := advisor.AdvisorV1alpha1().VirtPlatformConfigs().Patch(suiteCtx, "load-aware-rebalancing", types.MergePatchType, []byte(forged), metav1.PatchOptions{}, "status")
		Expect(statusCode(err)).To(Equal(int32(403)), "%v", err)

		// The reviewed plan created the MachineConfig; someone makes it first.
		mc := `{"apiVersion":"machineconfiguration.openshift.io/v1","kind":"MachineConfig","metadata":{"name":"99-worker-psi-karg",` +
			`"labels":{"machineconfiguration.openshift.io/role":"worker"}},"spec":{"kernelArguments":["admin=1"]}}`
		_, err = dyn().Resource(mcGVR).Patch(suiteCtx, "99-worker-psi-karg", types.ApplyPatchType, []byte(mc), metav1.PatchOptions{FieldManager: "e2e-admin", Force: ptrTo(true)})
		Expect(err).NotTo(HaveOccurred())
		deleteWindow("e2e-policy-freeze")
		c = waitPhase("load-aware-rebalancing", v1alpha1.PhaseFailed, 30*time.Second)
		Expect(condition(c, "Failed").Reason).To(Equal("StalePlan"))
		Expect(nested(getObject(mcGVR, "", "99-worker-psi-karg").Object, "spec", "kernelArguments")).To(Equal([]interface{}{"admin=1"}), "nothing written over it")
	})

	It("is set only by a user who may approve every config it covers: editors and policy admins who may not approve get 403; an approver may; the author comes from the request", func() {
		editor, _, _ := userClient("virt-advisor-editor")
		_, err := editor.AdvisorV1alpha1().ApprovalPolicies().Create(suiteCtx, newPolicy("e2e-by-editor", []string{"load-aware-rebalancing"}, nil), metav1.CreateOptions{})
		Expect(statusCode(err)).To(Equal(int32(403)), "editor: %v", err)

		admin, adminName, _ := userClient("virt-advisor-policy-admin")
		_, err = admin.AdvisorV1alpha1().ApprovalPolicies().Create(suiteCtx, newPolicy("e2e-by-policy-admin", []string{"load-aware-rebalancing"}, nil), metav1.CreateOptions{})
		Expect(statusCode(err)).To(Equal(int32(403)), "policy admin: %v", err)
		Expect(err.Error()).To(ContainSubstring(fmt.Sprintf(`user %q may not create virtplatformconfigs/approve on VirtPlatformConfig "load-aware-rebalancing"`, adminName)))

		// May approve example-profile only.
		narrow, _ := customRoleUser(
			advisorRule([]string{"get", "list", "watch", "create", "update", "patch", "delete"}, "approvalpolicies"),
			rbacv1.PolicyRule{APIGroups: []string{"advisor.kubevirt.io"}, Resources: []string{"virtplatformconfigs/approve"}, Verbs: []string{"create"}, ResourceNames: []string{"example-profile"}})
		createPolicy(narrow, newPolicy("e2e-by-narrow", []string{"example-profile"}, nil))
		_, err = narrow.AdvisorV1alpha1().ApprovalPolicies().Create(suiteCtx, newPolicy("e2e-by-narrow-2", []string{"example-profile", "load-aware-rebalancing"}, nil), metav1.CreateOptions{})
		Expect(statusCode(err)).To(Equal(int32(403)), "a config they may not approve: %v", err)
		Expect(err.Error()).To(ContainSubstring(`on VirtPlatformConfig "load-aware-rebalancing"`))
		bySelector := newPolicy("e2e-by-narrow-3", nil, func(s *v1alpha1.ApprovalPolicySpec) {
			s.Configs.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"tier": "quiet"}}
		})
		_, err = narrow.AdvisorV1alpha1().ApprovalPolicies().Create(suiteCtx, bySelector, metav1.CreateOptions{})
		Expect(statusCode(err)).To(Equal(int32(403)), "a selector covers every config: %v", err)
		Expect(err.Error()).To(ContainSubstring("on every VirtPlatformConfig"))
		_, err = narrow.AdvisorV1alpha1().ApprovalPolicies().Patch(suiteCtx, "e2e-by-narrow", types.MergePatchType,
			[]byte(`{"spec":{"configs":{"names":["load-aware-rebalancing"]}}}`), metav1.PatchOptions{})
		Expect(statusCode(err)).To(Equal(int32(403)), "changing it to cover a config they may not approve: %v", err)

		// An approver who writes policies may; a forged author is ignored.
		approver, approverName := policySetter()
		p := newPolicy("e2e-by-approver", []string{"load-aware-rebalancing"}, nil)
		p.Status.Author = "someone-else"
		created := createPolicy(approver, p)
		Expect(created.Status.Author).To(Equal(approverName))
		createPolicy(approver, bySelector)

		// The policy admin may label it (no approval changes) but not change its bounds.
		_, err = admin.AdvisorV1alpha1().ApprovalPolicies().Patch(suiteCtx, "e2e-by-approver", types.MergePatchType,
			[]byte(`{"metadata":{"labels":{"team":"platform"}}}`), metav1.PatchOptions{})
		Expect(err).NotTo(HaveOccurred())
		Expect(getPolicy("e2e-by-approver").Status.Author).To(Equal(approverName), "a label is no new approval")
		_, err = admin.AdvisorV1alpha1().ApprovalPolicies().Patch(suiteCtx, "e2e-by-approver", types.MergePatchType,
			[]byte(`{"spec":{"bounds":{"maxImpact":"High"}}}`), metav1.PatchOptions{})
		Expect(statusCode(err)).To(Equal(int32(403)), "policy admin widening the bounds: %v", err)
		_, err = editor.AdvisorV1alpha1().ApprovalPolicies().Patch(suiteCtx, "e2e-by-approver", types.MergePatchType,
			[]byte(`{"spec":{"bounds":{"maxImpact":"High"}}}`), metav1.PatchOptions{})
		Expect(statusCode(err)).To(Equal(int32(403)), "editor: %v", err)
		Expect(getPolicy("e2e-by-approver").Spec.Bounds.MaxImpact).To(Equal(v1alpha1.ImpactLow))

		// Every role reads them.
		viewer, _, _ := userClient("virt-advisor-viewer")
		_, err = viewer.AdvisorV1alpha1().ApprovalPolicies().List(suiteCtx, metav1.ListOptions{})
		Expect(err).NotTo(HaveOccurred())
		_, err = viewer.AdvisorV1alpha1().ApprovalPolicies().Patch(suiteCtx, "e2e-by-approver", types.MergePatchType,
			[]byte(`{"metadata":{"labels":{"x":"y"}}}`), metav1.PatchOptions{})
		Expect(statusCode(err)).To(Equal(int32(403)), "viewer: %v", err)
	})
})

var _ = Describe("approval policies and the VMs a drain shuts down", Ordered, func() {
	BeforeAll(withWorkerNodes)
	BeforeEach(resetCluster)
	AfterEach(resetCluster)

	It("a policy allowing only live migration stops a plan that would shut a VM down at review, naming the VM", func() {
		runVMIs(env.VMI{Namespace: vmNS, Name: "vm-policy-migrates", Node: "worker-0", EvictionStrategy: "LiveMigrate", Migratable: true},
			env.VMI{Namespace: vmNS, Name: "vm-policy-none", Node: "worker-1", EvictionStrategy: "None", Migratable: true})
		createWindow(workerWindow("e2e-policy-open", "* * * * *", time.Minute, v1alpha1.MaintenanceWindowKindAllow))
		// The plan shows the VMs before the policy is asked: a plan drafted
		// from a VM cache that has not seen vm-policy-none yet would be
		// approved, and the live read before the drain would then fail it
		// (StalePlan, as the spec above shows for a target).
		configWith("load-aware-rebalancing", `{"profile":"load-aware-rebalancing"}`)
		waitPhase("load-aware-rebalancing", v1alpha1.PhaseReviewRequired, 30*time.Second)
		Eventually(func() []string { return fates(planItem(getPlan("load-aware-rebalancing"), "enable-psi-metrics")) }).
			WithTimeout(10 * time.Second).Should(ContainElement(HavePrefix("default/vm-policy-none on worker-1: ")))
		setter, _ := policySetter()
		createPolicy(setter, newPolicy("e2e-migrate-only", []string{"load-aware-rebalancing"}, rebootsInWindow("e2e-policy-open")))
		var c *v1alpha1.VirtPlatformConfig
		Eventually(func() string {
			c = getConfig("load-aware-rebalancing")
			if review := meta.FindStatusCondition(c.Status.Conditions, "ReviewRequired"); review != nil && c.Status.Phase == v1alpha1.PhaseReviewRequired {
				return review.Reason
			}
			return ""
		}).WithTimeout(30*time.Second).Should(Equal("PolicyBoundExceeded"), func() string { return describeStatus(c) })
		review := condition(c, "ReviewRequired")
		Expect(review.Reason).To(Equal("PolicyBoundExceeded"))
		Expect(review.Message).To(ContainSubstring("VM default/vm-policy-none on pool worker would be shut down (EvictionStrategyNone); policy 'e2e-migrate-only' allows only VMs that are live-migrated"))
		Expect(review.Message).NotTo(ContainSubstring("vm-policy-migrates"))
		Expect(c.Status.Approval).To(BeNil())
		Consistently(func() interface{} { return getObject(mcGVR, "", "99-worker-psi-karg") }).WithTimeout(2 * time.Second).Should(BeNil())
	})
})

var _ = Describe("approval policies under four eyes (--require-distinct-approver)", Ordered, func() {
	BeforeAll(func() {
		serveThrough("policy-four-eyes", env.AdvisorBinary, "--require-distinct-approver")
	})

	It("never approve a plan whose spec the policy's author last changed; another user's change is approved", func() {
		author, authorName, _ := userClient("virt-advisor-editor", "virt-advisor-approver", "virt-advisor-policy-admin")
		createPolicy(author, newPolicy("e2e-four-eyes", []string{"example-profile"}, nil))
		_, err := author.AdvisorV1alpha1().VirtPlatformConfigs().Create(suiteCtx, newConfig("example-profile"), metav1.CreateOptions{})
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(deleteConfig, "example-profile")
		c := waitPhase("example-profile", v1alpha1.PhaseReviewRequired, 20*time.Second)
		review := condition(c, "ReviewRequired")
		Expect(review.Reason).To(Equal("PolicyBoundExceeded"))
		Expect(review.Message).To(ContainSubstring(fmt.Sprintf("user %q, who set policy 'e2e-four-eyes', made the last spec change", authorName)))
		Expect(c.Status.Approval).To(BeNil())
		Consistently(exampleConfigMap).WithTimeout(2*time.Second).Should(BeNil(), "the author's own change is not approved by their policy")

		editor, _, _ := userClient("virt-advisor-editor")
		_, err = editor.AdvisorV1alpha1().VirtPlatformConfigs().Patch(suiteCtx, "example-profile", types.MergePatchType,
			[]byte(`{"spec":{"waitTimeout":"5m"}}`), metav1.PatchOptions{})
		Expect(err).NotTo(HaveOccurred())
		c = waitPhase("example-profile", v1alpha1.PhaseCompleted, 20*time.Second)
		Expect(c.Status.Approval.ApprovedBy).To(Equal("policy/e2e-four-eyes (set by " + authorName + ")"))
		Expect(exampleConfigMap()).NotTo(BeNil())
	})
})
