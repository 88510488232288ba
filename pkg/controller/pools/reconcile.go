package pools

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/klog/v2"

	"github.com/kubevirt/virt-advisor/pkg/apis/advisor/v1alpha1"
	"github.com/kubevirt/virt-advisor/pkg/cluster"
	"github.com/kubevirt/virt-advisor/pkg/machineconfig"
)

// poolState is what a pool's reconcile decides from.
type poolState struct {
	pause machineconfig.PoolPause
	// rolling: the pool has nodes to update; written: an item we wrote
	// under an approval rolls out on it; due: approved items wait to
	// write to it.
	rolling, written, due bool
	// aborted: an aborted plan's change rolls on the pool (its status.abort).
	aborted  bool
	window   windowCheck
	now      time.Time
	coalesce time.Duration
}

type poolAction int

const (
	keep        poolAction = iota // leave the pool as it is
	unpause                       // end our pause
	windowPause                   // pause it: its window closed mid-rollout
	abortPause                    // pause it: the plan rolling on it was aborted
)

// poolDecision is what to do with a pool now, and when to look again.
type poolDecision struct {
	action poolAction
	// until and forWindow: the window pause's end and window.
	until     time.Time
	forWindow string
	after     time.Duration
	// wakeDue: the items due on the pool are looked at again (our pause
	// is held for them).
	wakeDue bool
}

// decide is a pool's reconcile, without I/O. A pause of ours ends when
// pkg/machineconfig says so (its window over, the items due on it
// written, its maintenance window open); a pool rolling out an item we
// wrote is paused when its maintenance window closes, and looked at again
// as it closes.
func decide(s poolState) poolDecision {
	w := s.window
	if s.aborted {
		// Held paused until the abort is withdrawn, whoever paused it.
		if !s.pause.Paused && s.rolling {
			return poolDecision{action: abortPause}
		}
		return poolDecision{}
	}
	if s.pause.Ours {
		end, after := machineconfig.DecideUnpause(s.pause, s.now, s.due, s.coalesce, !w.Allowed, w.after(s.now))
		if end {
			return poolDecision{action: unpause, after: closeTimer(s)}
		}
		return poolDecision{after: after, wakeDue: true}
	}
	if !s.written {
		return poolDecision{}
	}
	if machineconfig.DecideWindowPause(s.pause, s.rolling, w.Allowed) {
		d := poolDecision{action: windowPause, until: s.now.Add(w.after(s.now)), forWindow: w.Window, after: w.after(s.now)}
		if d.forWindow == "" {
			d.forWindow = "unknown" // the windows could not be read
		}
		return d
	}
	return poolDecision{after: closeTimer(s)}
}

// closeTimer is the pool's timer while an item we wrote rolls out on it:
// the close of its open window, when it pauses it (0: none).
func closeTimer(s poolState) time.Duration {
	if w := s.window; s.written && w.Allowed && w.Windowed && !w.ClosesAt.IsZero() {
		return w.ClosesAt.Sub(s.now)
	}
	return 0
}

// Reconcile reads one pool, decides and applies: the end of our pause, or
// a pause at the close of its maintenance window, or for an abort. It
// returns when to look again.
func (c *Controller) Reconcile(ctx context.Context, name string) (time.Duration, error) {
	// Every pool: which of them render a KubeletConfig depends on all.
	pools, err := c.Cluster.List(ctx, machineconfig.MachineConfigPoolGVK)
	if err != nil {
		return 0, err
	}
	pool := byName(pools, name)
	if pool == nil {
		return 0, nil
	}
	v, err := c.readConfigs()
	if err != nil {
		return 0, err
	}
	rolling := v.rollingOn(pool, pools)
	due := v.dueOn(pool, pools, func(it *v1alpha1.VirtPlatformConfigItem) (machineconfig.Change, error) {
		return writeChange(ctx, c.Cluster, it)
	})
	aborted := v.abortedOn(pool, pools)
	w := c.windows.rollingWindow(ctx, pool, v, rolling)
	if len(aborted) == 0 {
		// A halt holds first; else a rollout of ours is stepped.
		if done, after, err := c.stepper.holdHalt(ctx, pool, v); done {
			return after, err
		}
		if len(rolling) > 0 && len(due) == 0 && w.Allowed && !pausedForTime(pool, c.Clock.Now()) {
			if handled, after, err := c.stepper.stepPool(ctx, pool, pools, v, rolling, w); handled {
				return after, err
			}
		}
	}
	d := decide(poolState{
		pause: machineconfig.ReadPool(pool, cluster.FieldManager, "", ""), rolling: machineconfig.RollingOut(pool),
		written: len(rolling) > 0, due: len(due) > 0, aborted: len(aborted) > 0, window: w, now: c.Clock.Now(), coalesce: c.CoalesceWindow,
	})
	if err := c.apply(ctx, pool, &d, w, v, rolling, due, aborted); err != nil {
		return 0, err
	}
	if d.wakeDue {
		for _, config := range due {
			c.Wake(config)
		}
	}
	return d.after, nil
}

