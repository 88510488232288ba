package main

import (
	"math"
	"testing"
)

func TestMediansAndPolicyInForce(t *testing.T) {
	round := func(shipped, unguarded, pluginShipped, pluginUnguarded float64) dryRunRound {
		var r dryRunRound
		r.cpu[shippedBlock], r.cpu[adminBlock], r.cpu[unguardedBlock] = shipped, 8, unguarded
		r.plugin[shippedBlock], r.plugin[adminBlock], r.plugin[unguardedBlock] = pluginShipped, 0.1, pluginUnguarded
		return r
	}
	for _, tc := range []struct {
		name       string
		rounds     []dryRunRound
		wantSaving float64
		wantShare  float64
		wantForce  int
	}{
		{"none", nil, 0, 0, 0},
		{"odd: the middle round", []dryRunRound{round(10, 13, 0.3, 2), round(10, 11, 0.3, 2), round(12, 11, 0.6, 2)}, 1, 0.15, 3},
		{"even: between the middle two; one slow spell moves nothing", []dryRunRound{round(10, 12, 0.3, 2), round(10, 13, 0.3, 2), round(30, 12, 0.3, 2), round(10, 12.5, 0.5, 1)}, 2.25, 0.15, 4},
		{"a round where the swap was not in force", []dryRunRound{round(10, 12, 0.3, 2), round(10, 10.5, 0.3, 0.3)}, 1.25, 0.575, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := median(tc.rounds, dryRunRound.saving); got != tc.wantSaving {
				t.Errorf("median saving = %v, want %v", got, tc.wantSaving)
			}
			if got := median(tc.rounds, dryRunRound.pluginShare); math.Abs(got-tc.wantShare) > 1e-9 {
				t.Errorf("median plugin share = %v, want %v", got, tc.wantShare)
			}
			inForce := 0
			for _, r := range tc.rounds {
				if r.policyInForce() {
					inForce++
				}
			}
			if inForce != tc.wantForce {
				t.Errorf("rounds with the policy in force = %d, want %d", inForce, tc.wantForce)
			}
		})
	}
}
