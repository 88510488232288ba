package maintenanceschedule

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/sets"

	"github.com/kubevirt/virt-advisor/pkg/apis/advisor/v1alpha1"
)

// Kind says what an open window does to the pools it selects.
type Kind string

const (
	// Allow: a pool selected by an Allow window is windowed: its nodes
	// may be disrupted only while one of its Allow windows is open.
	Allow Kind = "Allow"
	// Deny: a freeze. While a Deny window is open, the pools it selects
	// may not be disrupted, whatever Allow window is open.
	Deny Kind = "Deny"
)

// Spec is what a window is made of (MaintenanceWindowSpec).
type Spec struct {
	// Pools selects MachineConfigPools by label; nil selects none by
	// label, an empty selector selects every pool.
	Pools *metav1.LabelSelector
	// PoolNames selects MachineConfigPools by name.
	PoolNames []string
	// Schedule is a standard 5-field cron expression: when the window opens.
	Schedule string
	// Duration is how long the window stays open (elapsed time).
	Duration time.Duration
	// TimeZone is the IANA time zone the schedule is read in; "" is UTC.
	TimeZone string
	// Kind is Allow or Deny; "" is Allow.
	Kind Kind
}

// Window is a parsed maintenance window. Build it with New or FromAPI.
type Window struct {
	// Name is the MaintenanceWindow's name.
	Name string
	// Kind is Allow or Deny.
	Kind Kind
	// Schedule says when it opens, read in Location.
	Schedule Schedule
	// Duration is how long it stays open.
	Duration time.Duration
	// Location is the time zone of Schedule, and of the times messages show.
	Location *time.Location
	// Labels are the MaintenanceWindow's labels: an approval policy may
	// trust windows by label.
	Labels map[string]string

	poolNames sets.Set[string]
	pools     labels.Selector // nil: no selector
	runs      []int16         // runEnds(Schedule, Duration)
}

// New parses a window. It checks what the arithmetic needs; the API
// validation reports the same problems with field paths, and also refuses
// a duration longer than the schedule's period (CheckDuration) and a
// window that costs too much to evaluate (CheckCost), which New leaves
// out because they are costly (status is computed with New on every read)
// and the arithmetic merges openings that overlap and bounds its work
// anyway.
func New(name string, spec Spec) (*Window, error) {
	w := &Window{Name: name, Kind: spec.Kind, Duration: spec.Duration, poolNames: sets.New(spec.PoolNames...)}
	if w.Kind == "" {
		w.Kind = Allow
	}
	if w.Kind != Allow && w.Kind != Deny {
		return nil, fmt.Errorf("window %q: kind %q is neither Allow nor Deny", name, spec.Kind)
	}
	var err error
	if w.Schedule, err = ParseSchedule(spec.Schedule); err != nil {
		return nil, fmt.Errorf("window %q: schedule %q: %w", name, spec.Schedule, err)
	}
	if w.Location, err = LoadLocation(spec.TimeZone); err != nil {
		return nil, fmt.Errorf("window %q: %w", name, err)
	}
	if spec.Duration <= 0 {
		return nil, fmt.Errorf("window %q: duration %s must be positive", name, FormatDuration(spec.Duration))
	}
	if spec.Pools == nil && len(spec.PoolNames) == 0 {
		return nil, fmt.Errorf("window %q selects no pool", name)
	}
	w.runs = runEnds(w.Schedule, w.Duration)
	if spec.Pools != nil {
		if w.pools, err = metav1.LabelSelectorAsSelector(spec.Pools); err != nil {
			return nil, fmt.Errorf("window %q: pools: %w", name, err)
		}
	}
	return w, nil
}

// FromAPI parses a MaintenanceWindow of the API.
func FromAPI(mw *v1alpha1.MaintenanceWindow) (*Window, error) {
	w, err := New(mw.Name, Spec{
		Pools:     mw.Spec.Pools,
		PoolNames: mw.Spec.PoolNames,
		Schedule:  mw.Spec.Schedule,
		Duration:  mw.Spec.Duration.Duration,
		TimeZone:  mw.Spec.TimeZone,
		Kind:      Kind(mw.Spec.Kind),
	})
	if err != nil {
		return nil, err
	}
	w.Labels = mw.Labels
	return w, nil
}

