package pools

// The live look before a pool resumes: a pause of ours ends (its
// coalescing window over, its maintenance window open) only after what
// the drains it starts do to the VMs there is read again, live, as before
// a write (preflight): a VM that came meanwhile and would block a drain,
// or would find no room to migrate to, keeps the pool paused, looked at
// again every PreflightRetry, with the reason on the items rolling out on
// it. spec.rollout.allowBlockingDrains of every config rolling out on the
// pool resumes it all the same.

import (
	"context"
	"fmt"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"

	"github.com/kubevirt/virt-advisor/pkg/apis/advisor/v1alpha1"
	"github.com/kubevirt/virt-advisor/pkg/cluster"
	"github.com/kubevirt/virt-advisor/pkg/disruption"
	"github.com/kubevirt/virt-advisor/pkg/machineconfig"
	"github.com/kubevirt/virt-advisor/pkg/status"
)

// resumer makes the live look before our pause of a pool ends, and keeps,
// by pool, why the pause outlasts its end: what the last look found (no
// cache holds that).
type resumer struct {
	drains   Drains
	pauses   *pauses
	recorder record.EventRecorder
	wake     func(config string)
	mu       sync.Mutex
	reasons  map[string]string
	// busy: the reason is not the VMs (hold).
	busy map[string]bool
}

// resume ends our pause of a pool whose pause is over, unless the live
// look at the drains it starts holds it (allowBlocking: every config of
// configs allows blocking drains); held says so. configs are those whose
// items roll out on, or wait for, the pool: they are woken when the
// reason it is held changes.
func (r *resumer) resume(ctx context.Context, pool *unstructured.Unstructured, configs []string, allowBlocking bool) (bool, error) {
	return r.resumeFor(ctx, pool, configs, allowBlocking, false)
}

// resumeFor is resume; step: the pause ends between two steps of a
// stepped rollout (the next step starts), which its log and Event say.
func (r *resumer) resumeFor(ctx context.Context, pool *unstructured.Unstructured, configs []string, allowBlocking, step bool) (bool, error) {
	name := pool.GetName()
	log := klog.FromContext(ctx)
	reason := r.look(ctx, pool, allowBlocking)
	if r.set(name, reason) {
		if reason != "" {
			log.Info("Kept MachineConfigPool paused past the end of our pause", "pool", name, "reason", reason)
			r.recorder.Event(pool, corev1.EventTypeWarning, "ResumeHeldByVirtAdvisor", "Kept paused by virt-advisor: "+reason)
		}
		for _, config := range configs {
			r.wake(config)
		}
	}
	if reason != "" {
		return true, nil
	}
	p := machineconfig.ReadPool(pool, cluster.FieldManager, "", "")
	if err := r.pauses.apply(ctx, name, nil, ""); err != nil {
		return false, fmt.Errorf("unpausing MachineConfigPool '%s': %w", name, err)
	}
	if step {
		log.Info("Unpaused MachineConfigPool for the next step of its rollout: its gates passed", "pool", name, "othersHoldingPause", p.Others)
		r.recorder.Event(pool, corev1.EventTypeNormal, "UnpausedByVirtAdvisor", "virt-advisor ended its pause for the next step of the rollout: the gates of the step before passed")
		return false, nil
	}
	log.Info("Unpaused MachineConfigPool: the MachineConfig changes of its window roll out together", "pool", name, "othersHoldingPause", p.Others)
	r.recorder.Event(pool, corev1.EventTypeNormal, "UnpausedByVirtAdvisor", machineconfig.UnpauseMessage(p))
	return false, nil
}

// release drops the hold of a pool no unpause is decided for (its
// pause not over, a window closed again, the pool not ours any more).
func (r *resumer) release(pool string, configs []string) {
	if r.set(pool, "") {
		for _, config := range configs {
			r.wake(config)
		}
	}
}

