package controller

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/clock"

	"github.com/kubevirt/virt-advisor/pkg/apis/advisor/v1alpha1"
	"github.com/kubevirt/virt-advisor/pkg/failpoint"
	"github.com/kubevirt/virt-advisor/pkg/plan"
	"github.com/kubevirt/virt-advisor/pkg/status"
	"github.com/kubevirt/virt-advisor/pkg/transient"
)

// writer writes an approved item after its checks (step progress): the
// review, the pools' gate, the checks right before the write, then the
// write and its record.
type writer struct {
	planner   Planner
	checks    *preWriteChecks
	gate      *gate
	retries   *retries
	approvals *approvals
	writes    *statusWrites
	out       outcomes
}

// dueItem writes item i, whose write is pending, after its checks;
// non-nil when the items after it must wait (or the config stopped).
func (w *writer) dueItem(ctx context.Context, p *progression, i int) *progressEnd {
	cfg := p.cfg
	if holds, err := w.approvals.holds(cfg, cfg.Status.Items[i].Name); !holds {
		return &progressEnd{err: err}
	}
	if backoff := w.retries.wait(cfg.Name, &cfg.Status.Items[i]); backoff > 0 {
		return &progressEnd{requeue: backoff, wait: p.wait}
	}
	gate, left, gateWait, err := w.writeItem(ctx, cfg, i, p.timeout, p.planDue)
	p.planDue = false
	it := &cfg.Status.Items[i]
	switch {
	case errors.Is(err, errLookAgain) || ctx.Err() != nil:
		return &progressEnd{err: err}
	case err != nil && transient.Retry(err, retriesOf(it)):
		if after, retrying := w.retries.retry(cfg.Name, it, err, p.timeout); retrying {
			return &progressEnd{requeue: after, wait: p.wait}
		}
	case err != nil:
		w.out.setItem(it, v1alpha1.ItemStateFailed, fmt.Sprintf("Failed to apply: %v", err))
		it.Retry = nil
	case gate == gateStopped:
		return &progressEnd{}
	case gate == gateWaiting:
		p.waitFor(left, gateWait)
		return &progressEnd{requeue: p.requeue, wait: p.wait}
	}
	return nil
}

// writeItem makes the checks before an approved item's write and writes
// it: the review, the pools' gate, then the write. planDue: the whole
// plan is checked with this item (its first write).
func (w *writer) writeItem(ctx context.Context, cfg *v1alpha1.VirtPlatformConfig, i int, timeout time.Duration, planDue bool) (itemGate, time.Duration, *status.Wait, error) {
	// Nothing is read, paused or written for an item whose admission
	// policies are not in force.
	if err := w.gate.confined(&cfg.Status.Items[i]); err != nil {
		return w.gate.waitConfined(&cfg.Status.Items[i], err)
	}
	due := preWrite{plan: planDue, stored: true, target: true}
	if it := &cfg.Status.Items[i]; rollsPools(it) && it.Operation != v1alpha1.OperationNone {
		// Before the pools' gate, which may pause them: a write too.
		holds, _, err := w.checks.checkBeforeWrite(ctx, cfg, i, due, false)
		if err != nil {
			return gateWaiting, 0, nil, err
		}
		if !holds {
			return gateStopped, 0, nil, nil
		}
		gate, left, wait, err := w.gate.item(ctx, cfg, &cfg.Status.Items[i], timeout)
		if err != nil || gate != gateOpen {
			return gate, left, wait, err
		}
		failpoint.Hit(ctx, "after-pool-pause")
		// The pause and the pools' reads took time, and the spec or the
		// approval may have changed meanwhile: the target once more, and
		// the approval as stored (a retry records no intent to prove it).
		due = preWrite{target: true, stored: true}
	}
	if holds, err := w.applyItem(ctx, cfg, i, due); err != nil || !holds {
		return gateStopped, 0, nil, err
	}
	return gateOpen, 0, nil, nil
}