// LoadLocation loads an IANA time zone; "" is UTC. "Local" is refused: it
// would be the server's own zone, which nobody who writes a window knows.
func LoadLocation(name string) (*time.Location, error) {
	switch name {
	case "", "UTC":
		return time.UTC, nil
	case "Local":
		return nil, errors.New(`time zone "Local" is the server's own: name an IANA time zone such as Europe/Berlin or UTC`)
	}
	loc, err := time.LoadLocation(name)
	if err != nil {
		return nil, fmt.Errorf("unknown time zone %q: name an IANA time zone such as Europe/Berlin, America/New_York or UTC", name)
	}
	return loc, nil
}

// CheckDuration checks that a window of the schedule may last d: positive,
// and no longer than the schedule's period, or its openings would overlap.
func CheckDuration(d time.Duration, s Schedule) error {
	if d <= 0 {
		return fmt.Errorf("duration %s must be positive, e.g. 4h", FormatDuration(d))
	}
	if p := s.Period(); d > p {
		return fmt.Errorf("duration %s is longer than the schedule's period %s (the shortest time between two openings of %q): its openings would overlap; shorten the duration or open it less often", FormatDuration(d), FormatDuration(p), s)
	}
	return nil
}

// FormatDuration writes a duration compactly, whole units only: "7d",
// "1d12h", "8h", "1h30m", "20s", "-5m".
func FormatDuration(d time.Duration) string {
	if d == 0 {
		return "0s"
	}
	var b strings.Builder
	if d < 0 {
		b.WriteByte('-')
		d = -d
	}
	for _, u := range []struct {
		unit time.Duration
		name string
	}{{24 * time.Hour, "d"}, {time.Hour, "h"}, {time.Minute, "m"}, {time.Second, "s"}} {
		if n := d / u.unit; n > 0 {
			fmt.Fprintf(&b, "%d%s", n, u.name)
			d -= n * u.unit
		}
	}
	if d > 0 {
		fmt.Fprintf(&b, "%s", d)
	}
	return b.String()
}

// Pool is a MachineConfigPool as windows select it.
type Pool struct {
	Name   string
	Labels map[string]string
}

// Selects reports whether the window applies to the pool: the pool is
// named in poolNames or its labels match pools.
func (w *Window) Selects(p Pool) bool {
	return w.poolNames.Has(p.Name) || (w.pools != nil && w.pools.Matches(labels.Set(p.Labels)))
}

// NextOpening returns the window's first opening strictly after t; the
// zero time when it does not open within five years.
func (w *Window) NextOpening(t time.Time) time.Time {
	return w.Schedule.Next(t, w.Location)
}

// next is NextOpening, paid for with one step of b.
func (w *Window) next(b *budget, t time.Time) time.Time {
	b.spend(1)
	return w.Schedule.nextIn(b, t, w.Location)
}

// IsOpen reports whether the window is open at t.
func (w *Window) IsOpen(t time.Time) bool {
	a := w.NextOpening(t.Add(-w.Duration))
	return !a.IsZero() && !a.After(t)
}

// isOpen is IsOpen, paid for with b.
func (w *Window) isOpen(b *budget, t time.Time) bool {
	a := w.next(b, t.Add(-w.Duration))
	return !a.IsZero() && !a.After(t)
}

// openAt reports whether the window is open at t, the start of the
// earliest opening that contains t (an opening [a, a+Duration) contains t
// when t-Duration < a <= t), and the end of the interval the openings that
// touch or overlap it make: an instant after horizon when that is beyond.
func (w *Window) openAt(b *budget, t, horizon time.Time) (start, end time.Time, open bool) {
	a := w.next(b, t.Add(-w.Duration))
	if a.IsZero() || a.After(t) {
		return time.Time{}, time.Time{}, false
	}
	return a, w.intervalEnd(b, a, horizon), true
}

