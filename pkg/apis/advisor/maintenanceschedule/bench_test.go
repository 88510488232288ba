package maintenanceschedule

import (
	"context"
	"fmt"
	"testing"
	"time"
)

// evaluationCase is a set of windows on the pool "worker" and an instant
// to evaluate them at.
type evaluationCase struct {
	name    string
	windows func(tb testing.TB) []*Window
	now     string
}

// spec is kind schedule duration zone, for benchWindows.
type spec struct{ kind, schedule, duration, zone string }

func benchWindows(tb testing.TB, specs ...spec) []*Window {
	tb.Helper()
	var out []*Window
	for i, s := range specs {
		d, err := time.ParseDuration(s.duration)
		if err != nil {
			tb.Fatal(err)
		}
		w, err := New(fmt.Sprintf("w%03d", i), Spec{PoolNames: []string{"worker"}, Schedule: s.schedule, Duration: d, TimeZone: s.zone, Kind: Kind(s.kind)})
		if err != nil {
			tb.Fatal(err)
		}
		out = append(out, w)
	}
	return out
}

// zones are where the copies of a schedule are read: no two windows of
// a set are the same (Evaluate skips a window that opens and closes
// exactly as another), and most change time twice a year.
var zones = []string{"UTC", "Europe/Berlin", "America/New_York", "Australia/Lord_Howe", "Asia/Tokyo", "Asia/Kolkata", "Australia/Sydney",
	"Europe/London", "America/Sao_Paulo", "Pacific/Auckland", "Pacific/Chatham", "Asia/Tehran", "Asia/Kathmandu"}

// repeat lists n windows of specs, cycling, each set of copies in
// another zone.
func repeat(n int, specs ...spec) []spec {
	out := make([]spec, n)
	for i := range out {
		out[i] = specs[i%len(specs)]
		out[i].zone = zones[(i/len(specs))%len(zones)]
	}
	return out
}

// worstSchedules are the schedules of issue 24 that stalled evaluations,
// and their kin: openings back to back for hours or days, a freeze that
// covers every Allow opening, windows across changes of time.
var worstSchedules = []spec{
	{"Deny", "* 0-22 * * *", "1m", "UTC"},
	{"Allow", "0 0 * * *", "1m", "UTC"},
	{"Deny", "* * * * 1-5", "1m", "Europe/Berlin"},
	{"Allow", "* * * * *", "1m", "America/New_York"},
	{"Deny", "*/2 * * * *", "2m", "Australia/Lord_Howe"},
	{"Allow", "0 3 * * *", "24h", "Europe/Berlin"},
	{"Deny", "* 0-22 * * *", "1m", "Europe/Berlin"},
	{"Allow", "*/15 2 * * *", "15m", "Europe/Berlin"},
}

// evaluationCases are the sets the speed target is measured on.
var evaluationCases = []evaluationCase{
	{"issue 24: Deny * 0-22 * * * 1m and Allow 0 0 * * * 1m", func(tb testing.TB) []*Window {
		return benchWindows(tb, worstSchedules[0], worstSchedules[1])
	}, "2026-03-25 10:00 +0000"},
	{"issue 24: three such Deny windows", func(tb testing.TB) []*Window {
		return benchWindows(tb, worstSchedules[0], worstSchedules[0], worstSchedules[0], worstSchedules[1])
	}, "2026-03-25 10:00 +0000"},
	{"three different freezes cover the Allow minute: bounded", func(tb testing.TB) []*Window {
		return benchWindows(tb, spec{"Deny", "* 0-22 * * *", "1m", "UTC"}, spec{"Deny", "*/2 0-22 * * *", "2m", "UTC"},
			spec{"Deny", "0-59 0-22 * * *", "1m", "Europe/London"}, worstSchedules[1])
	}, "2026-03-25 10:00 +0000"},
	{"three freezes in three zones cover the Allow minute: bounded", func(tb testing.TB) []*Window {
		return benchWindows(tb, spec{"Deny", "* 0-22 * * *", "1m", "Europe/Berlin"}, spec{"Deny", "*/2 0-22 * * *", "2m", "Europe/London"},
			spec{"Deny", "0-59 0-22 * * *", "1m", "Europe/Paris"}, spec{"Allow", "0 0 * * *", "1m", "Europe/Berlin"})
	}, "2026-03-25 10:00 +0000"},
	{"weekday freeze per minute", func(tb testing.TB) []*Window {
		return benchWindows(tb, worstSchedules[2])
	}, "2026-03-25 10:00 +0100"},
	{"100 windows of the worst schedules", func(tb testing.TB) []*Window {
		return benchWindows(tb, repeat(100, worstSchedules...)...)
	}, "2026-03-25 10:00 +0100"},
	{"100 windows of the worst schedules, Allow only", func(tb testing.TB) []*Window {
		var allows []spec
		for _, s := range worstSchedules {
			if s.kind == "Allow" {
				allows = append(allows, s, spec{"Allow", "0 22 * * 6", "8h", ""}, spec{"Allow", "0 1 * * 1-5", "4h", ""})
			}
		}
		return benchWindows(tb, repeat(100, allows...)...)
	}, "2026-10-25 01:30 +0100"},
	{"100 windows as long as their period, open for years", func(tb testing.TB) []*Window {
		return benchWindows(tb, repeat(100, asLongAsPeriod...)...)
	}, "2026-03-25 10:00 +0100"},
	{"100 Allow windows as long as their period", func(tb testing.TB) []*Window {
		var allows []spec
		for _, s := range asLongAsPeriod {
			s.kind = "Allow"
			allows = append(allows, s)
		}
		return benchWindows(tb, repeat(100, allows...)...)
	}, "2026-10-31 21:30 +0100"},
	{"100 weekly windows, one per hour of the week", func(tb testing.TB) []*Window {
		var specs []spec
		for i := 0; i < 100; i++ {
			specs = append(specs, spec{"Allow", fmt.Sprintf("0 %d * * %d", i%24, i/24%7), "1h", "Europe/Berlin"})
		}
		return benchWindows(tb, specs...)
	}, "2026-03-25 10:00 +0100"},
}

// BenchmarkEvaluate is one Evaluate of each case (make bench checks its
// target: TestEvaluationSpeedTarget).
func BenchmarkEvaluate(b *testing.B) {
	worker := Pool{Name: "worker"}
	for _, c := range evaluationCases {
		b.Run(c.name, func(b *testing.B) {
			windows := c.windows(b)
			now := at(b, c.now)
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				_, _ = Evaluate(context.Background(), now, worker, windows)
			}
		})
	}
}
