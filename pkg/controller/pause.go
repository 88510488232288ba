package controller

// One reboot per node: before a MachineConfig item is written, every pool
// that renders it is paused (spec.paused applied by our field manager) for
// a coalescing window, so that the MachineConfig changes approved within
// it, of this config or another, render into one config and every node
// reboots once. The window's end is kept on the pool itself
// (PausedUntilAnnotation, in the same apply as spec.paused), so whichever
// replica leads next finishes it. Unpausing withdraws our ownership of
// spec.paused: a pool someone else also paused stays paused.
//
// A pause is a write to the cluster: it is made only right before writing
// an approved MachineConfig item (after approvalHolds), and the unpause
// only undoes a pause of ours.

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/klog/v2"

	"github.com/kubevirt/virt-advisor/pkg/apis/advisor/v1alpha1"
	"github.com/kubevirt/virt-advisor/pkg/plan"
	"github.com/kubevirt/virt-advisor/pkg/profiles"
	"github.com/kubevirt/virt-advisor/pkg/status"
)

const (
	// PausedUntilAnnotation on a MachineConfigPool is the end of the
	// coalescing window of a pause we hold (RFC 3339).
	PausedUntilAnnotation = "advisor.kubevirt.io/paused-until"
	// HoldAnnotation on a MachineConfigPool is an administrator's hold:
	// while it is there virt-advisor writes no MachineConfig the pool
	// renders and never ends a pause of the pool, its own included. A
	// `kubectl patch … paused: true` on a pool we already paused changes
	// nothing, so no field ownership records it and ending our pause would
	// unpause the pool; the annotation is the hold that cannot be lost.
	HoldAnnotation = "advisor.kubevirt.io/hold"
	// heldRetry is how often a held pool we paused is looked at again.
	heldRetry = 10 * time.Second
	// windowsKey is the queue key of finishWindows; no config has this name.
	windowsKey = "\x00pool-windows"
	// holdRetry is how often a window that ended is looked at again while
	// approved MachineConfig items for its pool are still being written.
	holdRetry = time.Second
)

// poolPause is what the coalescing decisions read of a MachineConfigPool.
type poolPause struct {
	name   string
	paused bool
	// ours: our field manager applied spec.paused; others: every other
	// manager owning it.
	ours   bool
	others []string
	// until is the end of our window, zero when not recorded.
	until time.Time
	// held: an administrator's HoldAnnotation is set (its value, the
	// reason, in hold).
	held                     bool
	hold                     string
	specConfig, statusConfig string
	// hasChange: spec.configuration already renders the item's change (its
	// MachineConfig is in the source, or gone from it for a delete).
	hasChange        bool
	degraded         bool
	degradedMachines int64
}

// readPool reads a pool for writing MachineConfig mc with operation op.
func readPool(pool *unstructured.Unstructured, mc string, op v1alpha1.Operation) poolPause {
	p := poolPause{name: pool.GetName()}
	p.paused, _, _ = unstructured.NestedBool(pool.Object, "spec", "paused")
	p.ours, p.others = pausedOwners(pool)
	p.hold, p.held = pool.GetAnnotations()[HoldAnnotation]
	if t, err := time.Parse(time.RFC3339, pool.GetAnnotations()[PausedUntilAnnotation]); err == nil {
		p.until = t
	}
	p.specConfig, _, _ = unstructured.NestedString(pool.Object, "spec", "configuration", "name")
	p.statusConfig, _, _ = unstructured.NestedString(pool.Object, "status", "configuration", "name")
	p.hasChange = hasSource(pool, "spec", mc) == (op != v1alpha1.OperationDelete)
	p.degradedMachines, _, _ = unstructured.NestedInt64(pool.Object, "status", "degradedMachineCount")
	p.degraded = p.degradedMachines > 0 || conditionTrue(pool, "Degraded") || conditionTrue(pool, "NodeDegraded")
	return p
}

