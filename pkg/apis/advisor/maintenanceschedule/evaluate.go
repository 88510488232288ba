package maintenanceschedule

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
)

// Decision says whether the nodes of a pool may be disrupted at an
// instant, because of which window, and until or from when.
type Decision struct {
	// Allowed is true when the pool's nodes may be disrupted now.
	Allowed bool
	// Windowed is true when at least one Allow window selects the pool:
	// it may be disrupted only while one is open.
	Windowed bool
	// Windows are the names of the windows that select the pool, sorted.
	Windows []string
	// Window is the window the decision is about: the open Allow window
	// (allowed), the open Deny window, or the Allow window that opens
	// next (not allowed); "" when no window selects the pool.
	Window string
	// Kind is Window's kind.
	Kind Kind
	// Reason says it in words, with times in Window's time zone and UTC,
	// e.g. "window 'weekend' opens Sat 28 Mar 22:00 CET (21:00 UTC), in 3d4h".
	Reason string
	// OpensAt is, when not allowed, the first instant the pool is allowed
	// again; zero when that is not within five years.
	OpensAt time.Time
	// ClosesAt is the end of the allowed period: the current one when
	// allowed, the one starting at OpensAt when not. It accounts for Allow
	// windows that touch or overlap, and for a Deny window that starts
	// before they close. Zero when no end is in sight: a pool no window
	// restricts, or Allow windows that never all close.
	ClosesAt time.Time
}

// Evaluate decides whether the nodes of pool may be disrupted at now,
// given every window (those that do not select the pool are ignored).
// The rules, as Argo CD's sync windows:
//
//   - no window selects the pool: allowed at any time;
//   - a Deny window that is open beats every Allow window: not allowed;
//   - Allow windows select the pool: allowed only while one is open;
//   - otherwise (only Deny windows, all closed): allowed.
//
// Its work is bounded (MaxSteps) and ends with ctx: an evaluation that
// exceeds the bound or outlives ctx returns an error, and a Decision that
// does not allow, whose Reason is the error's message.
func Evaluate(ctx context.Context, now time.Time, pool Pool, windows []*Window) (Decision, error) {
	return evaluate(newBudget(ctx, MaxSteps), now, pool, windows)
}

func evaluate(b *budget, now time.Time, pool Pool, windows []*Window) (d Decision, err error) {
	e := evaluation{pool: pool.Name, now: now, horizon: now.Add(searchHorizon), b: b}
	defer e.b.recover(&err, func(cause error) error {
		then := "the pool is not disrupted"
		if errors.Is(cause, ErrTooComplex) {
			then = "until they are simplified, " + then
		}
		err := fmt.Errorf("the maintenance windows of pool '%s' (%s) cannot be evaluated: %v; %s",
			pool.Name, strings.Join(d.Windows, ", "), cause, then)
		d = Decision{Windowed: d.Windowed, Windows: d.Windows, Reason: err.Error()}
		return err
	})
	for _, w := range byName(windows) {
		if !w.Selects(pool) {
			continue
		}
		d.Windows = append(d.Windows, w.Name)
		if w.Kind == Deny {
			e.denies = append(e.denies, w)
		} else {
			e.allows = append(e.allows, w)
		}
	}
	d.Windowed = len(e.allows) > 0
	e.allows, e.denies = distinct(e.allows), distinct(e.denies)
	switch deny := openOne(e.b, e.denies, now, e.horizon); {
	case len(d.Windows) == 0:
		d.Allowed = true
		d.Reason = fmt.Sprintf("no maintenance window selects pool '%s'", pool.Name)
	case deny != nil:
		e.frozen(&d, deny)
	case d.Windowed && !anyOpen(e.b, e.allows, now):
		e.waiting(&d)
	default:
		d.Allowed = true
		e.allowed(&d)
	}
	return d, nil
}

