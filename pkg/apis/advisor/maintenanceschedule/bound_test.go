package maintenanceschedule

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
)

// An evaluation that needs more than MaxSteps, or outlives its context,
// ends with an error and a decision that does not allow; it never runs on.
func TestEvaluateIsBounded(t *testing.T) {
	worker := Pool{Name: "worker"}
	// Three freezes of 23 hours made of different minutes, in three
	// zones, each cover the daily Allow minute: the answer needs every
	// day of five years.
	covering := []*Window{
		window(t, "a", Deny, "* 0-22 * * *", "1m", "Europe/Berlin"),
		window(t, "b", Deny, "*/2 0-22 * * *", "2m", "Europe/London"),
		window(t, "c", Deny, "0-59 0-22 * * *", "1m", "Europe/Paris"),
		window(t, "midnight", Allow, "0 0 * * *", "1m", "Europe/Berlin"),
	}
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	tests := []struct {
		name    string
		ctx     context.Context
		windows []*Window
		is      error
		reason  string
	}{
		{"more than MaxSteps", context.Background(), covering, ErrTooComplex,
			"the maintenance windows of pool 'worker' (a, b, c, midnight) cannot be evaluated: too complex: more than 50000 steps (openings that chain into each other, or a freeze over the Allow openings, for years); until they are simplified, the pool is not disrupted"},
		{"the context ends", cancelled, covering, context.Canceled, "cannot be evaluated: context canceled"},
		{"the context ends, even for a cheap evaluation", cancelled, []*Window{window(t, "weekend", Allow, "0 22 * * 6", "8h", "UTC")}, context.Canceled, "context canceled"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			start := time.Now()
			d, err := Evaluate(tt.ctx, at(t, "2026-03-25 10:00 +0000"), worker, tt.windows)
			if took := time.Since(start); took > time.Second {
				t.Errorf("took %s", took)
			}
			if !errors.Is(err, tt.is) {
				t.Fatalf("error %v, want %v", err, tt.is)
			}
			if d.Allowed || d.Reason != err.Error() || !strings.Contains(err.Error(), tt.reason) {
				t.Errorf("decision %+v, error %q, want it not allowed, the error as its reason, containing %q", d, err, tt.reason)
			}
			if len(d.Windows) != len(tt.windows) {
				t.Errorf("windows %q, want all %d", d.Windows, len(tt.windows))
			}
		})
	}
	// State too.
	if _, err := covering[0].State(cancelled, time.Now()); !errors.Is(err, context.Canceled) {
		t.Errorf("State with a cancelled context: %v", err)
	}
}

// Per-minute schedules are intervals: State crosses a run of a thousand
// openings or more at once.
func TestStateOfPerMinuteSchedules(t *testing.T) {
	tests := []struct {
		w                 *Window
		now, opens, close string
	}{
		{window(t, "weekdays", Deny, "* * * * 1-5", "1m", "Europe/Berlin"), "2026-03-23 00:00:30 +0100", "2026-03-23 00:00 +0100", "2026-03-28 00:00 +0100"},
		{window(t, "day", Deny, "* 0-22 * * *", "1m", "UTC"), "2026-03-25 10:00:30 +0000", "2026-03-25 10:00 +0000", "2026-03-25 23:00 +0000"},
		{window(t, "day", Deny, "* 0-22 * * *", "1m", "UTC"), "2026-03-25 23:30 +0000", "2026-03-26 00:00 +0000", "2026-03-26 23:00 +0000"},
		// Across the change to summer time: 00:00 CET to 23:00 CEST is 22 hours.
		{window(t, "day", Deny, "* 0-22 * * *", "1m", "Europe/Berlin"), "2026-03-28 23:30 +0100", "2026-03-29 00:00 +0100", "2026-03-29 23:00 +0200"},
		{window(t, "quarter", Allow, "*/15 * * 1-6 *", "15m", "UTC"), "2026-03-25 10:00 +0000", "2026-03-25 10:00 +0000", "2026-07-01 00:00 +0000"},
	}
	for _, tt := range tests {
		st, err := tt.w.State(context.Background(), at(t, tt.now))
		if err != nil {
			t.Fatal(err)
		}
		expectTime(t, tt.w.Schedule.String()+" opensAt", st.OpensAt, tt.opens, tt.w.Location)
		expectTime(t, tt.w.Schedule.String()+" closesAt", st.ClosesAt, tt.close, tt.w.Location)
	}
}

// asLongAsPeriod are windows that last as long as their schedule's
// period, the longest the duration rule admits: their openings run back
// to back for weeks or years, and overlap by an hour where clocks go
// forward.
var asLongAsPeriod = []spec{
	{"Allow", "0 22 * * 6", "168h", "UTC"},
	{"Deny", "0 22 * * 6", "168h", "UTC"},
	{"Allow", "0 22 * * 6", "168h", "Europe/Berlin"},
	{"Allow", "30 2 * * 0", "168h", "Europe/Berlin"},
	{"Allow", "0 0 * * 0", "168h", "Australia/Lord_Howe"},
	{"Deny", "0 0 29 2 *", "35064h", "UTC"},
	{"Deny", "0 0 29 2 *", "35064h", "Africa/Casablanca"},
	{"Deny", "0 0 1 1 *", "8760h", "UTC"},
	{"Deny", "0 0 1 2 *", "8760h", "UTC"},
	{"Deny", "0 0 13 2 *", "8760h", "UTC"},
	{"Allow", "0 0 * 1-11 *", "24h", "UTC"},
	{"Allow", "0 0 1 * *", "672h", "UTC"},
	{"Allow", "0 * * * *", "1h", "Pacific/Chatham"},
	{"Allow", "* * * * *", "1m", "Africa/Casablanca"},
}

// The costliest windows the other checks accept fit WindowSteps, those
// as long as their period included; the check refuses one that needs
// more than the steps it is given.
func TestCheckCost(t *testing.T) {
	specs := append(append(worstSchedules, asLongAsPeriod...), spec{"Allow", "0 0 29 2 *", "1h", "UTC"}, spec{"Allow", "* * * * *", "1m", "Australia/Lord_Howe"})
	for _, s := range specs {
		sched, err := ParseSchedule(s.schedule)
		if err != nil {
			t.Fatal(err)
		}
		d, _ := time.ParseDuration(s.duration)
		loc := mustLoad(t, s.zone)
		if err := CheckCost(sched, d, loc); err != nil {
			t.Errorf("%v: %v", s, err)
		}
		most, _ := checkCost(sched, d, loc, WindowSteps)
		if _, err := checkCost(sched, d, loc, most-1); err == nil || !strings.Contains(err.Error(), "steps to evaluate, the most one window may take") {
			t.Errorf("%v with %d steps: %v, want the bound exceeded", s, most-1, err)
		}
	}
}

// A window whose openings overlap (longer than its period, which
// CheckDuration refuses) across five years of changes of time still
// needs more than WindowSteps, and the refusal says what to do.
func TestCheckCostRefusesOverlapForYears(t *testing.T) {
	sched, err := ParseSchedule("0 22 * * 6")
	if err != nil {
		t.Fatal(err)
	}
	d := 14*24*time.Hour + time.Hour
	err = CheckCost(sched, d, mustLoad(t, "Europe/Berlin"))
	want := `a window of "0 22 * * 6" lasting 14d1h takes more than 1000 steps to evaluate, the most one window may take (every evaluation of a pool's windows is bounded): ` +
		`keep its duration within the schedule's period (7d), so that its openings do not overlap, and open it less often, for longer stretches`
	if err == nil || err.Error() != want {
		t.Errorf("CheckCost: %v\nwant %s", err, want)
	}
}
