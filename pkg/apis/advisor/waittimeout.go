package advisor

import (
	"errors"
	"time"
)

// ParseWaitTimeout reads spec.waitTimeout: 0 when unset (wait forever).
// Its errors say what a valid value is, for validation to return; the
// controller and the metrics read validated specs.
func ParseWaitTimeout(s string) (time.Duration, error) {
	if s == "" {
		return 0, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, errors.New("must be a Go duration such as 30m or 1h30m")
	}
	if d <= 0 {
		return 0, errors.New("must be positive; leave it unset to wait forever")
	}
	return d, nil
}