// distinct leaves out the windows that open and close exactly as one
// before them (same schedule, duration and time zone): they change no
// answer, since the first by name is the one every answer names, and
// each would cost as much as the first.
func distinct(ws []*Window) []*Window {
	type key struct {
		schedule, zone string
		duration       time.Duration
	}
	seen := make(map[key]bool, len(ws))
	out := ws[:0:0]
	for _, w := range ws {
		k := key{w.Schedule.String(), w.Location.String(), w.Duration}
		if !seen[k] {
			seen[k] = true
			out = append(out, w)
		}
	}
	return out
}

// evaluation holds the windows that select one pool.
type evaluation struct {
	pool           string
	allows, denies []*Window
	now, horizon   time.Time
	b              *budget
}

// allowed fills in a decision for now, at which the pool is allowed: until
// when, and because of which window.
func (e evaluation) allowed(d *Decision) {
	closes, deny := e.allowedUntil(e.now)
	d.ClosesAt = closes
	if len(e.allows) == 0 {
		d.Reason = fmt.Sprintf("no Allow window selects pool '%s' and no freeze is in effect", e.pool)
		if deny != nil {
			d.Window, d.Kind = deny.Name, Deny
			d.Reason += fmt.Sprintf("; freeze '%s' begins %s", deny.Name, FormatTime(closes, deny.Location, e.now))
		}
		return
	}
	allow := openOne(e.b, e.allows, e.now, e.horizon)
	d.Window, d.Kind = allow.Name, Allow
	switch {
	case closes.IsZero():
		d.Reason = fmt.Sprintf("window '%s' is open, with no end in sight (its openings touch)", allow.Name)
	case deny != nil:
		d.Reason = fmt.Sprintf("window '%s' is open until %s, when freeze '%s' begins", allow.Name, FormatTime(closes, deny.Location, e.now), deny.Name)
	default:
		d.Reason = fmt.Sprintf("window '%s' is open until %s", allow.Name, FormatTime(closes, allow.Location, e.now))
	}
}

// frozen fills in a decision for now, at which deny is open.
func (e evaluation) frozen(d *Decision, deny *Window) {
	d.Window, d.Kind = deny.Name, Deny
	frozenUntil := closedAfter(e.b, e.denies, e.now, e.horizon)
	e.opens(d)
	switch {
	case frozenUntil.IsZero():
		d.Reason = fmt.Sprintf("freeze '%s' does not end within five years", deny.Name)
	case d.OpensAt.IsZero():
		d.Reason = fmt.Sprintf("freeze '%s' until %s; then no Allow window of pool '%s' opens within five years",
			deny.Name, FormatTime(frozenUntil, deny.Location, e.now), e.pool)
	case d.Windowed:
		allow := openOne(e.b, e.allows, d.OpensAt, e.horizon)
		d.Reason = fmt.Sprintf("freeze '%s' until %s; then in window '%s' from %s",
			deny.Name, FormatTime(frozenUntil, deny.Location, e.now), allow.Name, FormatTime(d.OpensAt, allow.Location, e.now))
	default:
		d.Reason = fmt.Sprintf("freeze '%s' until %s", deny.Name, FormatTime(d.OpensAt, deny.Location, e.now))
	}
}

// waiting fills in a decision for now, at which no Deny window and none of
// the pool's Allow windows is open.
func (e evaluation) waiting(d *Decision) {
	e.opens(d)
	next, allow := nextOpening(e.b, e.allows, e.now)
	if !d.OpensAt.IsZero() {
		allow = openOne(e.b, e.allows, d.OpensAt, e.horizon)
	}
	if allow == nil {
		allow = e.allows[0]
	}
	d.Window, d.Kind = allow.Name, Allow
	switch {
	case next.IsZero():
		d.Reason = fmt.Sprintf("window '%s' does not open within five years", allow.Name)
	case d.OpensAt.IsZero():
		d.Reason = fmt.Sprintf("window '%s' opens %s, but a freeze covers every opening within five years", allow.Name, FormatTime(next, allow.Location, e.now))
	default:
		d.Reason = fmt.Sprintf("window '%s' opens %s", allow.Name, FormatTime(d.OpensAt, allow.Location, e.now))
		if next.Before(d.OpensAt) {
			d.Reason += " (a freeze covers the openings before)"
		}
	}
}

