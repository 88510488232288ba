package main

import (
	"testing"
	"time"
)

func TestBurstFigureIsTheMedianRoundP95(t *testing.T) {
	// round returns 50 answers: 47 of fast, 3 of slow (its p95 is slow).
	round := func(fast, slow time.Duration) []time.Duration {
		r := make([]time.Duration, 50)
		for i := range r {
			r[i] = fast
			if i >= 47 {
				r[i] = slow
			}
		}
		return r
	}
	ms := time.Millisecond
	for _, tc := range []struct {
		name   string
		rounds [][]time.Duration
		want   time.Duration
	}{
		{"steady rounds", [][]time.Duration{round(50*ms, 100*ms), round(50*ms, 110*ms), round(50*ms, 90*ms), round(50*ms, 105*ms), round(50*ms, 95*ms)}, 100 * ms},
		{"one slow round moves nothing", [][]time.Duration{round(50*ms, 100*ms), round(400*ms, 600*ms), round(50*ms, 90*ms), round(50*ms, 105*ms), round(50*ms, 95*ms)}, 100 * ms},
		{"three slow rounds are the figure", [][]time.Duration{round(300*ms, 400*ms), round(400*ms, 600*ms), round(50*ms, 90*ms), round(300*ms, 500*ms), round(50*ms, 95*ms)}, 400 * ms},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var all []time.Duration
			for _, r := range tc.rounds {
				all = append(all, r...)
			}
			got, _ := timesAndFloor{times: all, rounds: tc.rounds, floor: 50}.p50()
			if got != float64(tc.want)/float64(ms) {
				t.Errorf("figure %v ms, want %v", got, tc.want)
			}
		})
	}
}
