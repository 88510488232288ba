//go:build bench

package maintenanceschedule

import (
	"context"
	"testing"
	"time"
)

// evaluationTarget is the speed target of issue 24: any set of up to
// 100 windows on a pool evaluates in less: it finishes, or runs out of
// MaxSteps and says so.
const evaluationTarget = 10 * time.Millisecond

// TestEvaluationSpeedTarget fails when one evaluation of a case of
// BenchmarkEvaluate takes evaluationTarget or more. make bench runs it
// (go test -tags bench): timings mean little under -race or on a loaded
// machine, so make unit does not.
func TestEvaluationSpeedTarget(t *testing.T) {
	worker := Pool{Name: "worker"}
	for _, c := range evaluationCases {
		windows := c.windows(t)
		now := at(t, c.now)
		d, err := Evaluate(context.Background(), now, worker, windows)
		r := testing.Benchmark(func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				_, _ = Evaluate(context.Background(), now, worker, windows)
			}
		})
		per := time.Duration(r.NsPerOp())
		outcome := d.Reason
		if err != nil {
			outcome = "bounded: " + err.Error()
		}
		t.Logf("%-55s %3d windows %9s/evaluation (%d runs): %.120s", c.name, len(windows), per.Round(time.Microsecond), r.N, outcome)
		if per >= evaluationTarget {
			t.Errorf("%s: %s per evaluation, the target is < %s", c.name, per, evaluationTarget)
		}
	}
}
