package maintenanceschedule

import (
	"context"
	"testing"
	"time"
)

// TestMonthDaysAgainstDayMatches checks the bits of a month's matching
// days against the day-by-day rule, over a whole cycle of the calendar.
func TestMonthDaysAgainstDayMatches(t *testing.T) {
	for _, expr := range []string{"0 0 * * *", "0 22 * * 6", "0 0 29 2 *", "0 0 31 * *", "0 0 1-7 * 0", "0 0 13 * 5", "0 0 */2 * 1-5",
		"0 0 * 3,10 *", "0 0 1,15 * 0", "0 0 L * *", "0 0 * * 0,6"} {
		s, err := ParseSchedule(expr)
		if err != nil {
			continue // "L" is no standard cron: nothing to compare
		}
		for day := daysFromCivil(2001, 1, 1); day < daysFromCivil(2029, 1, 1); {
			y, m, _ := civil(day)
			mask, first, length := s.monthDays(y, m)
			if first != day {
				t.Fatalf("%q: month %d-%02d begins on day %d, want %d", expr, y, m, first, day)
			}
			for d := 1; d <= length; d++ {
				want := s.spec.Month&(1<<uint(m)) != 0 && s.dayMatches(day+int64(d-1), d)
				if got := mask&(1<<uint(d-1)) != 0; got != want {
					t.Fatalf("%q: %d-%02d-%02d matches %t, want %t", expr, y, m, d, got, want)
				}
			}
			if mask>>uint(length) != 0 {
				t.Fatalf("%q: %d-%02d has bits past its %d days: %b", expr, y, m, length, mask)
			}
			day += int64(length)
		}
	}
}

// openingByOpening is State computed the slow way: every opening looked
// at, merged while the next begins before the last ends. ok is false
// when that takes more than limit openings.
func openingByOpening(w *Window, now time.Time, limit int) (st State, ok bool) {
	horizon := now.Add(searchHorizon)
	end := func(a time.Time) (time.Time, bool) {
		e := a.Add(w.Duration)
		for i := 0; !e.After(horizon); i++ {
			n := w.NextOpening(a)
			if i > limit {
				return e, false
			}
			if n.IsZero() || n.After(e) {
				break
			}
			a, e = n, n.Add(w.Duration)
		}
		if e.After(horizon) {
			return time.Time{}, true
		}
		return e, true
	}
	if a := w.NextOpening(now.Add(-w.Duration)); !a.IsZero() && !a.After(now) {
		closes, ok := end(a)
		return State{Open: true, OpensAt: a, ClosesAt: closes}, ok
	}
	next := w.NextOpening(now)
	if next.IsZero() {
		return State{}, true
	}
	closes, ok := end(next)
	return State{OpensAt: next, ClosesAt: closes}, ok
}

// TestStateAgainstOpeningByOpening checks the arithmetic that crosses
// runs of back-to-back and overlapping openings against the openings
// looked at one by one: windows as long as their period, a little
// shorter, longer (overlapping), in zones whose clocks change by an hour
// or half an hour, around those changes, midnight and a leap day.
func TestStateAgainstOpeningByOpening(t *testing.T) {
	schedules := []string{"0 22 * * 6", "30 2 * * 0", "0 0 29 2 *", "0 0 1 2 *", "0 0 1 1 *", "0 0 * 1-11 *", "0 3 * 2-10 *", "0 0 1,15 * *",
		"0 0 * * 0,3", "0 22 * * 1-5", "0 0 1-28 * *", "0 0 31 * *", "30 1 * * *", "0 0,12 * * *", "0 22 * 1-6 6", "0 0 13 * 5",
		"0 */8 * * 1-5", "0 0 */2 * *", "0 0 * 3 *", "0 0 1-7 * 0", "59 23 * * *",
		// Runs that end within a day but go on from its last opening into
		// the first of the next.
		"0 1,23 * * *", "0 1,22,23 * * 6,0"}
	zones := []string{"UTC", "Europe/Berlin", "America/New_York", "Australia/Lord_Howe"}
	instants := []string{"2026-03-28 21:30 +0000", "2026-10-25 00:30 +0000", "2026-01-01 00:00 +0000", "2027-12-31 23:59:30 +0000", "2028-02-29 00:00 +0000", "2026-11-01 06:00 +0000"}
	compared := 0
	for _, expr := range schedules {
		s, err := ParseSchedule(expr)
		if err != nil {
			t.Fatal(err)
		}
		p := s.Period()
		for _, d := range []time.Duration{p, p - time.Minute, p + time.Hour, 8 * 24 * time.Hour} {
			for _, zone := range zones {
				w := &Window{Name: "w", Kind: Allow, Schedule: s, Duration: d, Location: mustLoad(t, zone), runs: runEnds(s, d)}
				for _, instant := range instants {
					now := at(t, instant)
					want, ok := openingByOpening(w, now, 20000)
					if !ok {
						continue
					}
					compared++
					got, err := w.State(context.Background(), now)
					if err != nil || got.Open != want.Open || !got.OpensAt.Equal(want.OpensAt) || !got.ClosesAt.Equal(want.ClosesAt) {
						t.Errorf("%q for %s in %s at %s: %+v (%v), opening by opening %+v", expr, FormatDuration(d), zone, instant, got, err, want)
					}
				}
			}
		}
	}
	if compared < 2000 {
		t.Errorf("only %d cases compared", compared)
	}
}
