package controller

// Approval policies (docs/security.md, "Approval policies"): a plan that
// would wait for a review is first shown to the ApprovalPolicies that
// cover its config. The first that approves it records an approval as a
// person's approval is recorded (approval.Record: plan hash, items hash,
// generation, UID), in the name "policy/<name> (set by <author>)"; the
// writes then pass every check a human approval passes. When none
// approves, the config waits in ReviewRequired with a condition naming
// each policy and the bound its plan exceeds. The decision is
// pkg/approvalpolicy's; this file reads its facts and records it.

import (
	"context"
	"fmt"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/clock"

	"github.com/kubevirt/virt-advisor/pkg/apis/advisor"
	"github.com/kubevirt/virt-advisor/pkg/apis/advisor/v1alpha1"
	"github.com/kubevirt/virt-advisor/pkg/approval"
	policies "github.com/kubevirt/virt-advisor/pkg/approvalpolicy"
	"github.com/kubevirt/virt-advisor/pkg/machineconfig"
	"github.com/kubevirt/virt-advisor/pkg/maintenance"
	"github.com/kubevirt/virt-advisor/pkg/plan"
	"github.com/kubevirt/virt-advisor/pkg/profiles"
	"github.com/kubevirt/virt-advisor/pkg/status"
)

// ApprovalPolicies is where the controller finds the approval policies;
// the zero value: none, every plan waits for a person.
type ApprovalPolicies struct {
	// PolicyLister lists the policies (the generated lister).
	PolicyLister interface {
		List(selector labels.Selector) ([]*v1alpha1.ApprovalPolicy, error)
	}
	// PolicyInformer, when set, tells of changed policies: the configs
	// are looked at again.
	PolicyInformer cache.SharedInformer
	// PolicyAuthorizer reviews, before each approval a policy makes, that
	// its author (status.author, authorGroups, authorExtra) may still
	// create virtplatformconfigs/approve on the config: the server's
	// authorizer, which asks the cluster (SubjectAccessReviews). nil: no
	// policy approves.
	PolicyAuthorizer authorizer.Authorizer
}

// approvals decides on approvals: a policy's (review), action Apply's
// (standing), and before every write whether the approval still holds.
type approvals struct {
	ApprovalPolicies
	windows  maintenance.Lister
	cluster  profiles.Cluster
	clock    clock.Clock
	distinct bool // --require-distinct-approver
	// clusterName is this cluster's name on a fleet's hub
	// (--cluster-name): which plan hash of a delegated approval is ours.
	clusterName string
}

// authorRecheck is how soon a config whose policy's author could not be
// reviewed is looked at again.
const authorRecheck = 30 * time.Second

// policyMetrics is what a Metrics recorder may also count.
type policyMetrics interface {
	// PolicyApproved counts an approval made by policy.
	PolicyApproved(policy string)
}

// review decides what the plan res of cfg, which has changes and no
// standing approval of its own, needs: a policy's approval, or a person.
// lapse, when not empty, says why a policy's approval of an earlier plan
// of this spec lapsed (lapseNote); it heads the message of a review.
func (ap *approvals) review(ctx context.Context, cfg *v1alpha1.VirtPlatformConfig, res *plan.Result, now metav1.Time, lapse string) (time.Duration, error) {
	st := &cfg.Status
	st.Items = keepTransitionTimes(st.Items, res.StatusItems(now))
	reason, head := "ReviewRequired", ""
	if lapse != "" {
		reason, head = policies.LapsedReason, lapse+" "
	}
	if st.Abort != nil {
		// An abort is ended by a person: no policy approves the plan
		// after it, or an editor's spec change would end it.
		status.SetPhase(st, v1alpha1.PhaseReviewRequired, reason, withHoldNote(cfg, head+abortedNoPolicy(st.Abort)+status.MessageReview))
		return 0, nil
	}
	if msg := ap.haltedNoPolicy(ctx, cfg); msg != "" {
		status.SetPhase(st, v1alpha1.PhaseReviewRequired, reason, withHoldNote(cfg, head+msg+status.MessageReview))
		return 0, nil
	}
	approved, refused, recheck, err := ap.askPolicies(ctx, cfg, res)
	if err != nil {
		status.SetPhase(st, v1alpha1.PhaseReviewRequired, reason, withHoldNote(cfg, head+status.MessageReview))
		return 0, err
	}
	if approved != nil {
		record := v1alpha1.ApprovalRecord{PlanHash: res.Status.PlanHash, ApprovedBy: approved.by, ApprovedAt: now, Generation: cfg.Generation, UID: cfg.UID,
			Policy: approved.ref}
		return 0, approval.Record(st, res, record)
	}
	if len(refused) == 0 {
		status.SetPhase(st, v1alpha1.PhaseReviewRequired, reason, withHoldNote(cfg, head+status.MessageReview))
		return 0, nil
	}
	var why []string
	requeue := recheck
	for _, d := range refused {
		why = append(why, d.Message())
		if !d.OpensAt.IsZero() {
			if in := d.OpensAt.Sub(ap.clock.Now()); in > 0 && (requeue == 0 || in < requeue) {
				requeue = in
			}
		}
	}
	status.SetPhase(st, v1alpha1.PhaseReviewRequired, policies.RefusedReason, withHoldNote(cfg, head+fmt.Sprintf(
		"plan %s is beyond what the approval policies covering it approve: %s. %s",
		v1alpha1.ShortHash(res.Status.PlanHash), strings.Join(why, "; "), status.MessageReview)))
	return requeue, nil
}

