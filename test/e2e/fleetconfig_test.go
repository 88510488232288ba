package e2e

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/chromedp/chromedp"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/retry"

	"github.com/kubevirt/virt-advisor/pkg/apis/advisor/v1alpha1"
	"github.com/kubevirt/virt-advisor/pkg/fleet"
	"github.com/kubevirt/virt-advisor/pkg/generated/clientset/versioned"
	"github.com/kubevirt/virt-advisor/test/env"
	"github.com/kubevirt/virt-advisor/test/env/fakemco"
)

const (
	fleetNS    = "virt-fleet"
	otherNS    = "virt-fleet-other"
	fleetName  = "load-aware"
	fleetPSI   = "load-aware-rebalancing"
	canary     = "spoke-a"
	secondWave = "spoke-b"
)

// fleetConfigSpecs are the FleetConfig's specs, on the fleet of the
// enclosing container: the suite's cluster as the hub (its virt-advisor
// restarted with --fleet-hub), spoke-a the canary wave, spoke-b the next.
func fleetConfigSpecs(fleetOCM func() *env.OCM) {
	Context("a FleetConfig", Ordered, func() {
		var (
			ocm                      *env.OCM
			approver, editor         versioned.Interface
			spokeAdvisor             map[string]versioned.Interface
			spokeDyn                 map[string]dynamic.Interface
			hubDyn                   dynamic.Interface
			strategyProgressiveGroup = v1alpha1.RolloutStrategy{Type: v1alpha1.RolloutTypeProgressivePerGroup,
				ProgressivePerGroup: &v1alpha1.RolloutProgressivePerGroup{
					RolloutConfig:           v1alpha1.RolloutConfig{MaxFailures: intstr.FromInt32(0), ProgressDeadline: "None"},
					MandatoryDecisionGroups: v1alpha1.MandatoryDecisionGroups{MandatoryDecisionGroups: []v1alpha1.MandatoryDecisionGroup{{GroupName: "canary"}}},
				}}
		)

		BeforeAll(func(ctx SpecContext) {
			ocm = fleetOCM()
			hubDyn = dynamic.NewForConfigOrDie(testEnv.AdminConfig)
			Expect(testEnv.RestartAdvisorWith(ctx, nil, map[string]string{"--fleet-hub": "true"})).To(Succeed())
			DeferCleanup(func(ctx SpecContext) {
				_ = advisor.AdvisorV1alpha1().FleetConfigs(fleetNS).Delete(ctx, fleetName, metav1.DeleteOptions{})
				Expect(testEnv.RestartAdvisorWith(ctx, nil, nil)).To(Succeed())
			})
			_, err := hubDyn.Resource(managedClusterGVR).Patch(ctx, canary, types.MergePatchType,
				[]byte(`{"metadata":{"labels":{"virt-advisor.kubevirt.io/wave":"canary"}}}`), metav1.PatchOptions{})
			Expect(err).NotTo(HaveOccurred())
			Expect(testEnv.ApplyYAML(ctx, fmt.Sprintf(fleetHubYAML, fleetNS, otherNS))).To(Succeed())
			approver = versioned.NewForConfigOrDie(userConfig("fleet-approver"))
			editor = versioned.NewForConfigOrDie(userConfig("fleet-editor"))
			spokeAdvisor, spokeDyn = map[string]versioned.Interface{}, map[string]dynamic.Interface{}
			for name, spoke := range ocm.Spokes {
				spokeAdvisor[name] = versioned.NewForConfigOrDie(spoke.AdminConfig)
				spokeDyn[name] = dynamic.NewForConfigOrDie(spoke.AdminConfig)
			}
		}, NodeTimeout(3*time.Minute))

		// setFleet creates the FleetConfig, or changes its options, and
		// returns its fleet plan once every cluster reported its plan.
		setFleet := func(ctx context.Context, opts *v1alpha1.LoadAwareConfig) *v1alpha1.FleetPlan {
			GinkgoHelper()
			// The hub's controller writes status meanwhile: a conflict is retried.
			err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
				fc, err := advisor.AdvisorV1alpha1().FleetConfigs(fleetNS).Get(ctx, fleetName, metav1.GetOptions{})
				if apierrors.IsNotFound(err) {
					fc = &v1alpha1.FleetConfig{ObjectMeta: metav1.ObjectMeta{Name: fleetName, Namespace: fleetNS}, Spec: v1alpha1.FleetConfigSpec{
						Profile: fleetPSI, PlacementRef: v1alpha1.FleetPlacementRef{Name: "virt-clusters"}, RolloutStrategy: strategyProgressiveGroup}}
					fc.Spec.Options = &v1alpha1.ProfileOptions{LoadAware: opts}
					_, err = advisor.AdvisorV1alpha1().FleetConfigs(fleetNS).Create(ctx, fc, metav1.CreateOptions{})
					return err
				}
				if err != nil {
					return err
				}
				fc.Spec.Options = &v1alpha1.ProfileOptions{LoadAware: opts}
				_, err = advisor.AdvisorV1alpha1().FleetConfigs(fleetNS).Update(ctx, fc, metav1.UpdateOptions{})
				return err
			})
			Expect(err).NotTo(HaveOccurred())
			var plan *v1alpha1.FleetPlan
			Eventually(func() []string {
				plan, err = approver.AdvisorV1alpha1().FleetConfigs(fleetNS).GetPlan(ctx, fleetName, metav1.GetOptions{})
				if err != nil {
					return []string{err.Error()}
				}
				return plan.Status.Pending
			}).WithContext(ctx).WithTimeout(90*time.Second).WithPolling(time.Second).Should(BeEmpty(), "every cluster reports its plan")
			return plan
		}
		spokeConfig := func(ctx context.Context, cluster string) *v1alpha1.VirtPlatformConfig {
			cfg, err := spokeAdvisor[cluster].AdvisorV1alpha1().VirtPlatformConfigs().Get(ctx, fleetPSI, metav1.GetOptions{})
			if err != nil {
				return &v1alpha1.VirtPlatformConfig{}
			}
			return cfg
		}
		fleetStatus := func(ctx context.Context) v1alpha1.FleetConfigStatus {
			fc, err := advisor.AdvisorV1alpha1().FleetConfigs(fleetNS).Get(ctx, fleetName, metav1.GetOptions{})
			Expect(err).NotTo(HaveOccurred())
			return fc.Status
		}
		approveFleet := func(ctx context.Context, hash string) {
			GinkgoHelper()
			_, err := approver.AdvisorV1alpha1().FleetConfigs(fleetNS).Approve(ctx, fleetName, &v1alpha1.Approval{Spec: v1alpha1.ApprovalSpec{PlanHash: hash}}, metav1.CreateOptions{})
			Expect(err).NotTo(HaveOccurred())
		}
		// startedBy is true when cluster's config carries the approval of fleetHash.
		startedBy := func(ctx context.Context, cluster, fleetHash string) bool {
			d := spokeConfig(ctx, cluster).Spec.DelegatedApproval
			return d != nil && d.FleetHash == fleetHash
		}

		It("reviews one plan over two clusters in two waves, approved once, rolled out canary first, each node updated once", func(ctx SpecContext) {
			before := map[string]fakemco.Rollouts{}
			for name, spoke := range ocm.Spokes {
				before[name] = spoke.FakeMCORollouts("worker")
			}
			plan := setFleet(ctx, &v1alpha1.LoadAwareConfig{})

			By("the fleet plan shows both clusters' own plans, by wave")
			Expect(plan.Status.FleetHash).To(HaveLen(64))
			Expect(plan.Status.Clusters).To(HaveLen(2))
			Expect(plan.Status.Clusters[0].Name).To(Equal(canary))
			Expect(plan.Status.Clusters[0].Group).To(Equal("canary"))
			Expect(plan.Status.Clusters[1].Name).To(Equal(secondWave))
			Expect(plan.Status.Clusters[1].GroupIndex).To(BeNumerically(">", plan.Status.Clusters[0].GroupIndex))
			for _, c := range plan.Status.Clusters {
				Expect(c.Plan).NotTo(BeNil())
				own, err := spokeAdvisor[c.Name].AdvisorV1alpha1().VirtPlatformConfigs().GetPlan(ctx, fleetPSI, metav1.GetOptions{})
				Expect(err).NotTo(HaveOccurred())
				Expect(c.Plan.PlanHash).To(Equal(own.Status.PlanHash), "the fleet plan shows %s's own live plan", c.Name)
				Expect(c.Plan.Items).To(HaveLen(len(own.Status.Items)))
				Expect(c.Plan.NodeReboots).To(BeNumerically(">", 0), "the PSI kernel argument reboots %s's workers", c.Name)
			}

			By("approved once on the hub")
			approveFleet(ctx, plan.Status.FleetHash)

			By("the second wave starts only once the canary completed")
			Eventually(func() error {
				a, b := spokeConfig(ctx, canary), spokeConfig(ctx, secondWave)
				if startedBy(ctx, secondWave, plan.Status.FleetHash) && a.Status.Phase != v1alpha1.PhaseCompleted {
					return StopTrying(fmt.Sprintf("spoke-b got the approval while the canary is %s", a.Status.Phase))
				}
				if a.Status.Phase != v1alpha1.PhaseCompleted || b.Status.Phase != v1alpha1.PhaseCompleted || !startedBy(ctx, secondWave, plan.Status.FleetHash) {
					return fmt.Errorf("canary %s, second wave %s", a.Status.Phase, b.Status.Phase)
				}
				return nil
			}).WithContext(ctx).WithTimeout(3 * time.Minute).WithPolling(200 * time.Millisecond).Should(Succeed())

			for _, name := range []string{canary, secondWave} {
				cfg := spokeConfig(ctx, name)
				Expect(cfg.Status.Approval.ApprovedBy).To(Equal("fleet-approver (on the hub, fleet " + fleetNS + "/" + fleetName + ")"))
				Expect(cfg.Status.Approval.Delegated.FleetHash).To(Equal(plan.Status.FleetHash))
				now := ocm.Spokes[name].FakeMCORollouts("worker")
				for i, n := range now.NodeUpdates {
					was := 0
					if i < len(before[name].NodeUpdates) {
						was = before[name].NodeUpdates[i]
					}
					Expect(n-was).To(Equal(1), "node %d of %s updated once", i, name)
				}
			}
			Eventually(func() v1alpha1.FleetPhase { return fleetStatus(ctx).Phase }).WithContext(ctx).WithTimeout(30 * time.Second).
				Should(Equal(v1alpha1.FleetPhaseCompleted))

			By("kubectl get fleetconfigs says it in a line")
			out, err := kubectl("get", "fleetconfigs", "-n", fleetNS, "-o", "wide")
			Expect(err).NotTo(HaveOccurred(), out)
			Expect(strings.Fields(strings.Split(out, "\n")[0])).To(Equal([]string{"NAME", "PROFILE", "PLACEMENT", "STRATEGY", "PHASE", "COMPLETED", "AGE", "APPROVED-BY", "MESSAGE"}))
			Expect(out).To(MatchRegexp(fleetName + `\s+` + fleetPSI + `\s+virt-clusters\s+ProgressivePerGroup\s+Completed\s+2/2\s+\S+\s+fleet-approver\s+Fleet plan`))
		})

		It("shows the fleets, and a fleet by wave, in the dashboard", func(ctx SpecContext) {
			startBrowser()
			d := startDashboard(testEnv.Kubeconfig)
			tab := newTab()
			resp := load(tab, chromedp.Navigate(d.url))
			Expect(resp.Status).To(BeEquivalentTo(200), pageText(tab))
			By("the configs page lists the fleet")
			Expect(textOf(tab, `tr[data-fleet="`+fleetNS+`/`+fleetName+`"]`)).To(SatisfyAll(ContainSubstring(fleetPSI), ContainSubstring("Completed")))
			By("the fleet's page: each cluster's plan, by wave")
			resp = clickTo(tab, `tr[data-fleet="`+fleetNS+`/`+fleetName+`"] th a`)
			Expect(resp.Status).To(BeEquivalentTo(200), pageText(tab))
			Expect(textOf(tab, "h1")).To(Equal("Fleet " + fleetNS + "/" + fleetName))
			Expect(eval[[]string](tab, `[...document.querySelectorAll('h2')].map(e => e.textContent)`)).To(ContainElements("Wave 0 (canary)", "Wave 1"))
			for _, c := range []string{canary, secondWave} {
				Expect(textOf(tab, `tr[data-cluster="`+c+`"]`)).To(SatisfyAll(ContainSubstring("Succeeded"), ContainSubstring("Completed")))
			}
			Expect(textOf(tab, "#fleet .banner")).To(SatisfyAll(ContainSubstring("Completed"), ContainSubstring("approved by fleet-approver")))
			screenshot(tab, "fleet")
		})

		It("stops when the canary fails: the second wave never starts, and the fleet says which cluster and why", func(ctx SpecContext) {
			By("spoke-a refuses every KubeDescheduler write that is not a dry-run: its plan reviews, its write fails")
			Expect(ocm.Spokes[canary].ApplyYAML(ctx, refuseDeschedulerYAML)).To(Succeed())
			DeferCleanup(func(ctx SpecContext) { Expect(ocm.Spokes[canary].DeleteYAML(ctx, refuseDeschedulerYAML)).To(Succeed()) })
			time.Sleep(2 * time.Second) // the policy's informer on spoke-a's kube-apiserver
			plan := setFleet(ctx, &v1alpha1.LoadAwareConfig{DeschedulingIntervalSeconds: ptrTo[int32](120)})
			approveFleet(ctx, plan.Status.FleetHash)

			Eventually(func() v1alpha1.FleetConfigStatus { return fleetStatus(ctx) }).WithContext(ctx).WithTimeout(2 * time.Minute).WithPolling(time.Second).
				Should(And(HaveField("Phase", v1alpha1.FleetPhaseFailed), HaveField("Message", ContainSubstring(canary)),
					HaveField("Message", ContainSubstring("e2e: the canary refuses KubeDescheduler writes"))))
			Expect(spokeConfig(ctx, canary).Status.Phase).To(Equal(v1alpha1.PhaseFailed))
			Consistently(func() bool { return startedBy(ctx, secondWave, plan.Status.FleetHash) }).WithContext(ctx).
				WithTimeout(8*time.Second).WithPolling(500*time.Millisecond).Should(BeFalse(), "the second wave never starts")
			Expect(deschedulingInterval(ctx, spokeDyn[secondWave])).NotTo(Equal(int64(120)), "nothing written on spoke-b")
		})

		It("writes nothing on a cluster whose plan changed after the review, and says so; the other follows the strategy", func(ctx SpecContext) {
			plan := setFleet(ctx, &v1alpha1.LoadAwareConfig{DeschedulingIntervalSeconds: ptrTo[int32](180)})
			approveFleet(ctx, plan.Status.FleetHash)
			By("spoke-b's target changes right after the approval, before its wave")
			_, err := spokeDyn[secondWave].Resource(kdGVR).Namespace("openshift-kube-descheduler-operator").Patch(ctx, "cluster", types.MergePatchType,
				[]byte(`{"spec":{"deschedulingIntervalSeconds":999}}`), metav1.PatchOptions{FieldManager: "someone-else"})
			Expect(err).NotTo(HaveOccurred())

			Eventually(func() *v1alpha1.VirtPlatformConfig { return spokeConfig(ctx, canary) }).WithContext(ctx).WithTimeout(2*time.Minute).
				Should(HaveField("Status.Phase", v1alpha1.PhaseCompleted), "the canary follows the strategy")
			Eventually(func() string {
				cfg := spokeConfig(ctx, secondWave)
				if c := findSpokeCondition(cfg, string(v1alpha1.PhaseReviewRequired)); c != nil {
					return c.Reason + ": " + c.Message
				}
				return string(cfg.Status.Phase)
			}).WithContext(ctx).WithTimeout(2*time.Minute).Should(HavePrefix(fleet.ReasonMismatch+": "), "spoke-b reports the mismatch")
			Expect(deschedulingInterval(ctx, spokeDyn[secondWave])).To(Equal(int64(999)), "spoke-b wrote nothing")
			Expect(spokeConfig(ctx, secondWave).Status.Approval).To(SatisfyAny(BeNil(), HaveField("Delegated.FleetHash", Not(Equal(plan.Status.FleetHash)))))

			By("the hub shows the mismatch")
			Eventually(func() string { return fleetStatus(ctx).Message }).WithContext(ctx).WithTimeout(30 * time.Second).
				Should(And(ContainSubstring(secondWave), ContainSubstring("the live plan is now")))
			live, err := approver.AdvisorV1alpha1().FleetConfigs(fleetNS).GetPlan(ctx, fleetName, metav1.GetOptions{})
			Expect(err).NotTo(HaveOccurred())
			for _, c := range live.Status.Clusters {
				if c.Name == secondWave {
					Expect(c.ApprovedPlanHash).NotTo(BeEmpty())
					Expect(c.Plan.PlanHash).NotTo(Equal(c.ApprovedPlanHash), "the approved and the live plan differ")
				}
			}
		})

		It("lets only an approver of this FleetConfig approve it, and no user of a cluster forge a delegated approval", func(ctx SpecContext) {
			plan, err := approver.AdvisorV1alpha1().FleetConfigs(fleetNS).GetPlan(ctx, fleetName, metav1.GetOptions{})
			Expect(err).NotTo(HaveOccurred())
			_, err = approver.AdvisorV1alpha1().FleetConfigs(fleetNS).Abort(ctx, fleetName, &v1alpha1.Abort{}, metav1.CreateOptions{})
			Expect(err == nil || apierrors.IsConflict(err)).To(BeTrue(), "the approver may abort: %v", err)
			By("an editor of the fleet may review it, not approve it")
			_, err = editor.AdvisorV1alpha1().FleetConfigs(fleetNS).GetPlan(ctx, fleetName, metav1.GetOptions{})
			Expect(err).NotTo(HaveOccurred())
			approvalBefore := fleetStatus(ctx).Approval
			started := func() []bool {
				return []bool{startedBy(ctx, canary, plan.Status.FleetHash), startedBy(ctx, secondWave, plan.Status.FleetHash)}
			}
			startedBefore := started()
			_, err = editor.AdvisorV1alpha1().FleetConfigs(fleetNS).Approve(ctx, fleetName, &v1alpha1.Approval{Spec: v1alpha1.ApprovalSpec{PlanHash: plan.Status.FleetHash}}, metav1.CreateOptions{})
			Expect(apierrors.IsForbidden(err)).To(BeTrue(), "an editor approving: %v", err)
			Expect(fleetStatus(ctx).Approval).To(Equal(approvalBefore), "the refused approval recorded nothing")
			Consistently(started).WithContext(ctx).WithTimeout(3*time.Second).Should(Equal(startedBefore), "no cluster got an approval of the refused fleet hash")
			By("an approver of fleet A may not approve fleet B")
			_, err = approver.AdvisorV1alpha1().FleetConfigs(otherNS).Approve(ctx, "other", &v1alpha1.Approval{Spec: v1alpha1.ApprovalSpec{PlanHash: plan.Status.FleetHash}}, metav1.CreateOptions{})
			Expect(apierrors.IsForbidden(err)).To(BeTrue(), "approving another namespace's fleet: %v", err)
			fc, err := advisor.AdvisorV1alpha1().FleetConfigs(otherNS).Get(ctx, "other", metav1.GetOptions{})
			Expect(err).NotTo(HaveOccurred())
			Expect(fc.Status.Approval).To(BeNil())

			By("an approver of a cluster may not forge a delegated approval there")
			Expect(ocm.Spokes[canary].ApplyYAML(ctx, spokeApproverYAML)).To(Succeed())
			cfg, _, err := ocm.Spokes[canary].UserConfig("spoke-approver")
			Expect(err).NotTo(HaveOccurred())
			forged := fmt.Sprintf(`{"spec":{"delegatedApproval":{"fleet":"%s/%s","fleetHash":"%s","approvedBy":"mallory","approvedAt":"2026-12-03T10:00:00Z","clusters":[{"name":"%s","planHash":"%s"}]}}}`,
				fleetNS, fleetName, strings.Repeat("f", 64), canary, strings.Repeat("a", 64))
			_, err = versioned.NewForConfigOrDie(cfg).AdvisorV1alpha1().VirtPlatformConfigs().Patch(ctx, fleetPSI, types.MergePatchType, []byte(forged), metav1.PatchOptions{})
			Expect(apierrors.IsForbidden(err)).To(BeTrue(), "forging a delegated approval: %v", err)
			Expect(err.Error()).To(ContainSubstring("create virtplatformconfigs/delegatedapproval"))
			// OCM's agent may meanwhile apply the hub's abort; mallory's approval is never stored.
			Consistently(func() *v1alpha1.VirtPlatformConfig { return spokeConfig(ctx, canary) }).WithContext(ctx).WithTimeout(3*time.Second).Should(And(
				HaveField("Spec.DelegatedApproval", SatisfyAny(BeNil(), HaveField("ApprovedBy", Not(Equal("mallory"))))),
				HaveField("Status.Approval", SatisfyAny(BeNil(), HaveField("ApprovedBy", Not(ContainSubstring("mallory")))))),
				"the forged approval was not stored, nor anything approved in its name")
		})

		It("aborts mid-rollout: the canary's rollout stops, no other cluster starts", func(ctx SpecContext) {
			By("the canary's nodes take 3 s each")
			_, err := spokeDyn[canary].Resource(mcpGVR).Patch(ctx, "worker", types.MergePatchType,
				[]byte(`{"metadata":{"annotations":{"`+fakemco.StepTimeAnnotation+`":"3s"}}}`), metav1.PatchOptions{})
			Expect(err).NotTo(HaveOccurred())
			before := ocm.Spokes[secondWave].FakeMCORollouts("worker")
			plan := setFleet(ctx, &v1alpha1.LoadAwareConfig{DeschedulingIntervalSeconds: ptrTo[int32](180), EnablePSIMetrics: ptrTo(false)})
			approveFleet(ctx, plan.Status.FleetHash)
			Eventually(func() v1alpha1.ConfigPhase { return spokeConfig(ctx, canary).Status.Phase }).WithContext(ctx).WithTimeout(time.Minute).
				Should(Equal(v1alpha1.PhaseInProgress))
			_, err = approver.AdvisorV1alpha1().FleetConfigs(fleetNS).Abort(ctx, fleetName, &v1alpha1.Abort{Spec: v1alpha1.AbortSpec{PlanHash: plan.Status.FleetHash}}, metav1.CreateOptions{})
			Expect(err).NotTo(HaveOccurred())

			Eventually(func() *v1alpha1.VirtPlatformConfig { return spokeConfig(ctx, canary) }).WithContext(ctx).WithTimeout(time.Minute).
				Should(And(HaveField("Status.Phase", v1alpha1.PhaseAborted), HaveField("Status.Abort.AbortedBy", "fleet-approver (on the hub, fleet "+fleetNS+"/"+fleetName+")")))
			Expect(fleetStatus(ctx).Phase).To(Equal(v1alpha1.FleetPhaseAborted))
			By("spoke-b gets the abort, not the approval: it writes nothing")
			Eventually(func() string {
				if c := findSpokeCondition(spokeConfig(ctx, secondWave), string(v1alpha1.PhaseReviewRequired)); c != nil {
					return c.Reason
				}
				return ""
			}).WithContext(ctx).WithTimeout(time.Minute).Should(Equal(fleet.ReasonFleetAborted))
			Expect(nodesUpdatedOn(ocm.Spokes[secondWave], before)).To(Equal(0))
		})
	})
}