// pausedOwners tells who owns spec.paused: our applies, and the others.
func pausedOwners(pool *unstructured.Unstructured) (ours bool, others []string) {
	for _, mf := range pool.GetManagedFields() {
		if mf.Subresource != "" || mf.FieldsV1 == nil {
			continue
		}
		var fields struct {
			Spec map[string]json.RawMessage `json:"f:spec"`
		}
		if json.Unmarshal(mf.FieldsV1.Raw, &fields) != nil {
			continue
		}
		if _, ok := fields.Spec["f:paused"]; !ok {
			continue
		}
		if mf.Manager == plan.FieldManager && mf.Operation == metav1.ManagedFieldsOperationApply {
			ours = true
		} else {
			others = append(others, mf.Manager)
		}
	}
	sort.Strings(others)
	return ours, others
}

type writeAction int

const (
	// writeNow: write the item (the pool is ours to write to, or no
	// coalescing is wanted).
	writeNow writeAction = iota
	// pauseThenWrite: pause the pool for a window, then write.
	pauseThenWrite
	// waitToWrite: write nothing yet; the reason says why.
	waitToWrite
)

// decideWrite is what to do with pool p when a MachineConfig item it
// renders is due. A pool paused by someone else is never taken over; a
// degraded pool or one updating to a config without this change gets no
// second rollout piled onto the first.
func decideWrite(p poolPause, mc string, window time.Duration) (writeAction, string) {
	switch {
	case p.held:
		return waitToWrite, fmt.Sprintf("MachineConfigPool '%s' is held by an administrator (annotation %s: %q); the change is written when the annotation is removed", p.name, HoldAnnotation, p.hold)
	case p.paused && (!p.ours || len(p.others) > 0):
		by := "no field manager recorded"
		if len(p.others) > 0 {
			by = "field manager " + strings.Join(p.others, ", ")
		}
		return waitToWrite, fmt.Sprintf("MachineConfigPool '%s' is paused by someone else (%s); virt-advisor never unpauses it: the change is written when the pool is unpaused", p.name, by)
	case p.degraded:
		return waitToWrite, fmt.Sprintf("MachineConfigPool '%s' is degraded (%d degraded machines); the change is written when it is no longer degraded", p.name, p.degradedMachines)
	case p.paused:
		return writeNow, "" // our window: the change joins it
	case p.specConfig != p.statusConfig && !p.hasChange:
		return waitToWrite, fmt.Sprintf("MachineConfigPool '%s' is updating to %s, which does not include MachineConfig '%s'; the change is written when it is done", p.name, p.specConfig, mc)
	case p.specConfig != p.statusConfig:
		// Rolling out this change already (written before a crash): a
		// pause would only hold the nodes in the middle of it.
		return writeNow, ""
	case window <= 0:
		return writeNow, ""
	default:
		return pauseThenWrite, ""
	}
}

// decideUnpause is what to do with a pool at now: unpause it, or look
// again after the returned duration (zero: never, it is not paused by us).
// After the window ends, the pause is held while approved MachineConfig
// items for the pool are still due (due), at most one more window, so that
// they join this rollout rather than start another.
func decideUnpause(p poolPause, now time.Time, due bool, window time.Duration) (bool, time.Duration) {
	switch {
	case !p.ours:
		return false, 0
	case p.held:
		return false, heldRetry // an administrator's hold outlasts our window
	case p.until.IsZero():
		return true, 0 // a pause of ours without its end: end it
	case now.Before(p.until):
		return false, p.until.Sub(now)
	case due && !p.degraded && now.Before(p.until.Add(window)):
		return false, holdRetry
	default:
		return true, 0
	}
}

