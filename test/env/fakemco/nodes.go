package fakemco

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// The node model: a pool that steps its Nodes (StepNodesAnnotation, or
// Options.StepNodes) is rolled out as the MCO does it, node by node, through
// the annotations of the Machine Config daemon on each Node the pool's
// nodeSelector selects:
//
//   - the node controller sets desiredConfig = spec.configuration.name on
//     at most spec.maxUnavailable (default 1; an int or a percentage of the
//     nodes, rounded down, at least 1) unavailable nodes at a time, in name
//     order; a paused pool gets no node targeted, the one in flight finishes;
//   - the daemon then sets state=Working and cordons the node (the drain),
//     after half a step reports it NotReady (the reboot), and after the
//     step sets currentConfig = desiredConfig, state=Done, uncordons it and
//     reports it Ready;
//   - the pool's counts are read off the nodes: updated (current = desired =
//     target, Done), ready (updated, Ready, schedulable), unavailable (NotReady,
//     cordoned, or with an update pending or in flight), degraded (state
//     Degraded); status.configuration follows spec only once every node is
//     updated, ready and available.
//
// Two annotations on a Node inject failures after its reboot:
// NotReadyAfterRebootAnnotation leaves it NotReady (updated, but unavailable)
// until the annotation is removed; DegradeAfterRebootAnnotation makes the
// daemon report state=Degraded with the annotation's value as its reason,
// the node still cordoned on its old config, until the annotation is
// removed (the daemon then completes the update). A node that is
// unavailable counts against maxUnavailable, so with the default of 1 either
// one halts the rollout, as on a real cluster.

const (
	// CurrentConfigAnnotation, DesiredConfigAnnotation, StateAnnotation and
	// ReasonAnnotation are the Machine Config daemon's node annotations.
	CurrentConfigAnnotation = "machineconfiguration.openshift.io/currentConfig"
	DesiredConfigAnnotation = "machineconfiguration.openshift.io/desiredConfig"
	StateAnnotation         = "machineconfiguration.openshift.io/state"
	ReasonAnnotation        = "machineconfiguration.openshift.io/reason"
	// StateDone, StateWorking and StateDegraded are values of StateAnnotation.
	StateDone     = "Done"
	StateWorking  = "Working"
	StateDegraded = "Degraded"

	// StepNodesAnnotation set to "true" on a MachineConfigPool has the fake
	// MCO roll it out over the Nodes its nodeSelector selects (the node
	// model above) instead of walking its status counts.
	StepNodesAnnotation = "fake-mco.virt-advisor.io/step-nodes"
	// NotReadyAfterRebootAnnotation set to "true" on a Node leaves it
	// NotReady after its next reboot, until the annotation is removed.
	NotReadyAfterRebootAnnotation = "fake-mco.virt-advisor.io/not-ready-after-reboot"
	// DegradeAfterRebootAnnotation on a Node has its next update end
	// Degraded after the reboot, with the annotation's value as the reason
	// (DegradedMessage if empty), until the annotation is removed.
	DegradeAfterRebootAnnotation = "fake-mco.virt-advisor.io/degrade-after-reboot"

	// updateStartedAnnotation records when the daemon began the node's
	// update (RFC 3339), so that a restarted fake MCO resumes the step.
	updateStartedAnnotation = "fake-mco.virt-advisor.io/update-started"
	// cordonedAnnotation marks a cordon of the fake daemon's: it uncordons
	// only what it cordoned (not a node someone else put in maintenance).
	cordonedAnnotation = "fake-mco.virt-advisor.io/cordoned"
	// notReadyAnnotation marks a NotReady of the fake's (an injection): it
	// reports the node Ready again only then, never over someone else's.
	notReadyAnnotation = "fake-mco.virt-advisor.io/held-not-ready"
)

// nodeView is what the node model reads and writes of a Node.
type nodeView struct {
	Name                            string
	Current, Desired, State, Reason string
	// Ready is the Ready condition (a Node without one counts as Ready:
	// nothing runs a kubelet here).
	Ready         bool
	Unschedulable bool
	// Cordoned: the fake daemon cordoned it (cordonedAnnotation);
	// HeldNotReady: it left it NotReady after a reboot (notReadyAnnotation).
	Cordoned, HeldNotReady bool
	Started                time.Time // updateStartedAnnotation; zero: no update in flight
	// The injection knobs.
	StayNotReady  bool
	DegradeReason string
	Degrade       bool
}

// inFlight: an update is pending or under way (not failed).
func (n nodeView) inFlight() bool { return n.Desired != n.Current && n.State != StateDegraded }

// unavailable is the MCO's: NotReady or cordoned, or an update pending or
// in flight (a failed one, Degraded, is not: it may be retargeted).
func (n nodeView) unavailable() bool { return !n.Ready || n.Unschedulable || n.inFlight() }

// updatedTo: the node runs target and the daemon is done.
func (n nodeView) updatedTo(target string) bool {
	return n.Current == target && n.Desired == target && n.State == StateDone
}

// maxUnavailable is spec.maxUnavailable scaled to nodes: an int, or a
// percentage rounded down; at least 1 (as the MCO does), default 1.
func maxUnavailable(v any, nodes int) int {
	n := 1
	switch x := v.(type) {
	case int64:
		n = int(x)
	case float64:
		n = int(x)
	case string:
		if p, err := strconv.Atoi(strings.TrimSuffix(x, "%")); err == nil && strings.HasSuffix(x, "%") {
			n = int(math.Floor(float64(p) * float64(nodes) / 100))
		} else if err == nil {
			n = p
		}
	}
	return max(n, 1)
}

