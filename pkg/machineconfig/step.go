package machineconfig

import "slices"

// The MCO daemon's annotations on a node: the rendered config it runs,
// the one it is told to run, and how far it is.
const (
	NodeCurrentConfigAnnotation = "machineconfiguration.openshift.io/currentConfig"
	NodeDesiredConfigAnnotation = "machineconfiguration.openshift.io/desiredConfig"
	NodeStateAnnotation         = "machineconfiguration.openshift.io/state"
	NodeReasonAnnotation        = "machineconfiguration.openshift.io/reason"
	NodeStateDone               = "Done"
)

// StepNode is a node of a pool as the MCO annotates it.
type StepNode struct {
	Name, Current, Desired, State string
}

// inFlight: the MCO told the node to update and it has not finished.
func (n StepNode) inFlight() bool {
	return n.Desired != n.Current || (n.State != "" && n.State != NodeStateDone)
}

// Stepping is what a step of a pool's rollout is decided from.
type Stepping struct {
	// Target is the rendered config the pool rolls out (spec.configuration.name).
	Target string
	// Paused is the pool's spec.paused.
	Paused bool
	// Step are the nodes of the step in flight, as recorded on the pool
	// when the MCO targeted them (none: no step in flight).
	Step  []string
	Nodes []StepNode
}

// StepAction is what to do with a stepped pool now.
type StepAction int

const (
	// StepAwait: unpaused for a step, the MCO has not targeted a node
	// yet; look again when a node changes.
	StepAwait StepAction = iota
	// StepRecord: the MCO targeted nodes: pause the pool now (if it is
	// not) and record them as the step, so no further node starts.
	StepRecord
	// StepInFlight: paused, the step's nodes are updating; the node gate
	// judges how long they may take.
	StepInFlight
	// StepGates: paused, the step's nodes finished: ask the gates; when
	// they pass, forget the step and start the next (StepStart).
	StepGates
	// StepStart: paused with no step in flight and nodes left to update:
	// unpause, so that the MCO targets the next node(s).
	StepStart
	// StepComplete: every node runs the target: forget the step and end
	// the stepping pause.
	StepComplete
)

func (a StepAction) String() string {
	return [...]string{"Await", "Record", "InFlight", "Gates", "Start", "Complete"}[a]
}

// DecideStep steps a pool's rollout one MCO step at a time: the MCO
// targets up to maxUnavailable nodes as soon as the pool is unpaused;
// pausing it again then lets those finish and starts no other, so the
// gates are asked between every two steps. It returns the action and,
// for StepRecord, the step's nodes (those recorded and those targeted
// since).
func DecideStep(s Stepping) (StepAction, []string) {
	var targeted []string
	left := false
	for _, n := range s.Nodes {
		if n.inFlight() {
			targeted = append(targeted, n.Name)
		}
		if n.Current != s.Target || n.inFlight() {
			left = true
		}
	}
	step := s.Step
	for _, name := range targeted {
		if !slices.Contains(step, name) {
			// Targeted outside the recorded step: it joins the step in
			// flight (or starts one), and the pool is paused again.
			return StepRecord, union(step, targeted)
		}
	}
	switch {
	case len(step) > 0 && !s.Paused:
		return StepRecord, step
	case len(step) > 0 && len(targeted) > 0:
		return StepInFlight, nil
	case len(step) > 0:
		return StepGates, nil
	case !left:
		return StepComplete, nil
	case s.Paused:
		return StepStart, nil
	default:
		return StepAwait, nil
	}
}

func union(a, b []string) []string {
	out := slices.Clone(a)
	for _, x := range b {
		if !slices.Contains(out, x) {
			out = append(out, x)
		}
	}
	slices.Sort(out)
	return out
}
