package pools

import (
	"context"
	"fmt"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/sets"

	"github.com/kubevirt/virt-advisor/pkg/apis/advisor/v1alpha1"
	"github.com/kubevirt/virt-advisor/pkg/cluster"
	"github.com/kubevirt/virt-advisor/pkg/machineconfig"
	"github.com/kubevirt/virt-advisor/pkg/plan"
	"github.com/kubevirt/virt-advisor/pkg/status"
)

// ItemRollout is how far the pools of a MachineConfig item rolled it out,
// and what their maintenance windows say.
type ItemRollout struct {
	machineconfig.Rollout
	// Windowed: a maintenance window governs a pool of the item; its
	// rollout may then span windows and waitTimeout does not bound it.
	Windowed bool
	// Window is the item's maintenanceWindow: the window a pool of its
	// waits for to resume the rollout, nil when none.
	Window *v1alpha1.WindowWait
	// Wait: the rollout is paused until a window opens.
	Wait *status.Wait
	// After: look again then (a window closes or opens); 0 for no reason.
	After time.Duration
	// WindowPauses counts the pauses of the item's pools at the close of
	// a window (the item's windowPauses).
	WindowPauses int32
	// Pools names the pools the item rolls out on (the config controller
	// watches them).
	Pools []string
}

// soonest keeps the sooner of two durations, 0 meaning none.
func soonest(a, b time.Duration) time.Duration {
	if b > 0 && (a == 0 || b < a) {
		return b
	}
	return a
}

// Rollout evaluates every pool that renders a MachineConfig item. It
// writes nothing: for an item virt-advisor wrote under an approval
// (written), a pool whose maintenance window closed while it still has
// nodes to update is queued for its reconcile, which pauses it; a rollout
// of a plan with nothing to write is not ours to pause.
func (c *Controller) Rollout(ctx context.Context, cfg *v1alpha1.VirtPlatformConfig, it *v1alpha1.VirtPlatformConfigItem, written bool) ItemRollout {
	v := itemView{key: itemKey{cfg.Name, it.Name, cfg.UID}, cfg: cfg, it: it, written: written}
	var pools []*unstructured.Unstructured
	var err error
	v.all, err = c.Cluster.List(ctx, machineconfig.MachineConfigPoolGVK)
	if err == nil {
		pools, err = itemPools(it, v.all)
	}
	if err == nil {
		v.configs, err = c.readConfigs()
	}
	if err != nil {
		return ItemRollout{Window: it.MaintenanceWindow, Rollout: machineconfig.Rollout{
			Message: fmt.Sprintf("Cannot read the MachineConfigPools of %s '%s': %v", it.TargetRef.Kind, it.TargetRef.Name, err)}}
	}
	// A KubeletConfig rolls out through the MachineConfigs generated from
	// it, named by the live object (and refused in its status).
	if machineconfig.IsKubeletConfig(it.TargetRef) && it.Operation != v1alpha1.OperationDelete {
		if v.live, err = c.Cluster.Get(ctx, plan.TargetGVK(it.TargetRef), "", it.TargetRef.Name); err != nil {
			return ItemRollout{Window: it.MaintenanceWindow, Rollout: machineconfig.Rollout{
				Message: fmt.Sprintf("Cannot read KubeletConfig '%s': %v", it.TargetRef.Name, err)}}
		}
	}
	out := ItemRollout{WindowPauses: it.WindowPauses, Pools: names(pools)}
	if written {
		c.followPauses(cfg, v.key, it.WindowPauses)
	}
	results := make([]machineconfig.Rollout, len(pools))
	for i, pool := range pools {
		results[i] = c.poolRollout(ctx, v, pool, &out)
	}
	if written {
		// After the pools: a pause their reconcile made meanwhile counts.
		out.WindowPauses = c.counts.follow(v.key, it.WindowPauses)
	}
	out.Rollout = machineconfig.CombineRollouts(it.TargetRef.Name, results)
	return out
}

// followPauses begins to count the window pauses of item k of cfg, whose
// status says stored, and drops the counts of cfg's items that no longer
// roll out.
func (c *Controller) followPauses(cfg *v1alpha1.VirtPlatformConfig, k itemKey, stored int32) {
	rolling := sets.New(k.item)
	for i := range cfg.Status.Items {
		if it := &cfg.Status.Items[i]; rollingOut(cfg, it) {
			rolling.Insert(it.Name)
		}
	}
	c.counts.keepItems(cfg.Name, cfg.UID, rolling)
	c.counts.follow(k, stored)
}

// itemView is what the rollout of an item on each of its pools is
// evaluated with: live is the KubeletConfig it writes (nil for a
// MachineConfig or after a Delete), all every pool.
type itemView struct {
	key     itemKey
	cfg     *v1alpha1.VirtPlatformConfig
	configs configView
	it      *v1alpha1.VirtPlatformConfigItem
	live    *unstructured.Unstructured
	all     []unstructured.Unstructured
	written bool
}

// generatedOn names the MachineConfigs generated from the item's
// KubeletConfig that pool renders (none for a MachineConfig, or when the
// live KubeletConfig is gone).
func (v itemView) generatedOn(pool *unstructured.Unstructured) []string {
	if v.live == nil || !machineconfig.IsKubeletConfig(v.it.TargetRef) {
		return nil
	}
	names, _ := machineconfig.ChangeOf(v.it.TargetRef, v.live.Object).RenderedBy(pool, v.all)
	return names
}

