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
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/klog/v2"

	"github.com/kubevirt/virt-advisor/pkg/apis/advisor/v1alpha1"
	"github.com/kubevirt/virt-advisor/pkg/cluster"
	"github.com/kubevirt/virt-advisor/pkg/machineconfig"
	"github.com/kubevirt/virt-advisor/pkg/plan"
	"github.com/kubevirt/virt-advisor/pkg/status"
)

// holdPools runs before a MachineConfig item is written: it returns why
// the item must wait, or pauses the pools that need it and returns "".
func (c *Controller) holdPools(ctx context.Context, config string, it *v1alpha1.VirtPlatformConfigItem, pools []*unstructured.Unstructured) (string, error) {
	var waits, names []string
	var pause []*unstructured.Unstructured
	for _, pool := range pools {
		names = append(names, pool.GetName())
		switch action, reason := machineconfig.DecideWrite(machineconfig.ReadPool(pool, cluster.FieldManager, it.TargetRef.Name, it.Operation), it.TargetRef.Name, c.CoalesceWindow); action {
		case machineconfig.WaitToWrite:
			waits = append(waits, reason)
		case machineconfig.PauseThenWrite:
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
		if err := c.applyPause(ctx, name, &until, ""); err != nil {
			return "", fmt.Errorf("pausing MachineConfigPool '%s' before writing MachineConfig '%s' (the server needs patch on machineconfigpools): %w", name, it.TargetRef.Name, err)
		}
		klog.InfoS("Paused MachineConfigPool to roll out MachineConfig changes together", "pool", name, "until", until, "config", config, "item", it.Name)
		// The pool is the administrator's: say on it who paused it and why.
		c.Recorder.Eventf(pool, corev1.EventTypeNormal, "PausedByVirtAdvisor",
			"Paused until %s by virt-advisor (VirtPlatformConfig '%s', item '%s') so that the MachineConfig changes approved meanwhile roll out together, one reboot per node",
			until.UTC().Format(time.RFC3339), config, it.Name)
	}
	if len(pause) > 0 {
		c.windows.AddAfter(windowsKey, until.Sub(c.clock.Now()))
	}
	return "", nil
}

// writePools are the pools that render an item's change; a deleted
// MachineConfig or KubeletConfig has no desired state: the live object
// tells its pools.
func (c *Controller) writePools(ctx context.Context, it *v1alpha1.VirtPlatformConfigItem) ([]*unstructured.Unstructured, error) {
	change := machineconfig.ItemChange(it.TargetRef, it.DesiredState)
	if it.Operation == v1alpha1.OperationDelete {
		live, err := c.Cluster.Get(ctx, plan.TargetGVK(it.TargetRef), "", it.TargetRef.Name)
		if err != nil {
			return nil, err
		}
		if live != nil && (machineconfig.IsKubeletConfig(it.TargetRef) || len(live.GetLabels()) > 0) {
			change = machineconfig.ChangeOf(it.TargetRef, live.Object)
		}
	}
	return c.rolledPools(ctx, change)
}

// applyPause pauses a pool until the given time (for the maintenance
// window named by forWindow, "" for coalescing), or, with nil, withdraws
// our pause: an apply without spec.paused and the annotations drops our
// ownership of them, so they go away unless someone else owns them.
func (c *Controller) applyPause(ctx context.Context, pool string, until *time.Time, forWindow string) error {
	metadata := map[string]interface{}{"name": pool}
	obj := &unstructured.Unstructured{Object: map[string]interface{}{"metadata": metadata}}
	obj.SetGroupVersionKind(machineconfig.MachineConfigPoolGVK)
	if until != nil {
		annotations := map[string]string{machineconfig.PausedUntilAnnotation: until.UTC().Format(time.RFC3339)}
		if forWindow != "" {
			annotations[machineconfig.PausedForAnnotation] = forWindow
		}
		obj.SetAnnotations(annotations)
		obj.Object["spec"] = map[string]interface{}{"paused": true}
	}
	// Force: a paused: false of someone else is taken over (it is checked
	// above that nobody else holds paused: true).
	return c.Pools.ApplyPool(ctx, obj)
}

// finishWindows ends every pause we hold whose end passed, once the
// MachineConfig items due for its pool were written and its maintenance
// window, if any, is open. It runs at leader
// start (a window of a replica that crashed or lost its Lease) and when a
// window ends.
func (c *Controller) finishWindows(ctx context.Context) (time.Duration, error) {
	pools, err := c.Cluster.List(ctx, machineconfig.MachineConfigPoolGVK)
	if err != nil {
		return 0, err
	}
	var next time.Duration
	if c.reportWindows(ctx, pools) {
		next = windowReport // keeps the next-opening gauges fresh
	}
	now := c.clock.Now()
	for i := range pools {
		pool := &pools[i]
		p := machineconfig.ReadPool(pool, cluster.FieldManager, "", "")
		if !p.Ours {
			continue
		}
		due := c.writesDueOn(pool)
		w := c.windowFor(ctx, pool)
		unpause, after := machineconfig.DecideUnpause(p, now, len(due) > 0, c.CoalesceWindow, !w.Allowed, w.after(now))
		if unpause {
			if err := c.applyPause(ctx, p.Name, nil, ""); err != nil {
				return 0, fmt.Errorf("unpausing MachineConfigPool '%s': %w", p.Name, err)
			}
			klog.InfoS("Unpaused MachineConfigPool: the MachineConfig changes of its window roll out together", "pool", p.Name, "othersHoldingPause", p.Others)
			c.Recorder.Event(pool, corev1.EventTypeNormal, "UnpausedByVirtAdvisor", machineconfig.UnpauseMessage(p))
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

// checkWindows asks for finishWindows to run soon (while leading); at
// most once per HoldRetry, as finishWindows may in turn look at the
// configs that asked.
func (c *Controller) checkWindows() {
	if c.windows != nil {
		c.windows.AddAfter(windowsKey, machineconfig.HoldRetry)
	}
}

// writesDueOn lists the configs with an approved MachineConfig item for
// the pool that is not written yet.
func (c *Controller) writesDueOn(pool *unstructured.Unstructured) []string {
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
			if rollsPools(it) && writePending(it) && it.Operation != v1alpha1.OperationNone && rolledBy(pool, machineconfig.ItemChange(it.TargetRef, it.DesiredState)) {
				out = append(out, cfg.Name)
				break
			}
		}
	}
	return out
}

type itemGate int

const (
	gateOpen     itemGate = iota // write the item
	gateWaiting                  // not yet: the item's message says why
	gateTimedOut                 // waited longer than waitTimeout: the item failed
	gateStopped                  // the review no longer holds: the config failed
)

// gateItem runs before an approved item is written: a MachineConfig item
// waits while its preflight finds a reason (a cluster upgrade, a VM that
// would block a drain), or a pool that renders it is busy, paused by
// someone else or degraded, and otherwise pauses its pools for the
// coalescing window. waitTimeout counts from when the item became due.
// A wait is returned with what it waits for (the config's Waiting
// condition).
func (c *Controller) gateItem(ctx context.Context, cfg *v1alpha1.VirtPlatformConfig, it *v1alpha1.VirtPlatformConfigItem, timeout time.Duration) (itemGate, time.Duration, *status.Wait, error) {
	if !rollsPools(it) || it.Operation == v1alpha1.OperationNone {
		return gateOpen, 0, nil, nil
	}
	// No node is drained outside a maintenance window: first of all, the
	// change waits until every pool it rolls may be disrupted. That wait
	// is what the windows ask for, not a stuck write: waitTimeout does not
	// count it, and the item is due from when the window opened.
	// The pools are read once for the whole gate.
	pools, err := c.writePools(ctx, it)
	if err != nil {
		err = fmt.Errorf("reading the MachineConfigPools of MachineConfig '%s': %w", it.TargetRef.Name, err)
	}
	var reason string
	var after time.Duration
	var wait *status.Wait
	if err == nil {
		reason, after, wait = c.windowGate(ctx, it, pools)
	}
	if err == nil && reason != "" {
		it.Message = reason
		return gateWaiting, after, wait, nil
	}
	// Preflight (preflight.go), before any pool is paused: a cluster
	// upgrade in progress, a VM that would block a drain.
	var retry time.Duration
	var stopped bool
	kind := status.WaitingPoolBusy
	if err == nil {
		reason, kind, retry, stopped, err = c.preflight(ctx, cfg, it)
	}
	if stopped {
		return gateStopped, 0, nil, nil
	}
	if err == nil && reason == "" {
		kind = status.WaitingPoolBusy
		reason, err = c.holdPools(ctx, cfg.Name, it, pools)
	}
	if err != nil {
		it.Message = "Not written yet: " + err.Error()
		return gateWaiting, 0, nil, err
	}
	if reason == "" {
		return gateOpen, 0, nil, nil
	}
	waited := c.since(status.ItemDue(&cfg.Status, it))
	if timeout > 0 && waited >= timeout {
		c.setItem(it, v1alpha1.ItemStateFailed, fmt.Sprintf("Timeout waiting for resource to become healthy (waited %v, timeout %v): %s; nothing was written",
			waited.Round(time.Second), timeout, strings.TrimPrefix(reason, "Waiting: ")))
		return gateTimedOut, 0, nil, nil
	}
	it.Message = reason
	if left := timeout - waited; timeout > 0 && (retry == 0 || left < retry) {
		retry = left
	}
	return gateWaiting, retry, &status.Wait{Reason: kind,
		Message: fmt.Sprintf("Waiting before writing item '%s': %s", it.Name, strings.TrimPrefix(reason, "Waiting: "))}, nil
}

// rolledBy: an invalid selector selects nothing (the item's own gate
// reports it).
func rolledBy(pool *unstructured.Unstructured, change machineconfig.Change) bool {
	ok, err := change.RolledBy(pool)
	return err == nil && ok
}

const (
	// windowsKey is the one key of the windows queue.
	windowsKey = "pools"
	// windowReport is how often the pools' next openings are reported
	// while maintenance windows select any pool.
	windowReport = 30 * time.Second
)