// apply does what decide decided for pool.
func (c *Controller) apply(ctx context.Context, pool *unstructured.Unstructured, d *poolDecision, w windowCheck, v configView, rolling []itemKey, due, aborted []string) error {
	configs := configsOf(rolling, due)
	switch d.action {
	case unpause:
		if reason := v.unrendered(pool, rolling); reason != "" {
			c.resumer.hold(ctx, pool, configs, reason)
			d.after = soonest(d.after, StepPoll) // a render takes a moment
			return nil
		}
		held, err := c.resumer.resume(ctx, pool, configs, v.allowsBlocking(configs))
		if err != nil {
			return err
		}
		if held {
			d.after = soonest(d.after, PreflightRetry) // VMs are not watched
		}
		return nil
	case abortPause:
		if err := c.pauses.forAbort(ctx, pool, aborted); err != nil {
			return err
		}
	case windowPause:
		if err := c.pauses.atWindowClose(ctx, pool, *d, w, rolling); err != nil {
			return err
		}
	}
	// A hold is the answer to the last look before an unpause only.
	c.resumer.release(pool.GetName(), configs)
	return nil
}

// atWindowClose pauses pool, whose maintenance window closed while
// the items rolling out on it were rolling, until d.until.
func (p *pauses) atWindowClose(ctx context.Context, pool *unstructured.Unstructured, d poolDecision, w windowCheck, rolling []itemKey) error {
	name := pool.GetName()
	if err := p.apply(ctx, name, &d.until, d.forWindow); err != nil {
		return fmt.Errorf("pausing MachineConfigPool '%s' at the close of its maintenance window: %w", name, err)
	}
	p.counts.paused(rolling)
	first := rolling[0]
	klog.FromContext(ctx).Info("Paused MachineConfigPool: its maintenance window closed mid-rollout", "pool", name, "until", d.until, "config", first.config, "item", first.item)
	p.recorder.Eventf(pool, corev1.EventTypeNormal, "PausedByVirtAdvisor",
		"Paused by virt-advisor (VirtPlatformConfig '%s', item '%s'): %s; the rollout resumes when the pool may be disrupted again", first.config, first.item, w.Reason)
	for _, k := range rolling {
		p.wake(k.config)
	}
	return nil
}

// configsOf are the configs of the items rolling out on a pool and of
// those due on it, sorted, without duplicates.
func configsOf(rolling []itemKey, due []string) []string {
	configs := sets.New(due...)
	for _, k := range rolling {
		configs.Insert(k.config)
	}
	return sets.List(configs)
}

// ReconcileAll looks at every pool: it reports when each may be disrupted
// again, and queues the pools we hold paused, follow a rollout on or an
// abort holds. The window pauses counted for configs gone are dropped.
func (c *Controller) ReconcileAll(ctx context.Context) (time.Duration, error) {
	pools, err := c.Cluster.List(ctx, machineconfig.MachineConfigPoolGVK)
	if err != nil {
		return 0, err
	}
	v, err := c.readConfigs()
	if err != nil {
		return 0, err
	}
	live := sets.New[itemKey]()
	for _, cfg := range v.configs {
		live.Insert(itemKey{config: cfg.Name, uid: cfg.UID})
	}
	c.counts.keepConfigs(live)
	var after time.Duration
	if c.windows.report(ctx, pools) {
		after = windowReport // keeps the next-opening gauges fresh
	}
	halted := map[string]string{}
	for i := range pools {
		pool := &pools[i]
		if h := machineconfig.ReadHalt(pool); h != nil {
			halted[pool.GetName()] = h.Gate
		}
		if halted[pool.GetName()] != "" || machineconfig.ReadPool(pool, cluster.FieldManager, "", "").Ours || len(v.rollingOn(pool, pools)) > 0 || len(v.abortedOn(pool, pools)) > 0 {
			c.term.enqueue(pool.GetName(), 0)
		}
	}
	c.stepper.halts.replace(halted)
	return after, nil
}

// byName is the pool of that name among pools, nil when there is none.
func byName(pools []unstructured.Unstructured, name string) *unstructured.Unstructured {
	for i := range pools {
		if pools[i].GetName() == name {
			return &pools[i]
		}
	}
	return nil
}

// pausedForTime is true while a coalescing or window pause of ours lasts:
// its end, not a step, ends it.
func pausedForTime(pool *unstructured.Unstructured, now time.Time) bool {
	p := machineconfig.ReadPool(pool, cluster.FieldManager, "", "")
	return p.Ours && p.Paused && (p.ForWindow != "" || now.Before(p.Until))
}