// opens sets OpensAt, the first allowed instant after now, and ClosesAt,
// the end of the allowed period it starts.
func (e evaluation) opens(d *Decision) {
	d.OpensAt = firstAllowed(e.b, e.allows, e.denies, e.now, e.horizon)
	if !d.OpensAt.IsZero() {
		d.ClosesAt, _ = e.allowedUntil(d.OpensAt)
	}
}

// allowedUntil returns the end of the allowed period containing t: when
// the last of the touching or overlapping Allow openings closes, or when a
// Deny window opens before that (and that window); zero when no end is
// within the horizon.
func (e evaluation) allowedUntil(t time.Time) (time.Time, *Window) {
	var closes time.Time
	if len(e.allows) > 0 {
		closes = closedAfter(e.b, e.allows, t, e.horizon)
	}
	freeze, deny := nextOpening(e.b, e.denies, t)
	if !freeze.IsZero() && (closes.IsZero() || freeze.Before(closes)) {
		return freeze, deny
	}
	return closes, nil
}

// firstAllowed returns the first instant at or after t at which no Deny
// window is open and, when there are Allow windows, one is; zero when
// there is none within the horizon.
func firstAllowed(b *budget, allows, denies []*Window, t, horizon time.Time) time.Time {
	for !t.After(horizon) {
		// closedAfter leaves t where no Deny window is open.
		if anyOpen(b, denies, t) {
			if t = closedAfter(b, denies, t, horizon); t.IsZero() {
				return t
			}
		}
		if len(allows) == 0 || anyOpen(b, allows, t) {
			return t
		}
		if t, _ = nextOpening(b, allows, t); t.IsZero() {
			return t
		}
	}
	return time.Time{}
}

// FormatTime says when t is, for a person: in loc, in UTC, and relative to
// now, e.g. "Sat 28 Mar 22:00 CET (21:00 UTC), in 3d4h". The year is shown
// when it is not now's, seconds when there are any.
func FormatTime(t time.Time, loc *time.Location, now time.Time) string {
	return FormatAt(t, loc, now) + ", " + FormatFrom(t, now)
}

// FormatAt is FormatTime without the relative part, for text that is
// stored and read later: "Sat 28 Mar 22:00 CET (21:00 UTC)". now only
// decides whether the year is shown.
func FormatAt(t time.Time, loc *time.Location, now time.Time) string {
	local, utc := t.In(loc), t.UTC()
	clock := "15:04"
	if t.Second() != 0 {
		clock = "15:04:05"
	}
	date := "Mon 2 Jan "
	if local.Year() != now.In(loc).Year() {
		date = "Mon 2 Jan 2006 "
	}
	s := local.Format(date + clock + " MST")
	if _, offset := local.Zone(); offset != 0 || loc.String() != "UTC" {
		utcLayout := clock + " UTC"
		if utc.YearDay() != local.YearDay() {
			utcLayout = "Mon 2 Jan " + utcLayout
		}
		s += " (" + utc.Format(utcLayout) + ")"
	}
	return s
}

// FormatFrom says how far t is from now: "in 3d4h", "5m ago" or "now".
func FormatFrom(t, now time.Time) string {
	switch rel := t.Sub(now); {
	case rel > 0:
		return "in " + FormatRelative(rel)
	case rel < 0:
		return FormatRelative(-rel) + " ago"
	}
	return "now"
}

// FormatRelative writes how far away a time is in the two largest units
// that matter, truncated: "35s", "4m20s", "45m", "2h", "7h59m", "3d4h", "282d".
func FormatRelative(d time.Duration) string {
	switch {
	case d < 10*time.Minute:
		return FormatDuration(d.Truncate(time.Second))
	case d < 24*time.Hour:
		return FormatDuration(d.Truncate(time.Minute))
	case d < 30*24*time.Hour:
		return FormatDuration(d.Truncate(time.Hour))
	}
	return FormatDuration(d.Truncate(24 * time.Hour))
}
