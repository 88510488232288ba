// Package gates decides, between two steps of a MachineConfigPool
// rollout, whether the next step may start: the nodes of the step came
// back, the VMs their drains moved are running again, no new alert fires,
// and they soaked long enough. No I/O: the caller reads the nodes, the
// migrations, the VMs and the alerts, and acts on the verdict (start the
// next step, look again later, or halt the rollout).
package gates

import (
	"fmt"
	"github.com/kubevirt/virt-advisor/pkg/apis/advisor"
	"sort"
	"strings"
	"time"
)

// Names of the gates, as the plan, the status and the metrics name them.
const (
	NodeBack = "nodeBack"
	VMsMoved = "vmsMoved"
	Alerts   = "alerts"
	Soak     = "soak"
)

// Settings are the gates in force for a rollout: the config's
// spec.rollout.gates over the server's defaults.
type Settings struct {
	// NodeReadyTimeout bounds how long a node of a step may take to come
	// back (Ready, its MCO state Done on the desired config), and the VMs
	// moved off it to run again, from the step's start.
	NodeReadyTimeout time.Duration
	// MaxFailedMigrations is how many live migrations of a step may fail
	// before the rollout halts.
	MaxFailedMigrations int
	// Soak is how long the step's nodes must have been back.
	Soak time.Duration
	// Alerts is the alert gate; nil: none.
	Alerts *AlertSettings
}

// AlertSettings say which firing alerts halt a rollout.
type AlertSettings struct {
	// Matchers: an alert halts only if it matches every one (none: all).
	Matchers []advisor.Matcher
	// Ignore: alert names that never halt (Watchdog, InfoInhibitor).
	Ignore []string
	// IgnoreErrors: when the alerts cannot be read, the gate passes with
	// a warning instead of holding.
	IgnoreErrors bool
}

// DefaultIgnoredAlerts always fire on a healthy cluster.
var DefaultIgnoredAlerts = []string{"Watchdog", "InfoInhibitor"}

// Outcome is what the verdict lets the rollout do.
type Outcome int

const (
	// Pass: the next step may start.
	Pass Outcome = iota
	// Wait: not yet (a node is coming back, a migration runs, the soak
	// lasts, the alerts cannot be read); look again after Verdict.After.
	Wait
	// Halt: a gate tripped; the rollout stays paused until an approver
	// resumes, aborts or reverts it.
	Halt
)

func (o Outcome) String() string {
	return [...]string{"Pass", "Wait", "Halt"}[o]
}

// Baseline is what was true when the rollout started: what was already
// wrong then does not trip a gate.
type Baseline struct {
	// NotReady are the pool's nodes that were NotReady, unreachable or
	// Degraded then.
	NotReady []string
	// Firing are the alerts (Alert.Key) firing then.
	Firing []string
}

// Step is one step of the rollout: the nodes the MCO targeted together.
type Step struct {
	Pool  string
	Nodes []string
	// Desired is the rendered MachineConfig the step's nodes update to.
	Desired string
	// StartedAt: when the MCO targeted them.
	StartedAt time.Time
}

// Node is a node of the pool as the gates see it.
type Node struct {
	Name string
	// Ready is the node's Ready condition; ReadySince its last transition.
	Ready       bool
	ReadySince  time.Time
	Unreachable bool
	// State, Current and Desired are the MCO's annotations on the node.
	State, Current, Desired string
	// Reason is the MCO's reason annotation when State is Degraded.
	Reason string
}

// MCO states of a node (machineconfiguration.openshift.io/state).
const (
	StateDone     = "Done"
	StateWorking  = "Working"
	StateDegraded = "Degraded"
)

// Migration is a live migration a step's drain started.
type Migration struct {
	Namespace, Name string
	// VMI is the migrated VM (spec.vmiName).
	VMI string
	// Phase is status.phase; it ends Succeeded or Failed.
	Phase string
}

// Migration phases that end a migration.
const (
	MigrationSucceeded = "Succeeded"
	MigrationFailed    = "Failed"
)

// VMI is a VM a step's drain moved, as it is now.
type VMI struct {
	Namespace, Name string
	// Running: status.phase Running; Ready: its Ready condition;
	// WasReady: it was Ready before the drain.
	Running, Ready, WasReady bool
}

// Facts are what the caller read for a verdict.
type Facts struct {
	Now time.Time
	// Nodes are all the nodes of the pool.
	Nodes []Node
	// Migrations started by the step's drains; Moved the VMs they moved.
	Migrations []Migration
	Moved      []VMI
	// Alerts firing now, or why they cannot be read.
	Alerts    []Alert
	AlertsErr error
}

// Verdict is the gates' answer.
type Verdict struct {
	Outcome Outcome
	// Gate names the gate that waits or tripped ("" on Pass).
	Gate string
	// Node is the node it concerns, when one does.
	Node string
	// Message says what happened and what to do, for the status.
	Message string
	// Evidence: the node's condition, the failed migration and its VM,
	// the alert's name and labels.
	Evidence []string
	// After: when to look again (Wait; 0 on Pass and Halt).
	After time.Duration
	// Warnings: gates that passed without being evaluated (onError Ignore).
	Warnings []string
}

