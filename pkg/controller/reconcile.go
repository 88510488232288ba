package controller

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/kubevirt/virt-advisor/pkg/apis/advisor"
	"github.com/kubevirt/virt-advisor/pkg/apis/advisor/v1alpha1"
	"github.com/kubevirt/virt-advisor/pkg/approval"
	"github.com/kubevirt/virt-advisor/pkg/cluster"
	"github.com/kubevirt/virt-advisor/pkg/controller/pools"
	"github.com/kubevirt/virt-advisor/pkg/disruption"
	"github.com/kubevirt/virt-advisor/pkg/failpoint"
	"github.com/kubevirt/virt-advisor/pkg/machineconfig"
	"github.com/kubevirt/virt-advisor/pkg/plan"
	"github.com/kubevirt/virt-advisor/pkg/profiles"
	"github.com/kubevirt/virt-advisor/pkg/status"
	"github.com/kubevirt/virt-advisor/pkg/transient"
)

var everything = labels.Everything()

const (
	// applyingMessage marks an item whose write was started but not yet
	// confirmed: after a crash it is written again (server-side apply of
	// the same desired state changes nothing).
	applyingMessage  = status.ItemApplying
	appliedMessage   = "Applied successfully"
	unchangedMessage = "Already in desired state - no changes needed"
	// prerequisiteRetry re-checks missing prerequisites even without a CRD event.
	prerequisiteRetry = 2 * time.Minute
)