// applyItem writes one item after the checks due. The intent is recorded
// before the write (while the checks read), so that a crash between the
// write and the status update leads to writing the same desired state
// again, never to a false "stale plan".
func (w *writer) applyItem(ctx context.Context, cfg *v1alpha1.VirtPlatformConfig, i int, due preWrite) (bool, error) {
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
	holds, target, err := w.checks.checkBeforeWrite(ctx, cfg, i, due, intent)
	if err != nil || !holds {
		return holds, err
	}
	it = &cfg.Status.Items[i]
	if !writes {
		w.nothingToWrite(it)
		return true, nil
	}
	return true, w.write(ctx, cfg, i, target)
}

// nothingToWrite settles an item whose checks passed and that writes
// nothing.
func (w *writer) nothingToWrite(it *v1alpha1.VirtPlatformConfigItem) {
	switch {
	case plan.LeftInPlace(it):
		w.out.setItem(it, v1alpha1.ItemStateCompleted, it.Message)
	case rollsPools(it):
		w.out.setItem(it, v1alpha1.ItemStateInProgress, "Waiting for the MachineConfigPool rollout")
	default:
		w.out.setItem(it, v1alpha1.ItemStateCompleted, unchangedMessage)
	}
}

// write writes item i, whose checks passed, conditional on the read they
// judged, and records the write.
func (w *writer) write(ctx context.Context, cfg *v1alpha1.VirtPlatformConfig, i int, target checkedTarget) error {
	// written: a retry found our own earlier write (made before a crash
	// or a lost answer); it is not made a second time.
	written := target.written
	if written == nil {
		if err := w.recordReplacing(ctx, cfg, i, target.read); err != nil {
			return err
		}
	}
	it := &cfg.Status.Items[i]
	if written == nil {
		if err := w.gate.confined(it); err != nil {
			// The policies went away during the checks: the intent stays,
			// and the next look waits for them.
			return fmt.Errorf("%w: %v", errLookAgain, err)
		}
		failpoint.Hit(ctx, "before-write")
		var err error
		if written, err = w.planner.Apply(ctx, cfg, *it, target.read); apierrors.IsConflict(err) {
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
	failpoint.Hit(ctx, "after-write")
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
	w.out.setItem(it, v1alpha1.ItemStateCompleted, appliedMessage)
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
func (w *writer) recordReplacing(ctx context.Context, cfg *v1alpha1.VirtPlatformConfig, i int, before plan.Target) error {
	it := &cfg.Status.Items[i]
	if !recordsReplaced(cfg, it) || !before.Read {
		return nil
	}
	if !plan.RecordReplacing(&cfg.Status, it, before.Object) {
		return nil
	}
	if err := w.writes.write(ctx, cfg, cfg.Status.DeepCopy()); err != nil {
		return fmt.Errorf("%w: recording what item '%s' replaces before writing it: %v", errLookAgain, it.Name, err)
	}
	// As the intent's: this reconcile goes on to the write.
	w.writes.own(cfg)
	return nil
}

// recordsReplaced: a write of item it records what it replaces (a revert
// restores what was recorded, and a Delete forgets the object).
func recordsReplaced(cfg *v1alpha1.VirtPlatformConfig, it *v1alpha1.VirtPlatformConfigItem) bool {
	return !reverting(cfg) && it.Operation != v1alpha1.OperationDelete
}

// retriesOf is how many times an item's write has failed and been retried.
func retriesOf(it *v1alpha1.VirtPlatformConfigItem) int32 {
	if it.Retry == nil {
		return 0
	}
	return it.Retry.Attempts
}

// retries keeps when each item retrying a write may be tried again, so
// that no event (the status write that says it retries, a pool's) brings
// the attempt forward. Kept in memory: a new leader tries at once.
type retries struct {
	at sync.Map // retryKey -> time.Time
	// jitter spreads retries (a number in [0, 1)); tests fix it.
	jitter func() float64
	// deadline is --transient-error-deadline (0: 10 minutes).
	deadline time.Duration
	out      outcomes
}

// retry records a transient failure of item it's write and says when
// to try again; past the deadline (the config's waitTimeout, else
// --transient-error-deadline, counted from the first failure) the item
// fails with the last error instead, and retrying is false.
func (r *retries) retry(config string, it *v1alpha1.VirtPlatformConfigItem, err error, timeout time.Duration) (after time.Duration, retrying bool) {
	now := r.out.clock.Now()
	if it.Retry == nil {
		it.Retry = &v1alpha1.ItemRetry{Since: metav1.NewTime(now)}
	}
	it.Retry.Attempts++
	it.Retry.LastError = err.Error()
	deadline, what := timeout, "spec.waitTimeout"
	if deadline <= 0 {
		deadline, what = r.transientDeadline(), "--transient-error-deadline"
	}
	if waited := now.Sub(it.Retry.Since.Time); waited >= deadline {
		r.out.setItem(it, v1alpha1.ItemStateFailed, fmt.Sprintf("Failed to apply: gave up after retrying for %v (attempt %d; the deadline is %v, %s): %v",
			waited.Round(time.Second), it.Retry.Attempts, deadline, what, err))
		return 0, false
	}
	after = transient.Backoff(it.Retry.Attempts, r.jitter())
	it.Message = fmt.Sprintf("Retrying in %v (attempt %d): %v", after, it.Retry.Attempts, err)
	r.at.Store(retryKey{config, it.Name}, now.Add(after))
	return after, true
}

// wait is how long an item retrying its write still waits for its
// backoff to end; 0 when it may be tried now (or is not retrying).
func (r *retries) wait(config string, it *v1alpha1.VirtPlatformConfigItem) time.Duration {
	if it.Retry == nil {
		return 0
	}
	at, ok := r.at.Load(retryKey{config, it.Name})
	if !ok {
		return 0
	}
	return at.(time.Time).Sub(r.out.clock.Now())
}

// forget drops the retry times of a deleted config's items.
func (r *retries) forget(config string) {
	r.at.Range(func(k, _ any) bool {
		if k.(retryKey).config == config {
			r.at.Delete(k)
		}
		return true
	})
}

func (r *retries) transientDeadline() time.Duration {
	if r.deadline > 0 {
		return r.deadline
	}
	return 10 * time.Minute
}

// outcomes sets what a step decided on items and configs, stamped with
// the clock, and on a completed config the options and the build.
type outcomes struct {
	clock    clock.Clock
	profiles Profiles
	version  string
}

func (o *outcomes) completed(cfg *v1alpha1.VirtPlatformConfig, message string) {
	opts := o.profiles.ResolveOptions(cfg.Spec)
	cfg.Status.AppliedOptions = &opts
	cfg.Status.OperatorVersion = o.version
	status.ClearUpgrade(&cfg.Status, cfg.Generation, "Applied", "The profile logic of "+o.version+" is applied")
	status.ClearPartiallyApplied(&cfg.Status, cfg.Generation)
	status.SetPhase(&cfg.Status, v1alpha1.PhaseCompleted, "Completed", message)
}

func (o *outcomes) setItem(it *v1alpha1.VirtPlatformConfigItem, state v1alpha1.ItemState, message string) {
	if it.State != state {
		now := metav1.NewTime(o.clock.Now())
		it.LastTransitionTime = &now
	}
	it.State, it.Message = state, message
}

// since is how long ago t was; an unset time is now.
func (o *outcomes) since(t *metav1.Time) time.Duration {
	if t == nil {
		return 0
	}
	return o.clock.Since(t.Time)
}

// staleItem fails a config whose item i is no longer what was reviewed.
func (o *outcomes) staleItem(cfg *v1alpha1.VirtPlatformConfig, i int, stale *plan.StaleTargetError) {
	it := &cfg.Status.Items[i]
	o.setItem(it, v1alpha1.ItemStateFailed, "Not written: "+stale.Error())
	status.SetPhase(&cfg.Status, v1alpha1.PhaseFailed, "StalePlan", fmt.Sprintf("%s Nothing was written for %s.", status.MessageStale, stale.Error())+notePartial(cfg))
}
