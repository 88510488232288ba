package maintenanceschedule

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestEvaluate(t *testing.T) {
	worker := Pool{Name: "worker", Labels: map[string]string{"role": "worker"}}
	weekend := window(t, "weekend", Allow, "0 22 * * 6", "8h", "Europe/Berlin")
	nightly := window(t, "nightly", Allow, "0 22 * * *", "8h", "UTC")
	lateNight := window(t, "late-night", Allow, "0 1 * * *", "4h", "UTC")   // overlaps nightly: 01:00-05:00
	afterNight := window(t, "after-night", Allow, "0 6 * * *", "2h", "UTC") // touches nightly: 06:00-08:00
	backup := window(t, "backup", Deny, "0 1 * * *", "1h", "UTC")           // inside nightly: 01:00-02:00
	holidays := window(t, "holidays", Deny, "0 0 24 12 *", "336h", "Europe/Berlin")
	minute := window(t, "minute", Allow, "* * * * *", "20s", "UTC")
	weekdays := window(t, "weekdays", Deny, "* * * * 1-5", "1m", "Europe/Berlin")
	perMinute := window(t, "per-minute", Deny, "* 0-22 * * *", "1m", "UTC")
	midnight := window(t, "midnight", Allow, "0 0 * * *", "1m", "UTC")
	weekendMinutes := window(t, "weekend-minutes", Allow, "* * * * 0,6", "1m", "Europe/Berlin")
	otherPool, _ := New("infra-only", Spec{PoolNames: []string{"infra"}, Schedule: "0 22 * * 6", Duration: time.Hour})
	byLabel, _ := New("by-label", Spec{Pools: &metav1.LabelSelector{MatchLabels: map[string]string{"role": "worker"}}, Schedule: "0 3 * * 0", Duration: time.Hour, TimeZone: "Europe/Berlin"})

	tests := []struct {
		name       string
		windows    []*Window
		now        string
		allowed    bool
		window     string
		kind       Kind
		opensAt    string // "" = zero
		closesAt   string // "" = zero
		reason     string
		windowed   bool
		windowList []string
	}{
		{"no window: allowed at any time (today's behaviour)", nil, "2026-03-25 10:00 +0100",
			true, "", "", "", "", "no maintenance window selects pool 'worker'", false, nil},
		{"windows of other pools are ignored", []*Window{otherPool}, "2026-03-25 10:00 +0100",
			true, "", "", "", "", "no maintenance window selects pool 'worker'", false, nil},
		{"windowed, closed: waits for the next opening, in the window's zone and UTC", []*Window{weekend, otherPool}, "2026-03-25 10:00 +0100",
			false, "weekend", Allow, "2026-03-28 22:00 +0100", "2026-03-29 07:00 +0200",
			"window 'weekend' opens Sat 28 Mar 22:00 CET (21:00 UTC), in 3d12h", true, []string{"weekend"}},
		{"windowed, open across midnight and the change to summer time", []*Window{weekend}, "2026-03-29 03:30 +0200",
			true, "weekend", Allow, "", "2026-03-29 07:00 +0200",
			"window 'weekend' is open until Sun 29 Mar 07:00 CEST (05:00 UTC), in 3h30m", true, []string{"weekend"}},
		{"windowed, open, fall back: 8 h of elapsed time end at 05:00 CET", []*Window{weekend}, "2026-10-25 02:30 +0100",
			true, "weekend", Allow, "", "2026-10-25 05:00 +0100", "until Sun 25 Oct 05:00 CET (04:00 UTC), in 2h30m", true, []string{"weekend"}},
		{"selected by label", []*Window{byLabel}, "2026-03-25 10:00 +0100",
			false, "by-label", Allow, "2026-03-29 03:00 +0200", "2026-03-29 04:00 +0200", "window 'by-label' opens Sun 29 Mar 03:00 CEST (01:00 UTC)", true, []string{"by-label"}},
		{"overlapping Allow windows: open until the last one closes", []*Window{nightly, lateNight}, "2026-01-14 23:00 +0000",
			true, "nightly", Allow, "", "2026-01-15 06:00 +0000", "window 'nightly' is open until Thu 15 Jan 06:00 UTC, in 7h", true, []string{"late-night", "nightly"}},
		{"overlapping Allow windows: the one open longest is named", []*Window{nightly, lateNight}, "2026-01-15 04:30 +0000",
			true, "nightly", Allow, "", "2026-01-15 06:00 +0000", "", true, nil},
		{"adjacent Allow windows: one allowed period", []*Window{nightly, afterNight}, "2026-01-14 23:00 +0000",
			true, "nightly", Allow, "", "2026-01-15 08:00 +0000", "", true, nil},
		{"adjacent Allow windows: closed, the next period spans both", []*Window{nightly, afterNight}, "2026-01-15 12:00 +0000",
			false, "nightly", Allow, "2026-01-15 22:00 +0000", "2026-01-16 08:00 +0000", "window 'nightly' opens Thu 15 Jan 22:00 UTC, in 10h", true, nil},
		{"Deny inside Allow: allowed until the freeze begins", []*Window{nightly, backup}, "2026-01-14 23:00 +0000",
			true, "nightly", Allow, "", "2026-01-15 01:00 +0000", "window 'nightly' is open until Thu 15 Jan 01:00 UTC, in 2h, when freeze 'backup' begins", true, nil},
		{"Deny inside Allow: the open Deny beats the open Allow", []*Window{nightly, backup}, "2026-01-15 01:30 +0000",
			false, "backup", Deny, "2026-01-15 02:00 +0000", "2026-01-15 06:00 +0000",
			"freeze 'backup' until Thu 15 Jan 02:00 UTC, in 30m; then in window 'nightly' from Thu 15 Jan 02:00 UTC, in 30m", true, []string{"backup", "nightly"}},
		{"Deny at the very start of an Allow opening", []*Window{lateNight, backup}, "2026-01-15 01:00 +0000",
			false, "backup", Deny, "2026-01-15 02:00 +0000", "2026-01-15 05:00 +0000", "", true, nil},
		{"only Deny windows, closed: allowed until the freeze", []*Window{holidays}, "2026-12-20 12:00 +0100",
			true, "holidays", Deny, "", "2026-12-24 00:00 +0100",
			"no Allow window selects pool 'worker' and no freeze is in effect; freeze 'holidays' begins Thu 24 Dec 00:00 CET (Wed 23 Dec 23:00 UTC), in 3d12h", false, []string{"holidays"}},
		{"only Deny windows, open: frozen until it ends", []*Window{holidays}, "2026-12-25 12:00 +0100",
			false, "holidays", Deny, "2027-01-07 00:00 +0100", "2027-12-24 00:00 +0100",
			"freeze 'holidays' until Thu 7 Jan 2027 00:00 CET (Wed 6 Jan 23:00 UTC), in 12d", false, nil},
		{"a freeze ends while an Allow window is open: allowed from its end", []*Window{nightly, holidays}, "2027-01-06 12:00 +0100",
			false, "holidays", Deny, "2027-01-07 00:00 +0100", "2027-01-07 06:00 +0000",
			"freeze 'holidays' until Thu 7 Jan 00:00 CET (Wed 6 Jan 23:00 UTC), in 12h; then in window 'nightly' from Wed 6 Jan 23:00 UTC, in 12h", true, nil},
		{"a freeze covers the next openings: the first after it", []*Window{weekend, holidays}, "2026-12-23 12:00 +0100",
			false, "weekend", Allow, "2027-01-09 22:00 +0100", "2027-01-10 06:00 +0100",
			"window 'weekend' opens Sat 9 Jan 2027 22:00 CET (21:00 UTC), in 17d10h (a freeze covers the openings before)", true, nil},
		{"every minute for 20 s: open", []*Window{minute}, "2026-01-01 12:00:05 +0000",
			true, "minute", Allow, "", "2026-01-01 12:00:20 +0000", "window 'minute' is open until Thu 1 Jan 12:00:20 UTC, in 15s", true, nil},
		{"every minute for 20 s: closed", []*Window{minute}, "2026-01-01 12:00:25 +0000",
			false, "minute", Allow, "2026-01-01 12:01:00 +0000", "2026-01-01 12:01:20 +0000", "window 'minute' opens Thu 1 Jan 12:01 UTC, in 35s", true, nil},
		{"every minute for 20 s under a freeze: the first opening after it", []*Window{minute, backup}, "2026-01-15 01:59:50 +0000",
			false, "backup", Deny, "2026-01-15 02:00:00 +0000", "2026-01-15 02:00:20 +0000", "", true, nil},
		// Issue 24: per-minute schedules are one interval per run of
		// back-to-back openings, however many minutes it spans.
		{"a weekday freeze written per minute ends on Saturday 00:00 (7 200 openings from Monday)", []*Window{weekdays}, "2026-03-23 08:00 +0100",
			false, "weekdays", Deny, "2026-03-28 00:00 +0100", "2026-03-30 00:00 +0200",
			"freeze 'weekdays' until Sat 28 Mar 00:00 CET (Fri 27 Mar 23:00 UTC), in 4d16h", false, nil},
		{"a freeze of 23 hours written per minute ends at 23:00", []*Window{perMinute}, "2026-03-25 10:00 +0000",
			false, "per-minute", Deny, "2026-03-25 23:00 +0000", "2026-03-26 00:00 +0000", "freeze 'per-minute' until Wed 25 Mar 23:00 UTC, in 13h", false, nil},
		{"a daily minute inside the per-minute freeze never opens", []*Window{perMinute, midnight}, "2026-03-25 10:00 +0000",
			false, "per-minute", Deny, "", "", "freeze 'per-minute' until Wed 25 Mar 23:00 UTC, in 13h; then no Allow window of pool 'worker' opens within five years", true, nil},
		{"per-minute Allow over the weekend: open until Monday 00:00", []*Window{weekendMinutes}, "2026-03-28 10:00 +0100",
			true, "weekend-minutes", Allow, "", "2026-03-30 00:00 +0200", "window 'weekend-minutes' is open until Mon 30 Mar 00:00 CEST (Sun 29 Mar 22:00 UTC), in 1d13h", true, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			now := at(t, tt.now)
			got, err := Evaluate(context.Background(), now, worker, tt.windows)
			if err != nil {
				t.Fatal(err)
			}
			// The order the windows are listed in does not matter.
			reversed := slices.Clone(tt.windows)
			slices.Reverse(reversed)
			if again, _ := Evaluate(context.Background(), now, worker, reversed); again.Reason != got.Reason || !again.OpensAt.Equal(got.OpensAt) || !again.ClosesAt.Equal(got.ClosesAt) {
				t.Errorf("another order of the windows decides otherwise: %+v", again)
			}
			if got.Allowed != tt.allowed || got.Window != tt.window || got.Kind != tt.kind || got.Windowed != tt.windowed {
				t.Errorf("allowed %t window %q kind %q windowed %t, want %t %q %q %t (%s)", got.Allowed, got.Window, got.Kind, got.Windowed, tt.allowed, tt.window, tt.kind, tt.windowed, got.Reason)
			}
			loc := time.UTC
			expectTime(t, "opensAt", got.OpensAt, tt.opensAt, loc)
			expectTime(t, "closesAt", got.ClosesAt, tt.closesAt, loc)
			if !strings.Contains(got.Reason, tt.reason) {
				t.Errorf("reason %q, want it to contain %q", got.Reason, tt.reason)
			}
			if tt.windowList != nil && !slices.Equal(got.Windows, tt.windowList) {
				t.Errorf("windows %q, want %q", got.Windows, tt.windowList)
			}
		})
	}
}

