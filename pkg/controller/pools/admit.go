package pools

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
// an approved MachineConfig item (Hold, after the config controller
// checked the approval), and the unpause only undoes a pause of ours.
// Hold also notes on the item the rendered config each of its pools is
// on before the write: how its rollout is followed.

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

// Admission answers "may this item write to its pools now".
type Admission struct {
	// WindowsChecked: the pools' windows were looked at; Window is then
	// the item's maintenanceWindow (nil: no window keeps it waiting).
	WindowsChecked bool
	Window         *v1alpha1.WindowWait
	// Message is why the item may not be written now, "" when it may.
	Message string
	// Wait is what the config's Waiting condition says of it.
	Wait *status.Wait
	// After: look again then (0: no reason to).
	After time.Duration
	// Stale: draining now would disrupt VMs the reviewed plan did not show
	// with that fate; nothing may be written.
	Stale *plan.StaleTargetError
	// Pools names the pools the item's change rolls (the config
	// controller watches them).
	Pools []string
	// pools: those pools as read; pause: those Hold pauses before the
	// write.
	pools, pause []*unstructured.Unstructured
}

// Open is true when the item may be written (after Hold).
func (a Admission) Open() bool { return a.Message == "" && a.Stale == nil }

// Admit answers whether an approved MachineConfig item of cfg may write
// to its pools now: every pool's maintenance window allows it, preflight
// finds nothing (a cluster upgrade, a VM that would block a drain), and
// no pool is busy, degraded, held or paused by someone else. It writes
// nothing; while the item's write is pending (its config's status says
// so), its pools count it as due.
func (c *Controller) Admit(ctx context.Context, cfg *v1alpha1.VirtPlatformConfig, it *v1alpha1.VirtPlatformConfigItem) (Admission, error) {
	pools, err := writePools(ctx, c.Cluster, it)
	if err != nil {
		return Admission{}, fmt.Errorf("reading the MachineConfigPools of %s '%s': %w", it.TargetRef.Kind, it.TargetRef.Name, err)
	}
	// No node is drained outside a maintenance window: first of all, the
	// change waits until every pool it rolls may be disrupted.
	now := c.Clock.Now()
	trusted := c.windows.trustsOf(cfg)
	checks := make([]poolWindow, len(pools))
	for i, pool := range pools {
		checks[i] = poolWindow{pool.GetName(), c.windows.trustedWindowFor(ctx, pool, trusted)}
	}
	adm := Admission{WindowsChecked: true, Pools: names(pools), pools: pools}
	if g := decideWindows(it.Name, checks, now); g != nil {
		adm.Window, adm.Message, adm.After, adm.Wait = g.window, g.message, g.after, g.wait
		return adm, nil
	}
	// Preflight, before any pool is paused.
	pf, err := c.preflight(ctx, cfg, it)
	if err != nil || pf.stale != nil {
		adm.Stale = pf.stale
		return adm, err
	}
	kind, reason := pf.kind, pf.reason
	if reason == "" {
		kind = status.WaitingPoolBusy
		if reason, err = c.maintainedByOthers(ctx, pools); err != nil {
			return adm, err
		}
		if reason != "" {
			pf.retry = PreflightRetry // NodeMaintenances are not watched
		}
	}
	if reason == "" {
		reason, adm.pause = decideWrites(pools, it, c.CoalesceWindow)
	}
	if reason != "" {
		adm.Message, adm.After = "Waiting: "+reason, pf.retry
		adm.Wait = &status.Wait{Reason: kind, Message: fmt.Sprintf("Waiting before writing item '%s': %s", it.Name, reason)}
	}
	return adm, nil
}

// maintainedByOthers says which of pools someone else maintains now
// (their first drain waits for it), "" when none.
func (c *Controller) maintainedByOthers(ctx context.Context, pools []*unstructured.Unstructured) (string, error) {
	all, err := c.Cluster.List(ctx, machineconfig.MachineConfigPoolGVK)
	if err != nil {
		return "", err
	}
	var why []string
	for _, pool := range pools {
		others, err := c.stepper.othersMaintenance(ctx, pool, all, nil)
		if err != nil {
			return "", err
		}
		if others != "" {
			why = append(why, others)
		}
	}
	return strings.Join(why, "; "), nil
}

// decideWrites decides, pool by pool, whether an item may be written now:
// why it waits ("" when it need not), else the pools to pause first. Pure.
func decideWrites(pools []*unstructured.Unstructured, it *v1alpha1.VirtPlatformConfigItem, coalesce time.Duration) (string, []*unstructured.Unstructured) {
	var waits []string
	var pause []*unstructured.Unstructured
	for _, pool := range pools {
		p := machineconfig.ReadPool(pool, cluster.FieldManager, it.TargetRef.Name, it.Operation)
		switch action, reason := machineconfig.DecideWrite(p, it.TargetRef.Name, coalesce); action {
		case machineconfig.WaitToWrite:
			waits = append(waits, reason)
		case machineconfig.PauseThenWrite:
			pause = append(pause, pool)
		}
	}
	if len(waits) > 0 {
		return strings.Join(waits, "; "), nil
	}
	return "", pause
}