// abortedNoPolicy says why no approval policy was asked.
func abortedNoPolicy(a *v1alpha1.AbortRecord) string {
	return fmt.Sprintf("Plan %s was aborted by %s: approval policies approve no plan of this config until an approver approves one. ",
		v1alpha1.ShortHash(a.PlanHash), a.AbortedBy)
}

// haltedNoPolicy says, when a gate halted a rollout of cfg's approved
// plan, that only a person's approval resumes it: no policy and no
// standing approval (action Apply) approves a plan of it, or an editor's
// spec change would end the halt. "" when no halt names cfg; a pool list
// that fails counts as a halt (looked at again on the next change).
func (ap *approvals) haltedNoPolicy(ctx context.Context, cfg *v1alpha1.VirtPlatformConfig) string {
	pools, err := ap.cluster.List(ctx, machineconfig.MachineConfigPoolGVK)
	if err != nil {
		return fmt.Sprintf("The MachineConfigPools cannot be read to tell whether a rollout of this config is halted (%v): approval policies approve no plan of it meanwhile. ", err)
	}
	var halted []string
	for i := range pools {
		if h := machineconfig.ReadHalt(&pools[i]); h != nil {
			if _, named := h.Approvals[cfg.Name]; named {
				halted = append(halted, fmt.Sprintf("'%s' (gate %s)", pools[i].GetName(), h.Gate))
			}
		}
	}
	if len(halted) == 0 {
		return ""
	}
	return fmt.Sprintf("The rollout of this config's approved plan is halted on MachineConfigPool %s: only an approver's approval resumes it, no approval policy nor action Apply. ",
		strings.Join(halted, ", "))
}

// policyApproval is the policy that approved a plan, and the name it is recorded by.
type policyApproval struct {
	policies.Decision
	by  string
	ref *v1alpha1.ApprovalPolicyRef
}

// askPolicies returns the policy that approves res, or the refusals of
// those covering cfg; recheck, when not 0, is how soon to ask again
// because an author could not be reviewed.
func (ap *approvals) askPolicies(ctx context.Context, cfg *v1alpha1.VirtPlatformConfig, res *plan.Result) (*policyApproval, []policies.Decision, time.Duration, error) {
	if ap.PolicyLister == nil {
		return nil, nil, 0, nil
	}
	all, err := ap.PolicyLister.List(everything)
	if err != nil {
		return nil, nil, 0, fmt.Errorf("listing approval policies: %w", err)
	}
	var covering []*v1alpha1.ApprovalPolicy
	for _, p := range all {
		if policies.Covers(p, cfg.Name, cfg.Labels) {
			covering = append(covering, p)
		}
	}
	if len(covering) == 0 {
		return nil, nil, 0, nil
	}
	facts, err := ap.policyFacts(ctx, cfg, res)
	if err != nil {
		return nil, nil, 0, err
	}
	var refused []policies.Decision
	var recheck time.Duration
	for len(covering) > 0 {
		approved, more := policies.Decide(covering, cfg, &res.Status, facts)
		refused = append(refused, more...)
		if approved == nil {
			return nil, refused, recheck, nil
		}
		p := policyNamed(covering, approved.Policy)
		denied, retry := ap.authorMayApprove(ctx, p, cfg.Name)
		if denied == "" {
			return &policyApproval{Decision: *approved, by: policies.ApprovedBy(p), ref: policies.Ref(p)}, refused, 0, nil
		}
		// The author may no longer approve (or could not be asked): the
		// policy approves nothing in their name; the next one is asked.
		refused = append(refused, policies.Decision{Policy: p.Name, Exceeded: []string{denied}})
		if retry {
			recheck = authorRecheck
		}
		covering = policiesAfter(covering, p.Name)
	}
	return nil, refused, recheck, nil
}