// holdPools runs before a MachineConfig item is written: it returns why
// the item must wait, or pauses the pools that need it and returns "".
func (c *Controller) holdPools(ctx context.Context, config string, it *v1alpha1.VirtPlatformConfigItem) (string, error) {
	pools, err := c.writePools(ctx, it)
	if err != nil {
		return "", fmt.Errorf("reading the MachineConfigPools of MachineConfig '%s': %w", it.TargetRef.Name, err)
	}
	var waits, names []string
	var pause []*unstructured.Unstructured
	for _, pool := range pools {
		names = append(names, pool.GetName())
		switch action, reason := decideWrite(readPool(pool, it.TargetRef.Name, it.Operation), it.TargetRef.Name, c.CoalesceWindow); action {
		case waitToWrite:
			waits = append(waits, reason)
		case pauseThenWrite:
			pause = append(pause, pool)
		}
	}
	c.pools.add(config, names...)
	if len(waits) > 0 {
		return "Waiting: " + strings.Join(waits, "; "), nil
	}
	until := c.clock.Now().Add(c.CoalesceWindow).Truncate(time.Second).Add(time.Second)
	for _, pool := range pause {
		name := pool.GetName()
		if err := c.applyPause(ctx, name, &until); err != nil {
			return "", fmt.Errorf("pausing MachineConfigPool '%s' before writing MachineConfig '%s' (the server needs patch on machineconfigpools): %w", name, it.TargetRef.Name, err)
		}
		klog.InfoS("Paused MachineConfigPool to roll out MachineConfig changes together", "pool", name, "until", until, "config", config, "item", it.Name)
		// The pool is the administrator's: say on it who paused it and why.
		c.Recorder.Eventf(pool, corev1.EventTypeNormal, "PausedByVirtAdvisor",
			"Paused until %s by virt-advisor (VirtPlatformConfig '%s', item '%s') so that the MachineConfig changes approved meanwhile roll out together, one reboot per node",
			until.UTC().Format(time.RFC3339), config, it.Name)
	}
	if len(pause) > 0 {
		c.queue.AddAfter(windowsKey, until.Sub(c.clock.Now()))
	}
	return "", nil
}

// writePools are the pools that render a MachineConfig item's change; a
// deleted MachineConfig is found through the labels of the live object.
func (c *Controller) writePools(ctx context.Context, it *v1alpha1.VirtPlatformConfigItem) ([]*unstructured.Unstructured, error) {
	mcLabels := machineConfigLabels(it)
	if it.Operation == v1alpha1.OperationDelete {
		live, err := c.Cluster.Get(ctx, profiles.MachineConfigGVK, "", it.TargetRef.Name)
		if err != nil {
			return nil, err
		}
		if live != nil && len(live.GetLabels()) > 0 {
			mcLabels = live.GetLabels()
		}
	}
	return c.selectingPools(ctx, mcLabels)
}

// applyPause pauses a pool until the given time, or, with nil, withdraws
// our pause: an apply without spec.paused and the annotation drops our
// ownership of both, so the field goes away unless someone else owns it.
func (c *Controller) applyPause(ctx context.Context, pool string, until *time.Time) error {
	metadata := map[string]interface{}{"name": pool}
	obj := &unstructured.Unstructured{Object: map[string]interface{}{"metadata": metadata}}
	obj.SetGroupVersionKind(profiles.MachineConfigPoolGVK)
	if until != nil {
		obj.SetAnnotations(map[string]string{PausedUntilAnnotation: until.UTC().Format(time.RFC3339)})
		obj.Object["spec"] = map[string]interface{}{"paused": true}
	}
	// Force: a paused: false of someone else is taken over (it is checked
	// above that nobody else holds paused: true).
	return c.Pools.ApplyPool(ctx, obj)
}