// userConfig is a client configuration of the hub for user.
func userConfig(user string) *rest.Config {
	GinkgoHelper()
	cfg, _, err := testEnv.UserConfig(user)
	Expect(err).NotTo(HaveOccurred())
	return cfg
}

// deschedulingInterval is a cluster's KubeDescheduler's interval.
func deschedulingInterval(ctx context.Context, dyn dynamic.Interface) int64 {
	kd, err := dyn.Resource(kdGVR).Namespace("openshift-kube-descheduler-operator").Get(ctx, "cluster", metav1.GetOptions{})
	Expect(err).NotTo(HaveOccurred())
	v, _, _ := unstructured.NestedInt64(kd.Object, "spec", "deschedulingIntervalSeconds")
	return v
}

// findSpokeCondition is cfg's condition of type t, nil when absent or not True.
func findSpokeCondition(cfg *v1alpha1.VirtPlatformConfig, t string) *metav1.Condition {
	for i := range cfg.Status.Conditions {
		if c := &cfg.Status.Conditions[i]; c.Type == t && c.Status == metav1.ConditionTrue {
			return c
		}
	}
	return nil
}

// nodesUpdatedOn is how many worker node updates e's fake MCO finished since before.
func nodesUpdatedOn(e *env.Env, before fakemco.Rollouts) int {
	now, sum := e.FakeMCORollouts("worker"), 0
	for i, n := range now.NodeUpdates {
		sum += n
		if i < len(before.NodeUpdates) {
			sum -= before.NodeUpdates[i]
		}
	}
	return sum
}