// policyNamed is the policy of that name among ps.
func policyNamed(ps []*v1alpha1.ApprovalPolicy, name string) *v1alpha1.ApprovalPolicy {
	for _, p := range ps {
		if p.Name == name {
			return p
		}
	}
	return nil
}

// policiesAfter are the policies of ps after name in name order: Decide
// asked the ones before and they refused.
func policiesAfter(ps []*v1alpha1.ApprovalPolicy, name string) []*v1alpha1.ApprovalPolicy {
	var out []*v1alpha1.ApprovalPolicy
	for _, p := range ps {
		if p.Name > name {
			out = append(out, p)
		}
	}
	return out
}

// authorMayApprove reviews, as the approve subresource reviews its caller,
// that the author of p (the user, groups and extra recorded when the spec
// was set) may still create virtplatformconfigs/approve on the config: a
// policy approves only what its author still may. It returns why not, ""
// when they may; retry when the review itself failed, which holds the
// approval as a denial does.
func (ap *approvals) authorMayApprove(ctx context.Context, p *v1alpha1.ApprovalPolicy, config string) (why string, retry bool) {
	st := p.Status
	if ap.PolicyAuthorizer == nil {
		return fmt.Sprintf("policy '%s' approves nothing: this server cannot review whether its author %q may still approve the config", p.Name, st.Author), false
	}
	decision, reason, err := ap.PolicyAuthorizer.Authorize(ctx, authorizer.AttributesRecord{
		User:            &user.DefaultInfo{Name: st.Author, Groups: st.AuthorGroups, Extra: st.AuthorExtra},
		Verb:            "create",
		APIGroup:        advisor.GroupName,
		APIVersion:      "*",
		Resource:        "virtplatformconfigs",
		Subresource:     "approve",
		Name:            config,
		ResourceRequest: true,
	})
	switch {
	case decision == authorizer.DecisionAllow:
		return "", false
	case err != nil:
		return fmt.Sprintf("policy '%s' approves nothing until the approve permission of its author %q can be reviewed (%v); it is tried again in %s",
			p.Name, st.Author, err, authorRecheck), true
	}
	if reason != "" {
		reason = " (" + reason + ")"
	}
	if len(st.AuthorGroups) == 0 {
		// Every authenticated user has a group: the policy was set before
		// the server recorded them, and is reviewed without.
		reason += " (no groups of theirs are recorded: the policy was set before they were)"
	}
	return fmt.Sprintf("user %q, who set policy '%s', may no longer create virtplatformconfigs/approve on VirtPlatformConfig '%s'%s, so the policy approves nothing in their name until someone who may sets its spec again",
		st.Author, p.Name, config, reason), false
}

// policyFacts reads what the decision depends on: the maintenance windows
// and the labels of the pools the plan drains.
func (ap *approvals) policyFacts(ctx context.Context, cfg *v1alpha1.VirtPlatformConfig, res *plan.Result) (policies.Facts, error) {
	f := policies.Facts{
		Now:                     ap.clock.Now(),
		SpecChangedBy:           cfg.Status.SpecChangedBy,
		RequireDistinctApprover: ap.distinct,
		PoolLabels:              map[string]map[string]string{},
	}
	if ap.windows != nil {
		windows, err := ap.windows.Windows(ctx)
		if err != nil {
			return f, fmt.Errorf("reading maintenance windows: %w", err)
		}
		f.Windows = windows
	}
	for _, it := range res.Status.Items {
		for _, r := range it.Reboots {
			if _, seen := f.PoolLabels[r.Pool]; seen {
				continue
			}
			pool, err := ap.cluster.Get(ctx, machineconfig.MachineConfigPoolGVK, "", r.Pool)
			if err != nil {
				return f, err
			}
			f.PoolLabels[r.Pool] = nil
			if pool != nil {
				f.PoolLabels[r.Pool] = pool.GetLabels()
			}
		}
	}
	return f, nil
}

