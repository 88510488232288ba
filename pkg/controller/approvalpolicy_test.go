package controller

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apiserver/pkg/authorization/authorizer"

	"github.com/kubevirt/virt-advisor/pkg/apis/advisor/v1alpha1"
	"github.com/kubevirt/virt-advisor/pkg/approval"
	"github.com/kubevirt/virt-advisor/pkg/machineconfig"
	"github.com/kubevirt/virt-advisor/pkg/maintenance"
	"github.com/kubevirt/virt-advisor/pkg/plan"
	"github.com/kubevirt/virt-advisor/pkg/status"
)

type fakePolicies []*v1alpha1.ApprovalPolicy

// fakeAuthorizer answers the review of a policy's author: allowed unless
// the user is in deny; err, when set, is the review's failure. It records
// what it was asked.
type fakeAuthorizer struct {
	deny  map[string]bool
	err   error
	asked []authorizer.Attributes
}

func (a *fakeAuthorizer) Authorize(_ context.Context, attrs authorizer.Attributes) (authorizer.Decision, string, error) {
	a.asked = append(a.asked, attrs)
	switch {
	case a.err != nil:
		return authorizer.DecisionNoOpinion, "", a.err
	case a.deny[attrs.GetUser().GetName()]:
		return authorizer.DecisionNoOpinion, "", nil
	}
	return authorizer.DecisionAllow, "", nil
}

// policiesHarness is a harness whose policies' authors may approve.
func policiesHarness(t *testing.T, distinctApprover bool) *harness {
	h := newHarness(t, "v1", distinctApprover)
	h.c.approvals.PolicyAuthorizer = &fakeAuthorizer{}
	return h
}

func (p fakePolicies) List(labels.Selector) ([]*v1alpha1.ApprovalPolicy, error) { return p, nil }

// quietTuning is a policy carol set: impact Low, no reboot, covering the config.
func quietTuning() *v1alpha1.ApprovalPolicy {
	return &v1alpha1.ApprovalPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "quiet-tuning"},
		Spec: v1alpha1.ApprovalPolicySpec{
			Configs: v1alpha1.PolicyConfigs{Names: []string{configName}},
			Bounds:  v1alpha1.PolicyBounds{MaxImpact: v1alpha1.ImpactLow, Reboots: v1alpha1.RebootBoundNone, VMFates: []v1alpha1.VMFate{v1alpha1.VMFateLiveMigrate}},
		},
		Status: v1alpha1.ApprovalPolicyStatus{Author: "carol"},
	}
}

// psiRebootPlan is the PSI MachineConfig's Create, which reboots the worker pool.
func psiRebootPlan() *plan.Result {
	it := psiItem(v1alpha1.OperationCreate)
	it.Reboots = []v1alpha1.PoolReboot{{Pool: "worker", Nodes: 3, Disruption: v1alpha1.NodeDisruptionReboot, Drains: true}}
	return planOf("snap-1", it)
}

