package controller

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/kubevirt/virt-advisor/pkg/apis/advisor"
	"github.com/kubevirt/virt-advisor/pkg/apis/advisor/v1alpha1"
	"github.com/kubevirt/virt-advisor/pkg/plan"
	"github.com/kubevirt/virt-advisor/pkg/status"
)

// progresser is step progress of the phase table: it writes the approved
// items in order (writer) and follows their rollouts (follower), and says
// what the plan waits for.
type progresser struct {
	write     *writer
	follow    *follower
	approvals *approvals
	metrics   Metrics
	profiles  Profiles
	out       outcomes
}

// progress applies the approved items in order and follows their
// rollouts, and says what the plan waits for, if anything: the Waiting
// condition and InProgress's message, cleared when the wait ends.
func (pr *progresser) progress(ctx context.Context, cfg *v1alpha1.VirtPlatformConfig) (time.Duration, error) {
	requeue, wait, err := pr.progressItems(ctx, cfg)
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
func (pr *progresser) progressItems(ctx context.Context, cfg *v1alpha1.VirtPlatformConfig) (time.Duration, *status.Wait, error) {
	// Items nobody approved are not even read from the cluster.
	if writesPending(cfg.Status.Items) {
		if holds, err := pr.approvals.holds(cfg, ""); !holds {
			return 0, nil, err
		}
	}
	timeout, _ := advisor.ParseWaitTimeout(cfg.Spec.WaitTimeout) // validated
	p := &progression{cfg: cfg, timeout: timeout, planDue: notStarted(cfg.Status.Items),
		abort: cfg.Spec.FailurePolicy != v1alpha1.FailurePolicyContinue}
	for i := 0; i < len(cfg.Status.Items); i++ {
		if writePending(&cfg.Status.Items[i]) {
			if end := pr.write.dueItem(ctx, p, i); end != nil {
				return end.requeue, end.wait, end.err
			}
		}
		it := &cfg.Status.Items[i]
		if it.State == v1alpha1.ItemStateInProgress && rollsPools(it) {
			pr.follow.followItem(ctx, p, it)
		}
		if it.State == v1alpha1.ItemStateFailed && p.abort {
			status.SetPhase(&cfg.Status, v1alpha1.PhaseFailed, "ItemFailed", fmt.Sprintf("Item '%s' failed: %s", it.Name, it.Message)+notePartial(cfg))
			return 0, nil, nil
		}
	}
	return pr.settle(cfg, p.requeue, p.wait)
}

// settle ends a pass over the items: while one is pending or rolls out,
// look again; otherwise the config is Completed, or CompletedWithErrors.
func (pr *progresser) settle(cfg *v1alpha1.VirtPlatformConfig, requeue time.Duration, wait *status.Wait) (time.Duration, *status.Wait, error) {
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
		pr.metrics.ApplyDuration(cfg.Spec.Profile, pr.out.clock.Since(a.ApprovedAt.Time))
	}
	if reverting(cfg) && len(failed) == 0 {
		revertDone(cfg)
		return 0, nil, nil
	}
	if !reverting(cfg) {
		// A revert's items are nothing to measure drift against.
		recordApplied(&cfg.Status)
	}
	if len(failed) > 0 {
		opts := pr.profiles.ResolveOptions(cfg.Spec)
		cfg.Status.AppliedOptions = &opts
		status.SetPhase(&cfg.Status, v1alpha1.PhaseCompletedWithErrors, "ItemsFailed",
			fmt.Sprintf("%d of %d items failed: %s", len(failed), len(cfg.Status.Items), strings.Join(failed, "; "))+notePartial(cfg))
		return 0, nil, nil
	}
	pr.out.completed(cfg, status.MessageApplied)
	return 0, nil, nil
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

// revertDone ends a revert whose items were all written: nothing is
// managed any more (no applied items to measure drift against, nothing
// left to restore) and the config is Ignored until its spec changes.
func revertDone(cfg *v1alpha1.VirtPlatformConfig) {
	st := &cfg.Status
	st.AppliedItems, st.AppliedOptions, st.Replaced = nil, nil, nil
	status.ClearPartiallyApplied(st, cfg.Generation)
	status.SetPhase(st, v1alpha1.PhaseIgnored, "Reverted", fmt.Sprintf(
		"The revert approved by %s is written: what virt-advisor wrote for this config is restored and nothing is managed. Change the spec to plan the profile again.",
		st.Approval.ApprovedBy))
}