// intervalEnd returns the end of the interval of openings, each touching
// or overlapping the one before, that starts with the opening at a: an
// instant after horizon when it ends beyond. Within a zone period, a run
// of back-to-back openings is merged arithmetically (runLast); only the
// openings where runs meet (changes of time, a longer gap that the
// duration still covers) are searched one by one.
func (w *Window) intervalEnd(b *budget, a, horizon time.Time) time.Time {
	end := a.Add(w.Duration)
	for !end.After(horizon) {
		if last := w.runLast(b, a, horizon); last.After(a) {
			a, end = last, last.Add(w.Duration)
		}
		next := w.next(b, a)
		if next.IsZero() || next.After(end) {
			return end
		}
		a, end = next, next.Add(w.Duration)
	}
	return end
}

// State is where a window stands at an instant.
type State struct {
	// Open is true while the window is open.
	Open bool
	// OpensAt is when the current opening began (Open), or the next
	// opening (closed); zero when it does not open within five years.
	OpensAt time.Time
	// ClosesAt is when that opening ends, counting openings that touch or
	// overlap it as one; zero when it does not end within the search
	// horizon (a window that is open all the time).
	ClosesAt time.Time
}

// State returns where the window stands at now. Its work is bounded as
// Evaluate's is: it fails when ctx ends or the bound is exceeded.
func (w *Window) State(ctx context.Context, now time.Time) (st State, err error) {
	b := newBudget(ctx, MaxSteps)
	defer b.recover(&err, func(cause error) error {
		return fmt.Errorf("window %q: its state cannot be computed: %v", w.Name, cause)
	})
	return w.state(b, now), nil
}

func (w *Window) state(b *budget, now time.Time) State {
	horizon := now.Add(searchHorizon)
	within := func(t time.Time) time.Time {
		if t.After(horizon) {
			return time.Time{}
		}
		return t
	}
	if start, end, open := w.openAt(b, now, horizon); open {
		return State{Open: true, OpensAt: start, ClosesAt: within(end)}
	}
	next := w.next(b, now)
	if next.IsZero() {
		return State{}
	}
	return State{OpensAt: next, ClosesAt: within(w.intervalEnd(b, next, horizon))}
}

// searchHorizon bounds how far ahead answers are searched: the cron
// library finds activations up to five years ahead.
const searchHorizon = 5 * 366 * 24 * time.Hour

// closedAfter returns the first instant at or after t at which none of ws
// is open: openings that touch or overlap count as one. The zero time when
// that is beyond horizon.
func closedAfter(b *budget, ws []*Window, t, horizon time.Time) time.Time {
	for {
		var end time.Time
		for _, w := range ws {
			if _, e, open := w.openAt(b, t, horizon); open && e.After(end) {
				end = e
			}
		}
		if end.IsZero() {
			return t
		}
		if end.After(horizon) {
			return time.Time{}
		}
		t = end
	}
}

// nextOpening returns the first opening of any of ws strictly after t,
// and that window; zero and nil when none opens within five years.
func nextOpening(b *budget, ws []*Window, t time.Time) (time.Time, *Window) {
	var first time.Time
	var which *Window
	for _, w := range ws {
		if a := w.next(b, t); !a.IsZero() && (first.IsZero() || a.Before(first) || (a.Equal(first) && w.Name < which.Name)) {
			first, which = a, w
		}
	}
	return first, which
}

// anyOpen reports whether one of ws is open at t.
func anyOpen(b *budget, ws []*Window, t time.Time) bool {
	for _, w := range ws {
		if w.isOpen(b, t) {
			return true
		}
	}
	return false
}

// openOne returns the window of ws open at t whose interval of openings
// lasts longest (by name on a tie); nil when none is open.
func openOne(b *budget, ws []*Window, t, horizon time.Time) *Window {
	var best *Window
	var bestEnd time.Time
	for _, w := range ws {
		if _, end, open := w.openAt(b, t, horizon); open && (best == nil || end.After(bestEnd) || (end.Equal(bestEnd) && w.Name < best.Name)) {
			best, bestEnd = w, end
		}
	}
	return best
}

// byName sorts windows by name, so every answer is the same whatever the
// order the caller listed them in.
func byName(ws []*Window) []*Window {
	out := append([]*Window(nil), ws...)
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}
