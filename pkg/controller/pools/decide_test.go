package pools

import (
	"testing"
	"time"

	"github.com/kubevirt/virt-advisor/pkg/machineconfig"
	"github.com/kubevirt/virt-advisor/pkg/maintenance"
)

func TestDecide(t *testing.T) {
	now := time.Date(2026, 11, 20, 23, 0, 1, 0, time.UTC)
	opens := now.Add(23 * time.Hour)
	closed := windowCheck{Decision: maintenance.Decision{Window: "night", Windowed: true, Windows: []string{"night"}, OpensAt: opens, Reason: "closed"}, loc: time.UTC}
	open := windowCheck{Decision: maintenance.Decision{Allowed: true, Window: "night", Windowed: true, Windows: []string{"night"}, ClosesAt: now.Add(time.Hour)}, loc: time.UTC}
	unreadable := windowCheck{Decision: maintenance.Decision{Reason: "maintenance windows cannot be read"}, loc: time.UTC}
	ours := machineconfig.PoolPause{Name: "worker", Paused: true, Ours: true, Until: now.Add(time.Minute)}
	oursEnded := machineconfig.PoolPause{Name: "worker", Paused: true, Ours: true, Until: now.Add(-time.Second)}
	oursForWindow := machineconfig.PoolPause{Name: "worker", Paused: true, Ours: true, Until: opens, ForWindow: "night"}
	theirs := machineconfig.PoolPause{Name: "worker", Paused: true, Others: []string{"kubectl"}}
	for _, tc := range []struct {
		name string
		in   poolState
		want poolDecision
	}{
		{"not ours, nothing of ours rolls out: left alone", poolState{rolling: true, window: closed}, poolDecision{}},
		{"our rollout, window closes: paused until it opens", poolState{rolling: true, written: true, window: closed},
			poolDecision{action: windowPause, until: opens, forWindow: "night", after: 23 * time.Hour}},
		{"our rollout, windows unreadable: paused, for an unknown window, a minute", poolState{rolling: true, written: true, window: unreadable},
			poolDecision{action: windowPause, until: now.Add(time.Minute), forWindow: "unknown", after: time.Minute}},
		{"our rollout, window open: looked at as it closes", poolState{rolling: true, written: true, window: open}, poolDecision{after: time.Hour}},
		{"our rollout, no window: nothing to time", poolState{rolling: true, written: true, window: allowed}, poolDecision{}},
		{"our rollout done, window closed: no pause", poolState{written: true, window: closed}, poolDecision{}},
		{"paused by someone else, window closed: theirs", poolState{pause: theirs, rolling: true, written: true, window: closed}, poolDecision{}},
		{"our coalescing pause running: held, items due woken", poolState{pause: ours, window: allowed}, poolDecision{after: time.Minute, wakeDue: true}},
		{"our coalescing pause over: unpaused", poolState{pause: oursEnded, window: allowed, coalesce: time.Minute}, poolDecision{action: unpause}},
		{"our coalescing pause over, items still due: held", poolState{pause: oursEnded, due: true, window: allowed, coalesce: time.Minute},
			poolDecision{after: machineconfig.HoldRetry, wakeDue: true}},
		{"our window pause, window still closed: held until it opens", poolState{pause: oursForWindow, written: true, rolling: true, window: closed},
			poolDecision{after: 23 * time.Hour, wakeDue: true}},
		{"our window pause, window open: unpaused, looked at as it closes", poolState{pause: oursForWindow, written: true, rolling: true, window: open},
			poolDecision{action: unpause, after: time.Hour}},
		{"our coalescing pause over, nothing of ours rolls out: unpaused, no timer", poolState{pause: oursEnded, window: open}, poolDecision{action: unpause}},
		{"aborted plan rolls out, not paused: paused for the abort", poolState{rolling: true, written: true, aborted: true, window: allowed},
			poolDecision{action: abortPause}},
		{"aborted plan rolls out, window open: paused for the abort all the same", poolState{rolling: true, written: true, aborted: true, window: open},
			poolDecision{action: abortPause}},
		{"aborted, our pause over: held, not unpaused, no timer", poolState{pause: oursEnded, rolling: true, written: true, aborted: true, window: allowed, coalesce: time.Minute},
			poolDecision{}},
		{"aborted, our window pause and the window open: held", poolState{pause: oursForWindow, rolling: true, written: true, aborted: true, window: open},
			poolDecision{}},
		{"aborted, paused by someone else: left paused, theirs", poolState{pause: theirs, rolling: true, aborted: true, window: allowed}, poolDecision{}},
		{"aborted, the pool done rolling: no pause", poolState{written: true, aborted: true, window: allowed}, poolDecision{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.in.now = now
			if got := decide(tc.in); got != tc.want {
				t.Errorf("decide = %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestDecideWindows(t *testing.T) {
	now := time.Date(2026, 11, 20, 10, 0, 0, 0, time.UTC)
	closedUntil := func(d time.Duration, window string) windowCheck {
		return windowCheck{Decision: maintenance.Decision{Window: window, OpensAt: now.Add(d), Reason: "window '" + window + "' opens later"}, loc: time.UTC}
	}
	for _, tc := range []struct {
		name       string
		pools      []poolWindow
		wantAfter  time.Duration
		wantWindow string
		wantWait   bool
	}{
		{"no pool", nil, 0, "", false},
		{"every pool allowed", []poolWindow{{"worker", allowed}, {"infra", allowed}}, 0, "", false},
		{"one closed", []poolWindow{{"worker", closedUntil(12*time.Hour, "night")}, {"infra", allowed}}, 12 * time.Hour, "night", true},
		{"two closed: the one that opens last", []poolWindow{{"worker", closedUntil(time.Hour, "a")}, {"infra", closedUntil(3*time.Hour, "b")}}, 3 * time.Hour, "b", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := decideWindows("psi", tc.pools, now)
			if (g != nil) != tc.wantWait {
				t.Fatalf("wait %+v, want a wait: %v", g, tc.wantWait)
			}
			if g == nil {
				return
			}
			if g.after != tc.wantAfter || g.window == nil || g.window.Name != tc.wantWindow || g.window.RolloutPaused || g.wait == nil {
				t.Errorf("after %v window %+v wait %+v, want after %v window %s", g.after, g.window, g.wait, tc.wantAfter, tc.wantWindow)
			}
		})
	}
}