// poolRollout evaluates one pool of the item, adding what its window says
// to out.
func (c *Controller) poolRollout(ctx context.Context, v itemView, pool *unstructured.Unstructured, out *ItemRollout) machineconfig.Rollout {
	it := v.it
	name := pool.GetName()
	if _, found := pool.Object["spec"]; !found {
		pool = nil // noted at apply time, gone since
	}
	var generated []string
	if pool != nil {
		generated = v.generatedOn(pool)
	}
	r := machineconfig.EvaluateTargetRollout(pool, name, it.TargetRef, v.live, it.Operation, machineconfig.ConfigBefore(it, name), generated)
	if pool == nil || r.Done {
		return r
	}
	w := allowed
	if v.written {
		// The pool's reconcile sets the timer of the window's close once
		// the cache holds the item written (the configs' handler).
		w = c.windows.trustedWindowFor(ctx, pool, c.windows.trustsOf(v.cfg))
	}
	out.Windowed = out.Windowed || len(w.Windows) > 0
	now := c.Clock.Now()
	if !w.Allowed {
		if machineconfig.DecideWindowPause(machineconfig.ReadPool(pool, cluster.FieldManager, "", ""), machineconfig.RollingOut(pool), false) {
			c.term.enqueue(name, 0) // the pool's reconcile pauses it
		}
		r.Message = windowClosedMessage(name, pool, w, now)
		out.Window = w.wait(true)
		if out.Wait == nil {
			out.Wait = &status.Wait{Reason: status.WaitingMaintenanceWindow,
				Message: status.WindowWaitMessage(w.Window, w.OpensAt, w.loc, now, fmt.Sprintf("to resume the rollout of item '%s'", it.Name),
					fmt.Sprintf("MachineConfigPool '%s': %s", name, w.Reason))}
		}
		out.After = soonest(out.After, w.after(now))
		return r
	}
	if w.Windowed && !w.ClosesAt.IsZero() {
		out.After = soonest(out.After, w.ClosesAt.Sub(now)) // the rollout's message changes as the window closes
	}
	c.notePause(pool, v, now, &r, out)
	return r
}

// notePause says on the rollout of a pool we hold paused why: the drains
// its unpause would start block (a wait, looked at again as the pool is),
// else our pause and until when.
func (c *Controller) notePause(pool *unstructured.Unstructured, v itemView, now time.Time, r *machineconfig.Rollout, out *ItemRollout) {
	aborted := v.configs.abortedOn(pool, v.all)
	if msg, wait := haltMessage(pool, v.it.Name, len(aborted) > 0); msg != "" {
		r.Message, out.Wait = msg, wait // a halt says more than any other wait
		out.After = soonest(out.After, StepPoll)
		return
	}
	if msg := c.resumer.heldMessage(pool, len(aborted) > 0); msg != "" {
		r.Message = msg
		if out.Wait == nil {
			out.Wait = heldWait(v.it.Name, msg, c.resumer.isBusy(pool.GetName()))
		}
		out.After = soonest(out.After, PreflightRetry)
		return
	}
	if msg := c.stepper.stepProgress(pool); msg != "" && len(aborted) == 0 {
		r.Message = msg
		out.After = soonest(out.After, StepPoll)
		return
	}
	if msg := c.pauseMessage(pool, aborted, now); msg != "" {
		r.Message = msg
	}
}

// pauseMessage says why we hold a pool paused, "" when we do not: an
// abort, or a coalescing or window pause and until when.
func (c *Controller) pauseMessage(pool *unstructured.Unstructured, aborted []string, now time.Time) string {
	name := pool.GetName()
	if len(aborted) > 0 && machineconfig.ReadPool(pool, cluster.FieldManager, "", "").Paused {
		// Held by an abort: its recorded end means nothing.
		return fmt.Sprintf("MachineConfigPool '%s' is paused: the plan rolling out on it was aborted (%d of %d nodes updated); it resumes when a plan of %s is approved again or the config is deleted",
			name, machineconfig.Count(pool, "updatedMachineCount"), machineconfig.Count(pool, "machineCount"), strings.Join(aborted, ", "))
	}
	until, ours := machineconfig.PausedBy(pool, cluster.FieldManager)
	if !ours {
		return ""
	}
	if !now.Before(until) {
		// The pool's reconcile may have run while this replica could
		// not see the pool (during an outage, or as it took over):
		// nothing else would end the pause.
		c.term.enqueue(name, machineconfig.HoldRetry)
	}
	return pausedMessage(name, until, now)
}

// pausedMessage says that we hold the pool paused, and until when; never
// a "paused until" in the past.
func pausedMessage(name string, until, now time.Time) string {
	if !now.Before(until) {
		return fmt.Sprintf("MachineConfigPool '%s' is paused by virt-advisor; its window ended at %s and the pause ends as soon as the changes approved meanwhile are written",
			name, until.UTC().Format(time.RFC3339))
	}
	return fmt.Sprintf("MachineConfigPool '%s' is paused by virt-advisor until %s so that the changes approved meanwhile roll out with this one (one reboot per node)",
		name, until.UTC().Format(time.RFC3339))
}
