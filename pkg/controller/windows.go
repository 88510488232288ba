package controller

// Maintenance windows: nodes are drained only while a window of their
// pool is open (docs/maintenance-windows.md). Before a MachineConfig item
// is written, every pool it rolls must be allowed; when a window closes
// during a rollout, the pool is paused (our field manager, like the
// coalescing pause) so that no further node is drained, and unpaused at
// the next opening. The arithmetic is pkg/maintenance's; the pause
// decisions pkg/machineconfig's; this file reads and writes.

import (
	"context"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/klog/v2"

	"github.com/kubevirt/virt-advisor/pkg/apis/advisor/v1alpha1"
	"github.com/kubevirt/virt-advisor/pkg/cluster"
	"github.com/kubevirt/virt-advisor/pkg/machineconfig"
	"github.com/kubevirt/virt-advisor/pkg/maintenance"
	"github.com/kubevirt/virt-advisor/pkg/status"
)

// windowCheck is a pool's maintenance window decision at one instant.
type windowCheck struct {
	maintenance.Decision
	// loc is the time zone of the deciding window, for messages.
	loc *time.Location
}

// windowFor decides whether the pool's nodes may be disrupted now. Without
// windows (none served or none selecting the pool) they always may. A
// window list that cannot be read allows nothing: a freeze must never be
// missed because of a read error, nor because of windows that cannot be
// evaluated within the bound (maintenance.MaxSteps) or before ctx ends.
func (c *Controller) windowFor(ctx context.Context, pool *unstructured.Unstructured) windowCheck {
	if c.MaintenanceWindows == nil {
		return windowCheck{Decision: maintenance.Decision{Allowed: true}, loc: time.UTC}
	}
	windows, err := c.MaintenanceWindows.Windows()
	if err != nil {
		return windowCheck{Decision: maintenance.Decision{Reason: "maintenance windows cannot be read: " + err.Error()}, loc: time.UTC}
	}
	d, err := maintenance.Evaluate(ctx, c.clock.Now(), maintenance.Pool{Name: pool.GetName(), Labels: pool.GetLabels()}, windows)
	if err != nil {
		// d does not allow; its Reason is err's message.
		klog.ErrorS(err, "Maintenance windows cannot be evaluated: the pool is not disrupted", "pool", pool.GetName())
	}
	check := windowCheck{Decision: d, loc: time.UTC}
	for _, w := range windows {
		if w.Name == d.Window {
			check.loc = w.Location
		}
	}
	return check
}

// after is how long until the pool may be disrupted again (a minute when
// no opening is in sight or the windows cannot be read).
func (w windowCheck) after(now time.Time) time.Duration {
	if w.OpensAt.IsZero() || !w.OpensAt.After(now) {
		return time.Minute
	}
	return w.OpensAt.Sub(now)
}

// wait is what an item waiting for this decision records.
func (w windowCheck) wait(rolloutPaused bool) *v1alpha1.WindowWait {
	ww := &v1alpha1.WindowWait{Name: w.Window, RolloutPaused: rolloutPaused}
	if !w.OpensAt.IsZero() {
		t := metav1.NewTime(w.OpensAt)
		ww.OpensAt = &t
	}
	return ww
}