func TestApprovalPolicies(t *testing.T) {
	otherConfig := quietTuning()
	otherConfig.Spec.Configs.Names = []string{"virt-higher-density"}
	tests := []struct {
		name             string
		distinctApprover bool
		author           string // of the config's spec
		policies         fakePolicies
		plan             func() *plan.Result
		halted           bool // a halt on the worker pool names the config
		phase            v1alpha1.ConfigPhase
		reason           string
		message          string
		approvedBy       string
		events           []string
	}{
		{name: "(new) --a policy approves--> InProgress", author: "alice", policies: fakePolicies{quietTuning()}, plan: deschedulerPlan,
			phase: v1alpha1.PhaseInProgress, reason: "Approved", approvedBy: "policy/quiet-tuning (set by carol)",
			events: []string{"Normal Approved Plan " + deschedulerPlan().Status.PlanHash + " approved by policy/quiet-tuning (set by carol)", "Normal InProgress"}},
		{name: "(new) --no policy covers it--> ReviewRequired", author: "alice", policies: fakePolicies{otherConfig}, plan: deschedulerPlan,
			phase: v1alpha1.PhaseReviewRequired, reason: "ReviewRequired", message: status.MessageReview, events: []string{"Normal ReviewRequired"}},
		{name: "(new) --beyond the bounds--> ReviewRequired naming the policy and the bound", author: "alice", policies: fakePolicies{quietTuning()}, plan: psiRebootPlan,
			phase: v1alpha1.PhaseReviewRequired, reason: "PolicyBoundExceeded",
			message: "impact High; policy 'quiet-tuning' allows at most Low; reboots pool worker; policy 'quiet-tuning' allows no reboot. " + status.MessageReview,
			events:  []string{"Normal ReviewRequired"}},
		{name: "(new) --four eyes: the policy's author changed the spec--> ReviewRequired", distinctApprover: true, author: "carol", policies: fakePolicies{quietTuning()}, plan: deschedulerPlan,
			phase: v1alpha1.PhaseReviewRequired, reason: "PolicyBoundExceeded",
			message: `user "carol", who set policy 'quiet-tuning', made the last spec change, and this server requires a second person (--require-distinct-approver)`},
		{name: "(edited) --its rollout is halted on a pool--> ReviewRequired: no policy resumes a halt", author: "alice", policies: fakePolicies{quietTuning()}, plan: deschedulerPlan,
			halted: true, phase: v1alpha1.PhaseReviewRequired, reason: "ReviewRequired",
			message: "The rollout of this config's approved plan is halted on MachineConfigPool 'worker' (gate nodeBack): only an approver's approval resumes it, no approval policy nor action Apply. " + status.MessageReview},
		{name: "(new) --a halt names another config--> the policy approves", author: "alice", policies: fakePolicies{quietTuning()}, plan: deschedulerPlan,
			phase: v1alpha1.PhaseInProgress, reason: "Approved", approvedBy: "policy/quiet-tuning (set by carol)"},
		{name: "(new) --four eyes: another user changed the spec--> InProgress", distinctApprover: true, author: "alice", policies: fakePolicies{quietTuning()}, plan: deschedulerPlan,
			phase: v1alpha1.PhaseInProgress, reason: "Approved", approvedBy: "policy/quiet-tuning (set by carol)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := policiesHarness(t, tt.distinctApprover)
			h.c.approvals.PolicyLister = tt.policies
			pool := workerPool{}.obj()
			named := "another-config"
			if tt.halted {
				named = configName
			}
			pool.SetAnnotations(map[string]string{machineconfig.HaltAnnotation: machineconfig.PoolHalt{Gate: "nodeBack", Message: "m", Approvals: map[string]int64{named: 1}}.Encode()})
			h.cluster.put(pool)
			h.create(dryRun, tt.author)
			h.planner.result = tt.plan()
			h.reconcile()
			if h.err != nil {
				t.Fatalf("reconcile: %v", h.err)
			}
			cfg := h.get()
			if cfg.Status.Phase != tt.phase {
				t.Fatalf("phase %s, want %s (%s)", cfg.Status.Phase, tt.phase, status.PhaseMessage(&cfg.Status))
			}
			c := findCondition(cfg, tt.phase)
			if c.Reason != tt.reason || !strings.Contains(c.Message, tt.message) {
				t.Errorf("condition %s: %q, want %s: …%q…", c.Reason, c.Message, tt.reason, tt.message)
			}
			var by string
			if a := cfg.Status.Approval; a != nil {
				by = a.ApprovedBy
				if a.PlanHash != h.planner.result.Status.PlanHash || a.Generation != cfg.Generation || a.UID != cfg.UID {
					t.Errorf("approval %+v does not bind the plan %s, generation %d, UID %s", a, h.planner.result.Status.PlanHash, cfg.Generation, cfg.UID)
				}
				if err := approval.Check(cfg); err != nil {
					t.Errorf("the policy's approval fails the check before every write: %v", err)
				}
			}
			if by != tt.approvedBy {
				t.Errorf("approvedBy %q, want %q", by, tt.approvedBy)
			}
			if tt.events != nil {
				got := h.events()
				for i, want := range tt.events {
					if i >= len(got) || !strings.HasPrefix(got[i], want) {
						t.Fatalf("events %q, want %q", got, tt.events)
					}
				}
			}
		})
	}
}

