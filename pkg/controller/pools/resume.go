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

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/klog/v2"

	"github.com/kubevirt/virt-advisor/pkg/apis/advisor/v1alpha1"
	"github.com/kubevirt/virt-advisor/pkg/cluster"
	"github.com/kubevirt/virt-advisor/pkg/disruption"
	"github.com/kubevirt/virt-advisor/pkg/machineconfig"
	"github.com/kubevirt/virt-advisor/pkg/status"
)

// AllowBlockingDrains records config's spec.rollout.allowBlockingDrains:
// whether a pool its items roll out on resumes although a VM would block
// a drain.
func (c *Controller) AllowBlockingDrains(config string, allow bool) {
	c.index.setAllowBlocking(config, allow)
}

// resume ends our pause of a pool whose pause is over, unless the live
// look at the drains it starts holds it; held says so. configs are those
// whose items roll out on, or wait for, the pool: they are woken when the
// reason it is held changes.
func (c *Controller) resume(ctx context.Context, pool *unstructured.Unstructured, configs []string) (bool, error) {
	name := pool.GetName()
	reason := c.resumeHold(ctx, pool, c.index.allowsBlocking(configs))
	if c.index.setResumeHold(name, reason) {
		if reason != "" {
			klog.InfoS("Kept MachineConfigPool paused past the end of our pause", "pool", name, "reason", reason)
			c.Recorder.Event(pool, corev1.EventTypeWarning, "ResumeHeldByVirtAdvisor", "Kept paused by virt-advisor: "+reason)
		}
		for _, config := range configs {
			c.Wake(config)
		}
	}
	if reason != "" {
		return true, nil
	}
	p := machineconfig.ReadPool(pool, cluster.FieldManager, "", "")
	if err := c.applyPause(ctx, name, nil, ""); err != nil {
		return false, fmt.Errorf("unpausing MachineConfigPool '%s': %w", name, err)
	}
	klog.InfoS("Unpaused MachineConfigPool: the MachineConfig changes of its window roll out together", "pool", name, "othersHoldingPause", p.Others)
	c.Recorder.Event(pool, corev1.EventTypeNormal, "UnpausedByVirtAdvisor", machineconfig.UnpauseMessage(p))
	return false, nil
}

// releaseResume drops the hold of a pool no unpause is decided for (its
// pause not over, a window closed again, the pool not ours any more).
func (c *Controller) releaseResume(pool string, configs []string) {
	if c.index.setResumeHold(pool, "") {
		for _, config := range configs {
			c.Wake(config)
		}
	}
}

// resumeHold reads, live, what resuming the pool's rollout does to the VMs
// on its nodes (the plan engine's look before a write, on the change the
// pool rolls out now) and says why the pool stays paused, "" when it may
// resume. A look that fails holds it: nothing is drained on a guess.
func (c *Controller) resumeHold(ctx context.Context, pool *unstructured.Unstructured, allowBlocking bool) string {
	reboots, err := c.Drains.PendingDrainImpact(ctx, pool)
	if err != nil {
		klog.ErrorS(err, "Cannot assess what resuming the rollout of a MachineConfigPool does to its VMs: it stays paused", "pool", pool.GetName())
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
func (c *Controller) heldMessage(pool *unstructured.Unstructured, pools []unstructured.Unstructured) string {
	reason := c.index.resumeHold(pool.GetName())
	if reason == "" || len(c.index.abortedOn(pool, pools)) > 0 {
		return ""
	}
	if _, ours := machineconfig.PausedBy(pool, cluster.FieldManager); !ours {
		return ""
	}
	return fmt.Sprintf("MachineConfigPool '%s' is paused by virt-advisor: %s", pool.GetName(), reason)
}

// heldWait is the Waiting condition of an item whose pool is held so.
func heldWait(item, message string) *status.Wait {
	return &status.Wait{Reason: status.WaitingDrainBlocked, Message: fmt.Sprintf("Waiting to resume the rollout of item '%s': %s", item, message)}
}

func (x *index) setAllowBlocking(config string, allow bool) {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.allowBlocking[config] = allow
}

// allowsBlocking is true when every one of configs, at least one, allows
// blocking drains; a config not heard of yet (at the start of a term)
// does not.
func (x *index) allowsBlocking(configs []string) bool {
	x.mu.Lock()
	defer x.mu.Unlock()
	for _, config := range configs {
		if !x.allowBlocking[config] {
			return false
		}
	}
	return len(configs) > 0
}

// setResumeHold records why pool stays paused ("" for no reason any
// more); false when unchanged.
func (x *index) setResumeHold(pool, reason string) bool {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.resumeHolds[pool] == reason {
		return false
	}
	if reason == "" {
		delete(x.resumeHolds, pool)
	} else {
		x.resumeHolds[pool] = reason
	}
	return true
}

func (x *index) resumeHold(pool string) string {
	x.mu.Lock()
	defer x.mu.Unlock()
	return x.resumeHolds[pool]
}
