package maintenanceschedule

import (
	"strings"
	"testing"
	"time"
	_ "time/tzdata" // the tests do not depend on the machine's zoneinfo
)

func mustLoad(t *testing.T, name string) *time.Location {
	t.Helper()
	loc, err := LoadLocation(name)
	if err != nil {
		t.Fatal(err)
	}
	return loc
}

// at parses "2006-01-02 15:04:05 -0700" (seconds optional).
func at(t testing.TB, s string) time.Time {
	t.Helper()
	for _, layout := range []string{"2006-01-02 15:04:05 -0700", "2006-01-02 15:04 -0700"} {
		if v, err := time.Parse(layout, s); err == nil {
			return v
		}
	}
	t.Fatalf("bad time %q", s)
	return time.Time{}
}

// Europe/Berlin in 2026: summer time starts Sun 29 March at 02:00 CET
// (01:00 UTC), clocks jump to 03:00 CEST; it ends Sun 25 October at 03:00
// CEST (01:00 UTC), clocks go back to 02:00 CET.
func TestScheduleNext(t *testing.T) {
	tests := []struct {
		name     string
		schedule string
		zone     string
		from     string
		want     []string // the next activations, in order
	}{
		{"weekly in UTC", "0 22 * * 6", "UTC", "2026-03-25 10:00 +0000",
			[]string{"2026-03-28 22:00 +0000", "2026-04-04 22:00 +0000"}},
		{"weekly in Berlin, across the change to summer time", "0 22 * * 6", "Europe/Berlin", "2026-03-25 10:00 +0100",
			[]string{"2026-03-28 22:00 +0100", "2026-04-04 22:00 +0200", "2026-04-11 22:00 +0200"}},
		{"strictly after: an activation at from is not returned", "0 22 * * 6", "UTC", "2026-03-28 22:00 +0000",
			[]string{"2026-04-04 22:00 +0000"}},
		{"spring forward: 02:30 does not exist and happens at the jump (03:00 CEST)", "30 2 * * *", "Europe/Berlin", "2026-03-28 12:00 +0100",
			[]string{"2026-03-29 03:00 +0200", "2026-03-30 02:30 +0200"}},
		{"spring forward: every quarter hour of the skipped hour happens once, at the jump", "*/15 2 * * *", "Europe/Berlin", "2026-03-29 00:00 +0100",
			[]string{"2026-03-29 03:00 +0200", "2026-03-30 02:00 +0200"}},
		{"spring forward: hourly keeps its pace in elapsed time", "0 * * * *", "Europe/Berlin", "2026-03-29 00:30 +0100",
			[]string{"2026-03-29 01:00 +0100", "2026-03-29 03:00 +0200", "2026-03-29 04:00 +0200"}},
		{"fall back: 02:30 happens twice on the clock and opens once, at the first", "30 2 * * *", "Europe/Berlin", "2026-10-24 12:00 +0200",
			[]string{"2026-10-25 02:30 +0200", "2026-10-26 02:30 +0100"}},
		{"fall back: from inside the repeated hour, the second 02:30 is skipped", "30 2 * * *", "Europe/Berlin", "2026-10-25 02:10 +0100",
			[]string{"2026-10-26 02:30 +0100"}},
		{"fall back: hourly runs in the repeated hour too", "0 * * * *", "Europe/Berlin", "2026-10-25 01:30 +0200",
			[]string{"2026-10-25 02:00 +0200", "2026-10-25 02:00 +0100", "2026-10-25 03:00 +0100"}},
		{"fall back: every minute keeps going through the repeated hour", "* * * * *", "Europe/Berlin", "2026-10-25 02:59:30 +0200",
			[]string{"2026-10-25 02:00 +0100", "2026-10-25 02:01 +0100"}},
		{"New York: 02:30 skipped on 8 March happens at 03:00 EDT", "30 2 * * 0", "America/New_York", "2026-03-01 12:00 -0500",
			[]string{"2026-03-08 03:00 -0400", "2026-03-15 02:30 -0400"}},
		{"Lord Howe: a 30-minute change", "15 2 * * *", "Australia/Lord_Howe", "2026-10-03 12:00 +1030",
			[]string{"2026-10-04 02:30 +1100", "2026-10-05 02:15 +1100"}},
		{"every minute, sub-second start", "* * * * *", "UTC", "2026-01-01 12:00:00.5 +0000",
			[]string{"2026-01-01 12:01 +0000", "2026-01-01 12:02 +0000"}},
		{"leap day", "0 0 29 2 *", "UTC", "2026-01-01 00:00 +0000",
			[]string{"2028-02-29 00:00 +0000"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := ParseSchedule(tt.schedule)
			if err != nil {
				t.Fatal(err)
			}
			loc := mustLoad(t, tt.zone)
			from := parseFrom(t, tt.from)
			for _, w := range tt.want {
				got := s.Next(from, loc)
				if want := at(t, w); !got.Equal(want) {
					t.Fatalf("Next(%s) = %s, want %s", from.In(loc), got.In(loc), want.In(loc))
				}
				from = got
			}
		})
	}
}