// Hold pauses the pools an open admission names for the coalescing
// window, right before the item is written, and notes on an item not
// written yet the rendered config each pool that renders it is on.
func (c *Controller) Hold(ctx context.Context, config string, it *v1alpha1.VirtPlatformConfigItem, adm Admission) error {
	if it.State == v1alpha1.ItemStatePending && !plan.LeftInPlace(it) && len(it.PoolConfigsBefore) == 0 {
		notePoolConfigs(it, adm.pools)
	}
	log := klog.FromContext(ctx)
	now := c.Clock.Now()
	until := now.Add(c.CoalesceWindow).Truncate(time.Second).Add(time.Second)
	for _, pool := range adm.pause {
		name := pool.GetName()
		if err := c.pauses.apply(ctx, name, &until, ""); err != nil {
			return fmt.Errorf("pausing MachineConfigPool '%s' before writing %s '%s' (the server needs patch on machineconfigpools): %w", name, it.TargetRef.Kind, it.TargetRef.Name, err)
		}
		log.Info("Paused MachineConfigPool to roll out MachineConfig changes together", "pool", name, "until", until, "config", config, "item", it.Name)
		// The pool is the administrator's: say on it who paused it and why.
		c.Recorder.Eventf(pool, corev1.EventTypeNormal, "PausedByVirtAdvisor",
			"Paused until %s by virt-advisor (VirtPlatformConfig '%s', item '%s') so that the MachineConfig changes approved meanwhile roll out together, one reboot per node",
			until.UTC().Format(time.RFC3339), config, it.Name)
		c.term.enqueue(name, until.Sub(now))
	}
	return nil
}

// apply pauses a pool until the given time (for the maintenance
// window named by forWindow, "" for coalescing), or, with nil, withdraws
// our pause: an apply without spec.paused and the annotations drops our
// ownership of them, so they go away unless someone else owns them.
func (p *pauses) apply(ctx context.Context, pool string, until *time.Time, forWindow string) error {
	return p.applyWith(ctx, pool, until, forWindow, nil)
}

// forStep pauses pool between two steps of its rollout, with the step in
// flight and the halt, when there is one, recorded on it. The pause ends
// at once: the step, not the time, holds it.
func (p *pauses) forStep(ctx context.Context, pool *unstructured.Unstructured, step *machineconfig.PoolStep, halt *machineconfig.PoolHalt) error {
	records := map[string]string{}
	if step != nil {
		records[machineconfig.StepAnnotation] = step.Encode()
	}
	if halt != nil {
		records[machineconfig.HaltAnnotation] = halt.Encode()
	}
	now := p.clock.Now()
	if err := p.applyWith(ctx, pool.GetName(), &now, "", records); err != nil {
		return fmt.Errorf("pausing MachineConfigPool '%s' between two steps of its rollout: %w", pool.GetName(), err)
	}
	return nil
}

// applyWith applies our pause (until set) with records, our annotations
// of a stepped rollout, or ends it (until nil).
func (p *pauses) applyWith(ctx context.Context, pool string, until *time.Time, forWindow string, records map[string]string) error {
	metadata := map[string]interface{}{"name": pool}
	obj := &unstructured.Unstructured{Object: map[string]interface{}{"metadata": metadata}}
	obj.SetGroupVersionKind(machineconfig.MachineConfigPoolGVK)
	if until != nil {
		annotations := map[string]string{machineconfig.PausedUntilAnnotation: until.UTC().Format(time.RFC3339)}
		if forWindow != "" {
			annotations[machineconfig.PausedForAnnotation] = forWindow
		}
		for k, v := range records {
			annotations[k] = v
		}
		obj.SetAnnotations(annotations)
		obj.Object["spec"] = map[string]interface{}{"paused": true}
	}
	// Force: a paused: false of someone else is taken over (it is checked
	// before that nobody else holds paused: true).
	return p.pauser.ApplyPool(ctx, obj)
}

func names(pools []*unstructured.Unstructured) []string {
	out := make([]string, len(pools))
	for i, p := range pools {
		out[i] = p.GetName()
	}
	return out
}

// notePoolConfigs records, before an item that rolls pools is written,
// the rendered config every pool that renders it is on (how its rollout
// is followed).
func notePoolConfigs(it *v1alpha1.VirtPlatformConfigItem, pools []*unstructured.Unstructured) {
	it.PoolConfigsBefore = nil
	for _, pool := range pools {
		name, _, _ := unstructured.NestedString(pool.Object, "spec", "configuration", "name")
		it.PoolConfigsBefore = append(it.PoolConfigsBefore, v1alpha1.PoolConfiguration{Pool: pool.GetName(), Configuration: name})
	}
}
