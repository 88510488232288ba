package metrics

import (
	"strings"
	"testing"
	"time"

	"k8s.io/component-base/metrics/legacyregistry"
	"k8s.io/component-base/metrics/testutil"
)

func TestPlanComputed(t *testing.T) {
	Register("example-profile")
	value := func(get func() (float64, error)) float64 {
		t.Helper()
		v, err := get()
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	errors := func() (float64, error) {
		return testutil.GetCounterMetricValue(PlanErrors.WithLabelValues("example-profile"))
	}
	lastSuccess := func() (float64, error) {
		return testutil.GetGaugeMetricValue(PlanLastSuccess.WithLabelValues("example-profile"))
	}
	if value(errors) != 0 || value(lastSuccess) == 0 {
		t.Fatalf("after Register: errors %v, last success %v; want 0 and the start time", value(errors), value(lastSuccess))
	}

	var r Recorder
	tests := []struct {
		name          string
		failed        bool
		wantErrors    float64
		wantSucceeded bool
	}{
		{name: "a failure counts and leaves the last success", failed: true, wantErrors: 1},
		{name: "another failure", failed: true, wantErrors: 2},
		{name: "a success moves the last success", failed: false, wantErrors: 2, wantSucceeded: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			before := value(lastSuccess)
			time.Sleep(10 * time.Millisecond) // a later success has a later timestamp
			r.PlanComputed("example-profile", tc.failed)
			if got := value(errors); got != tc.wantErrors {
				t.Errorf("errors %v, want %v", got, tc.wantErrors)
			}
			if moved := value(lastSuccess) > before; moved != tc.wantSucceeded {
				t.Errorf("last success moved: %v, want %v", moved, tc.wantSucceeded)
			}
		})
	}
}

func TestPoolWindows(t *testing.T) {
	Register()
	const help = "# HELP virt_advisor_pool_maintenance_window_opens_in_seconds [ALPHA] Seconds until the nodes of a MachineConfigPool that maintenance windows select may be disrupted again; 0 while they may.\n" +
		"# TYPE virt_advisor_pool_maintenance_window_opens_in_seconds gauge\n"
	var r Recorder
	tests := []struct {
		name    string
		opensIn map[string]float64
		want    string
	}{
		{name: "two pools", opensIn: map[string]float64{"worker": 60, "infra": 0},
			want: help + "virt_advisor_pool_maintenance_window_opens_in_seconds{pool=\"infra\"} 0\n" +
				"virt_advisor_pool_maintenance_window_opens_in_seconds{pool=\"worker\"} 60\n"},
		{name: "a pool no window selects any more loses its series", opensIn: map[string]float64{"worker": 30},
			want: help + "virt_advisor_pool_maintenance_window_opens_in_seconds{pool=\"worker\"} 30\n"},
		{name: "no pool", opensIn: map[string]float64{}, want: ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r.PoolWindows(tc.opensIn)
			if err := testutil.GatherAndCompare(legacyregistry.DefaultGatherer, strings.NewReader(tc.want), "virt_advisor_pool_maintenance_window_opens_in_seconds"); err != nil {
				t.Fatal(err)
			}
		})
	}
}