// parseFrom is at with optional fractional seconds.
func parseFrom(t *testing.T, s string) time.Time {
	t.Helper()
	if v, err := time.Parse("2006-01-02 15:04:05.999 -0700", s); err == nil {
		return v
	}
	return at(t, s)
}

// TestScheduleNextMatchesCronOutsideChanges checks the wall-clock
// arithmetic against the library's own, far from any change of time.
func TestScheduleNextMatchesCronOutsideChanges(t *testing.T) {
	loc := mustLoad(t, "Europe/Berlin")
	for _, expr := range []string{"0 22 * * 6", "*/7 3-5 * * 1-5", "15 0 1 * *", "0 12 * 6 *"} {
		s, err := ParseSchedule(expr)
		if err != nil {
			t.Fatal(err)
		}
		lib, _ := parser.Parse("CRON_TZ=Europe/Berlin " + expr)
		from := time.Date(2026, time.May, 10, 9, 0, 0, 0, loc)
		for i := 0; i < 50; i++ {
			got, want := s.Next(from, loc), lib.Next(from)
			if !got.Equal(want) {
				t.Fatalf("%q after %s: %s, the library says %s", expr, from, got, want)
			}
			from = got
		}
	}
}

func TestParseSchedule(t *testing.T) {
	tests := []struct {
		expr    string
		wantErr string // "" = valid
	}{
		{"0 22 * * 6", ""},
		{"*/5 * * * *", ""},
		{"0 22 * * SAT", ""},
		{"30 2 1-7 JAN,JUL *", ""},
		{"  0 22 * * 6 ", ""},
		{"0 22 * *", "expected exactly 5 fields"},
		{"0 0 22 * * 6", "expected exactly 5 fields"},
		{"@daily", "descriptors"},
		{"CRON_TZ=Europe/Berlin 0 22 * * 6", "set the window's time zone instead"},
		{"TZ=UTC 0 22 * * 6", "set the window's time zone instead"},
		{"60 * * * *", "above maximum"},
		{"0 24 * * *", "above maximum"},
		{"0 0 31 2 *", "matches no date"},
		{"0 0 31 4,6,9,11 *", "matches no date"},
		{"soon", "expected exactly 5 fields"},
		{"", "empty spec"},
	}
	for _, tt := range tests {
		t.Run(tt.expr, func(t *testing.T) {
			_, err := ParseSchedule(tt.expr)
			switch {
			case tt.wantErr == "" && err != nil:
				t.Fatalf("unexpected error: %v", err)
			case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
				t.Fatalf("error %v, want one containing %q", err, tt.wantErr)
			}
		})
	}
}

func TestSchedulePeriod(t *testing.T) {
	day := 24 * time.Hour
	tests := []struct {
		expr string
		want time.Duration
	}{
		{"* * * * *", time.Minute},
		{"*/20 * * * *", 20 * time.Minute},
		{"0,50 * * * *", 10 * time.Minute},
		{"15,45 9 * * *", 30 * time.Minute},
		{"0 9-17 * * *", time.Hour},
		{"0 1,23 * * *", 2 * time.Hour},
		{"0 22 * * *", day},
		{"0 22 * * 1-5", day},
		{"30 9 * * 1,4", 3 * day},
		{"0 22 * * 6", 7 * day},
		{"0 22 * * 5,6", day},
		{"0 0 1 * *", 28 * day},
		{"0 0 31 * *", 31 * day}, // 31 July to 31 August
		{"0 22 24 12 *", 365 * day},
		{"0 0 29 2 *", (4*365 + 1) * day},
		{"0 0 1,15 * 1", day}, // the 1st, the 15th or a Monday (cron's OR): Monday 14th, Tuesday 15th
	}
	for _, tt := range tests {
		t.Run(tt.expr, func(t *testing.T) {
			s, err := ParseSchedule(tt.expr)
			if err != nil {
				t.Fatal(err)
			}
			if got := s.Period(); got != tt.want {
				t.Fatalf("Period() = %s, want %s", got, tt.want)
			}
		})
	}
}

// TestSchedulePeriodAgainstActivations checks Period against the
// intervals between the activations of a year, on the wall clock.
func TestSchedulePeriodAgainstActivations(t *testing.T) {
	for _, expr := range []string{"*/7 3-5 * * 1-5", "0,50 22,23 * * 5,6", "10 0,12 1,16 * *", "0 6 * 2 *", "45 23 * * 0,1"} {
		s, err := ParseSchedule(expr)
		if err != nil {
			t.Fatal(err)
		}
		shortest := time.Duration(1<<63 - 1)
		prev := s.Next(cycleStart, time.UTC)
		for i := 0; i < 200000 && prev.Before(cycleStart.AddDate(1, 0, 0)); i++ {
			next := s.Next(prev, time.UTC)
			if d := next.Sub(prev); d < shortest {
				shortest = d
			}
			prev = next
		}
		if got := s.Period(); got != shortest {
			t.Errorf("%q: Period() = %s, the activations of a year say %s", expr, got, shortest)
		}
	}
}