func TestFormatRelative(t *testing.T) {
	for d, want := range map[time.Duration]string{
		35 * time.Second: "35s", 4*time.Minute + 20*time.Second + 300*time.Millisecond: "4m20s", 45*time.Minute + 10*time.Second: "45m",
		2 * time.Hour: "2h", 7*time.Hour + 59*time.Minute + 59*time.Second: "7h59m", 3*24*time.Hour + 4*time.Hour + 30*time.Minute: "3d4h",
		282*24*time.Hour + 22*time.Hour: "282d",
	} {
		if got := FormatRelative(d); got != want {
			t.Errorf("FormatRelative(%s) = %q, want %q", d, got, want)
		}
	}
}

func TestFormatTime(t *testing.T) {
	berlin, newYork := mustLoad(t, "Europe/Berlin"), mustLoad(t, "America/New_York")
	now := at(t, "2026-03-25 10:00 +0100")
	tests := []struct {
		t    string
		loc  *time.Location
		want string
	}{
		{"2026-03-28 22:00 +0100", berlin, "Sat 28 Mar 22:00 CET (21:00 UTC), in 3d12h"},
		{"2026-03-29 03:00 +0200", berlin, "Sun 29 Mar 03:00 CEST (01:00 UTC), in 3d16h"},
		{"2026-03-29 00:30 +0100", berlin, "Sun 29 Mar 00:30 CET (Sat 28 Mar 23:30 UTC), in 3d14h"},
		{"2026-03-28 21:00 +0000", time.UTC, "Sat 28 Mar 21:00 UTC, in 3d12h"},
		{"2027-01-02 08:00 +0100", berlin, "Sat 2 Jan 2027 08:00 CET (07:00 UTC), in 282d"},
		{"2026-03-25 10:00:20 +0100", berlin, "Wed 25 Mar 10:00:20 CET (09:00:20 UTC), in 20s"},
		{"2026-03-25 09:00 +0100", berlin, "Wed 25 Mar 09:00 CET (08:00 UTC), 1h ago"},
		{"2026-03-25 10:00 +0100", newYork, "Wed 25 Mar 05:00 EDT (09:00 UTC), now"},
	}
	for _, tt := range tests {
		if got := FormatTime(at(t, tt.t), tt.loc, now); got != tt.want {
			t.Errorf("FormatTime(%s) = %q, want %q", tt.t, got, tt.want)
		}
	}
}
