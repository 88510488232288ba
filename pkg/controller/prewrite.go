package controller

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kubevirt/virt-advisor/pkg/apis/advisor/v1alpha1"
	"github.com/kubevirt/virt-advisor/pkg/plan"
	"github.com/kubevirt/virt-advisor/pkg/status"
)

// preWriteChecks makes the checks right before a write of an approved
// item, and records the intent to write it.
type preWriteChecks struct {
	planner Planner
	stored  StatusWriter
	writes  *statusWrites
	out     outcomes
}

// preWrite says which reads must pass before a write of an approved item
// (the write of its target, or the pause of its pools). Each reads
// something else, so they are made at the same time, together with our
// own intent write when there is one: a write waits for the slowest of
// them, not for their sum.
type preWrite struct {
	// plan: every target of the plan is still as reviewed (the snapshot
	// hash), before the plan's first write, so that a plan one of whose
	// later targets changed is not half applied.
	plan bool
	// stored: the config read from storage, not the cache, is the one
	// whose approval was checked (a spec change or a new approval this
	// replica has not seen yet stops the write). An intent write, made
	// with the resourceVersion this reconcile read, proves the same.
	stored bool
	// target: the item's live target is still the one reviewed.
	target bool
}

// checkedTarget is what the checks before a write read of the item's
// target.
type checkedTarget struct {
	// read: the target as the checks read it; the write carries it as its
	// precondition, so that nothing the checks did not see is written over.
	read plan.Target
	// written: a retry found the target as our own earlier write left it
	// (not to be written again).
	written *unstructured.Unstructured
}

// preWriteReads is what the reads of checkBeforeWrite found, each with
// its error.
type preWriteReads struct {
	// snap and targets: the whole plan's read (due.plan).
	snap    string
	targets []plan.Target
	planErr error
	// stored: the config as stored (due.stored).
	stored    *v1alpha1.VirtPlatformConfig
	storedErr error
	// target: the item's own target (due.target).
	target    checkedTarget
	targetErr error
	// intentErr: recording the intent to write failed.
	intentErr error
}

// checkBeforeWrite makes the checks of item i that are due and, when
// intent, records the intent to write it (the item InProgress) at the
// same time. It returns whether the write may be made and what the checks
// read of the item's target.
// When the write may not be made, nothing was written: an intent recorded
// meanwhile is taken back, and a stale target or plan fails the config
// with StalePlan naming what changed.
func (p *preWriteChecks) checkBeforeWrite(ctx context.Context, cfg *v1alpha1.VirtPlatformConfig, i int, due preWrite, intent bool) (bool, checkedTarget, error) {
	// The reads work on a copy: the intent write replaces *cfg.
	view := cfg.DeepCopy()
	reads := p.readBeforeWrite(ctx, cfg, view, i, due, intent)
	err := p.checked(view, due, &reads)
	if err == nil {
		return true, reads.target, nil
	}
	if intent {
		// Nothing is written: the item is not in progress, and storage
		// must not say it is (a write in progress skips the whole-plan
		// check when it is tried again).
		cfg.Status.Items[i] = view.Status.Items[i]
		cfg.Status.Replaced = view.Status.Replaced
		if reads.intentErr == nil {
			if werr := p.writes.write(ctx, cfg, cfg.Status.DeepCopy()); werr != nil {
				return false, checkedTarget{}, fmt.Errorf("%w: taking back the intent to write item '%s' (%v): %v", errLookAgain, view.Status.Items[i].Name, err, werr)
			}
		}
	}
	var stale *plan.StaleTargetError
	switch {
	case errors.As(err, &stale):
		p.out.staleItem(cfg, itemIndex(cfg, stale.Item, i), stale)
		return false, checkedTarget{}, nil
	case errors.Is(err, errStalePlan):
		status.SetPhase(&cfg.Status, v1alpha1.PhaseFailed, "StalePlan", status.MessageStale)
		return false, checkedTarget{}, nil
	}
	return false, checkedTarget{}, err
}

// readBeforeWrite makes the reads of the checks due on view, a copy of
// cfg, at the same time, and the intent write of item i on cfg with them.
func (p *preWriteChecks) readBeforeWrite(ctx context.Context, cfg, view *v1alpha1.VirtPlatformConfig, i int, due preWrite, intent bool) preWriteReads {
	it := &view.Status.Items[i]
	check := plan.CheckOf(view, it)
	var r preWriteReads
	var wg sync.WaitGroup
	switch {
	case due.plan:
		// The whole plan's read includes the item's target: it is read
		// once and checked twice.
		wg.Go(func() {
			if r.snap, r.targets, r.planErr = p.planner.ReadTargets(ctx, view.Status.Items); r.planErr == nil && due.target {
				r.target.read = r.targets[i]
				r.target.written, r.targetErr = p.planner.CheckReadTarget(view, it, r.targets[i].Object, check)
			}
		})
	case due.target:
		wg.Go(func() {
			r.target.read, r.target.written, r.targetErr = p.planner.CheckTarget(ctx, view, it, check)
		})
	}
	if due.stored {
		wg.Go(func() { r.stored, r.storedErr = p.stored.GetStored(ctx, view.Name) })
	}
	if intent {
		r.intentErr = p.recordIntent(ctx, cfg, i)
	}
	wg.Wait()
	return r
}