// TestScheduleNextAgainstMinuteByMinute checks Next around changes of
// time against the rules applied one minute of elapsed time after the
// other: a minute whose wall-clock time matches opens, unless that wall
// time already happened within the last hours (clocks went back) and the
// schedule does not run every hour; the instant the clocks jump forward
// opens when a wall time the jump skipped matches.
func TestScheduleNextAgainstMinuteByMinute(t *testing.T) {
	changes := []struct {
		zone string
		from string
	}{
		{"Europe/Berlin", "2026-03-28 12:00 +0000"},
		{"Europe/Berlin", "2026-10-24 12:00 +0000"},
		{"America/New_York", "2026-03-07 18:00 +0000"},
		{"America/New_York", "2026-10-31 18:00 +0000"},
		{"Australia/Lord_Howe", "2026-04-04 06:00 +0000"},
		{"Australia/Lord_Howe", "2026-10-03 06:00 +0000"},
	}
	schedules := []string{"30 2 * * *", "*/15 2 * * *", "0 * * * *", "*/7 * * * *", "0,30 1-3 * * *", "45 1 * * 0", "59 2 * * *"}
	for _, c := range changes {
		loc := mustLoad(t, c.zone)
		from := at(t, c.from)
		for _, expr := range schedules {
			s, err := ParseSchedule(expr)
			if err != nil {
				t.Fatal(err)
			}
			matches := func(w time.Time) bool { return s.spec.Next(w.Add(-time.Second)).Equal(w) }
			var want []time.Time
			for m := from; m.Before(from.Add(36 * time.Hour)); m = m.Add(time.Minute) {
				w := wallClock(m, loc)
				repeated := false
				for back := 15 * time.Minute; back <= 3*time.Hour; back += 15 * time.Minute {
					if wallClock(m.Add(-back), loc).Equal(w) {
						repeated = true
					}
				}
				if matches(w) && (!repeated || s.everyHour()) {
					want = append(want, m)
					continue
				}
				if prev := wallClock(m.Add(-time.Minute), loc); w.Sub(prev) > time.Minute {
					for skipped := prev.Add(time.Minute); skipped.Before(w); skipped = skipped.Add(time.Minute) {
						if matches(skipped) {
							want = append(want, m)
							break
						}
					}
				}
			}
			got := []time.Time{}
			for a := s.Next(from.Add(-time.Second), loc); !a.IsZero() && a.Before(from.Add(36*time.Hour)); a = s.Next(a, loc) {
				got = append(got, a)
			}
			if len(got) != len(want) {
				t.Errorf("%s %q: %d activations, minute by minute %d:\n got %v\nwant %v", c.zone, expr, len(got), len(want), got, want)
				continue
			}
			for i := range got {
				if !got[i].Equal(want[i]) {
					t.Errorf("%s %q: activation %d at %s, minute by minute %s", c.zone, expr, i, got[i].In(loc), want[i].In(loc))
					break
				}
			}
		}
	}
}

// TestNextWallAgainstCronLibrary checks the bit-set search against the
// cron library it replaces, on schedules of every shape and instants
// around the ends of minutes, days, months, leap days and years.
func TestNextWallAgainstCronLibrary(t *testing.T) {
	schedules := []string{"* * * * *", "0 22 * * 6", "*/7 3-5 * * *", "59 23 31 12 *", "0 0 29 2 *", "0 0 29 2 1", "30 2 1-7 * 0",
		"* 0-22 * * *", "* * * * 1-5", "15,45 */6 1,15 * *", "0 12 * 2,8 1-5", "5 4 31 * *", "0 0 1 1 *", "*/15 2 * * *", "0 3 * 1-6 *"}
	froms := []string{"2026-01-01 00:00 +0000", "2026-02-28 23:59:59.999 +0000", "2027-12-31 23:59 +0000", "2028-02-28 12:34:56 +0000",
		"2026-03-29 01:00:30 +0000", "2029-06-30 23:00 +0000", "2001-01-01 00:00 +0000", "2099-12-31 23:59 +0000"}
	for _, expr := range schedules {
		s, err := ParseSchedule(expr)
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range froms {
			from := parseFrom(t, f)
			for i := 0; i < 50; i++ {
				want, got := s.spec.Next(from), s.nextWall(nil, from)
				if !got.Equal(want) {
					t.Fatalf("%q after %s: %s, the cron library says %s", expr, from, got, want)
				}
				if want.IsZero() {
					break
				}
				// The activation itself, and a step off it.
				from = want
				if i%3 == 1 {
					from = want.Add(-time.Nanosecond)
				}
				if i%3 == 2 {
					from = want.Add(17 * time.Hour)
				}
			}
		}
	}
}