// windowGate runs before a MachineConfig item is written: it returns why
// the item must wait for a maintenance window of one of the pools it
// rolls, and when to look again, recording the wait on the item, and the
// config's wait (the window that opens last). The first pass after a
// wait ends makes the item due from then.
func (c *Controller) windowGate(ctx context.Context, it *v1alpha1.VirtPlatformConfigItem, pools []*unstructured.Unstructured) (string, time.Duration, *status.Wait) {
	waited := it.MaintenanceWindow != nil && !it.MaintenanceWindow.RolloutPaused
	it.MaintenanceWindow = nil
	now := c.clock.Now()
	var waits []string
	var after time.Duration
	var wait *status.Wait
	for _, pool := range pools {
		w := c.windowFor(ctx, pool)
		if w.Allowed {
			continue
		}
		waits = append(waits, fmt.Sprintf("MachineConfigPool '%s': %s; the change is written when it opens", pool.GetName(), w.Reason))
		if w.after(now) > after || wait == nil {
			after = w.after(now)
			it.MaintenanceWindow = w.wait(false)
			wait = &status.Wait{Reason: status.WaitingMaintenanceWindow,
				Message: status.WindowWaitMessage(w.Window, w.OpensAt, w.loc, now, fmt.Sprintf("before writing item '%s'", it.Name),
					fmt.Sprintf("MachineConfigPool '%s': %s", pool.GetName(), w.Reason))}
		}
	}
	if len(waits) > 0 {
		return "Waiting: " + strings.Join(waits, "; "), after, wait
	}
	if waited {
		// Due from the opening: waitTimeout and the stuck-write alert
		// count the waits after it only.
		t := metav1.NewTime(now)
		it.LastTransitionTime = &t
	}
	return "", 0, nil
}

// pauseForWindow pauses a pool whose maintenance window closed while it
// rolls out an item, until the window opens again: the node in flight
// finishes, no other is drained. It returns the item's message.
func (c *Controller) pauseForWindow(ctx context.Context, config string, it *v1alpha1.VirtPlatformConfigItem, pool *unstructured.Unstructured, w windowCheck) (string, error) {
	p := machineconfig.ReadPool(pool, cluster.FieldManager, it.TargetRef.Name, it.Operation)
	now := c.clock.Now()
	if machineconfig.DecideWindowPause(p, machineconfig.RollingOut(pool), w.Allowed) {
		until := now.Add(w.after(now))
		forWindow := w.Window
		if forWindow == "" {
			forWindow = "unknown" // the windows could not be read
		}
		if err := c.applyPause(ctx, p.Name, &until, forWindow); err != nil {
			return "", fmt.Errorf("pausing MachineConfigPool '%s' at the close of its maintenance window: %w", p.Name, err)
		}
		it.WindowPauses++
		klog.InfoS("Paused MachineConfigPool: its maintenance window closed mid-rollout", "pool", p.Name, "until", until, "config", config, "item", it.Name)
		c.Recorder.Eventf(pool, corev1.EventTypeNormal, "PausedByVirtAdvisor",
			"Paused by virt-advisor (VirtPlatformConfig '%s', item '%s'): %s; the rollout resumes when the pool may be disrupted again", config, it.Name, w.Reason)
		c.windows.AddAfter(windowsKey, until.Sub(now))
	}
	return windowClosedMessage(p.Name, pool, w, now), nil
}

// windowClosedMessage: "MachineConfigPool 'worker': maintenance window
// closed: 2 of 5 nodes updated; resumes Sat 28 Nov 22:00 CET (…), in 3d4h".
func windowClosedMessage(name string, pool *unstructured.Unstructured, w windowCheck, now time.Time) string {
	resumes := "when " + w.Reason
	if !w.OpensAt.IsZero() {
		resumes = maintenance.FormatTime(w.OpensAt, w.loc, now)
		if w.Window != "" {
			resumes += fmt.Sprintf(" (window '%s')", w.Window)
		}
	}
	return fmt.Sprintf("MachineConfigPool '%s': maintenance window closed: %d of %d nodes updated; resumes %s",
		name, machineconfig.Count(pool, "updatedMachineCount"), machineconfig.Count(pool, "machineCount"), resumes)
}

// reportWindows sets, per pool a window selects, the seconds until it may
// be disrupted again (0 while it may); false when no window selects any.
func (c *Controller) reportWindows(ctx context.Context, pools []unstructured.Unstructured) bool {
	now := c.clock.Now()
	opensIn := map[string]float64{}
	for i := range pools {
		w := c.windowFor(ctx, &pools[i])
		if len(w.Windows) == 0 {
			continue
		}
		opensIn[pools[i].GetName()] = 0
		if !w.Allowed {
			opensIn[pools[i].GetName()] = w.after(now).Seconds()
		}
	}
	c.Metrics.PoolWindows(opensIn)
	return len(opensIn) > 0
}