// lapseEnd ends the sentence that says why a policy's approval lapsed.
const lapseEnd = "nothing further was written."

// policyLapsed is asked before every write of a plan a policy approved,
// after approval.Check: the policy must still be the one that approved it
// (same UID and generation) and still cover the config. Otherwise nothing
// further is written, the approval lapses, and the config goes back to
// review with what changed (the caller asks the policies again at once).
func (ap *approvals) policyLapsed(cfg *v1alpha1.VirtPlatformConfig) (bool, error) {
	a := cfg.Status.Approval
	if _, byPolicy := policies.PolicyOf(a.ApprovedBy); !byPolicy {
		return false, nil
	}
	var current *v1alpha1.ApprovalPolicy
	if ap.PolicyLister != nil {
		all, err := ap.PolicyLister.List(everything)
		if err != nil {
			return false, fmt.Errorf("listing approval policies: %w", err)
		}
		for _, p := range all {
			if a.Policy != nil && p.Name == a.Policy.Name {
				current = p
			}
		}
	}
	what := policies.Lapsed(a, current, cfg.Name, cfg.Labels)
	if what == "" {
		return false, nil
	}
	var unwritten []string
	for i := range cfg.Status.Items {
		if it := &cfg.Status.Items[i]; writePending(it) {
			unwritten = append(unwritten, "'"+it.Name+"'")
		}
	}
	st := &cfg.Status
	st.Approval = nil
	status.SetPhase(st, v1alpha1.PhaseReviewRequired, policies.LapsedReason, fmt.Sprintf("%s before items %s were written; %s",
		what, strings.Join(unwritten, ", "), lapseEnd))
	return true, nil
}

// trustedWindows says, for a plan a policy approved, which Allow windows
// may let its writes in: those the policy trusts (as when it approved);
// nil for any other approval. Another Allow window, open while the
// trusted ones are closed, does not widen the policy's approval.
func (ap *approvals) trustedWindows(cfg *v1alpha1.VirtPlatformConfig) func(*maintenance.Window) bool {
	a := cfg.Status.Approval
	if a == nil || a.Policy == nil || ap.PolicyLister == nil {
		return nil
	}
	if _, byPolicy := policies.PolicyOf(a.ApprovedBy); !byPolicy {
		return nil
	}
	all, err := ap.PolicyLister.List(everything)
	p := policyNamed(all, a.Policy.Name)
	if err != nil || p == nil {
		// policyLapsed stops the write before the gate.
		return nil
	}
	return func(w *maintenance.Window) bool { return policies.Trusts(p, w) }
}

// policyApprovedEarlierSpec is true when cfg's approval was made by a
// policy for an earlier spec of this very object: an editor changed the
// spec while the plan waited.
func policyApprovedEarlierSpec(cfg *v1alpha1.VirtPlatformConfig) bool {
	a := cfg.Status.Approval
	if a == nil || a.Policy == nil || (a.UID != "" && a.UID != cfg.UID) || a.Generation == cfg.Generation {
		return false
	}
	_, byPolicy := policies.PolicyOf(a.ApprovedBy)
	return byPolicy
}

