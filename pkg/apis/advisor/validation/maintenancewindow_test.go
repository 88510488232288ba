package validation_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
	_ "time/tzdata" // time zones load without the machine's zoneinfo

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/kubevirt/virt-advisor/pkg/apis/advisor"
	"github.com/kubevirt/virt-advisor/pkg/apis/advisor/v1alpha1"
	"github.com/kubevirt/virt-advisor/pkg/apis/advisor/validation"
)

// maintenanceWindow defaults and converts a v1alpha1 window as the API
// server does before validation.
func maintenanceWindow(t *testing.T, mutate func(*v1alpha1.MaintenanceWindowSpec)) *advisor.MaintenanceWindow {
	t.Helper()
	in := &v1alpha1.MaintenanceWindow{
		ObjectMeta: metav1.ObjectMeta{Name: "weekend"},
		Spec: v1alpha1.MaintenanceWindowSpec{
			PoolNames: []string{"worker"}, Schedule: "0 22 * * 6", Duration: metav1.Duration{Duration: 8 * time.Hour}, TimeZone: "Europe/Berlin",
		},
	}
	if mutate != nil {
		mutate(&in.Spec)
	}
	scheme.Default(in)
	out := &advisor.MaintenanceWindow{}
	if err := scheme.Convert(in, out, nil); err != nil {
		t.Fatal(err)
	}
	return out
}