// finishWindows ends every window we hold whose end passed, once the
// MachineConfig items due for its pool were written. It runs at leader
// start (a window of a replica that crashed or lost its Lease) and when a
// window ends.
func (c *Controller) finishWindows(ctx context.Context) (time.Duration, error) {
	pools, err := c.Cluster.List(ctx, profiles.MachineConfigPoolGVK)
	if err != nil {
		return 0, err
	}
	var next time.Duration
	now := c.clock.Now()
	for i := range pools {
		pool := &pools[i]
		p := readPool(pool, "", "")
		if !p.ours {
			continue
		}
		due := c.writesDueOn(pool)
		unpause, after := decideUnpause(p, now, len(due) > 0, c.CoalesceWindow)
		if unpause {
			if err := c.applyPause(ctx, p.name, nil); err != nil {
				return 0, fmt.Errorf("unpausing MachineConfigPool '%s': %w", p.name, err)
			}
			klog.InfoS("Unpaused MachineConfigPool: the MachineConfig changes of its window roll out together", "pool", p.name, "othersHoldingPause", p.others)
			c.Recorder.Event(pool, corev1.EventTypeNormal, "UnpausedByVirtAdvisor", unpauseMessage(p))
			continue
		}
		for _, config := range due {
			c.queue.Add(config)
		}
		if next == 0 || after < next {
			next = after
		}
	}
	return next, nil
}

// writesDueOn lists the configs with an approved MachineConfig item for
// the pool that is not written yet.
func (c *Controller) writesDueOn(pool *unstructured.Unstructured) []string {
	sel, err := profiles.PoolSelector(pool, "machineConfigSelector")
	if err != nil {
		return nil
	}
	configs, err := c.lister.List(everything)
	if err != nil {
		return nil
	}
	var out []string
	for _, cfg := range configs {
		if cfg.Status.Phase != v1alpha1.PhaseInProgress || cfg.Spec.Action == v1alpha1.PlanActionIgnore {
			continue
		}
		for i := range cfg.Status.Items {
			it := &cfg.Status.Items[i]
			if isMachineConfig(it) && writePending(it) && it.Operation != v1alpha1.OperationNone && sel.Matches(labels.Set(machineConfigLabels(it))) {
				out = append(out, cfg.Name)
				break
			}
		}
	}
	return out
}

// pausedByUs says, for the rollout message, until when we hold a pool.
func pausedByUs(pool *unstructured.Unstructured) (time.Time, bool) {
	if pool == nil {
		return time.Time{}, false
	}
	p := readPool(pool, "", "")
	return p.until, p.paused && p.ours && len(p.others) == 0
}

type itemGate int

const (
	gateOpen     itemGate = iota // write the item
	gateWaiting                  // not yet: the item's message says why
	gateTimedOut                 // waited longer than waitTimeout: the item failed
	gateStopped                  // the review no longer holds: the config failed
)

// gateItem runs before an approved item is written: a MachineConfig item
// waits while a pool that renders it is busy, paused by someone else or
// degraded, and otherwise pauses its pools for the coalescing window.
// waitTimeout counts from when the item became due.
func (c *Controller) gateItem(ctx context.Context, cfg *v1alpha1.VirtPlatformConfig, it *v1alpha1.VirtPlatformConfigItem, timeout time.Duration) (itemGate, time.Duration, error) {
	if !isMachineConfig(it) || it.Operation == v1alpha1.OperationNone {
		return gateOpen, 0, nil
	}
	reason, err := c.holdPools(ctx, cfg.Name, it)
	if err != nil {
		it.Message = "Not written yet: " + err.Error()
		return gateWaiting, 0, err
	}
	if reason == "" {
		return gateOpen, 0, nil
	}
	waited := c.since(status.ItemDue(&cfg.Status, it))
	if timeout > 0 && waited >= timeout {
		c.setItem(it, v1alpha1.ItemStateFailed, fmt.Sprintf("Timeout waiting for resource to become healthy (waited %v, timeout %v): %s; nothing was written",
			waited.Round(time.Second), timeout, strings.TrimPrefix(reason, "Waiting: ")))
		return gateTimedOut, 0, nil
	}
	it.Message = reason
	if timeout > 0 {
		return gateWaiting, timeout - waited, nil
	}
	return gateWaiting, 0, nil
}

// unpauseMessage says what ending our pause of a pool does.
func unpauseMessage(p poolPause) string {
	if len(p.others) > 0 {
		return fmt.Sprintf("virt-advisor ended its pause; spec.paused stays as field manager %s set it", strings.Join(p.others, ", "))
	}
	return "virt-advisor ended its pause: the MachineConfig changes written meanwhile roll out together"
}