// specChangedLapse ends a policy's approval of an earlier spec before
// anything further is written: nobody is to blame, so the config does not
// fail; it goes back to review, and the caller drafts the plan of the new
// spec, which the policies are asked about like any other.
func specChangedLapse(cfg *v1alpha1.VirtPlatformConfig) {
	st := &cfg.Status
	a := st.Approval
	var unwritten []string
	for i := range st.Items {
		if it := &st.Items[i]; writePending(it) {
			unwritten = append(unwritten, "'"+it.Name+"'")
		}
	}
	st.Approval = nil
	// lapseNote keeps the sentence while the new spec's plan is reviewed.
	st.ObservedGeneration = cfg.Generation
	status.SetPhase(st, v1alpha1.PhaseReviewRequired, policies.LapsedReason, fmt.Sprintf(
		"the spec changed (generation %d → %d) after %s approved plan %s, before items %s were written; %s",
		a.Generation, cfg.Generation, a.ApprovedBy, v1alpha1.ShortHash(a.PlanHash), strings.Join(unwritten, ", "), lapseEnd))
}

// lapseNote is the sentence saying why a policy's approval lapsed, while
// the config still waits for the review of that spec it sent it to; ""
// otherwise. It is read before the draft records the generation.
func lapseNote(cfg *v1alpha1.VirtPlatformConfig) string {
	st := &cfg.Status
	if st.Phase != v1alpha1.PhaseReviewRequired || st.ObservedGeneration != cfg.Generation {
		return ""
	}
	c := meta.FindStatusCondition(st.Conditions, string(v1alpha1.PhaseReviewRequired))
	if c == nil || (c.Reason != policies.LapsedReason && c.Reason != policies.RefusedReason) {
		return ""
	}
	note, _, found := strings.Cut(c.Message, lapseEnd)
	if !found {
		return ""
	}
	return note + lapseEnd
}

// standing approves res as action Apply does: by whoever last
// changed the spec, who needed the approve permission to set Apply. With
// four eyes required it approves nothing and returns false.
func (ap *approvals) standing(cfg *v1alpha1.VirtPlatformConfig, res *plan.Result) (bool, error) {
	if ap.distinct {
		return false, nil
	}
	st := &cfg.Status
	record := v1alpha1.ApprovalRecord{PlanHash: res.Status.PlanHash, ApprovedBy: st.SpecChangedBy, ApprovedAt: metav1.NewTime(ap.clock.Now()), Generation: cfg.Generation, UID: cfg.UID}
	return true, approval.Record(st, res, record)
}

// holds is asked before every write: the approval must still
// cover exactly these items and this spec, whatever happened since
// (restarts, failovers, a spec change, a status nobody approved).
// Otherwise the config fails with what changed and nothing is written.
// An approval by a policy also needs that policy as it approved
// (policyLapsed), and lapses the same way when the spec changed after it
// (specChangedLapse): the config goes back to review, not to Failed.
func (ap *approvals) holds(cfg *v1alpha1.VirtPlatformConfig, item string) (bool, error) {
	err := approval.Check(cfg)
	if err == nil {
		lapsed, err := ap.policyLapsed(cfg)
		return !lapsed && err == nil, err
	}
	if policyApprovedEarlierSpec(cfg) {
		// The plan of the new spec goes to the policies as any draft.
		specChangedLapse(cfg)
		return false, nil
	}
	what := "Nothing was written"
	if item != "" {
		what = fmt.Sprintf("Nothing was written for item '%s'", item)
	}
	// The items are dropped: nobody approved them, so they are neither
	// written, nor watched, nor shown as the plan.
	cfg.Status.Items = nil
	cfg.Status.ObservedGeneration = cfg.Generation
	status.SetPhase(&cfg.Status, v1alpha1.PhaseFailed, "ApprovalMismatch", fmt.Sprintf("%s: %v. %s", what, err, ap.reapproveAdvice(cfg)))
	return false, nil
}

// reapproveAdvice says how to get a plan applied after an approval
// lapsed: the plan of the current spec is approved as any other (a Failed
// config takes approvals); with action Apply, changing the spec again
// approves it too, unless a distinct approver is required.
func (ap *approvals) reapproveAdvice(cfg *v1alpha1.VirtPlatformConfig) string {
	review := fmt.Sprintf("Review the plan of the current spec and approve it: GET .../virtplatformconfigs/%[1]s/plan, then POST its planHash to .../approve (kubectl advisor plan %[1]s, then kubectl advisor approve %[1]s)", cfg.Name)
	if cfg.Spec.Action == v1alpha1.PlanActionApply && !ap.distinct {
		return review + "; or change the spec again: with action Apply, a spec change approves the plan of the new spec."
	}
	return review + "."
}