func TestValidateMaintenanceWindow(t *testing.T) {
	hours := func(h int) metav1.Duration { return metav1.Duration{Duration: time.Duration(h) * time.Hour} }
	tests := []struct {
		name    string
		mutate  func(*v1alpha1.MaintenanceWindowSpec)
		field   string // "" = valid
		message string
	}{
		{"a weekend window", nil, "", ""},
		{"defaults: UTC, Allow", func(s *v1alpha1.MaintenanceWindowSpec) { s.TimeZone = "" }, "", ""},
		{"a freeze over every pool", func(s *v1alpha1.MaintenanceWindowSpec) {
			s.PoolNames, s.Pools, s.Kind = nil, &metav1.LabelSelector{}, v1alpha1.MaintenanceWindowKindDeny
			s.Schedule, s.Duration = "0 0 24 12 *", hours(14*24)
		}, "", ""},
		{"names and a selector", func(s *v1alpha1.MaintenanceWindowSpec) {
			s.Pools = &metav1.LabelSelector{MatchLabels: map[string]string{"pools.operator.machineconfiguration.openshift.io/worker": ""}}
		}, "", ""},
		{"every minute for 20 s", func(s *v1alpha1.MaintenanceWindowSpec) {
			s.Schedule, s.Duration = "* * * * *", metav1.Duration{Duration: 20 * time.Second}
		}, "", ""},
		{"duration equal to the period", func(s *v1alpha1.MaintenanceWindowSpec) { s.Duration = hours(7 * 24) }, "", ""},
		// Every window the duration rule admits is evaluated within the
		// bound: openings back to back for years are one interval.
		{"a week every week, in UTC", func(s *v1alpha1.MaintenanceWindowSpec) { s.Duration, s.TimeZone = hours(7*24), "UTC" }, "", ""},
		{"a freeze of a week every week, in UTC", func(s *v1alpha1.MaintenanceWindowSpec) {
			s.Duration, s.TimeZone, s.Kind = hours(7*24), "UTC", v1alpha1.MaintenanceWindowKindDeny
		}, "", ""},
		{"four years from leap day to leap day", func(s *v1alpha1.MaintenanceWindowSpec) {
			s.Schedule, s.Duration, s.TimeZone = "0 0 29 2 *", hours(1461*24), "UTC"
		}, "", ""},
		{"365 days from every 1 February", func(s *v1alpha1.MaintenanceWindowSpec) {
			s.Schedule, s.Duration, s.TimeZone = "0 0 1 2 *", hours(365*24), "UTC"
		}, "", ""},
		// Issue 24: per-minute schedules cost a few steps to evaluate.
		{"a freeze of 23 hours written per minute", func(s *v1alpha1.MaintenanceWindowSpec) {
			s.Schedule, s.Duration, s.Kind = "* 0-22 * * *", metav1.Duration{Duration: time.Minute}, v1alpha1.MaintenanceWindowKindDeny
		}, "", ""},
		{"a weekday freeze written per minute", func(s *v1alpha1.MaintenanceWindowSpec) {
			s.Schedule, s.Duration, s.Kind = "* * * * 1-5", metav1.Duration{Duration: time.Minute}, v1alpha1.MaintenanceWindowKindDeny
		}, "", ""},
		{"open all the time across the changes of time", func(s *v1alpha1.MaintenanceWindowSpec) {
			s.Schedule, s.Duration, s.TimeZone = "* * * * *", metav1.Duration{Duration: time.Minute}, "America/New_York"
		}, "", ""},
		{"a leap day", func(s *v1alpha1.MaintenanceWindowSpec) { s.Schedule, s.Duration = "0 0 29 2 *", hours(24) }, "", ""},
		{"no pool", func(s *v1alpha1.MaintenanceWindowSpec) { s.PoolNames = nil }, "spec.pools", "Required value: select the MachineConfigPools"},
		{"bad selector", func(s *v1alpha1.MaintenanceWindowSpec) {
			s.Pools = &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "role", Operator: "Sometimes"}}}
		}, "spec.pools.matchExpressions[0].operator", "not a valid selector operator"},
		{"bad pool name", func(s *v1alpha1.MaintenanceWindowSpec) { s.PoolNames = []string{"Worker_1"} }, "spec.poolNames[0]", "not a MachineConfigPool name"},
		{"duplicate pool name", func(s *v1alpha1.MaintenanceWindowSpec) { s.PoolNames = []string{"worker", "worker"} }, "spec.poolNames[1]", "Duplicate value"},
		{"no schedule", func(s *v1alpha1.MaintenanceWindowSpec) { s.Schedule = "" }, "spec.schedule", "Required value: a 5-field cron expression"},
		{"bad cron", func(s *v1alpha1.MaintenanceWindowSpec) { s.Schedule = "every saturday" }, "spec.schedule", "not a 5-field cron expression"},
		{"six fields", func(s *v1alpha1.MaintenanceWindowSpec) { s.Schedule = "0 0 22 * * 6" }, "spec.schedule", "expected exactly 5 fields"},
		{"a date that never comes", func(s *v1alpha1.MaintenanceWindowSpec) { s.Schedule = "0 0 30 2 *" }, "spec.schedule", "matches no date"},
		{"a time zone prefix", func(s *v1alpha1.MaintenanceWindowSpec) { s.Schedule = "CRON_TZ=UTC 0 22 * * 6" }, "spec.schedule", "set the window's time zone instead"},
		{"unknown time zone", func(s *v1alpha1.MaintenanceWindowSpec) { s.TimeZone = "Europe/Atlantis" }, "spec.timeZone", `unknown time zone "Europe/Atlantis"`},
		{"the server's time zone", func(s *v1alpha1.MaintenanceWindowSpec) { s.TimeZone = "Local" }, "spec.timeZone", "the server's own"},
		{"zero duration", func(s *v1alpha1.MaintenanceWindowSpec) { s.Duration = metav1.Duration{} }, "spec.duration", "must be positive"},
		{"negative duration", func(s *v1alpha1.MaintenanceWindowSpec) { s.Duration = hours(-1) }, "spec.duration", "must be positive"},
		{"longer than the period", func(s *v1alpha1.MaintenanceWindowSpec) { s.Duration = hours(8 * 24) }, "spec.duration",
			`duration 8d is longer than the schedule's period 7d (the shortest time between two openings of "0 22 * * 6")`},
		{"longer than the period of a minute", func(s *v1alpha1.MaintenanceWindowSpec) {
			s.Schedule, s.Duration = "* * * * *", metav1.Duration{Duration: 90 * time.Second}
		}, "spec.duration", "period 1m"},
		{"bad kind", func(s *v1alpha1.MaintenanceWindowSpec) { s.Kind = "Maybe" }, "spec.kind", `supported values: "Allow", "Deny"`},
		{"description too long", func(s *v1alpha1.MaintenanceWindowSpec) { s.Description = strings.Repeat("x", 1025) }, "spec.description", "Too long"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := maintenanceWindow(t, tt.mutate)
			errs := validation.ValidateMaintenanceWindow(w)
			if tt.field == "" {
				if len(errs) > 0 {
					t.Fatalf("want valid, got %v", errs)
				}
				return
			}
			for _, e := range errs {
				if e.Field == tt.field && strings.Contains(e.Error(), tt.message) {
					return
				}
			}
			t.Fatalf("want an error on %s containing %q, got %v", tt.field, tt.message, errs)
		})
	}

	t.Run("update validates the new spec", func(t *testing.T) {
		old := maintenanceWindow(t, nil)
		old.ResourceVersion = "1"
		w := old.DeepCopy()
		w.Spec.Schedule = "0 25 * * *"
		errs := validation.ValidateMaintenanceWindowUpdate(w, old)
		if len(errs) != 1 || errs[0].Field != "spec.schedule" {
			t.Fatalf("want one error on spec.schedule, got %v", errs)
		}
	})
}

// TestSampleWindowsAreValid keeps the samples the docs apply valid.
func TestSampleWindowsAreValid(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("..", "..", "..", "..", "artifacts", "samples", "maintenancewindow-*.yaml"))
	if err != nil || len(files) < 2 {
		t.Fatalf("want the sample windows, found %v (%v)", files, err)
	}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		in := &v1alpha1.MaintenanceWindow{}
		if err := yaml.UnmarshalStrict(data, in); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		scheme.Default(in)
		out := &advisor.MaintenanceWindow{}
		if err := scheme.Convert(in, out, nil); err != nil {
			t.Fatal(err)
		}
		if errs := validation.ValidateMaintenanceWindow(out); len(errs) > 0 {
			t.Errorf("%s: %v", f, errs)
		}
	}
}