// look reads, live, what resuming the pool's rollout does to the VMs
// on its nodes (the plan engine's look before a write, on the change the
// pool rolls out now) and says why the pool stays paused, "" when it may
// resume. A look that fails holds it: nothing is drained on a guess.
func (r *resumer) look(ctx context.Context, pool *unstructured.Unstructured, allowBlocking bool) string {
	reboots, err := r.drains.PendingDrainImpact(ctx, pool)
	if err != nil {
		klog.FromContext(ctx).Error(err, "Cannot assess what resuming the rollout of a MachineConfigPool does to its VMs: it stays paused", "pool", pool.GetName())
		return fmt.Sprintf("what resuming its rollout does to the VMs on its nodes cannot be read (%v); MachineConfigPool '%s' stays paused until it can", err, pool.GetName())
	}
	return decideResume(pool.GetName(), reboots, allowBlocking)
}

// decideResume says why a pool of ours stays paused although its pause is
// over ("" when it may resume), from what draining its nodes now does.
// Pure.
func decideResume(pool string, reboots []v1alpha1.PoolReboot, allowBlocking bool) string {
	if blocking := blocked(reboots, allowBlocking); len(blocking) > 0 {
		return disruption.ResumeBlockedMessage(pool, blocking)
	}
	return ""
}

// blocked are the VMs that would block a drain of these reboots (a VM
// that cannot migrate, or that finds no room to: InsufficientCapacity),
// none when blocking drains are allowed.
func blocked(reboots []v1alpha1.PoolReboot, allowBlocking bool) []v1alpha1.DisruptedVM {
	if allowBlocking {
		return nil
	}
	return disruption.Blocking(reboots)
}

// heldMessage says, for the items rolling out on a pool, that our pause
// outlasts its end because resuming would start drains that block; ""
// when it does not (or an abort holds the pool: that says more).
func (r *resumer) heldMessage(pool *unstructured.Unstructured, aborted bool) string {
	reason := r.get(pool.GetName())
	if reason == "" || aborted {
		return ""
	}
	if _, ours := machineconfig.PausedBy(pool, cluster.FieldManager); !ours {
		return ""
	}
	return fmt.Sprintf("MachineConfigPool '%s' is paused by virt-advisor: %s", pool.GetName(), reason)
}

// heldWait is the Waiting condition of an item whose pool is held so.
func heldWait(item, message string, busy bool) *status.Wait {
	if busy {
		return &status.Wait{Reason: status.WaitingPoolBusy, Message: fmt.Sprintf("Waiting to resume the rollout of item '%s': %s", item, message)}
	}
	return &status.Wait{Reason: status.WaitingDrainBlocked, Message: fmt.Sprintf("Waiting to resume the rollout of item '%s': %s", item, message)}
}

// set records why pool stays paused ("" for no reason any more); false
// when unchanged.
func (r *resumer) set(pool, reason string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.reasons[pool] == reason {
		return false
	}
	delete(r.busy, pool)
	if reason == "" {
		delete(r.reasons, pool)
	} else {
		r.reasons[pool] = reason
	}
	return true
}

func (r *resumer) get(pool string) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.reasons[pool]
}

// hold keeps pool paused for reason, not the VMs: someone else's
// maintenance of its nodes between two steps, or a render the MachineConfig
// operator has not made yet; configs are woken when the reason changes.
func (r *resumer) hold(ctx context.Context, pool *unstructured.Unstructured, configs []string, reason string) {
	name := pool.GetName()
	if r.set(name, reason) {
		klog.FromContext(ctx).Info("Kept MachineConfigPool paused", "pool", name, "reason", reason)
		r.recorder.Event(pool, corev1.EventTypeNormal, "ResumeHeldByVirtAdvisor", "Kept paused by virt-advisor: "+reason)
		for _, config := range configs {
			r.wake(config)
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.busy[name] = true
}

// isBusy is true when pool is held for another reason than the VMs.
func (r *resumer) isBusy(pool string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.busy[pool]
}
