package maintenanceschedule

import (
	"context"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubevirt/virt-advisor/pkg/apis/advisor/v1alpha1"
)

// window builds a window selecting the pool "worker" by name.
func window(t *testing.T, name string, kind Kind, schedule, duration, zone string) *Window {
	t.Helper()
	d, err := time.ParseDuration(duration)
	if err != nil {
		t.Fatal(err)
	}
	w, err := New(name, Spec{PoolNames: []string{"worker"}, Schedule: schedule, Duration: d, TimeZone: zone, Kind: kind})
	if err != nil {
		t.Fatal(err)
	}
	return w
}

func TestNew(t *testing.T) {
	worker := []string{"worker"}
	tests := []struct {
		name    string
		spec    Spec
		wantErr string // "" = valid
	}{
		{"defaults: Allow, UTC", Spec{PoolNames: worker, Schedule: "0 22 * * 6", Duration: 8 * time.Hour}, ""},
		{"selector only", Spec{Pools: &metav1.LabelSelector{}, Schedule: "0 22 * * 6", Duration: time.Hour}, ""},
		{"duration equal to the period", Spec{PoolNames: worker, Schedule: "0 22 * * *", Duration: 24 * time.Hour}, ""},
		{"no pool", Spec{Schedule: "0 22 * * 6", Duration: time.Hour}, "selects no pool"},
		{"bad kind", Spec{PoolNames: worker, Schedule: "0 22 * * 6", Duration: time.Hour, Kind: "Maybe"}, `kind "Maybe" is neither Allow nor Deny`},
		{"bad schedule", Spec{PoolNames: worker, Schedule: "0 22 * *", Duration: time.Hour}, "expected exactly 5 fields"},
		{"unknown time zone", Spec{PoolNames: worker, Schedule: "0 22 * * 6", Duration: time.Hour, TimeZone: "Mars/Olympus_Mons"}, `unknown time zone "Mars/Olympus_Mons"`},
		{"the server's zone", Spec{PoolNames: worker, Schedule: "0 22 * * 6", Duration: time.Hour, TimeZone: "Local"}, "the server's own"},
		{"zero duration", Spec{PoolNames: worker, Schedule: "0 22 * * 6", Duration: 0}, "duration 0s must be positive"},
		{"negative duration", Spec{PoolNames: worker, Schedule: "0 22 * * 6", Duration: -time.Minute}, "must be positive"},
		{"longer than the period is left to CheckDuration", Spec{PoolNames: worker, Schedule: "0 22 * * 6", Duration: 8 * 24 * time.Hour}, ""},
		{"bad selector", Spec{Pools: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "a", Operator: "Sometimes"}}},
			Schedule: "0 22 * * 6", Duration: time.Hour}, "pools:"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := New("w", tt.spec)
			switch {
			case tt.wantErr == "" && err != nil:
				t.Fatalf("unexpected error: %v", err)
			case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
				t.Fatalf("error %v, want one containing %q", err, tt.wantErr)
			}
		})
	}
}

func TestCheckDuration(t *testing.T) {
	tests := []struct {
		schedule string
		d        time.Duration
		wantErr  string // "" = valid
	}{
		{"0 22 * * 6", 8 * time.Hour, ""},
		{"0 22 * * 6", 7 * 24 * time.Hour, ""},
		{"0 22 * * 6", 8 * 24 * time.Hour, `duration 8d is longer than the schedule's period 7d (the shortest time between two openings of "0 22 * * 6")`},
		{"* * * * *", 20 * time.Second, ""},
		{"* * * * *", 61 * time.Second, "duration 1m1s is longer than the schedule's period 1m"},
		{"0 1,23 * * *", 3 * time.Hour, "period 2h"},
		{"0 22 * * 6", 0, "duration 0s must be positive"},
	}
	for _, tt := range tests {
		s, err := ParseSchedule(tt.schedule)
		if err != nil {
			t.Fatal(err)
		}
		err = CheckDuration(tt.d, s)
		switch {
		case tt.wantErr == "" && err != nil:
			t.Errorf("%q for %s: unexpected error: %v", tt.schedule, tt.d, err)
		case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
			t.Errorf("%q for %s: error %v, want one containing %q", tt.schedule, tt.d, err, tt.wantErr)
		}
	}
}