// fleetHubYAML (fleet namespace, another namespace): each namespace's
// Placement and the hub users' roles in it: fleet-approver approves the
// fleets of the first, fleet-editor edits them; the other namespace has
// a fleet of its own, of no cluster.
const fleetHubYAML = `apiVersion: v1
kind: Namespace
metadata:
  name: %[1]s
---
apiVersion: cluster.open-cluster-management.io/v1beta2
kind: ManagedClusterSetBinding
metadata:
  name: global
  namespace: %[1]s
spec:
  clusterSet: global
---
apiVersion: cluster.open-cluster-management.io/v1beta1
kind: Placement
metadata:
  name: virt-clusters
  namespace: %[1]s
spec:
  clusterSets: [global]
  decisionStrategy:
    groupStrategy:
      clustersPerDecisionGroup: 1
      decisionGroups:
      - groupName: canary
        groupClusterSelector:
          labelSelector:
            matchLabels:
              virt-advisor.kubevirt.io/wave: canary
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata:
  name: fleet-approver
  namespace: %[1]s
roleRef:
  apiGroup: rbac.authorization.k8s.io
  kind: ClusterRole
  name: virt-advisor-fleet-approver
subjects:
- apiGroup: rbac.authorization.k8s.io
  kind: User
  name: fleet-approver
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata:
  name: fleet-editor
  namespace: %[1]s
roleRef:
  apiGroup: rbac.authorization.k8s.io
  kind: ClusterRole
  name: virt-advisor-fleet-editor
subjects:
- apiGroup: rbac.authorization.k8s.io
  kind: User
  name: fleet-editor
---
apiVersion: v1
kind: Namespace
metadata:
  name: %[2]s
---
apiVersion: advisor.kubevirt.io/v1alpha1
kind: FleetConfig
metadata:
  name: other
  namespace: %[2]s
spec:
  profile: virt-higher-density
  placementRef:
    name: nowhere
`

