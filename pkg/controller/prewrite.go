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

// checked is what the checks before a write read of the item's target.
type checkedTarget struct {
	// read: the target as the checks read it; the write carries it as its
	// precondition, so that nothing the checks did not see is written over.
	read plan.Target
	// written: a retry found the target as our own earlier write left it
	// (not to be written again).
	written *unstructured.Unstructured
}

// checkBeforeWrite makes the checks of item i that are due and, when
// intent, records the intent to write it (the item InProgress) at the
// same time. It returns whether the write may be made and what the checks
// read of the item's target.
// When the write may not be made, nothing was written: an intent recorded
// meanwhile is taken back, and a stale target or plan fails the config
// with StalePlan naming what changed.
func (c *Controller) checkBeforeWrite(ctx context.Context, cfg *v1alpha1.VirtPlatformConfig, i int, due preWrite, intent bool) (bool, checkedTarget, error) {
	// The reads work on a copy: the intent write replaces *cfg.
	view := cfg.DeepCopy()
	it := &view.Status.Items[i]
	retry := it.State == v1alpha1.ItemStateInProgress
	var (
		wg                   sync.WaitGroup
		snap                 string
		stored               *v1alpha1.VirtPlatformConfig
		target               checkedTarget
		planErr, storedErr   error
		targetErr, intentErr error
	)
	var targets []plan.Target
	switch {
	case due.plan:
		// The whole plan's read includes the item's target: it is read
		// once and checked twice.
		wg.Go(func() {
			if snap, targets, planErr = c.Planner.ReadTargets(ctx, view.Status.Items); planErr == nil && due.target {
				target.read = targets[i]
				target.written, targetErr = c.Planner.CheckReadTarget(view, it, targets[i].Object, retry, view.Spec.BypassOptimisticLock)
			}
		})
	case due.target:
		wg.Go(func() {
			target.read, target.written, targetErr = c.Planner.CheckTarget(ctx, view, it, retry, view.Spec.BypassOptimisticLock)
		})
	}
	if due.stored {
		wg.Go(func() { stored, storedErr = c.Status.GetStored(ctx, view.Name) })
	}
	if intent {
		c.setItem(&cfg.Status.Items[i], v1alpha1.ItemStateInProgress, applyingMessage)
		if intentErr = c.writeStatus(ctx, cfg, cfg.Status.DeepCopy()); intentErr != nil {
			intentErr = fmt.Errorf("%w: recording the intent to write item '%s': %v", errLookAgain, it.Name, intentErr)
		} else {
			// This reconcile goes on from its intent and ends with a write
			// of its own: the intent's event needs no reconcile, which
			// would only find its cache behind storage.
			c.ownWrites.Store(cfg.Name, cfg.ResourceVersion)
		}
	}
	wg.Wait()

	holds, err := c.checked(view, due, snap, targets, stored, planErr, storedErr, targetErr, intentErr)
	if holds {
		return true, target, nil
	}
	if intent {
		// Nothing is written: the item is not in progress, and storage
		// must not say it is (a write in progress skips the whole-plan
		// check when it is tried again).
		cfg.Status.Items[i] = view.Status.Items[i]
		if intentErr == nil {
			if werr := c.writeStatus(ctx, cfg, cfg.Status.DeepCopy()); werr != nil {
				return false, checkedTarget{}, fmt.Errorf("%w: taking back the intent to write item '%s' (%v): %v", errLookAgain, it.Name, err, werr)
			}
		}
	}
	var stale *plan.StaleTargetError
	switch {
	case errors.As(err, &stale):
		c.staleItem(cfg, c.itemIndex(cfg, stale.Item, i), stale)
		return false, checkedTarget{}, nil
	case errors.Is(err, errStalePlan):
		status.SetPhase(&cfg.Status, v1alpha1.PhaseFailed, "StalePlan", status.MessageStale)
		return false, checkedTarget{}, nil
	}
	return false, checkedTarget{}, err
}

// errStalePlan: the plan's snapshot changed, yet no item names its target
// as changed (an approval made before plans recorded their targets).
var errStalePlan = errors.New("stale plan")

// checked judges what the checks of checkBeforeWrite read, most decisive
// first: our own storage behind or ahead makes the config be looked at
// again; then the plan, then the item's target.
func (c *Controller) checked(view *v1alpha1.VirtPlatformConfig, due preWrite, snap string, targets []plan.Target, stored *v1alpha1.VirtPlatformConfig, planErr, storedErr, targetErr, intentErr error) (bool, error) {
	if intentErr != nil {
		return false, intentErr
	}
	if due.stored {
		if storedErr != nil {
			return false, fmt.Errorf("%w: reading the approval of %s from storage before writing: %v", errLookAgain, view.Name, storedErr)
		}
		if stored.UID != view.UID || stored.ResourceVersion != view.ResourceVersion {
			// This replica's cache is behind storage: look again with what
			// is stored (the watch brings it) rather than write on old news.
			return false, fmt.Errorf("%w: the stored config %s (resourceVersion %s) is newer than the cached one (%s); nothing written",
				errLookAgain, view.Name, stored.ResourceVersion, view.ResourceVersion)
		}
	}
	if due.plan {
		if planErr != nil {
			// Nothing is written. A transient error is retried with its
			// message and deadline, a permanent one (a 403) fails the item:
			// neither waits unseen.
			return false, fmt.Errorf("reading the targets of %s before its first write: %w", view.Name, planErr)
		}
		if snap != view.Status.SourceSnapshotHash && !view.Spec.BypassOptimisticLock {
			return false, c.staleTarget(view, targets)
		}
	}
	if due.target && targetErr != nil {
		return false, targetErr
	}
	return true, nil
}

// staleTarget names the item whose target changed since the review, when
// the whole plan's snapshot of targets says one did (plans record their
// targets; older approvals do not: errStalePlan).
func (c *Controller) staleTarget(view *v1alpha1.VirtPlatformConfig, targets []plan.Target) error {
	for i := range view.Status.Items {
		if view.Status.Items[i].State == v1alpha1.ItemStateFailed {
			continue // not read, not part of the snapshot
		}
		_, err := c.Planner.CheckReadTarget(view, &view.Status.Items[i], targets[i].Object, false, false)
		var stale *plan.StaleTargetError
		if errors.As(err, &stale) {
			return stale
		}
	}
	return errStalePlan
}

// itemIndex is the index of the item named name, else fallback.
func (c *Controller) itemIndex(cfg *v1alpha1.VirtPlatformConfig, name string, fallback int) int {
	for i := range cfg.Status.Items {
		if cfg.Status.Items[i].Name == name {
			return i
		}
	}
	return fallback
}