func TestFromAPI(t *testing.T) {
	w, err := FromAPI(&v1alpha1.MaintenanceWindow{
		ObjectMeta: metav1.ObjectMeta{Name: "weekend", Labels: map[string]string{"team": "platform"}},
		Spec: v1alpha1.MaintenanceWindowSpec{
			Pools:    &metav1.LabelSelector{MatchLabels: map[string]string{"role": "worker"}},
			Schedule: "0 22 * * 6", Duration: metav1.Duration{Duration: 8 * time.Hour},
			TimeZone: "Europe/Berlin", Kind: v1alpha1.MaintenanceWindowKindDeny,
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	if w.Name != "weekend" || w.Kind != Deny || w.Location.String() != "Europe/Berlin" || w.Duration != 8*time.Hour || w.Schedule.String() != "0 22 * * 6" {
		t.Fatalf("parsed %+v", w)
	}
	if !w.Selects(Pool{Name: "x", Labels: map[string]string{"role": "worker"}}) || w.Selects(Pool{Name: "worker"}) {
		t.Fatal("the selector is not the API's")
	}
	if w.Labels["team"] != "platform" {
		t.Fatalf("labels %v: an approval policy trusts windows by label", w.Labels)
	}
}

func TestSelects(t *testing.T) {
	byName, _ := New("n", Spec{PoolNames: []string{"worker", "infra"}, Schedule: "0 0 * * *", Duration: time.Hour})
	byLabel, _ := New("l", Spec{Pools: &metav1.LabelSelector{MatchLabels: map[string]string{"role": "worker"}}, Schedule: "0 0 * * *", Duration: time.Hour})
	both, _ := New("b", Spec{PoolNames: []string{"master"}, Pools: &metav1.LabelSelector{MatchLabels: map[string]string{"role": "worker"}}, Schedule: "0 0 * * *", Duration: time.Hour})
	every, _ := New("e", Spec{Pools: &metav1.LabelSelector{}, Schedule: "0 0 * * *", Duration: time.Hour})
	worker := Pool{Name: "worker", Labels: map[string]string{"role": "worker"}}
	cnv := Pool{Name: "worker-cnv", Labels: map[string]string{"role": "worker"}}
	master := Pool{Name: "master", Labels: map[string]string{"role": "master"}}
	tests := []struct {
		w    *Window
		pool Pool
		want bool
	}{
		{byName, worker, true}, {byName, cnv, false}, {byName, master, false},
		{byLabel, worker, true}, {byLabel, cnv, true}, {byLabel, master, false},
		{both, master, true}, {both, cnv, true}, {both, Pool{Name: "infra"}, false},
		{every, master, true}, {every, Pool{Name: "no-labels"}, true},
	}
	for _, tt := range tests {
		if got := tt.w.Selects(tt.pool); got != tt.want {
			t.Errorf("window %s selects %s: %t, want %t", tt.w.Name, tt.pool.Name, got, tt.want)
		}
	}
}

func TestWindowState(t *testing.T) {
	tests := []struct {
		name       string
		w          *Window
		now        string
		wantOpen   bool
		wantOpens  string // "" = zero
		wantCloses string // "" = zero
	}{
		{"closed: the next opening", window(t, "weekend", Allow, "0 22 * * 6", "8h", "Europe/Berlin"), "2026-03-25 10:00 +0100",
			false, "2026-03-28 22:00 +0100", "2026-03-29 07:00 +0200"},
		{"open across midnight and the change to summer time: 8 h of elapsed time end at 07:00 CEST", window(t, "weekend", Allow, "0 22 * * 6", "8h", "Europe/Berlin"), "2026-03-29 01:30 +0100",
			true, "2026-03-28 22:00 +0100", "2026-03-29 07:00 +0200"},
		{"open across midnight, fall back: ends at 05:00 CET", window(t, "weekend", Allow, "0 22 * * 6", "8h", "Europe/Berlin"), "2026-10-25 02:30 +0100",
			true, "2026-10-24 22:00 +0200", "2026-10-25 05:00 +0100"},
		{"a start the clocks skip opens at the jump", window(t, "early", Allow, "30 2 * * *", "1h", "Europe/Berlin"), "2026-03-29 03:30 +0200",
			true, "2026-03-29 03:00 +0200", "2026-03-29 04:00 +0200"},
		{"fall back: in the repeated hour the window does not open again", window(t, "early", Allow, "30 2 * * *", "1h", "Europe/Berlin"), "2026-10-25 02:45 +0100",
			false, "2026-10-26 02:30 +0100", "2026-10-26 03:30 +0100"},
		{"fall back: the first 02:30 is open for one hour of elapsed time", window(t, "early", Allow, "30 2 * * *", "1h", "Europe/Berlin"), "2026-10-25 02:10 +0100",
			true, "2026-10-25 02:30 +0200", "2026-10-25 02:30 +0100"},
		{"every minute for 20 s: open", window(t, "minute", Allow, "* * * * *", "20s", "UTC"), "2026-01-01 12:00:05 +0000",
			true, "2026-01-01 12:00:00 +0000", "2026-01-01 12:00:20 +0000"},
		{"every minute for 20 s: closed at the end (openings are half-open)", window(t, "minute", Allow, "* * * * *", "20s", "UTC"), "2026-01-01 12:00:20 +0000",
			false, "2026-01-01 12:01:00 +0000", "2026-01-01 12:01:20 +0000"},
		{"every minute for 20 s: open at the start", window(t, "minute", Allow, "* * * * *", "20s", "UTC"), "2026-01-01 12:01:00 +0000",
			true, "2026-01-01 12:01:00 +0000", "2026-01-01 12:01:20 +0000"},
		{"openings that touch count as one", window(t, "hourly", Allow, "0 9-11 * * *", "1h", "UTC"), "2026-01-01 09:30 +0000",
			true, "2026-01-01 09:00 +0000", "2026-01-01 12:00 +0000"},
		{"a daily window lasting a day closes only in the extra hour of the night the clocks go back", window(t, "always", Allow, "0 3 * * *", "24h", "Europe/Berlin"), "2026-03-28 12:00 +0100",
			true, "2026-03-28 03:00 +0100", "2026-10-25 02:00 +0100"},
		{"openings that always touch never close", window(t, "always", Allow, "* * * * *", "1m", "UTC"), "2026-01-01 00:00:30 +0000",
			true, "2026-01-01 00:00 +0000", ""},
		{"a leap-day window", window(t, "leap", Deny, "0 0 29 2 *", "24h", "UTC"), "2026-01-01 00:00 +0000",
			false, "2028-02-29 00:00 +0000", "2028-03-01 00:00 +0000"},
		// Windows as long as their period: back-to-back openings are one
		// interval, however many days lie between them.
		{"a weekly window lasting a week never closes", window(t, "week", Allow, "0 22 * * 6", "168h", "UTC"), "2026-03-25 10:00 +0000",
			true, "2026-03-21 22:00 +0000", ""},
		{"a weekly window lasting a week, at an opening: the one that begins now", window(t, "week", Allow, "0 22 * * 6", "168h", "UTC"), "2026-03-28 22:00 +0000",
			true, "2026-03-28 22:00 +0000", ""},
		{"a weekly window lasting a week across the change to summer time: the openings overlap by an hour, one interval until the extra hour in autumn",
			window(t, "week", Allow, "0 22 * * 6", "168h", "Europe/Berlin"), "2026-03-29 03:30 +0200",
			true, "2026-03-28 22:00 +0100", "2026-10-31 21:00 +0100"},
		{"a weekly window lasting a week, in the hour the change to winter time leaves between two openings",
			window(t, "week", Allow, "0 22 * * 6", "168h", "Europe/Berlin"), "2026-10-31 21:30 +0100",
			false, "2026-10-31 22:00 +0100", "2027-11-06 21:00 +0100"},
		{"a weekly window lasting a week, half an hour shorter where the clocks go back half an hour",
			window(t, "week", Allow, "0 0 * * 0", "168h", "Australia/Lord_Howe"), "2026-03-25 10:00 +1100",
			true, "2026-03-22 00:00 +1100", "2026-04-11 23:30 +1030"},
		{"an opening the clocks skip opens at the jump and runs into the next week", window(t, "week", Allow, "30 2 * * 0", "168h", "Europe/Berlin"), "2026-03-29 03:30 +0200",
			true, "2026-03-29 03:00 +0200", "2026-11-01 01:30 +0100"},
		{"a daily window lasting a day, at midnight", window(t, "day", Allow, "0 0 * * *", "24h", "UTC"), "2026-03-25 00:00 +0000",
			true, "2026-03-25 00:00 +0000", ""},
		{"daily from January to November: one interval until 1 December", window(t, "months", Deny, "0 0 * 1-11 *", "24h", "UTC"), "2026-03-25 10:00 +0000",
			true, "2026-03-25 00:00 +0000", "2026-12-01 00:00 +0000"},
		{"daily from January to November: the extra hour of winter time ends it", window(t, "months", Deny, "0 0 * 1-11 *", "24h", "Europe/Berlin"), "2026-03-25 10:00 +0100",
			true, "2026-03-25 00:00 +0100", "2026-10-25 23:00 +0100"},
		{"a yearly window lasting 365 days: one interval until a leap year leaves a day", window(t, "year", Deny, "0 0 1 1 *", "8760h", "UTC"), "2026-03-25 10:00 +0000",
			true, "2026-01-01 00:00 +0000", "2028-12-31 00:00 +0000"},
		{"a leap-day window lasting four years never closes", window(t, "leap", Deny, "0 0 29 2 *", "35064h", "UTC"), "2026-03-25 10:00 +0000",
			true, "2024-02-29 00:00 +0000", ""},
		{"openings that overlap (longer than the period, which only validation refuses) are one interval", window(t, "fortnight", Allow, "0 22 * * 6", "337h", "Europe/Berlin"), "2026-03-25 10:00 +0100",
			true, "2026-03-14 22:00 +0100", ""},
		{"every minute for a minute, across midnight and the new year", window(t, "always", Allow, "* * * * *", "1m", "UTC"), "2026-12-31 23:59:30 +0000",
			true, "2026-12-31 23:59 +0000", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := tt.w.State(context.Background(), at(t, tt.now))
			if err != nil {
				t.Fatal(err)
			}
			if got.Open != tt.wantOpen {
				t.Errorf("open %t, want %t", got.Open, tt.wantOpen)
			}
			expectTime(t, "opensAt", got.OpensAt, tt.wantOpens, tt.w.Location)
			expectTime(t, "closesAt", got.ClosesAt, tt.wantCloses, tt.w.Location)
			if got.Open != tt.w.IsOpen(at(t, tt.now)) {
				t.Errorf("IsOpen disagrees with State")
			}
		})
	}
}

func expectTime(t *testing.T, what string, got time.Time, want string, loc *time.Location) {
	t.Helper()
	switch {
	case want == "" && !got.IsZero():
		t.Errorf("%s %s, want none", what, got.In(loc))
	case want != "" && !got.Equal(at(t, want)):
		t.Errorf("%s %s, want %s", what, got.In(loc), at(t, want).In(loc))
	}
}

func TestFormatDuration(t *testing.T) {
	for d, want := range map[time.Duration]string{
		0: "0s", 20 * time.Second: "20s", time.Minute: "1m", 90 * time.Minute: "1h30m", 8 * time.Hour: "8h",
		36 * time.Hour: "1d12h", 7 * 24 * time.Hour: "7d", -5 * time.Minute: "-5m", 1500 * time.Millisecond: "1s500ms",
	} {
		if got := FormatDuration(d); got != want {
			t.Errorf("FormatDuration(%s) = %q, want %q", d, got, want)
		}
	}
}