// Evaluate decides whether the step is over and the next may start. The
// gates are asked in order: nodes back, VMs moved, alerts, soak; the
// first that does not pass answers.
func Evaluate(s Settings, b Baseline, st Step, f Facts) Verdict {
	// Failed migrations halt at once, even with the step's nodes still
	// draining: the pool is paused, no further node starts, and a drain
	// whose migrations fail would only run into the node's timeout.
	if v := migrationsFailed(s, st, f); v != nil {
		return *v
	}
	back, v := nodesBack(s, b, st, f)
	if v != nil {
		return *v
	}
	if v := vmsMoved(s, st, f); v != nil {
		return *v
	}
	v, warnings := alertsQuiet(s, b, f)
	if v != nil {
		v.Warnings = warnings
		return *v
	}
	if end := back.Add(s.Soak); f.Now.Before(end) {
		return Verdict{Outcome: Wait, Gate: Soak, Warnings: warnings, After: end.Sub(f.Now),
			Message: fmt.Sprintf("MachineConfigPool '%s': the nodes of this step (%s) soak until %s (soak %s)",
				st.Pool, strings.Join(st.Nodes, ", "), end.UTC().Format(time.RFC3339), s.Soak)}
	}
	return Verdict{Outcome: Pass, Warnings: warnings}
}

// nodesBack checks the node gate: no node of the pool outside the step
// went wrong since the rollout started; every node of the step is back
// within NodeReadyTimeout. It returns when the last of them came back.
func nodesBack(s Settings, b Baseline, st Step, f Facts) (time.Time, *Verdict) {
	inStep, before := setOf(st.Nodes), setOf(b.NotReady)
	deadline := st.StartedAt.Add(s.NodeReadyTimeout)
	var back time.Time
	for _, n := range f.Nodes {
		switch {
		case !inStep[n.Name]:
			if v := otherNodeWrong(st, n, before); v != nil {
				return back, v
			}
		case n.State == StateDegraded:
			return back, halt(NodeBack, n.Name, fmt.Sprintf("node '%s' of MachineConfigPool '%s' is Degraded after its update: %s", n.Name, st.Pool, orUnknown(n.Reason)),
				"machineconfiguration.openshift.io/state=Degraded", "machineconfiguration.openshift.io/reason="+n.Reason)
		case !isBack(n, st.Desired):
			if !f.Now.Before(deadline) {
				return back, halt(NodeBack, n.Name, fmt.Sprintf("node '%s' of MachineConfigPool '%s' did not come back within %s of its update (%s)", n.Name, st.Pool, s.NodeReadyTimeout, nodeState(n, st.Desired)),
					nodeEvidence(n)...)
			}
			return back, &Verdict{Outcome: Wait, Gate: NodeBack, Node: n.Name, After: deadline.Sub(f.Now),
				Message: fmt.Sprintf("MachineConfigPool '%s': waiting for node '%s' to come back after its update (%s); it halts the rollout if it is not back by %s",
					st.Pool, n.Name, nodeState(n, st.Desired), deadline.UTC().Format(time.RFC3339))}
		case n.ReadySince.After(back):
			back = n.ReadySince
		}
	}
	return back, nil
}

// otherNodeWrong halts for a node outside the step that became NotReady,
// unreachable or Degraded since the rollout started.
func otherNodeWrong(st Step, n Node, before map[string]bool) *Verdict {
	if before[n.Name] || (n.Ready && !n.Unreachable && n.State != StateDegraded) {
		return nil
	}
	return halt(NodeBack, n.Name, fmt.Sprintf("node '%s' of MachineConfigPool '%s', not part of this step, became %s during the rollout", n.Name, st.Pool, wrongness(n)),
		nodeEvidence(n)...)
}

// isBack: Ready, reachable, and the MCO says it runs the desired config.
func isBack(n Node, desired string) bool {
	return n.Ready && !n.Unreachable && n.State == StateDone && n.Current == n.Desired && (desired == "" || n.Current == desired)
}

func wrongness(n Node) string {
	switch {
	case n.State == StateDegraded:
		return "Degraded (" + orUnknown(n.Reason) + ")"
	case n.Unreachable:
		return "unreachable"
	default:
		return "NotReady"
	}
}

func nodeState(n Node, desired string) string {
	if desired == "" {
		desired = n.Desired
	}
	return fmt.Sprintf("Ready %v, MCO state %s, config %s of %s", n.Ready && !n.Unreachable, orUnknown(n.State), orUnknown(n.Current), orUnknown(desired))
}

func nodeEvidence(n Node) []string {
	ev := []string{fmt.Sprintf("Ready=%v", n.Ready), "machineconfiguration.openshift.io/state=" + n.State,
		"machineconfiguration.openshift.io/currentConfig=" + n.Current, "machineconfiguration.openshift.io/desiredConfig=" + n.Desired}
	if n.Unreachable {
		ev = append(ev, "node.kubernetes.io/unreachable")
	}
	return ev
}

