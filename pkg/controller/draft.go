package controller

import (
	"context"
	"fmt"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubevirt/virt-advisor/pkg/apis/advisor/v1alpha1"
	"github.com/kubevirt/virt-advisor/pkg/fleet"
	"github.com/kubevirt/virt-advisor/pkg/plan"
	"github.com/kubevirt/virt-advisor/pkg/profiles"
	"github.com/kubevirt/virt-advisor/pkg/status"
)

// drafter is step draft of the phase table: it computes the live plan
// and decides what it needs (nothing, a review, a policy's approval, or
// with action Apply nothing but applying).
type drafter struct {
	planner   Planner
	metrics   Metrics
	version   string
	approvals *approvals
	follow    *follower
	out       outcomes
}

// draft computes the live plan and decides what it needs: nothing
// (Completed, or InProgress while a pool still rolls out), a review
// (ReviewRequired), or, with action Apply, nothing but applying. After an
// abort even a plan with nothing to write needs an approval: only that
// ends the abort's pause.
func (d *drafter) draft(ctx context.Context, cfg *v1alpha1.VirtPlatformConfig, profile profiles.Profile) (time.Duration, error) {
	st := &cfg.Status
	if handled, requeue, err := d.reviewInputDrift(ctx, cfg, profile); handled {
		return requeue, err
	}
	lapse := lapseNote(cfg)
	st.ObservedGeneration = cfg.Generation
	st.OperatorVersion = d.version
	st.DelegatedFleetHash = ""
	if d := cfg.Spec.DelegatedApproval; d != nil {
		// What this draft decides answers that approval.
		st.DelegatedFleetHash = d.FleetHash
	}
	start := d.out.clock.Now()
	res, err := d.planner.Compute(ctx, cfg)
	d.metrics.PlanDuration(cfg.Spec.Profile, d.out.clock.Since(start))
	if err != nil {
		status.SetPhase(st, v1alpha1.PhaseDrafting, "PlanGenerationFailed", fmt.Sprintf("Plan generation failed, will retry: %v", err))
		return 0, err
	}
	if !res.Satisfied() {
		st.Plan = nil
		st.ImpactSeverity = profile.Metadata().Level
		status.FailPrerequisites(st, res.MissingMessage())
		return prerequisiteRetry, nil
	}
	now := metav1.NewTime(d.out.clock.Now())
	st.ImpactSeverity = res.Status.ImpactSeverity
	if st.ImpactSeverity == "" {
		st.ImpactSeverity = v1alpha1.ImpactLow
	}
	st.SourceSnapshotHash = res.SnapshotHash
	if err := summarize(cfg, res); err != nil {
		return 0, err
	}
	switch {
	case !res.HasChanges() && st.Abort == nil:
		d.nothingToApply(ctx, cfg, res, now)
		return 0, nil
	case cfg.Spec.DelegatedApproval != nil:
		return 0, d.approvals.delegated(cfg, res, now)
	case cfg.Spec.Action == v1alpha1.PlanActionApply:
		return 0, d.applyAction(ctx, cfg, res, now)
	}
	return d.approvals.review(ctx, cfg, res, now, lapse)
}

// nothingToApply drafts a plan that changes nothing: Completed, or
// InProgress while a pool still rolls a MachineConfig out (followed, not
// ours to pause).
func (d *drafter) nothingToApply(ctx context.Context, cfg *v1alpha1.VirtPlatformConfig, res *plan.Result, now metav1.Time) {
	st := &cfg.Status
	items := res.StatusItems(now)
	rolling := false
	for i := range items {
		it := &items[i]
		if plan.LeftInPlace(it) {
			it.State = v1alpha1.ItemStateCompleted
			continue
		}
		it.State, it.Message = v1alpha1.ItemStateCompleted, unchangedMessage
		if rollsPools(it) {
			if r := d.follow.rollout(ctx, cfg, it, false); !r.Done {
				it.State, it.Message, rolling = v1alpha1.ItemStateInProgress, r.Message, true
			}
		}
	}
	st.Items = keepTransitionTimes(st.Items, items)
	if rolling {
		status.SetPhase(st, v1alpha1.PhaseInProgress, "RollingOut", "No changes to apply; waiting for the MachineConfigPool rollout to finish")
		return
	}
	recordApplied(st)
	d.out.completed(cfg, status.MessageNoop)
}