// A policy's approval is written like a person's: the items it approved,
// and nothing once the spec changed after it. An editor's spec change
// while the plan waits is no failure: the policy's approval lapses and the
// plan of the new spec goes to the policies like any draft. A person's
// approval of the earlier spec fails as before (ApprovalMismatch).
func TestPolicyApprovalIsCheckedBeforeEveryWrite(t *testing.T) {
	tests := []struct {
		name       string
		human      bool
		newPlan    func() *plan.Result
		phase      v1alpha1.ConfigPhase
		reason     string
		message    string
		approvedBy string
		then       []string // written by the reconcile after
	}{
		{name: "within the bounds: approved anew by the policy for the new spec, then written", newPlan: deschedulerPlan,
			phase: v1alpha1.PhaseInProgress, reason: "Approved", approvedBy: "policy/quiet-tuning (set by carol)", then: []string{descheduler}},
		{name: "beyond the bounds: back to review, saying what happened and the bound", newPlan: psiRebootPlan,
			phase: v1alpha1.PhaseReviewRequired, reason: "PolicyBoundExceeded",
			message: "the spec changed (generation 1 → 2) after policy/quiet-tuning (set by carol) approved plan " + v1alpha1.ShortHash(deschedulerPlan().Status.PlanHash) +
				", before items '" + descheduler + "' were written; nothing further was written. plan " + v1alpha1.ShortHash(psiRebootPlan().Status.PlanHash) +
				" is beyond what the approval policies covering it approve: impact High; policy 'quiet-tuning' allows at most Low"},
		{name: "a person's approval: Failed, ApprovalMismatch", human: true, newPlan: deschedulerPlan,
			phase: v1alpha1.PhaseFailed, reason: "ApprovalMismatch", message: "the spec changed after plan"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := policiesHarness(t, false)
			h.c.approvals.PolicyLister = fakePolicies{quietTuning()}
			h.create(dryRun, "alice")
			h.planner.result = deschedulerPlan()
			if tt.human {
				h.c.approvals.PolicyLister = fakePolicies{}
				h.mustReconcile(v1alpha1.PhaseReviewRequired)
				h.approve("bob")
				h.c.approvals.PolicyLister = fakePolicies{quietTuning()}
			} else {
				h.mustReconcile(v1alpha1.PhaseInProgress)
			}
			// An editor changes the spec before the approved plan is written.
			h.edit(true, "alice", func(cfg *v1alpha1.VirtPlatformConfig) { cfg.Spec.FailurePolicy = v1alpha1.FailurePolicyContinue })
			h.planner.result = tt.newPlan()
			h.reconcile()
			if h.err != nil {
				t.Fatalf("reconcile: %v", h.err)
			}
			if len(h.planner.applied) != 0 {
				t.Fatalf("applied %v after the spec changed, before a new approval", h.planner.applied)
			}
			cfg := h.get()
			if cfg.Status.Phase != tt.phase {
				t.Fatalf("phase %s, want %s (%s)", cfg.Status.Phase, tt.phase, status.PhaseMessage(&cfg.Status))
			}
			c := findCondition(cfg, tt.phase)
			if c.Reason != tt.reason || !strings.Contains(c.Message, tt.message) {
				t.Errorf("condition %s: %q, want %s: …%q…", c.Reason, c.Message, tt.reason, tt.message)
			}
			var by string
			if a := cfg.Status.Approval; a != nil && a.Generation == cfg.Generation {
				by = a.ApprovedBy
			}
			if by != tt.approvedBy {
				t.Errorf("approval of the new spec by %q, want %q", by, tt.approvedBy)
			}
			h.reconcile()
			if strings.Join(h.planner.applied, ",") != strings.Join(tt.then, ",") {
				t.Errorf("then applied %v, want %v", h.planner.applied, tt.then)
			}
		})
	}
}

func findCondition(cfg *v1alpha1.VirtPlatformConfig, phase v1alpha1.ConfigPhase) metav1.Condition {
	for _, c := range cfg.Status.Conditions {
		if c.Type == string(phase) {
			return c
		}
	}
	return metav1.Condition{}
}