// reconcile moves one config through the state machine and writes its
// status when it changed. It returns when to look again, if ever.
func (c *Controller) reconcile(ctx context.Context, name string) (time.Duration, error) {
	cached, err := c.cached(name)
	if errors.Is(err, errCacheBehind) {
		// The event of our last write brings the config back; the watch
		// events seen so far are left for that reconcile.
		return 0, nil
	}
	// The first watch event since the last reconcile, for the drift latency.
	eventAt, _ := c.events.take(name)
	objects := c.objects.take(name)
	if apierrors.IsNotFound(err) {
		c.Watches.Forget(name)
		c.ownWrites.Delete(name)
		c.forgetRetries(name)
		c.seen.forget(name)
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	cfg := cached.DeepCopy()
	profile, ok := c.Profiles.Get(cfg.Spec.Profile)
	if !ok {
		return 0, nil // validation only admits known profiles
	}
	before := cfg.Status.DeepCopy()

	var requeue time.Duration
	switch c.step(cfg) {
	case workIgnore:
		ignore(cfg, profile.Metadata().Level)
	case workDraft:
		requeue, err = c.draft(ctx, cfg, profile)
	case workProgress:
		requeue, err = c.progress(ctx, cfg)
		if err == nil && cfg.Status.Phase == v1alpha1.PhaseReviewRequired {
			// A policy's approval lapsed before a write: the policies
			// are asked again at once.
			requeue, err = c.draft(ctx, cfg, profile)
		}
	case workCheck:
		requeue, err = c.check(ctx, cfg, profile, eventAt, objects)
	case workTrack:
		c.trackRollouts(ctx, cfg)
	}
	if cfg.Status.Phase != v1alpha1.PhaseInProgress {
		// Only an approved plan waits (progress says for what).
		status.ClearWaiting(&cfg.Status, cfg.Generation)
	}
	c.watch(cfg, profile)
	if apiequality.Semantic.DeepEqual(before, &cfg.Status) {
		return requeue, err
	}
	if werr := c.writeStatus(ctx, cfg, before); werr != nil {
		return 0, werr
	}
	return requeue, err
}

// work is what a reconcile does with a config: a step of the phase table
// of pkg/status, or one of the two the controller adds to it whatever the
// phase.
type work int

const (
	workNone     work = iota // status.StepNone: nothing until the spec changes
	workDraft                // status.StepDraft
	workProgress             // status.StepProgress
	workCheck                // status.StepCheck
	// workIgnore is the controller's answer to action Ignore, in any phase.
	workIgnore
	// workTrack follows the rollouts of MachineConfigs already written by
	// a config whose phase is terminal (Failed): its status follows
	// reality.
	workTrack
)

// workOf is the work of a step of the phase table.
func workOf(s status.Step) work {
	switch s {
	case status.StepDraft:
		return workDraft
	case status.StepProgress:
		return workProgress
	case status.StepCheck:
		return workCheck
	}
	return workNone
}

// step is what to do with cfg now: the phase table's step, except that
// a revert's pending writes are progressed and a written revert rests
// whatever the action, action Ignore wins over the rest, approved writes
// still pending are always progressed (progress fails them if the spec
// changed since the approval), and any other spec change re-plans.
func (c *Controller) step(cfg *v1alpha1.VirtPlatformConfig) work {
	phase, known := status.Lookup(cfg.Status.Phase)
	switch {
	case reverting(cfg) && phase.Step == status.StepProgress:
		// A revert is written whatever the action: Ignore left in place
		// what the revert restores.
		return workProgress
	case reverted(cfg):
		return workNone
	case cfg.Spec.Action == v1alpha1.PlanActionIgnore:
		return workIgnore
	case phase.Step == status.StepProgress && writesPending(cfg.Status.Items):
		return workProgress
	case cfg.Status.ObservedGeneration != cfg.Generation || !known:
		return workDraft
	case phase.Terminal() && rollingOut(cfg.Status.Items):
		return workTrack
	}
	return workOf(phase.Step)
}

// writeStatus writes cfg's status and refreshes cfg from the answer. Only
// once it is stored does it tell anyone: an Event when the phase changed,
// and the Approved event and metric when the controller recorded a
// standing approval (action Apply, a policy), so that a write that lost a conflict
// leaves no trace but its error.
func (c *Controller) writeStatus(ctx context.Context, cfg *v1alpha1.VirtPlatformConfig, before *v1alpha1.VirtPlatformConfigStatus) error {
	if p, _ := status.Lookup(cfg.Status.Phase); p.Step != status.StepProgress {
		c.writing.Store(cfg.Name, newPendingWrite(cfg))
	}
	updated, err := c.Status.UpdateStatus(ctx, cfg)
	c.writing.Delete(cfg.Name)
	if err != nil {
		return err
	}
	if a := updated.Status.Approval; a != nil && !apiequality.Semantic.DeepEqual(a, before.Approval) {
		c.announceApproval(updated, a)
	}
	if updated.Status.Phase != before.Phase {
		c.phaseEvent(updated)
	}
	if w := status.WaitingFor(&updated.Status); w != nil {
		// The phase stays InProgress: the wait is an Event of its own.
		if b := status.WaitingFor(before); b == nil || b.Reason != w.Reason || b.Message != w.Message {
			c.Recorder.Event(updated, "Normal", "Waiting", status.PhaseMessage(&updated.Status))
		}
	}
	// The watch event of this write needs no reconcile (the controller
	// does not plan again after its own writes), except when the phase
	// it wrote has work to do at once: an approval to apply.
	if p, _ := status.Lookup(updated.Status.Phase); p.Step == status.StepProgress {
		c.ownWrites.Delete(updated.Name)
	} else {
		c.ownWrites.Store(updated.Name, updated.ResourceVersion)
	}
	*cfg = *updated
	return nil
}

func (c *Controller) phaseEvent(cfg *v1alpha1.VirtPlatformConfig) {
	eventType := "Normal"
	if status.IsWarning(cfg.Status.Phase) {
		eventType = "Warning"
	}
	c.Recorder.Event(cfg, eventType, string(cfg.Status.Phase), status.PhaseMessage(&cfg.Status))
}

// ignore: nothing is rolled back and the items are kept; the pools an
// abort holds stay paused, and the message says how to release them.
func ignore(cfg *v1alpha1.VirtPlatformConfig, level v1alpha1.Impact) {
	st := &cfg.Status
	st.ObservedGeneration = cfg.Generation
	if st.ImpactSeverity == "" {
		st.ImpactSeverity = level
	}
	status.SetPhase(st, v1alpha1.PhaseIgnored, "Ignored", withHoldNote(cfg, status.MessageIgnored))
}

// withHoldNote adds to a phase message the pools an abort still holds.
func withHoldNote(cfg *v1alpha1.VirtPlatformConfig, message string) string {
	if note := status.AbortHoldNote(cfg); note != "" {
		return message + " " + note
	}
	return message
}

// draft computes the live plan and decides what it needs: nothing
// (Completed, or InProgress while a pool still rolls out), a review
// (ReviewRequired), or, with action Apply, nothing but applying. After an
// abort even a plan with nothing to write needs an approval: only that
// ends the abort's pause.
func (c *Controller) draft(ctx context.Context, cfg *v1alpha1.VirtPlatformConfig, profile profiles.Profile) (time.Duration, error) {
	st := &cfg.Status
	if handled, requeue, err := c.reviewInputDrift(ctx, cfg, profile); handled {
		return requeue, err
	}
	lapse := lapseNote(cfg)
	st.ObservedGeneration = cfg.Generation
	st.OperatorVersion = c.Version
	start := c.clock.Now()
	res, err := c.Planner.Compute(ctx, cfg)
	c.Metrics.PlanDuration(cfg.Spec.Profile, c.clock.Since(start))
	if err != nil {
		status.SetPhase(st, v1alpha1.PhaseDrafting, "PlanGenerationFailed", fmt.Sprintf("Plan generation failed, will retry: %v", err))
		return 0, err
	}
	if !res.Satisfied() {
		st.ImpactSeverity = profile.Metadata().Level
		status.FailPrerequisites(st, res.MissingMessage())
		return prerequisiteRetry, nil
	}
	now := metav1.NewTime(c.clock.Now())
	st.ImpactSeverity = res.Status.ImpactSeverity
	if st.ImpactSeverity == "" {
		st.ImpactSeverity = v1alpha1.ImpactLow
	}
	st.SourceSnapshotHash = res.SnapshotHash
	switch {
	case !res.HasChanges() && st.Abort == nil:
		c.nothingToApply(ctx, cfg, res, now)
		return 0, nil
	case cfg.Spec.Action == v1alpha1.PlanActionApply:
		return 0, c.applyAction(cfg, res, now)
	}
	return c.review(ctx, cfg, res, now, lapse)
}

// nothingToApply drafts a plan that changes nothing: Completed, or
// InProgress while a pool still rolls a MachineConfig out (followed, not
// ours to pause).
func (c *Controller) nothingToApply(ctx context.Context, cfg *v1alpha1.VirtPlatformConfig, res *plan.Result, now metav1.Time) {
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
			if r := c.rollout(ctx, cfg, it, false); !r.Done {
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
	c.completed(cfg, status.MessageNoop)
}

// applyAction drafts a plan with changes under action Apply: approved
// (a standing approval), unless this spec's approved plan changed since
// or a distinct approver is required.
func (c *Controller) applyAction(cfg *v1alpha1.VirtPlatformConfig, res *plan.Result, now metav1.Time) error {
	st := &cfg.Status
	if changed, err := approvedPlanChanged(cfg, res, now); changed || err != nil {
		st.Items = keepTransitionTimes(st.Items, res.StatusItems(now))
		status.SetPhase(st, v1alpha1.PhaseReviewRequired, "InputDependencyDrift", fmt.Sprintf(
			"action Apply approved plan %s of this spec (generation %d); the plan is now different (its prerequisites went away and came back, or an input changed meanwhile), so it is not applied without a review. %s",
			v1alpha1.ShortHash(st.Approval.PlanHash), cfg.Generation, status.MessageReview))
		return err
	}
	approved, err := c.standingApproval(cfg, res)
	if approved || err != nil {
		return err
	}
	st.Items = keepTransitionTimes(st.Items, res.StatusItems(now))
	status.SetPhase(st, v1alpha1.PhaseReviewRequired, "DistinctApproverRequired", distinctApproverMessage(cfg))
	return nil
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

// standingApproval approves res as action Apply does: by whoever last
// changed the spec, who needed the approve permission to set Apply. With
// four eyes required it approves nothing and returns false.
func (c *Controller) standingApproval(cfg *v1alpha1.VirtPlatformConfig, res *plan.Result) (bool, error) {
	if c.RequireDistinctApprover {
		return false, nil
	}
	st := &cfg.Status
	record := v1alpha1.ApprovalRecord{PlanHash: res.Status.PlanHash, ApprovedBy: st.SpecChangedBy, ApprovedAt: metav1.NewTime(c.clock.Now()), Generation: cfg.Generation, UID: cfg.UID}
	return true, approval.Record(st, res, record)
}

func distinctApproverMessage(cfg *v1alpha1.VirtPlatformConfig) string {
	return fmt.Sprintf("action Apply does not approve plans by itself on this server (--require-distinct-approver): a user other than %q must review the plan and approve it (GET .../virtplatformconfigs/%s/plan, then POST its planHash to .../approve)",
		cfg.Status.SpecChangedBy, cfg.Name)
}

// progress applies the approved items in order and follows their
// rollouts, and says what the plan waits for, if anything: the Waiting
// condition and InProgress's message, cleared when the wait ends.
func (c *Controller) progress(ctx context.Context, cfg *v1alpha1.VirtPlatformConfig) (time.Duration, error) {
	requeue, wait, err := c.progressItems(ctx, cfg)
	switch {
	case err != nil:
		// The items keep their state, and the config what it said.
	case wait != nil && cfg.Status.Phase == v1alpha1.PhaseInProgress:
		status.MarkWaiting(&cfg.Status, cfg.Generation, *wait)
	default:
		status.ClearWaiting(&cfg.Status, cfg.Generation)
	}
	return requeue, err
}

// progression is what progressItems carries from one item to the next.
type progression struct {
	cfg     *v1alpha1.VirtPlatformConfig
	timeout time.Duration // spec.waitTimeout, 0 for none
	// planDue: the last look before a plan's first write, every target
	// still as approved, is made with the next write's own checks.
	planDue bool
	// abort: the first failed item fails the config (failurePolicy Abort).
	abort bool
	// requeue and wait: when to look again, and the first wait an item
	// is in.
	requeue time.Duration
	wait    *status.Wait
}

// waitFor records a reason to look again, and the wait, if it is the
// first.
func (p *progression) waitFor(after time.Duration, wait *status.Wait) {
	p.requeue = soonest(p.requeue, after)
	if p.wait == nil {
		p.wait = wait
	}
}

// progressEnd ends progressItems before the last item: items are written
// in order, so the later ones wait too.
type progressEnd struct {
	requeue time.Duration
	wait    *status.Wait
	err     error
}

// progressItems applies the approved items in order and follows their
// rollouts; it returns the first wait an item is in, if any.
func (c *Controller) progressItems(ctx context.Context, cfg *v1alpha1.VirtPlatformConfig) (time.Duration, *status.Wait, error) {
	// Items nobody approved are not even read from the cluster.
	if writesPending(cfg.Status.Items) {
		if holds, err := c.approvalHolds(cfg, ""); !holds {
			return 0, nil, err
		}
	}
	timeout, _ := advisor.ParseWaitTimeout(cfg.Spec.WaitTimeout) // validated
	p := &progression{cfg: cfg, timeout: timeout, planDue: notStarted(cfg.Status.Items),
		abort: cfg.Spec.FailurePolicy != v1alpha1.FailurePolicyContinue}
	for i := 0; i < len(cfg.Status.Items); i++ {
		if writePending(&cfg.Status.Items[i]) {
			if end := c.writeDueItem(ctx, p, i); end != nil {
				return end.requeue, end.wait, end.err
			}
		}
		it := &cfg.Status.Items[i]
		if it.State == v1alpha1.ItemStateInProgress && rollsPools(it) {
			c.followItem(ctx, p, it)
		}
		if it.State == v1alpha1.ItemStateFailed && p.abort {
			status.SetPhase(&cfg.Status, v1alpha1.PhaseFailed, "ItemFailed", fmt.Sprintf("Item '%s' failed: %s", it.Name, it.Message)+notePartial(cfg))
			return 0, nil, nil
		}
	}
	return c.settle(cfg, p.requeue, p.wait)
}

// writeDueItem writes item i, whose write is pending, after its checks;
// non-nil when the items after it must wait (or the config stopped).
func (c *Controller) writeDueItem(ctx context.Context, p *progression, i int) *progressEnd {
	cfg := p.cfg
	if holds, err := c.approvalHolds(cfg, cfg.Status.Items[i].Name); !holds {
		return &progressEnd{err: err}
	}
	if backoff := c.retryWait(cfg.Name, &cfg.Status.Items[i]); backoff > 0 {
		return &progressEnd{requeue: backoff, wait: p.wait}
	}
	gate, left, gateWait, err := c.writeItem(ctx, cfg, i, p.timeout, p.planDue)
	p.planDue = false
	it := &cfg.Status.Items[i]
	switch {
	case errors.Is(err, errLookAgain) || ctx.Err() != nil:
		return &progressEnd{err: err}
	case err != nil && transient.Retry(err, retriesOf(it)):
		if after, retrying := c.retryItem(cfg.Name, it, err, p.timeout); retrying {
			return &progressEnd{requeue: after, wait: p.wait}
		}
	case err != nil:
		c.setItem(it, v1alpha1.ItemStateFailed, fmt.Sprintf("Failed to apply: %v", err))
		it.Retry = nil
	case gate == gateStopped:
		return &progressEnd{}
	case gate == gateWaiting:
		p.waitFor(left, gateWait)
		return &progressEnd{requeue: p.requeue, wait: p.wait}
	}
	return nil
}

// followItem follows the rollout of a written MachineConfig item.
func (c *Controller) followItem(ctx context.Context, p *progression, it *v1alpha1.VirtPlatformConfigItem) {
	r := c.rollout(ctx, p.cfg, it, true)
	waited := c.since(it.LastTransitionTime)
	p.requeue = soonest(p.requeue, r.After)
	if !r.Done {
		p.waitFor(0, r.Wait)
	}
	switch {
	case r.Done:
		c.setItem(it, v1alpha1.ItemStateCompleted, r.Message)
		it.MaintenanceWindow = nil
	case r.Windowed:
		// Maintenance windows bound this rollout, not waitTimeout: it may
		// span several of them.
		it.Message = r.Message
	case p.timeout > 0 && waited >= p.timeout:
		c.setItem(it, v1alpha1.ItemStateFailed, fmt.Sprintf("Timeout waiting for resource to become healthy (waited %v, timeout %v): %s",
			waited.Round(time.Second), p.timeout, r.Message))
	default:
		it.Message = r.Message
		if p.timeout > 0 {
			p.requeue = soonest(p.requeue, p.timeout-waited)
		}
	}
}

// settle ends a pass over the items: while one is pending or rolls out,
// look again; otherwise the config is Completed, or CompletedWithErrors.
func (c *Controller) settle(cfg *v1alpha1.VirtPlatformConfig, requeue time.Duration, wait *status.Wait) (time.Duration, *status.Wait, error) {
	var failed []string
	for _, it := range cfg.Status.Items {
		switch it.State {
		case v1alpha1.ItemStateInProgress, v1alpha1.ItemStatePending:
			return requeue, wait, nil
		case v1alpha1.ItemStateFailed:
			failed = append(failed, fmt.Sprintf("'%s': %s", it.Name, it.Message))
		}
	}
	if a := cfg.Status.Approval; a != nil {
		c.Metrics.ApplyDuration(cfg.Spec.Profile, c.clock.Since(a.ApprovedAt.Time))
	}
	if reverting(cfg) && len(failed) == 0 {
		c.revertDone(cfg)
		return 0, nil, nil
	}
	if !reverting(cfg) {
		// A revert's items are nothing to measure drift against.
		recordApplied(&cfg.Status)
	}
	if len(failed) > 0 {
		opts := c.Profiles.ResolveOptions(cfg.Spec)
		cfg.Status.AppliedOptions = &opts
		status.SetPhase(&cfg.Status, v1alpha1.PhaseCompletedWithErrors, "ItemsFailed",
			fmt.Sprintf("%d of %d items failed: %s", len(failed), len(cfg.Status.Items), strings.Join(failed, "; "))+notePartial(cfg))
		return 0, nil, nil
	}
	c.completed(cfg, status.MessageApplied)
	return 0, nil, nil
}

// approvalHolds is asked before every write: the approval must still
// cover exactly these items and this spec, whatever happened since
// (restarts, failovers, a spec change, a status nobody approved).
// Otherwise the config fails with what changed and nothing is written.
// An approval by a policy also needs that policy as it approved
// (policyLapsed), and lapses the same way when the spec changed after it
// (specChangedLapse): the config goes back to review, not to Failed.
func (c *Controller) approvalHolds(cfg *v1alpha1.VirtPlatformConfig, item string) (bool, error) {
	err := approval.Check(cfg)
	if err == nil {
		lapsed, err := c.policyLapsed(cfg)
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
	status.SetPhase(&cfg.Status, v1alpha1.PhaseFailed, "ApprovalMismatch", fmt.Sprintf("%s: %v. %s", what, err, c.reapproveAdvice(cfg)))
	return false, nil
}

// reapproveAdvice says how to get a plan applied after an approval
// lapsed: the plan of the current spec is approved as any other (a Failed
// config takes approvals); with action Apply, changing the spec again
// approves it too, unless a distinct approver is required.
func (c *Controller) reapproveAdvice(cfg *v1alpha1.VirtPlatformConfig) string {
	review := fmt.Sprintf("Review the plan of the current spec and approve it: GET .../virtplatformconfigs/%[1]s/plan, then POST its planHash to .../approve (kubectl advisor plan %[1]s, then kubectl advisor approve %[1]s)", cfg.Name)
	if cfg.Spec.Action == v1alpha1.PlanActionApply && !c.RequireDistinctApprover {
		return review + "; or change the spec again: with action Apply, a spec change approves the plan of the new spec."
	}
	return review + "."
}

// errLookAgain marks errors that say nothing of an item (this replica's
// cache is behind storage, our own status write lost a race): the config
// is looked at again, the item keeps its state.
var errLookAgain = errors.New("look again")

// writeItem makes the checks before an approved item's write and writes
// it: the review, the pools' gate, then the write. planDue: the whole
// plan is checked with this item (its first write).
func (c *Controller) writeItem(ctx context.Context, cfg *v1alpha1.VirtPlatformConfig, i int, timeout time.Duration, planDue bool) (itemGate, time.Duration, *status.Wait, error) {
	// Nothing is read, paused or written for an item whose admission
	// policies are not in force.
	if err := c.confined(&cfg.Status.Items[i]); err != nil {
		return c.waitConfined(&cfg.Status.Items[i], err)
	}
	due := preWrite{plan: planDue, stored: true, target: true}
	if it := &cfg.Status.Items[i]; rollsPools(it) && it.Operation != v1alpha1.OperationNone {
		// Before the pools' gate, which may pause them: a write too.
		holds, _, err := c.checkBeforeWrite(ctx, cfg, i, due, false)
		if err != nil {
			return gateWaiting, 0, nil, err
		}
		if !holds {
			return gateStopped, 0, nil, nil
		}
		gate, left, wait, err := c.gateItem(ctx, cfg, &cfg.Status.Items[i], timeout)
		if err != nil || gate != gateOpen {
			return gate, left, wait, err
		}
		failpoint.Hit("after-pool-pause")
		// The pause and the pools' reads took time, and the spec or the
		// approval may have changed meanwhile: the target once more, and
		// the approval as stored (a retry records no intent to prove it).
		due = preWrite{target: true, stored: true}
	}
	if holds, err := c.applyItem(ctx, cfg, i, due); err != nil || !holds {
		return gateStopped, 0, nil, err
	}
	return gateOpen, 0, nil, nil
}

// retryItem records a transient failure of item it's write and says when
// to try again; past the deadline (the config's waitTimeout, else
// --transient-error-deadline, counted from the first failure) the item
// fails with the last error instead, and retrying is false.
func (c *Controller) retryItem(config string, it *v1alpha1.VirtPlatformConfigItem, err error, timeout time.Duration) (after time.Duration, retrying bool) {
	now := c.clock.Now()
	if it.Retry == nil {
		it.Retry = &v1alpha1.ItemRetry{Since: metav1.NewTime(now)}
	}
	it.Retry.Attempts++
	it.Retry.LastError = err.Error()
	deadline, what := timeout, "spec.waitTimeout"
	if deadline <= 0 {
		deadline, what = c.transientDeadline(), "--transient-error-deadline"
	}
	if waited := now.Sub(it.Retry.Since.Time); waited >= deadline {
		c.setItem(it, v1alpha1.ItemStateFailed, fmt.Sprintf("Failed to apply: gave up after retrying for %v (attempt %d; the deadline is %v, %s): %v",
			waited.Round(time.Second), it.Retry.Attempts, deadline, what, err))
		return 0, false
	}
	after = transient.Backoff(it.Retry.Attempts, c.jitter())
	it.Message = fmt.Sprintf("Retrying in %v (attempt %d): %v", after, it.Retry.Attempts, err)
	c.retryAt.Store(retryKey{config, it.Name}, now.Add(after))
	return after, true
}

// retriesOf is how many times an item's write has failed and been retried.
func retriesOf(it *v1alpha1.VirtPlatformConfigItem) int32 {
	if it.Retry == nil {
		return 0
	}
	return it.Retry.Attempts
}

// retryWait is how long an item retrying its write still waits for its
// backoff to end; 0 when it may be tried now (or is not retrying).
func (c *Controller) retryWait(config string, it *v1alpha1.VirtPlatformConfigItem) time.Duration {
	if it.Retry == nil {
		return 0
	}
	at, ok := c.retryAt.Load(retryKey{config, it.Name})
	if !ok {
		return 0
	}
	return at.(time.Time).Sub(c.clock.Now())
}

// forgetRetries drops the retry times of a deleted config's items.
func (c *Controller) forgetRetries(config string) {
	c.retryAt.Range(func(k, _ any) bool {
		if k.(retryKey).config == config {
			c.retryAt.Delete(k)
		}
		return true
	})
}

func (c *Controller) transientDeadline() time.Duration {
	if c.TransientErrorDeadline > 0 {
		return c.TransientErrorDeadline
	}
	return 10 * time.Minute
}

// staleItem fails a config whose item i is no longer what was reviewed.
func (c *Controller) staleItem(cfg *v1alpha1.VirtPlatformConfig, i int, stale *plan.StaleTargetError) {
	it := &cfg.Status.Items[i]
	c.setItem(it, v1alpha1.ItemStateFailed, "Not written: "+stale.Error())
	status.SetPhase(&cfg.Status, v1alpha1.PhaseFailed, "StalePlan", fmt.Sprintf("%s Nothing was written for %s.", status.MessageStale, stale.Error())+notePartial(cfg))
}

// notePartial sets PartiallyApplied when some items of the approved plan
// were written while others failed or were not written, and returns what
// to add to the phase message ("" when nothing was written).
func notePartial(cfg *v1alpha1.VirtPlatformConfig) string {
	var written, notWritten []string
	for i := range cfg.Status.Items {
		it := &cfg.Status.Items[i]
		if it.Operation == v1alpha1.OperationNone || plan.LeftInPlace(it) {
			continue
		}
		what := fmt.Sprintf("'%s' (%s %s)", it.Name, it.TargetRef.Kind, it.TargetRef.Name)
		if it.State == v1alpha1.ItemStateCompleted || (it.State == v1alpha1.ItemStateInProgress && !writePending(it)) {
			written = append(written, what)
		} else {
			notWritten = append(notWritten, what)
		}
	}
	if len(written) == 0 || len(notWritten) == 0 {
		return ""
	}
	msg := fmt.Sprintf("%d of %d items were written: %s; not written: %s; the cluster is partially configured. GET the plan of the current state to see what remains, and approve it to finish, or change the spec to undo",
		len(written), len(written)+len(notWritten), strings.Join(written, ", "), strings.Join(notWritten, ", "))
	status.MarkPartiallyApplied(&cfg.Status, cfg.Generation, msg)
	return ". " + msg
}

// applyItem writes one item after the checks due. The intent is recorded
// before the write (while the checks read), so that a crash between the
// write and the status update leads to writing the same desired state
// again, never to a false "stale plan".
func (c *Controller) applyItem(ctx context.Context, cfg *v1alpha1.VirtPlatformConfig, i int, due preWrite) (bool, error) {
	it := &cfg.Status.Items[i]
	writes := !plan.LeftInPlace(it) && it.Operation != v1alpha1.OperationNone
	// The intent is stored with the resourceVersion this reconcile read,
	// so the approval just checked is the stored one. An item that writes
	// nothing needs no stored approval: nothing is written for it.
	intent := writes && it.State == v1alpha1.ItemStatePending
	if intent || !writes {
		due.stored = false
	}
	// The checks right before the write (a write already started before a
	// crash or failover may have been made: a retry finds it).
	holds, target, err := c.checkBeforeWrite(ctx, cfg, i, due, intent)
	if err != nil || !holds {
		return holds, err
	}
	it = &cfg.Status.Items[i]
	if !writes {
		c.nothingToWrite(it)
		return true, nil
	}
	return true, c.write(ctx, cfg, i, target)
}

// nothingToWrite settles an item whose checks passed and that writes
// nothing.
func (c *Controller) nothingToWrite(it *v1alpha1.VirtPlatformConfigItem) {
	switch {
	case plan.LeftInPlace(it):
		c.setItem(it, v1alpha1.ItemStateCompleted, it.Message)
	case rollsPools(it):
		c.setItem(it, v1alpha1.ItemStateInProgress, "Waiting for the MachineConfigPool rollout")
	default:
		c.setItem(it, v1alpha1.ItemStateCompleted, unchangedMessage)
	}
}

// write writes item i, whose checks passed, conditional on the read they
// judged, and records the write.
func (c *Controller) write(ctx context.Context, cfg *v1alpha1.VirtPlatformConfig, i int, target checkedTarget) error {
	// written: a retry found our own earlier write (made before a crash
	// or a lost answer); it is not made a second time.
	written := target.written
	if written == nil {
		if err := c.recordReplacing(ctx, cfg, i, target.read); err != nil {
			return err
		}
	}
	it := &cfg.Status.Items[i]
	if written == nil {
		if err := c.confined(it); err != nil {
			// The policies went away during the checks: the intent stays,
			// and the next look waits for them.
			return fmt.Errorf("%w: %v", errLookAgain, err)
		}
		failpoint.Hit("before-write")
		var err error
		if written, err = c.Planner.Apply(ctx, cfg, *it, target.read); apierrors.IsConflict(err) {
			// The target changed (or appeared) after the checks read it:
			// nothing was written; the item is checked again from a new read.
			return fmt.Errorf("%w: %s %s changed after it was checked, before it was written: %v",
				errLookAgain, it.TargetRef.Kind, it.TargetRef.Name, err)
		} else if err != nil {
			return err // progress retries it when transient
		}
	}
	// After the write, before the status records it: a crash here must
	// not lead to a second write.
	failpoint.Hit("after-write")
	it.Retry = nil
	if it.Operation == v1alpha1.OperationDelete {
		if it.ReviewedTarget != nil {
			plan.ForgetWrite(&cfg.Status, it.ReviewedTarget.UID)
		}
	} else {
		plan.RecordWrite(&cfg.Status, it, written, cfg.Name)
	}
	// A retry that found its earlier write completes the record
	// recordReplacing stored before that write.
	noteReplaced(cfg, it, target.read, written)
	if rollsPools(it) {
		it.Message = "Applied; waiting for the MachineConfigPool rollout"
		return nil
	}
	c.setItem(it, v1alpha1.ItemStateCompleted, appliedMessage)
	return nil
}

// noteReplaced keeps the record the revert plan is computed from
// (status.replaced): a write of a revert forgets the target it restored or
// deleted, a Delete forgets the object, and any other write records what
// it replaced, from the target the checks read right before it.
func noteReplaced(cfg *v1alpha1.VirtPlatformConfig, it *v1alpha1.VirtPlatformConfigItem, before plan.Target, written *unstructured.Unstructured) {
	switch {
	case reverting(cfg) || it.Operation == v1alpha1.OperationDelete:
		plan.ForgetReplaced(&cfg.Status, it.TargetRef)
	case before.Read:
		plan.RecordReplaced(&cfg.Status, it, before.Object, written)
	}
}

// recordReplacing stores, before item i is written over before (or
// creates its object), what the write replaces (plan.RecordReplacing):
// the record a revert restores from outlives a crash right after the
// write. A revert, a Delete and a write that replaces nothing new store
// nothing here.
func (c *Controller) recordReplacing(ctx context.Context, cfg *v1alpha1.VirtPlatformConfig, i int, before plan.Target) error {
	it := &cfg.Status.Items[i]
	if reverting(cfg) || it.Operation == v1alpha1.OperationDelete || !before.Read {
		return nil
	}
	if !plan.RecordReplacing(&cfg.Status, it, before.Object) {
		return nil
	}
	if err := c.writeStatus(ctx, cfg, cfg.Status.DeepCopy()); err != nil {
		return fmt.Errorf("%w: recording what item '%s' replaces before writing it: %v", errLookAgain, it.Name, err)
	}
	// As the intent's: this reconcile goes on to the write.
	c.ownWrites.Store(cfg.Name, cfg.ResourceVersion)
	return nil
}

// reverting is true while the approved plan is a revert.
func reverting(cfg *v1alpha1.VirtPlatformConfig) bool {
	return cfg.Status.Approval != nil && cfg.Status.Approval.Revert
}

// reverted is true once a revert was written and the spec did not change
// since: nothing is managed, the config stays Ignored.
func reverted(cfg *v1alpha1.VirtPlatformConfig) bool {
	return reverting(cfg) && cfg.Status.Phase == v1alpha1.PhaseIgnored && cfg.Status.ObservedGeneration == cfg.Generation
}

// revertDone ends a revert whose items were all written: nothing is
// managed any more (no applied items to measure drift against, nothing
// left to restore) and the config is Ignored until its spec changes.
func (c *Controller) revertDone(cfg *v1alpha1.VirtPlatformConfig) {
	st := &cfg.Status
	st.AppliedItems, st.AppliedOptions, st.Replaced = nil, nil, nil
	status.ClearPartiallyApplied(st, cfg.Generation)
	status.SetPhase(st, v1alpha1.PhaseIgnored, "Reverted", fmt.Sprintf(
		"The revert approved by %s is written: what virt-advisor wrote for this config is restored and nothing is managed. Change the spec to plan the profile again.",
		st.Approval.ApprovedBy))
}

func (c *Controller) completed(cfg *v1alpha1.VirtPlatformConfig, message string) {
	opts := c.Profiles.ResolveOptions(cfg.Spec)
	cfg.Status.AppliedOptions = &opts
	cfg.Status.OperatorVersion = c.Version
	status.ClearUpgrade(&cfg.Status, cfg.Generation, "Applied", "The profile logic of "+c.Version+" is applied")
	status.ClearPartiallyApplied(&cfg.Status, cfg.Generation)
	status.SetPhase(&cfg.Status, v1alpha1.PhaseCompleted, "Completed", message)
}

func (c *Controller) setItem(it *v1alpha1.VirtPlatformConfigItem, state v1alpha1.ItemState, message string) {
	if it.State != state {
		now := metav1.NewTime(c.clock.Now())
		it.LastTransitionTime = &now
	}
	it.State, it.Message = state, message
}

// rollout asks the pool controller how far the pools of a MachineConfig
// item rolled it out (written: virt-advisor wrote it under an approval,
// so a closing window pauses them), and records on the item the window
// its rollout waits for and the pauses at a window's close.
func (c *Controller) rollout(ctx context.Context, cfg *v1alpha1.VirtPlatformConfig, it *v1alpha1.VirtPlatformConfigItem, written bool) pools.ItemRollout {
	r := c.pools.Rollout(ctx, cfg, it, written)
	c.seen.add(cfg.Name, r.Pools)
	it.MaintenanceWindow = r.Window
	it.WindowPauses = r.WindowPauses
	return r
}

// watch declares what the config depends on: its targets, the pools of
// its MachineConfigs and the profile's input objects.
func (c *Controller) watch(cfg *v1alpha1.VirtPlatformConfig, profile profiles.Profile) {
	if cfg.Spec.Action == v1alpha1.PlanActionIgnore {
		c.Watches.Forget(cfg.Name)
		return
	}
	var keys []cluster.ObjectKey
	for i := range cfg.Status.Items {
		it := &cfg.Status.Items[i]
		keys = append(keys, cluster.ObjectKey{GVK: plan.TargetGVK(it.TargetRef), Namespace: it.TargetRef.Namespace, Name: it.TargetRef.Name})
		if rollsPools(it) {
			// A cluster upgrade's end lets a waiting item go on (preflight).
			keys = append(keys, cluster.ObjectKey{GVK: disruption.ClusterVersionGVK, Name: disruption.ClusterVersionName})
			if pool := machineconfig.ItemChange(it.TargetRef, it.DesiredState).PoolHint(); pool != "" {
				keys = append(keys, cluster.ObjectKey{GVK: machineconfig.MachineConfigPoolGVK, Name: pool})
			}
			for _, pc := range it.PoolConfigsBefore {
				keys = append(keys, cluster.ObjectKey{GVK: machineconfig.MachineConfigPoolGVK, Name: pc.Pool})
			}
		}
	}
	for _, pool := range c.seen.pools(cfg.Name) {
		keys = append(keys, cluster.ObjectKey{GVK: machineconfig.MachineConfigPoolGVK, Name: pool})
	}
	for _, in := range profile.InputObjects(c.Profiles.ResolveOptions(cfg.Spec)) {
		if in.Name == "" {
			// Every object of the kind: watched as a kind.
			if c.Kinds != nil {
				c.Kinds.Watch(in.GVK.GroupKind())
			}
			continue
		}
		keys = append(keys, cluster.ObjectKey{GVK: in.GVK, Namespace: in.Namespace, Name: in.Name})
	}
	c.Watches.Set(cfg.Name, keys)
}

// rollsPools is true for an item whose write rolls MachineConfigPools (a
// MachineConfig, or a KubeletConfig the MachineConfig operator renders
// into one): what the controller does for pools is done for it.
func rollsPools(it *v1alpha1.VirtPlatformConfigItem) bool {
	return machineconfig.RollsPools(it.TargetRef)
}

// rollingOut is true when a MachineConfig item was written and its
// rollout is not finished.
func rollingOut(items []v1alpha1.VirtPlatformConfigItem) bool {
	for i := range items {
		if itemRollingOut(&items[i]) {
			return true
		}
	}
	return false
}

// trackRollouts updates the items whose MachineConfig rolls out, and
// nothing else: the phase stays, no item is written.
func (c *Controller) trackRollouts(ctx context.Context, cfg *v1alpha1.VirtPlatformConfig) {
	for i := range cfg.Status.Items {
		it := &cfg.Status.Items[i]
		if it.State != v1alpha1.ItemStateInProgress || !rollsPools(it) || writePending(it) {
			continue
		}
		if r := c.rollout(ctx, cfg, it, true); r.Done {
			c.setItem(it, v1alpha1.ItemStateCompleted, r.Message)
		} else {
			it.Message = r.Message
		}
	}
}

// writePending is true for an item whose write has not been confirmed:
// not started, or started before a crash.
func itemRollingOut(it *v1alpha1.VirtPlatformConfigItem) bool {
	return it.State == v1alpha1.ItemStateInProgress && rollsPools(it) && !writePending(it)
}

func writePending(it *v1alpha1.VirtPlatformConfigItem) bool {
	return it.State == v1alpha1.ItemStatePending || (it.State == v1alpha1.ItemStateInProgress && (it.Message == applyingMessage || it.Retry != nil))
}

func writesPending(items []v1alpha1.VirtPlatformConfigItem) bool {
	for i := range items {
		if writePending(&items[i]) {
			return true
		}
	}
	return false
}

// since is how long ago t was; an unset time is now.
func (c *Controller) since(t *metav1.Time) time.Duration {
	if t == nil {
		return 0
	}
	return c.clock.Since(t.Time)
}

func notStarted(items []v1alpha1.VirtPlatformConfigItem) bool {
	for _, it := range items {
		if it.State != v1alpha1.ItemStatePending && it.State != v1alpha1.ItemStateFailed {
			return false
		}
	}
	return true
}

// keepTransitionTimes keeps the time of items whose state did not change,
// so that an unchanged plan writes nothing.
func keepTransitionTimes(old, items []v1alpha1.VirtPlatformConfigItem) []v1alpha1.VirtPlatformConfigItem {
	byName := map[string]v1alpha1.VirtPlatformConfigItem{}
	for _, it := range old {
		byName[it.Name] = it
	}
	for i := range items {
		if prev, ok := byName[items[i].Name]; ok && prev.State == items[i].State && prev.LastTransitionTime != nil {
			items[i].LastTransitionTime = prev.LastTransitionTime
		}
	}
	return items
}

// eventTimes remembers when a watch event arrived per config.
type eventTimes struct {
	mu    sync.Mutex
	times map[string]time.Time
}

func newEventTimes() *eventTimes { return &eventTimes{times: map[string]time.Time{}} }

func (e *eventTimes) seen(config string, t time.Time) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if _, ok := e.times[config]; !ok {
		e.times[config] = t
	}
}

// take returns and forgets the first event time since the last take.
func (e *eventTimes) take(config string) (time.Time, bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	t, ok := e.times[config]
	delete(e.times, config)
	return t, ok
}