// applyAction drafts a plan with changes under action Apply: approved
// (a standing approval), unless this spec's approved plan changed since
// or a distinct approver is required.
func (d *drafter) applyAction(ctx context.Context, cfg *v1alpha1.VirtPlatformConfig, res *plan.Result, now metav1.Time) error {
	st := &cfg.Status
	if msg := d.approvals.haltedNoPolicy(ctx, cfg); msg != "" {
		st.Items = keepTransitionTimes(st.Items, res.StatusItems(now))
		status.SetPhase(st, v1alpha1.PhaseReviewRequired, status.WaitingRolloutHalted, msg+status.MessageReview)
		return nil
	}
	if changed, err := approvedPlanChanged(cfg, res, now); changed || err != nil {
		st.Items = keepTransitionTimes(st.Items, res.StatusItems(now))
		status.SetPhase(st, v1alpha1.PhaseReviewRequired, "InputDependencyDrift", fmt.Sprintf(
			"action Apply approved plan %s of this spec (generation %d); the plan is now different (its prerequisites went away and came back, or an input changed meanwhile), so it is not applied without a review. %s",
			v1alpha1.ShortHash(st.Approval.PlanHash), cfg.Generation, status.MessageReview))
		return err
	}
	approved, err := d.approvals.standing(cfg, res)
	if approved || err != nil {
		return err
	}
	st.Items = keepTransitionTimes(st.Items, res.StatusItems(now))
	status.SetPhase(st, v1alpha1.PhaseReviewRequired, "DistinctApproverRequired", distinctApproverMessage(cfg))
	return nil
}

// reviewInputDrift keeps a config with input dependency drift in review
// until a spec change acknowledges it or the input is reverted.
func (d *drafter) reviewInputDrift(ctx context.Context, cfg *v1alpha1.VirtPlatformConfig, profile profiles.Profile) (handled bool, requeue time.Duration, err error) {
	st := &cfg.Status
	cond := meta.FindStatusCondition(st.Conditions, status.ConditionInputDependencyDrift)
	if cond == nil || cond.Status != metav1.ConditionTrue {
		return false, 0, nil
	}
	if cond.ObservedGeneration != cfg.Generation {
		status.ClearInputDrift(&cfg.Status, cfg.Generation, "Acknowledged", "The spec changed after the input dependency changed: the new plan is used")
		return false, 0, nil
	}
	res, err := d.planner.Compute(ctx, cfg)
	if err != nil {
		return true, 0, err
	}
	if !res.Satisfied() {
		return false, 0, nil
	}
	ch := compare(cfg, profile, res, d.version)
	now := metav1.NewTime(d.out.clock.Now())
	if len(ch.inputs) == 0 {
		status.ClearInputDrift(&cfg.Status, cfg.Generation, "DriftResolved", "The input dependency is back to what was applied")
		st.Items = keepTransitionTimes(st.Items, inSyncItems(res, now))
		if len(ch.drifted) > 0 {
			status.SetPhase(st, v1alpha1.PhaseDrifted, "DriftDetected", fmt.Sprintf("%s: %s", status.MessageDrifted, driftSummary(ch.drifted)))
			return true, 0, nil
		}
		d.out.completed(cfg, status.MessageApplied)
		return true, 0, nil
	}
	msg := "Input dependency changed: " + strings.Join(ch.inputs, "; ")
	st.Items = keepTransitionTimes(st.Items, res.StatusItems(now))
	if cond.Message != msg {
		status.MarkInputDrift(&cfg.Status, cfg.Generation, msg)
	}
	return true, 0, nil
}

// approvedPlanChanged is true when this spec's plan was approved before
// and res is another plan: action Apply approves the plan of a spec, not
// whatever the plan of that spec later becomes (after PrerequisiteFailed
// cleared, say).
func approvedPlanChanged(cfg *v1alpha1.VirtPlatformConfig, res *plan.Result, now metav1.Time) (bool, error) {
	a := cfg.Status.Approval
	if a == nil || a.Generation != cfg.Generation || (a.UID != "" && a.UID != cfg.UID) {
		return false, nil
	}
	h, err := plan.ItemsHash(res.StatusItems(now))
	return h != a.ItemsHash, err
}

func distinctApproverMessage(cfg *v1alpha1.VirtPlatformConfig) string {
	return fmt.Sprintf("action Apply does not approve plans by itself on this server (--require-distinct-approver): a user other than %q must review the plan and approve it (GET .../virtplatformconfigs/%s/plan, then POST its planHash to .../approve)",
		cfg.Status.SpecChangedBy, cfg.Name)
}

// summarize publishes the live plan's summary in status.plan, which a
// fleet's hub reads through the work agent's status feedback.
func summarize(cfg *v1alpha1.VirtPlatformConfig, res *plan.Result) error {
	specHash, err := fleet.SpecHash(cfg.Spec)
	if err != nil {
		return err
	}
	cfg.Status.Plan = fleet.Summarize(res, specHash)
	return nil
}