// What is not yet written follows the current policies: a policy's
// approval holds before a write only while that policy, unchanged, still
// covers the config; otherwise nothing is written, the policies are asked
// again, and what is left to a person names the policy and what changed.
// A person's approval does not depend on any policy.
func TestPolicyApprovalLapses(t *testing.T) {
	changed := func(mutate func(*v1alpha1.ApprovalPolicySpec)) fakePolicies {
		p := quietTuning()
		p.UID, p.Generation = "policy-uid", 2
		mutate(&p.Spec)
		return fakePolicies{p}
	}
	tests := []struct {
		name     string
		human    bool         // a person approved, not the policy
		after    fakePolicies // the policies after the approval, before the write
		phase    v1alpha1.ConfigPhase
		reason   string
		messages []string
		// applied: the items written by the reconcile after the change, and
		// by the one after that.
		applied, then []string
		// generation of the policy in the approval that holds at the end.
		generation int64
	}{
		{name: "policy deleted: nothing written, review naming it", after: fakePolicies{},
			phase: v1alpha1.PhaseReviewRequired, reason: "PolicyApprovalLapsed",
			messages: []string{"approval policy 'quiet-tuning' was deleted before items '" + descheduler + "' were written; nothing further was written. " + status.MessageReview}},
		{name: "policy deleted and created again: another policy, which approves anew", after: func() fakePolicies {
			p := quietTuning()
			p.UID, p.Generation = "other-uid", 1
			return fakePolicies{p}
		}(), phase: v1alpha1.PhaseInProgress, reason: "Approved", then: []string{descheduler}, generation: 1},
		{name: "bounds changed, plan still within: approved anew with the new generation, then written",
			after: changed(func(s *v1alpha1.ApprovalPolicySpec) { s.Bounds.MaxImpact = v1alpha1.ImpactMedium }),
			phase: v1alpha1.PhaseInProgress, reason: "Approved", then: []string{descheduler}, generation: 2},
		{name: "bounds changed, plan beyond them: nothing written, review naming the policy, the change and the bound",
			after: changed(func(s *v1alpha1.ApprovalPolicySpec) {
				s.Bounds.Items = []v1alpha1.PolicyItem{{Kind: "HyperConverged"}}
			}),
			phase: v1alpha1.PhaseReviewRequired, reason: "PolicyBoundExceeded",
			messages: []string{"approval policy 'quiet-tuning' changed (generation 1 → 2) before items '" + descheduler + "' were written; nothing further was written. ",
				"policy 'quiet-tuning' allows only HyperConverged"}},
		{name: "no longer covers the config: nothing written, review naming it",
			after: changed(func(s *v1alpha1.ApprovalPolicySpec) { s.Configs.Names = []string{"virt-higher-density"} }),
			phase: v1alpha1.PhaseReviewRequired, reason: "PolicyApprovalLapsed",
			messages: []string{"approval policy 'quiet-tuning' no longer covers the config before items '" + descheduler + "' were written; nothing further was written."}},
		{name: "a person's approval: the policy deleted changes nothing", human: true, after: fakePolicies{},
			phase: v1alpha1.PhaseCompleted, applied: []string{descheduler}},
		{name: "a person's approval: the policy changed changes nothing", human: true,
			after: changed(func(s *v1alpha1.ApprovalPolicySpec) { s.Bounds.Items = []v1alpha1.PolicyItem{{Kind: "HyperConverged"}} }),
			phase: v1alpha1.PhaseCompleted, applied: []string{descheduler}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := policiesHarness(t, false)
			approving := quietTuning()
			approving.UID, approving.Generation = "policy-uid", 1
			h.c.approvals.PolicyLister = fakePolicies{approving}
			h.create(dryRun, "alice")
			h.planner.result = deschedulerPlan()
			if tt.human {
				h.c.approvals.PolicyLister = fakePolicies{}
				h.mustReconcile(v1alpha1.PhaseReviewRequired)
				h.approve("bob")
				h.c.approvals.PolicyLister = fakePolicies{approving}
			} else {
				h.mustReconcile(v1alpha1.PhaseInProgress)
				if p := h.get().Status.Approval.Policy; p == nil || *p != (v1alpha1.ApprovalPolicyRef{Name: "quiet-tuning", UID: "policy-uid", Generation: 1}) {
					t.Fatalf("the approval records the policy as %+v, want quiet-tuning, its UID and generation 1", p)
				}
			}
			h.forget()
			h.c.approvals.PolicyLister = tt.after
			h.reconcile()
			if h.err != nil {
				t.Fatalf("reconcile: %v", h.err)
			}
			if strings.Join(h.planner.applied, ",") != strings.Join(tt.applied, ",") {
				t.Fatalf("applied %v, want %v", h.planner.applied, tt.applied)
			}
			cfg := h.get()
			if cfg.Status.Phase != tt.phase {
				t.Fatalf("phase %s, want %s (%s)", cfg.Status.Phase, tt.phase, status.PhaseMessage(&cfg.Status))
			}
			c := findCondition(cfg, tt.phase)
			if tt.reason != "" && c.Reason != tt.reason {
				t.Errorf("reason %s, want %s (%s)", c.Reason, tt.reason, c.Message)
			}
			for _, m := range tt.messages {
				if !strings.Contains(c.Message, m) {
					t.Errorf("message %q, want …%q…", c.Message, m)
				}
			}
			if tt.phase == v1alpha1.PhaseReviewRequired {
				if cfg.Status.Approval != nil {
					t.Errorf("the lapsed approval is still recorded: %+v", cfg.Status.Approval)
				}
				// Looked at again, the config still says why it waits.
				h.reconcile()
				if got := findCondition(h.get(), tt.phase); got.Message != c.Message {
					t.Errorf("looked at again, the message is %q, was %q", got.Message, c.Message)
				}
				if len(h.planner.applied) != 0 {
					t.Errorf("applied %v", h.planner.applied)
				}
			}
			if tt.generation != 0 {
				if p := cfg.Status.Approval.Policy; p == nil || p.Generation != tt.generation || p.UID != tt.after[0].UID {
					t.Errorf("approved anew as %+v, want generation %d, UID %s", p, tt.generation, tt.after[0].UID)
				}
				h.reconcile()
				if strings.Join(h.planner.applied, ",") != strings.Join(tt.then, ",") {
					t.Errorf("then applied %v, want %v", h.planner.applied, tt.then)
				}
			}
		})
	}
}

