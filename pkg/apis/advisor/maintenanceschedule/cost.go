package maintenanceschedule

import (
	"context"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/util/sets"
)

// CheckCost checks that a window of the schedule lasting d in loc needs,
// alone, no more than WindowSteps of the MaxSteps one evaluation may
// take: its state and the decisions it makes as an Allow and as a Deny window,
// at instants spread over a year and around its changes of time. The API
// validation refuses a window that needs more.
func CheckCost(s Schedule, d time.Duration, loc *time.Location) error {
	_, err := checkCost(s, d, loc, WindowSteps)
	return err
}

// costSamples are the instants CheckCost evaluates at: the first of every
// month of 2026 at 00:00 and 12:30 UTC, and the nights the clocks change
// in Europe and North America.
var costSamples = func() []time.Time {
	var out []time.Time
	for m := time.January; m <= time.December; m++ {
		out = append(out, time.Date(2026, m, 1, 0, 0, 0, 0, time.UTC), time.Date(2026, m, 1, 12, 30, 0, 0, time.UTC))
	}
	for _, s := range []string{"2026-03-08T06:30:00Z", "2026-03-29T00:30:00Z", "2026-10-25T00:30:00Z", "2026-11-01T05:30:00Z"} {
		t, _ := time.Parse(time.RFC3339, s)
		out = append(out, t)
	}
	return out
}()

// checkCost evaluates a window of the schedule alone at costSamples, each
// evaluation within steps; it returns the most steps one needed.
func checkCost(s Schedule, d time.Duration, loc *time.Location, steps int) (most int, err error) {
	pool := Pool{Name: "pool"}
	for _, kind := range []Kind{Allow, Deny} {
		w := &Window{Name: "window", Kind: kind, Schedule: s, Duration: d, Location: loc, poolNames: sets.New(pool.Name), runs: runEnds(s, d)}
		for _, at := range costSamples {
			b := newBudget(context.Background(), steps)
			if _, err := evaluate(b, at, pool, []*Window{w}); err != nil {
				return most, costError(s, d, steps)
			}
			most = max(most, b.spent)
			b = newBudget(context.Background(), steps)
			var stateErr error
			func() {
				defer b.recover(&stateErr, func(cause error) error { return cause })
				w.state(b, at)
			}()
			if stateErr != nil {
				return most, costError(s, d, steps)
			}
			most = max(most, b.spent)
		}
	}
	return most, nil
}

func costError(s Schedule, d time.Duration, steps int) error {
	return fmt.Errorf("a window of %q lasting %s takes more than %d steps to evaluate, the most one window may take (every evaluation of a pool's windows is bounded): keep its duration within the schedule's period (%s), so that its openings do not overlap, and open it less often, for longer stretches",
		s, FormatDuration(d), steps, FormatDuration(s.Period()))
}
