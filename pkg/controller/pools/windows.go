package pools

// Maintenance windows: nodes are drained only while a window of their
// pool is open (docs/maintenance-windows.md). Before a MachineConfig item
// is written, every pool it rolls must be allowed; when a window closes
// during a rollout, the pool is paused (our field manager, like the
// coalescing pause) so that no further node is drained, and unpaused at
// the next opening. The arithmetic is pkg/maintenance's.

import (
	"context"
	"fmt"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/kubevirt/virt-advisor/pkg/apis/advisor/v1alpha1"
	"github.com/kubevirt/virt-advisor/pkg/machineconfig"
	"github.com/kubevirt/virt-advisor/pkg/maintenance"
	"github.com/kubevirt/virt-advisor/pkg/status"
)

// windows are the maintenance windows as the pool controller weighs
// them: all of them, or, for a plan an approval policy approved, the
// Allow windows the policy trusts.
type windows struct {
	lister  maintenance.Lister
	trusted func(cfg *v1alpha1.VirtPlatformConfig) func(*maintenance.Window) bool
	clock   clock.Clock
	metrics Metrics
}

// trustsOf says which Allow windows the rollout of cfg's approved plan
// may go on in (nil: every window).
func (w *windows) trustsOf(cfg *v1alpha1.VirtPlatformConfig) func(*maintenance.Window) bool {
	if w.trusted == nil || cfg == nil {
		return nil
	}
	return w.trusted(cfg)
}

// windowCheck is a pool's maintenance window decision at one instant.
type windowCheck struct {
	maintenance.Decision
	// loc is the time zone of the deciding window, for messages.
	loc *time.Location
}

// allowed is the decision of a pool no window governs.
var allowed = windowCheck{Decision: maintenance.Decision{Allowed: true}, loc: time.UTC}

// windowFor decides whether the pool's nodes may be disrupted now. Without
// windows (none served or none selecting the pool) they always may. A
// window list that cannot be read allows nothing: a freeze must never be
// missed because of a read error, nor because of windows that cannot be
// evaluated within the bound (maintenance.MaxSteps) or before ctx ends.
func (w *windows) windowFor(ctx context.Context, pool *unstructured.Unstructured) windowCheck {
	return w.trustedWindowFor(ctx, pool, nil)
}

// trustedWindowFor is windowFor counting, for a pool a trusted Allow
// window governs, only the Allow windows trusts keeps (nil: all): another
// Allow window, open while they are closed, does not let the write in. A
// pool no trusted window governs (a change that reboots nothing, which a
// policy approves without a window) is gated by every window, as any write.
func (w *windows) trustedWindowFor(ctx context.Context, pool *unstructured.Unstructured, trusts func(*maintenance.Window) bool) windowCheck {
	if w.lister == nil {
		return allowed
	}
	windows, err := w.lister.Windows(ctx)
	if err != nil {
		return windowCheck{Decision: maintenance.Decision{Reason: "maintenance windows cannot be read: " + err.Error()}, loc: time.UTC}
	}
	if trusts != nil {
		if kept, governed := trustedOnly(windows, trusts, maintenance.Pool{Name: pool.GetName(), Labels: pool.GetLabels()}); governed {
			windows = kept
		}
	}
	d, err := maintenance.Evaluate(ctx, w.clock.Now(), maintenance.Pool{Name: pool.GetName(), Labels: pool.GetLabels()}, windows)
	if err != nil {
		// d does not allow; its Reason is err's message.
		klog.FromContext(ctx).Error(err, "Maintenance windows cannot be evaluated: the pool is not disrupted", "pool", pool.GetName())
	}
	check := windowCheck{Decision: d, loc: time.UTC}
	for _, win := range windows {
		if win.Name == d.Window {
			check.loc = win.Location
		}
	}
	return check
}

// rollingWindow decides whether a pool may go on being disrupted for
// every config rolling out on it: a plan an approval policy approved goes
// on only while a window its policy trusts is open, so another Allow
// window does not keep its drains going after the trusted one closed.
func (w *windows) rollingWindow(ctx context.Context, pool *unstructured.Unstructured, v configView, rolling []itemKey) windowCheck {
	check := w.windowFor(ctx, pool)
	for _, config := range configsOf(rolling, nil) {
		if trusts := w.trustsOf(v.named(config)); trusts != nil && check.Allowed {
			if t := w.trustedWindowFor(ctx, pool, trusts); !t.Allowed {
				check = t
			}
		}
	}
	return check
}

// trustedOnly keeps the Deny windows and the Allow windows trusts keeps;
// governed: a kept Allow window selects the pool.
func trustedOnly(windows []*maintenance.Window, trusts func(*maintenance.Window) bool, pool maintenance.Pool) (kept []*maintenance.Window, governed bool) {
	for _, w := range windows {
		switch {
		case w.Kind == maintenance.Deny:
			kept = append(kept, w)
		case trusts(w):
			kept = append(kept, w)
			governed = governed || w.Selects(pool)
		}
	}
	return kept, governed
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

// poolWindow is a pool and its window decision.
type poolWindow struct {
	name string
	w    windowCheck
}

// windowGate is the window part of Admit: why the item must wait for a
// maintenance window of one of the pools it rolls (nil when none), with
// the window that opens last.
type windowGate struct {
	message string
	after   time.Duration
	window  *v1alpha1.WindowWait
	wait    *status.Wait
}

// decideWindows gates a write on the windows of its pools: every pool
// must be allowed. Pure.
func decideWindows(item string, pools []poolWindow, now time.Time) *windowGate {
	var waits []string
	var g *windowGate
	for _, p := range pools {
		w := p.w
		if w.Allowed {
			continue
		}
		waits = append(waits, fmt.Sprintf("MachineConfigPool '%s': %s; the change is written when it opens", p.name, w.Reason))
		if g == nil || w.after(now) > g.after {
			g = &windowGate{after: w.after(now), window: w.wait(false), wait: &status.Wait{Reason: status.WaitingMaintenanceWindow,
				Message: status.WindowWaitMessage(w.Window, w.OpensAt, w.loc, now, fmt.Sprintf("before writing item '%s'", item),
					fmt.Sprintf("MachineConfigPool '%s': %s", p.name, w.Reason))}}
		}
	}
	if g != nil {
		g.message = "Waiting: " + strings.Join(waits, "; ")
	}
	return g
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

// report sets, per pool a window selects, the seconds until it may
// be disrupted again (0 while it may); false when no window selects any.
func (w *windows) report(ctx context.Context, pools []unstructured.Unstructured) bool {
	now := w.clock.Now()
	opensIn := map[string]float64{}
	for i := range pools {
		check := w.windowFor(ctx, &pools[i])
		if len(check.Windows) == 0 {
			continue
		}
		opensIn[pools[i].GetName()] = 0
		if !check.Allowed {
			opensIn[pools[i].GetName()] = check.after(now).Seconds()
		}
	}
	w.metrics.PoolWindows(opensIn)
	return len(opensIn) > 0
}