// A policy approves only what its author may still approve: before each
// approval the author, with the groups and extra recorded when they set
// the spec, is reviewed for create virtplatformconfigs/approve on the
// config. Denied, or not reviewable, the config asks a person and says
// why; a review that failed is tried again.
func TestPolicyAuthorIsReviewedBeforeEachApproval(t *testing.T) {
	carols := func() *v1alpha1.ApprovalPolicy {
		p := quietTuning()
		p.Status.AuthorGroups = []string{"platform-team", "system:authenticated"}
		p.Status.AuthorExtra = map[string][]string{"scopes": {"approve"}}
		return p
	}
	daves := func() *v1alpha1.ApprovalPolicy {
		p := quietTuning()
		p.Name, p.Status = "z-also-quiet", v1alpha1.ApprovalPolicyStatus{Author: "dave"}
		return p
	}
	revoked := `user "carol", who set policy 'quiet-tuning', may no longer create virtplatformconfigs/approve on VirtPlatformConfig '` + configName +
		`', so the policy approves nothing in their name until someone who may sets its spec again. ` + status.MessageReview
	tests := []struct {
		name       string
		authz      authorizer.Authorizer // nil: none
		policies   fakePolicies
		phase      v1alpha1.ConfigPhase
		message    string
		approvedBy string
		requeue    time.Duration
		noGroups   bool // the author's groups are not recorded
	}{
		{name: "the author may approve: approved", authz: &fakeAuthorizer{}, policies: fakePolicies{carols()},
			phase: v1alpha1.PhaseInProgress, approvedBy: "policy/quiet-tuning (set by carol)"},
		{name: "the author lost the approve permission: a person, told why", authz: &fakeAuthorizer{deny: map[string]bool{"carol": true}},
			policies: fakePolicies{carols()}, phase: v1alpha1.PhaseReviewRequired, message: revoked},
		{name: "the review fails: held, not approved, and tried again", authz: &fakeAuthorizer{err: errors.New("subjectaccessreviews: connection refused")},
			policies: fakePolicies{carols()}, phase: v1alpha1.PhaseReviewRequired, requeue: authorRecheck,
			message: `policy 'quiet-tuning' approves nothing until the approve permission of its author "carol" can be reviewed (subjectaccessreviews: connection refused); it is tried again in 30s. ` + status.MessageReview},
		{name: "no authorizer: no policy approves", policies: fakePolicies{carols()}, phase: v1alpha1.PhaseReviewRequired,
			message: `policy 'quiet-tuning' approves nothing: this server cannot review whether its author "carol" may still approve the config`},
		{name: "a policy set before groups were recorded, the author denied without them: says so",
			authz: &fakeAuthorizer{deny: map[string]bool{"carol": true}}, policies: fakePolicies{quietTuning()}, phase: v1alpha1.PhaseReviewRequired, noGroups: true,
			message: `may no longer create virtplatformconfigs/approve on VirtPlatformConfig '` + configName + `' (no groups of theirs are recorded: the policy was set before they were), so the policy approves nothing`},
		{name: "the first policy's author lost it: the next policy, whose author has it, approves",
			authz: &fakeAuthorizer{deny: map[string]bool{"carol": true}}, policies: fakePolicies{daves(), carols()},
			phase: v1alpha1.PhaseInProgress, approvedBy: "policy/z-also-quiet (set by dave)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, "v1", false)
			h.c.approvals.PolicyLister = tt.policies
			h.c.approvals.PolicyAuthorizer = tt.authz
			h.create(dryRun, "alice")
			h.planner.result = deschedulerPlan()
			h.reconcile()
			if h.err != nil {
				t.Fatalf("reconcile: %v", h.err)
			}
			cfg := h.get()
			if cfg.Status.Phase != tt.phase {
				t.Fatalf("phase %s, want %s (%s)", cfg.Status.Phase, tt.phase, status.PhaseMessage(&cfg.Status))
			}
			var by string
			if a := cfg.Status.Approval; a != nil {
				by = a.ApprovedBy
			}
			if by != tt.approvedBy {
				t.Errorf("approvedBy %q, want %q", by, tt.approvedBy)
			}
			if tt.message != "" {
				c := findCondition(cfg, tt.phase)
				if c.Reason != "PolicyBoundExceeded" || !strings.Contains(c.Message, tt.message) {
					t.Errorf("condition %s: %q, want PolicyBoundExceeded: …%q", c.Reason, c.Message, tt.message)
				}
			}
			if len(h.planner.applied) != 0 {
				t.Errorf("applied %v: an approval is written by a later reconcile", h.planner.applied)
			}
			if tt.requeue != 0 && (h.requeue <= 0 || h.requeue > tt.requeue) {
				t.Errorf("requeue %v, want within %v", h.requeue, tt.requeue)
			}
			fake, ok := tt.authz.(*fakeAuthorizer)
			if !ok || tt.noGroups {
				return
			}
			a := fake.asked[0]
			u := a.GetUser()
			if u.GetName() != "carol" || strings.Join(u.GetGroups(), ",") != "platform-team,system:authenticated" || u.GetExtra()["scopes"][0] != "approve" ||
				a.GetVerb() != "create" || a.GetAPIGroup() != "advisor.kubevirt.io" || a.GetResource() != "virtplatformconfigs" ||
				a.GetSubresource() != "approve" || a.GetName() != configName || !a.IsResourceRequest() {
				t.Errorf("reviewed %s %+v, want carol with her groups and extra, create virtplatformconfigs/approve on %s", u.GetName(), a, configName)
			}
		})
	}
}

