package advisor

import (
	"fmt"
	"time"
)

// Bounds of spec.rollout.gates.
const (
	MinNodeReadyTimeout    = 30 * time.Second
	MaxGateDuration        = 24 * time.Hour
	MaxFailedMigrationsCap = 1000
	MaxAlertMatchers       = 20
)

// ParseGateDuration parses a gate's duration, such as 20m: "" is unset
// (0, no error); a set one lies within [min, MaxGateDuration].
func ParseGateDuration(s string, min time.Duration) (time.Duration, error) {
	if s == "" {
		return 0, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, fmt.Errorf("must be a Go duration such as 20m or 1h30m")
	}
	if d < min || d > MaxGateDuration {
		return 0, fmt.Errorf("must be between %s and %s", min, MaxGateDuration)
	}
	return d, nil
}
