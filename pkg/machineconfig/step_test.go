package machineconfig

import (
	"slices"
	"testing"
)

// A pool of three nodes rolled out from rendered-a to rendered-b one MCO
// step at a time: each step starts by an unpause, is recorded and paused
// as soon as the MCO targets its nodes, finishes, and asks the gates.
func TestDecideStep(t *testing.T) {
	on := func(name, config string) StepNode {
		return StepNode{Name: name, Current: config, Desired: config, State: NodeStateDone}
	}
	targeted := func(name string) StepNode {
		return StepNode{Name: name, Current: "rendered-a", Desired: "rendered-b", State: NodeStateDone}
	}
	working := func(name string) StepNode {
		return StepNode{Name: name, Current: "rendered-a", Desired: "rendered-b", State: "Working"}
	}
	for _, tc := range []struct {
		name  string
		s     Stepping
		want  StepAction
		nodes []string
	}{
		{name: "written, paused, nothing targeted: start the first step",
			s: Stepping{Target: "rendered-b", Paused: true, Nodes: []StepNode{on("w0", "rendered-a"), on("w1", "rendered-a"), on("w2", "rendered-a")}}, want: StepStart},
		{name: "unpaused, the MCO has not targeted a node yet: await",
			s: Stepping{Target: "rendered-b", Nodes: []StepNode{on("w0", "rendered-a"), on("w1", "rendered-a")}}, want: StepAwait},
		{name: "the MCO targeted one node (maxUnavailable 1): record it and pause",
			s: Stepping{Target: "rendered-b", Nodes: []StepNode{targeted("w0"), on("w1", "rendered-a")}}, want: StepRecord, nodes: []string{"w0"}},
		{name: "the MCO targeted two (maxUnavailable 2): both are the step",
			s: Stepping{Target: "rendered-b", Nodes: []StepNode{working("w1"), targeted("w0"), on("w2", "rendered-a")}}, want: StepRecord, nodes: []string{"w0", "w1"}},
		{name: "paused, the step's node updating: in flight",
			s: Stepping{Target: "rendered-b", Paused: true, Step: []string{"w0"}, Nodes: []StepNode{working("w0"), on("w1", "rendered-a")}}, want: StepInFlight},
		{name: "paused, the step's node done: the gates",
			s: Stepping{Target: "rendered-b", Paused: true, Step: []string{"w0"}, Nodes: []StepNode{on("w0", "rendered-b"), on("w1", "rendered-a")}}, want: StepGates},
		{name: "the last step's node done: the gates before completing",
			s: Stepping{Target: "rendered-b", Paused: true, Step: []string{"w2"}, Nodes: []StepNode{on("w0", "rendered-b"), on("w1", "rendered-b"), on("w2", "rendered-b")}}, want: StepGates},
		{name: "every node on the target, no step: complete",
			s: Stepping{Target: "rendered-b", Paused: true, Nodes: []StepNode{on("w0", "rendered-b"), on("w1", "rendered-b")}}, want: StepComplete},
		{name: "a step recorded, the pool unpaused by someone: paused again",
			s: Stepping{Target: "rendered-b", Step: []string{"w0"}, Nodes: []StepNode{working("w0"), on("w1", "rendered-a")}}, want: StepRecord, nodes: []string{"w0"}},
		{name: "a node targeted beside the recorded step (the MCO was quicker than the pause): it joins the step",
			s: Stepping{Target: "rendered-b", Paused: true, Step: []string{"w0"}, Nodes: []StepNode{working("w0"), targeted("w1"), on("w2", "rendered-a")}}, want: StepRecord, nodes: []string{"w0", "w1"}},
		{name: "a node Degraded on the old config is still in flight: the node gate judges it",
			s: Stepping{Target: "rendered-b", Paused: true, Step: []string{"w0"}, Nodes: []StepNode{{Name: "w0", Current: "rendered-a", Desired: "rendered-b", State: "Degraded"}}}, want: StepInFlight},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, nodes := DecideStep(tc.s)
			if got != tc.want || !slices.Equal(nodes, tc.nodes) {
				t.Errorf("got %s %v, want %s %v", got, nodes, tc.want, tc.nodes)
			}
		})
	}
}