// givenPSIApprovedUnderNight approves a PSI plan that reboots pool
// worker, at 10:00 UTC, under two Allow windows: 'night' (22:00 for an
// hour) and 'anytime' (always open). A policy trusting only 'night'
// approves it, or, when human, an admin (no policy covers it).
func givenPSIApprovedUnderNight(t *testing.T, human bool) *harness {
	t.Helper()
	anytime, err := maintenance.New("anytime", maintenance.Spec{PoolNames: []string{machineconfig.WorkerPool}, Schedule: "* * * * *", Duration: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	windows := fakeWindows{nightly(t, maintenance.Allow, "0 22 * * *", time.Hour), anytime}
	trustsNight := quietTuning()
	trustsNight.UID, trustsNight.Generation = "policy-uid", 1
	trustsNight.Spec.Bounds.MaxImpact, trustsNight.Spec.Bounds.Reboots = v1alpha1.ImpactHigh, v1alpha1.RebootBoundInWindow
	trustsNight.Spec.TrustedWindows = &v1alpha1.PolicyWindows{Names: []string{"night"}}
	h := policiesHarness(t, false)
	h.c.approvals.windows = windows
	h.setWindows(windows)
	h.cluster.put(workerPool{}.obj())
	h.c.approvals.PolicyLister = fakePolicies{trustsNight}
	if human {
		h.c.approvals.PolicyLister = fakePolicies{}
	}
	h.create(dryRun, "alice")
	h.planner.result = psiRebootPlan()
	if human {
		h.mustReconcile(v1alpha1.PhaseReviewRequired)
		h.approve("admin")
	} else {
		h.mustReconcile(v1alpha1.PhaseInProgress)
	}
	return h
}

// A plan a policy approved into the windows it trusts is written only in
// one of them: an Allow window the policy does not trust, open now, does
// not let the write in. A person's approval is gated by every window.
func TestPolicyApprovedWriteWaitsForATrustedWindow(t *testing.T) {
	tests := []struct {
		name    string
		human   bool
		applied []string
		message string
	}{
		{name: "approved by a policy trusting 'night': waits for it, though 'anytime' is open",
			message: "Waiting: MachineConfigPool 'worker': window 'night' opens"},
		{name: "approved by a person: written now, in 'anytime'", human: true, applied: []string{psi}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := givenPSIApprovedUnderNight(t, tt.human)
			if !tt.human {
				if by := h.get().Status.Approval.ApprovedBy; by != "policy/quiet-tuning (set by carol)" {
					t.Fatalf("approved by %q", by)
				}
			}
			h.mustReconcile(v1alpha1.PhaseInProgress)
			if strings.Join(h.planner.applied, ",") != strings.Join(tt.applied, ",") {
				t.Fatalf("applied %v, want %v", h.planner.applied, tt.applied)
			}
			if it := psiItemOf(h); !strings.Contains(it.Message, tt.message) {
				t.Errorf("item message %q, want …%q…", it.Message, tt.message)
			}
		})
	}
}

// A plan a policy approved into the window it trusts rolls out only
// while that window is open: when it closes mid-rollout the pool is
// paused, though another Allow window, one the policy does not trust, is
// open. A person's approval goes on in any open window.
func TestPolicyApprovedRolloutPausesWhenItsTrustedWindowCloses(t *testing.T) {
	tests := []struct {
		name       string
		human      bool
		wantPauses []bool
	}{
		{name: "approved by a policy trusting 'night': paused at its close", wantPauses: []bool{true}},
		{name: "approved by a person: goes on in 'anytime'", human: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := givenPSIApprovedUnderNight(t, tt.human)
			h.clock.SetTime(time.Date(2026, 11, 20, 22, 0, 1, 0, time.UTC))
			h.mustReconcile(v1alpha1.PhaseInProgress)
			if len(h.planner.applied) != 1 {
				t.Fatalf("in 'night': applied %v, want the PSI item", h.planner.applied)
			}
			h.cluster.put(workerPool{updating: true, updated: 1}.obj())
			h.mustReconcile(v1alpha1.PhaseInProgress)

			h.clock.SetTime(time.Date(2026, 11, 20, 23, 0, 1, 0, time.UTC))
			h.mustReconcile(v1alpha1.PhaseInProgress)
			h.syncPools()
			h.mustReconcile(v1alpha1.PhaseInProgress)
			if !slices.Equal(h.cluster.pauses, tt.wantPauses) {
				t.Fatalf("pauses %v, want %v", h.cluster.pauses, tt.wantPauses)
			}
			if it := psiItemOf(h); tt.wantPauses != nil && !strings.Contains(it.Message, "maintenance window closed") {
				t.Errorf("item message %q, want the close of 'night'", it.Message)
			}
		})
	}
}