// refuseDeschedulerYAML makes a cluster refuse every KubeDescheduler
// write but dry-runs: its plans review, its writes fail.
const refuseDeschedulerYAML = `apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata:
  name: e2e-refuse-descheduler
spec:
  failurePolicy: Fail
  matchConstraints:
    resourceRules:
    - apiGroups: ["operator.openshift.io"]
      apiVersions: ["*"]
      operations: ["CREATE", "UPDATE"]
      resources: ["kubedeschedulers"]
  validations:
  - expression: "request.dryRun == true"
    message: "e2e: the canary refuses KubeDescheduler writes"
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata:
  name: e2e-refuse-descheduler
spec:
  policyName: e2e-refuse-descheduler
  validationActions: [Deny]
`

// spokeApproverYAML: spoke-approver edits and approves this cluster's
// configs, with every role a user of it can have.
const spokeApproverYAML = `apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata:
  name: e2e-spoke-approver
roleRef:
  apiGroup: rbac.authorization.k8s.io
  kind: ClusterRole
  name: virt-advisor-approver
subjects:
- apiGroup: rbac.authorization.k8s.io
  kind: User
  name: spoke-approver
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata:
  name: e2e-spoke-editor
roleRef:
  apiGroup: rbac.authorization.k8s.io
  kind: ClusterRole
  name: virt-advisor-editor
subjects:
- apiGroup: rbac.authorization.k8s.io
  kind: User
  name: spoke-approver
`
