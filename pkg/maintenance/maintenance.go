package maintenance

import (
	"context"
	"time"

	"github.com/kubevirt/virt-advisor/pkg/apis/advisor/maintenanceschedule"
	"github.com/kubevirt/virt-advisor/pkg/apis/advisor/v1alpha1"
)

// The arithmetic's types and constants, under the names the server uses;
// maintenanceschedule documents them.
type (
	Decision = maintenanceschedule.Decision
	Kind     = maintenanceschedule.Kind
	Pool     = maintenanceschedule.Pool
	Schedule = maintenanceschedule.Schedule
	Spec     = maintenanceschedule.Spec
	State    = maintenanceschedule.State
	Window   = maintenanceschedule.Window
)

const (
	Allow       = maintenanceschedule.Allow
	Deny        = maintenanceschedule.Deny
	MaxSteps    = maintenanceschedule.MaxSteps
	WindowSteps = maintenanceschedule.WindowSteps
)

// ErrTooComplex is maintenanceschedule.ErrTooComplex.
var ErrTooComplex = maintenanceschedule.ErrTooComplex

// New is maintenanceschedule.New.
func New(name string, spec Spec) (*Window, error) { return maintenanceschedule.New(name, spec) }

// FromAPI is maintenanceschedule.FromAPI.
func FromAPI(mw *v1alpha1.MaintenanceWindow) (*Window, error) {
	return maintenanceschedule.FromAPI(mw)
}

// Evaluate is maintenanceschedule.Evaluate.
func Evaluate(ctx context.Context, now time.Time, pool Pool, windows []*Window) (Decision, error) {
	return maintenanceschedule.Evaluate(ctx, now, pool, windows)
}

// ParseSchedule is maintenanceschedule.ParseSchedule.
func ParseSchedule(expr string) (Schedule, error) { return maintenanceschedule.ParseSchedule(expr) }

// LoadLocation is maintenanceschedule.LoadLocation.
func LoadLocation(name string) (*time.Location, error) {
	return maintenanceschedule.LoadLocation(name)
}

// CheckDuration is maintenanceschedule.CheckDuration.
func CheckDuration(d time.Duration, s Schedule) error { return maintenanceschedule.CheckDuration(d, s) }

// CheckCost is maintenanceschedule.CheckCost.
func CheckCost(s Schedule, d time.Duration, loc *time.Location) error {
	return maintenanceschedule.CheckCost(s, d, loc)
}

// FormatTime is maintenanceschedule.FormatTime.
func FormatTime(t time.Time, loc *time.Location, now time.Time) string {
	return maintenanceschedule.FormatTime(t, loc, now)
}

// FormatAt is maintenanceschedule.FormatAt.
func FormatAt(t time.Time, loc *time.Location, now time.Time) string {
	return maintenanceschedule.FormatAt(t, loc, now)
}

// FormatFrom is maintenanceschedule.FormatFrom.
func FormatFrom(t, now time.Time) string { return maintenanceschedule.FormatFrom(t, now) }

// FormatDuration is maintenanceschedule.FormatDuration.
func FormatDuration(d time.Duration) string { return maintenanceschedule.FormatDuration(d) }

// FormatRelative is maintenanceschedule.FormatRelative.
func FormatRelative(d time.Duration) string { return maintenanceschedule.FormatRelative(d) }