// adopt gives a node the pool has never stepped the annotations of one
// running config (the daemon writes them when the node joins).
func adopt(n nodeView, config string) nodeView {
	if n.Current != "" || config == "" {
		return n
	}
	n.Current, n.Desired, n.State, n.Reason = config, config, StateDone, ""
	return n
}

// daemonStep moves one node's update forward to now and returns when it
// next changes by itself (zero: it does not).
func daemonStep(n nodeView, now time.Time, step time.Duration) (nodeView, time.Time) {
	if n.Desired == n.Current || n.State == StateDegraded {
		return settle(n), time.Time{}
	}
	switch {
	case n.Started.IsZero() || n.State != StateWorking:
		n.State, n.Reason, n.Started = StateWorking, "", now
		if !n.Unschedulable {
			n.Unschedulable, n.Cordoned = true, true
		}
		return n, now.Add(step / 2)
	case now.Before(n.Started.Add(step / 2)):
		return n, n.Started.Add(step / 2) // draining
	case now.Before(n.Started.Add(step)):
		n.Ready = false // rebooting
		return n, n.Started.Add(step)
	case n.Degrade:
		n.Ready, n.State, n.Reason = true, StateDegraded, n.DegradeReason
		if n.Reason == "" {
			n.Reason = DegradedMessage
		}
		return n, time.Time{}
	}
	return finishUpdate(n), time.Time{}
}

// settle is the daemon on a node with no update under way: one on its
// desired config, or one whose update failed.
func settle(n nodeView) nodeView {
	switch {
	case n.Desired == n.Current && n.State != StateDone:
		// Retargeted to what it runs (after a failure): nothing to apply.
		return finishUpdate(n)
	case n.Desired == n.Current:
		if n.HeldNotReady && !n.StayNotReady {
			n.Ready, n.HeldNotReady = true, false // the injected NotReady was lifted
		}
		return n
	case n.Degrade:
		return n
	}
	return finishUpdate(n) // the cause was fixed: the daemon retries and succeeds
}

// finishUpdate is the end of a successful update: the node runs its
// desired config, the daemon is done and uncordons what it cordoned, and
// the node is Ready unless told to stay NotReady.
func finishUpdate(n nodeView) nodeView {
	n.Current, n.State, n.Reason, n.Started = n.Desired, StateDone, "", time.Time{}
	if n.Cordoned {
		n.Unschedulable, n.Cordoned = false, false
	}
	n.Ready, n.HeldNotReady = !n.StayNotReady, n.StayNotReady
	return n
}

// targetNodes is the node controller: it sets desiredConfig = target on as
// many nodes not yet targeted (and not in flight) as maxUnavailable leaves
// room for, in name order (nodes are sorted by name). A paused pool gets
// none.
func targetNodes(nodes []nodeView, target string, paused bool, maxUnavail int) []nodeView {
	if target == "" || paused {
		return nodes
	}
	room := maxUnavail
	for _, n := range nodes {
		if n.unavailable() {
			room--
		}
	}
	out := make([]nodeView, len(nodes))
	copy(out, nodes)
	for i := range out {
		if room <= 0 {
			break
		}
		if out[i].Desired == target || out[i].inFlight() || out[i].updatedTo(target) {
			continue
		}
		out[i].Desired = target
		room--
	}
	return out
}

// stepNodes is one pass of the node model over a pool's nodes (sorted by
// name): adoption, the daemons, the node controller, and the daemons of the
// nodes it just targeted. It returns the nodes and when the pass is next
// due (zero: nothing moves by itself).
func stepNodes(p poolView, nodes []nodeView, maxUnavail int, now time.Time, step time.Duration) ([]nodeView, time.Time) {
	adoptAs := p.statusName()
	if adoptAs == "" {
		adoptAs = p.specName()
	}
	out := make([]nodeView, len(nodes))
	var wake time.Time
	for i, n := range nodes {
		var at time.Time
		out[i], at = daemonStep(adopt(n, adoptAs), now, step)
		wake = earliest(wake, at)
	}
	targeted := targetNodes(out, p.specName(), p.Paused, maxUnavail)
	for i := range targeted {
		if targeted[i].Desired != out[i].Desired {
			var at time.Time
			targeted[i], at = daemonStep(targeted[i], now, step)
			wake = earliest(wake, at)
		}
	}
	return targeted, wake
}

// nodeCounts are the pool's counts read off its nodes.
func nodeCounts(nodes []nodeView, target string) machineCounts {
	c := machineCounts{Machines: int64(len(nodes))}
	var reports []string
	for _, n := range nodes {
		updated := n.updatedTo(target)
		if updated {
			c.Updated++
		}
		if updated && n.Ready && !n.Unschedulable {
			c.Ready++
		}
		if n.unavailable() {
			c.Unavailable++
		}
		if n.State == StateDegraded {
			c.Degraded++
			reports = append(reports, fmt.Sprintf("Node %s is reporting: %q", n.Name, n.Reason))
		}
	}
	c.DegradedMessage = strings.Join(reports, ", ")
	return c
}