// recordIntent stores item i InProgress before it is written. What the
// write replaces is recorded with it, from the target the checks will
// most likely read (ExpectedTarget): when they do read that, the write
// needs no second status write before it (recordReplacing finds the
// record as it would make it); when they read something else, that
// records again, and when they fail, both are taken back.
func (p *preWriteChecks) recordIntent(ctx context.Context, cfg *v1alpha1.VirtPlatformConfig, i int) error {
	if before, ok := p.planner.ExpectedTarget(cfg, &cfg.Status.Items[i]); ok && recordsReplaced(cfg, &cfg.Status.Items[i]) {
		plan.RecordReplacing(&cfg.Status, &cfg.Status.Items[i], before)
	}
	p.out.setItem(&cfg.Status.Items[i], v1alpha1.ItemStateInProgress, applyingMessage)
	if err := p.writes.write(ctx, cfg, cfg.Status.DeepCopy()); err != nil {
		return fmt.Errorf("%w: recording the intent to write item '%s': %v", errLookAgain, cfg.Status.Items[i].Name, err)
	}
	// This reconcile goes on from its intent and ends with a write of its
	// own: the intent's event needs no reconcile, which would only find
	// its cache behind storage.
	p.writes.own(cfg)
	return nil
}

// errStalePlan: the plan's snapshot changed, yet no item names its target
// as changed (an approval made before plans recorded their targets).
var errStalePlan = errors.New("stale plan")

// checked judges what the checks of checkBeforeWrite read, most decisive
// first: our own storage behind or ahead makes the config be looked at
// again; then the plan, then the item's target. nil: the write may be made.
func (p *preWriteChecks) checked(view *v1alpha1.VirtPlatformConfig, due preWrite, r *preWriteReads) error {
	if r.intentErr != nil {
		return r.intentErr
	}
	if due.stored {
		if r.storedErr != nil {
			return fmt.Errorf("%w: reading the approval of %s from storage before writing: %v", errLookAgain, view.Name, r.storedErr)
		}
		if r.stored.UID != view.UID || r.stored.ResourceVersion != view.ResourceVersion {
			// This replica's cache is behind storage: look again with what
			// is stored (the watch brings it) rather than write on old news.
			return fmt.Errorf("%w: the stored config %s (resourceVersion %s) is newer than the cached one (%s); nothing written",
				errLookAgain, view.Name, r.stored.ResourceVersion, view.ResourceVersion)
		}
	}
	if due.plan {
		if r.planErr != nil {
			// Nothing is written. A transient error is retried with its
			// message and deadline, a permanent one (a 403) fails the item:
			// neither waits unseen.
			return fmt.Errorf("reading the targets of %s before its first write: %w", view.Name, r.planErr)
		}
		if r.snap != view.Status.SourceSnapshotHash && !view.Spec.BypassOptimisticLock {
			return p.staleTarget(view, r.targets)
		}
	}
	if due.target && r.targetErr != nil {
		return r.targetErr
	}
	return nil
}

// staleTarget names the item whose target changed since the review, when
// the whole plan's snapshot of targets says one did (plans record their
// targets; older approvals do not: errStalePlan).
func (p *preWriteChecks) staleTarget(view *v1alpha1.VirtPlatformConfig, targets []plan.Target) error {
	for i := range view.Status.Items {
		if view.Status.Items[i].State == v1alpha1.ItemStateFailed {
			continue // not read, not part of the snapshot
		}
		// Before the plan's first write: no item's write was started
		// (no retry), and the snapshot is checked only without bypass.
		_, err := p.planner.CheckReadTarget(view, &view.Status.Items[i], targets[i].Object, plan.TargetCheck{})
		var stale *plan.StaleTargetError
		if errors.As(err, &stale) {
			return stale
		}
	}
	return errStalePlan
}

// itemIndex is the index of the item named name, else fallback.
func itemIndex(cfg *v1alpha1.VirtPlatformConfig, name string, fallback int) int {
	for i := range cfg.Status.Items {
		if cfg.Status.Items[i].Name == name {
			return i
		}
	}
	return fallback
}