// migrationsFailed checks the first half of the migration gate: no more
// live migrations of the step's drains failed than allowed.
func migrationsFailed(s Settings, st Step, f Facts) *Verdict {
	var failed []Migration
	for _, m := range f.Migrations {
		if m.Phase == MigrationFailed {
			failed = append(failed, m)
		}
	}
	if len(failed) <= s.MaxFailedMigrations {
		return nil
	}
	m := failed[0]
	ev := make([]string, 0, len(failed))
	for _, m := range failed {
		ev = append(ev, fmt.Sprintf("VirtualMachineInstanceMigration %s/%s of VM %s/%s: Failed", m.Namespace, m.Name, m.Namespace, m.VMI))
	}
	return halt(VMsMoved, "", fmt.Sprintf("MachineConfigPool '%s': %d live migration(s) of this step's drains failed (at most %d allowed), first VM %s/%s (migration %s)",
		st.Pool, len(failed), s.MaxFailedMigrations, m.Namespace, m.VMI, m.Name), ev...)
}

// vmsMoved checks the rest of the migration gate: every migration ended; the VMs moved run again (and are Ready
// where they were) within NodeReadyTimeout of the step's start.
func vmsMoved(s Settings, st Step, f Facts) *Verdict {
	running := 0
	for _, m := range f.Migrations {
		if m.Phase != MigrationFailed && m.Phase != MigrationSucceeded {
			running++
		}
	}
	deadline := st.StartedAt.Add(s.NodeReadyTimeout)
	var notBack []string
	for _, vm := range f.Moved {
		if !vm.Running || (vm.WasReady && !vm.Ready) {
			notBack = append(notBack, vm.Namespace+"/"+vm.Name)
		}
	}
	if running == 0 && len(notBack) == 0 {
		return nil
	}
	sort.Strings(notBack)
	what := fmt.Sprintf("%d migration(s) still running", running)
	if len(notBack) > 0 {
		what = fmt.Sprintf("VM(s) not running, or not Ready where they were, again: %s", strings.Join(notBack, ", "))
	}
	if !f.Now.Before(deadline) {
		return halt(VMsMoved, "", fmt.Sprintf("MachineConfigPool '%s': the VMs this step moved did not settle within %s: %s", st.Pool, s.NodeReadyTimeout, what), notBack...)
	}
	return &Verdict{Outcome: Wait, Gate: VMsMoved, After: deadline.Sub(f.Now),
		Message: fmt.Sprintf("MachineConfigPool '%s': waiting for the VMs this step moved: %s", st.Pool, what)}
}

// alertsQuiet checks the alert gate: no alert fires that matches, is not
// ignored and was not firing when the rollout started.
func alertsQuiet(s Settings, b Baseline, f Facts) (*Verdict, []string) {
	a := s.Alerts
	if a == nil {
		return nil, nil
	}
	if f.AlertsErr != nil {
		msg := fmt.Sprintf("the alerts cannot be read: %v", f.AlertsErr)
		if a.IgnoreErrors {
			return nil, []string{"alert gate not evaluated (onError: Ignore): " + msg}
		}
		return &Verdict{Outcome: Wait, Gate: Alerts, After: AlertRetry, Message: "held: " + msg + "; the rollout goes on when they can be read (or set onError: Ignore)"}, nil
	}
	firing := setOf(b.Firing)
	var tripped []Alert
	for _, al := range f.Alerts {
		if !firing[al.Key()] && a.halts(al) {
			tripped = append(tripped, al)
		}
	}
	if len(tripped) == 0 {
		return nil, nil
	}
	sort.Slice(tripped, func(i, j int) bool { return tripped[i].Key() < tripped[j].Key() })
	ev := make([]string, 0, len(tripped))
	for _, al := range tripped {
		ev = append(ev, al.Key())
	}
	return halt(Alerts, tripped[0].Labels["instance"], fmt.Sprintf("alert %s started firing during the rollout", tripped[0].Key()), ev...), nil
}

// AlertRetry is how soon alerts that could not be read are read again.
const AlertRetry = 30 * time.Second

func (a *AlertSettings) halts(al Alert) bool {
	for _, name := range a.Ignore {
		if al.Name() == name {
			return false
		}
	}
	for _, m := range a.Matchers {
		if !m.Matches(al.Labels) {
			return false
		}
	}
	return true
}

func halt(gate, node, message string, evidence ...string) *Verdict {
	return &Verdict{Outcome: Halt, Gate: gate, Node: node, Message: message, Evidence: evidence}
}

func setOf(names []string) map[string]bool {
	m := make(map[string]bool, len(names))
	for _, n := range names {
		m[n] = true
	}
	return m
}

func orUnknown(s string) string {
	if s == "" {
		return "unknown"
	}
	return s
}
