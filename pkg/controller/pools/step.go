package pools

// Stepped rollouts: a pool an approved MachineConfig item rolls out on is
// let through one MCO step at a time. Unpaused, the MCO targets the next
// node(s) (as many as maxUnavailable allows); as soon as it has, the pool
// is paused again and the step recorded on it (StepAnnotation), so the
// node(s) in flight finish and no other starts; once they are back the
// gates (pkg/gates) decide whether the next step may start. A gate that
// trips halts the rollout: the pool stays paused, the halt recorded on it
// (HaltAnnotation), until an approver approves again, aborts or reverts,
// or the configs it names are deleted. A pool whose nodes the Machine
// Config daemon does not annotate cannot be stepped: it is rolled out as
// the MCO does, and the items say so.

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/kubevirt/virt-advisor/pkg/apis/advisor"
	"github.com/kubevirt/virt-advisor/pkg/apis/advisor/v1alpha1"
	"github.com/kubevirt/virt-advisor/pkg/cluster"
	"github.com/kubevirt/virt-advisor/pkg/disruption"
	"github.com/kubevirt/virt-advisor/pkg/gates"
	"github.com/kubevirt/virt-advisor/pkg/kubevirt"
	"github.com/kubevirt/virt-advisor/pkg/machineconfig"
	"github.com/kubevirt/virt-advisor/pkg/status"
)

// stepper steps the rollouts of pools: it reads the nodes, their
// migrations, the alerts and others' maintenance, asks the gates, and
// pauses, resumes or halts through the pauses and the resumer.
type stepper struct {
	cluster    Reader
	pauses     *pauses
	resumer    *resumer
	recorder   record.EventRecorder
	clock      clock.Clock
	nodes      func(ctx context.Context) ([]unstructured.Unstructured, error)
	migrations func() ([]cluster.Migration, bool)
	vmis       func() ([]kubevirt.VMI, bool)
	alerts     func(ctx context.Context) ([]gates.Alert, error)
	wake       func(config string)
	// notes: what the gates of each step in flight wait for; halts: the
	// pools halted, as reported.
	notes *gateNotes
	halts *haltGauge
}

// StepPoll is how often a pool in a stepped rollout is looked at while the
// MCO targets a node or a step's nodes come back.
const StepPoll = time.Second

// stepView is what a stepped pool's reconcile decides from.
type stepView struct {
	pool  *unstructured.Unstructured
	nodes []gates.Node
	// settings are the gates in force (the strictest of the approvals
	// rolling out on the pool); approvals the sequence of each.
	settings  gates.Settings
	approvals map[string]int64
	step      *machineconfig.PoolStep
	now       time.Time
	// alerts firing now, or why they cannot be read (only with an alert
	// gate in force).
	alerts    []gates.Alert
	alertsErr error
	// migrations the step's drains started, and the VMs they moved.
	migrations []gates.Migration
	moved      []gates.VMI
}

// poolNodes are the nodes of pool as the gates read them; stepped is
// false when the MCO annotates none of them (nothing to step by).
func poolNodes(pool *unstructured.Unstructured, all, nodes []unstructured.Unstructured) ([]gates.Node, bool, error) {
	names, err := (&disruption.Cluster{Pools: all, Nodes: nodes}).PoolNodes(pool)
	if err != nil {
		return nil, false, err
	}
	ofPool := sets.New(names...)
	out := make([]gates.Node, 0, len(names))
	stepped := false
	for i := range nodes {
		n := &nodes[i]
		if !ofPool.Has(n.GetName()) {
			continue
		}
		g := gateNode(n)
		stepped = stepped || g.Desired != "" || g.Current != ""
		out = append(out, g)
	}
	return out, stepped, nil
}

// gateNode reads a Node as the gates see it.
func gateNode(n *unstructured.Unstructured) gates.Node {
	a := n.GetAnnotations()
	g := gates.Node{Name: n.GetName(), Ready: true, State: a[machineconfig.NodeStateAnnotation],
		Current: a[machineconfig.NodeCurrentConfigAnnotation], Desired: a[machineconfig.NodeDesiredConfigAnnotation], Reason: a[machineconfig.NodeReasonAnnotation]}
	conditions, _, _ := unstructured.NestedSlice(n.Object, "status", "conditions")
	for _, c := range conditions {
		m, _ := c.(map[string]interface{})
		if m["type"] != string(corev1.NodeReady) {
			continue
		}
		g.Ready = m["status"] == string(corev1.ConditionTrue)
		if t, err := time.Parse(time.RFC3339, fmt.Sprint(m["lastTransitionTime"])); err == nil {
			g.ReadySince = t
		}
	}
	taints, _, _ := unstructured.NestedSlice(n.Object, "spec", "taints")
	for _, t := range taints {
		if m, _ := t.(map[string]interface{}); m["key"] == corev1.TaintNodeUnreachable {
			g.Unreachable = true
		}
	}
	return g
}

// stepNodes are the nodes as DecideStep reads them.
func stepNodes(nodes []gates.Node) []machineconfig.StepNode {
	out := make([]machineconfig.StepNode, len(nodes))
	for i, n := range nodes {
		out[i] = machineconfig.StepNode{Name: n.Name, Current: n.Current, Desired: n.Desired, State: n.State}
	}
	return out
}

// gatesOf are the gates in force on a pool: the strictest of those the
// approvals rolling out on it approved (the shortest timeout and fewest
// failed migrations, the longest soak, the first alert gate), and the
// approvals' sequences.
func gatesOf(v configView, rolling []itemKey) (gates.Settings, map[string]int64) {
	s := gates.Settings{NodeReadyTimeout: defaultNodeReadyTimeout, MaxFailedMigrations: -1}
	seqs := map[string]int64{}
	for _, k := range rolling {
		cfg := v.named(k.config)
		if cfg == nil || cfg.Status.Approval == nil {
			continue
		}
		seqs[cfg.Name] = cfg.Status.Approval.Sequence
		mergeGates(&s, cfg.Status.Approval.Gates)
	}
	if s.MaxFailedMigrations < 0 {
		s.MaxFailedMigrations = 0
	}
	return s, seqs
}

// defaultNodeReadyTimeout is the node gate's timeout of an approval that
// recorded no gates (approved before the gates existed).
const defaultNodeReadyTimeout = 20 * time.Minute

func mergeGates(s *gates.Settings, g *v1alpha1.PlanGates) {
	if g == nil {
		return
	}
	if d, err := time.ParseDuration(g.NodeReadyTimeout); err == nil && d > 0 && d < s.NodeReadyTimeout {
		s.NodeReadyTimeout = d
	}
	if d, err := time.ParseDuration(g.Soak); err == nil && d > s.Soak {
		s.Soak = d
	}
	if m := int(g.MaxFailedMigrations); s.MaxFailedMigrations < 0 || m < s.MaxFailedMigrations {
		s.MaxFailedMigrations = m
	}
	if g.Alerts != nil && s.Alerts == nil {
		s.Alerts = alertSettings(g.Alerts)
	}
}

// stepDecision is what a stepped pool's reconcile does.
type stepDecision struct {
	action machineconfig.StepAction
	// step: the step to record (StepRecord).
	step *machineconfig.PoolStep
	// verdict: the gates' answer (StepInFlight, StepGates).
	verdict gates.Verdict
	after   time.Duration
}

// decideStep is a stepped pool's reconcile, without I/O.
func decideStep(s stepView) stepDecision {
	p := machineconfig.ReadPool(s.pool, "", "", "")
	var recorded []string
	if s.step != nil {
		recorded = s.step.Nodes
	}
	action, nodes := machineconfig.DecideStep(machineconfig.Stepping{Target: p.SpecConfig, Paused: p.Paused, Step: recorded, Nodes: stepNodes(s.nodes)})
	if missed := updatedNotBack(s.nodes, p.SpecConfig); action == machineconfig.StepAwait && len(missed) > 0 {
		// The MCO updated a node between two looks: it is the step, and
		// its gates are asked before any other node starts.
		action, nodes = machineconfig.StepRecord, missed
	}
	// Nodes are not watched: a stepped pool is looked at every StepPoll
	// until its rollout is complete.
	d := stepDecision{action: action, after: StepPoll}
	switch action {
	case machineconfig.StepRecord:
		d.step = &machineconfig.PoolStep{Nodes: nodes, Desired: p.SpecConfig, Started: s.now, NotReady: notReadyOutside(s.nodes, nodes), Firing: alertKeys(s.alerts)}
		if s.step != nil { // nodes joined the step in flight
			d.step.Started, d.step.NotReady, d.step.Firing = s.step.Started, s.step.NotReady, s.step.Firing
		}
	case machineconfig.StepInFlight, machineconfig.StepGates:
		d.verdict = gates.Evaluate(s.settings, gates.Baseline{NotReady: s.step.NotReady, Firing: s.step.Firing},
			gates.Step{Pool: s.pool.GetName(), Nodes: s.step.Nodes, Desired: s.step.Desired, StartedAt: s.step.Started},
			gates.Facts{Now: s.now, Nodes: s.nodes, Alerts: s.alerts, AlertsErr: s.alertsErr, Migrations: s.migrations, Moved: s.moved})
		d.after = soonest(StepPoll, d.verdict.After)
	case machineconfig.StepComplete:
		d.after = 0
	}
	return d
}

// updatedNotBack are the nodes on target that are not back (NotReady,
// unreachable, Degraded): updated by a step no look recorded.
func updatedNotBack(nodes []gates.Node, target string) []string {
	var out []string
	for _, n := range nodes {
		if n.Current == target && n.Desired == target && (!n.Ready || n.Unreachable || n.State == gates.StateDegraded) {
			out = append(out, n.Name)
		}
	}
	return out
}

// notReadyOutside are the nodes, but those of the step, already not Ready,
// unreachable or Degraded as a step starts.
func notReadyOutside(nodes []gates.Node, step []string) []string {
	var out []string
	for _, n := range nodes {
		if !slices.Contains(step, n.Name) && (!n.Ready || n.Unreachable || n.State == gates.StateDegraded) {
			out = append(out, n.Name)
		}
	}
	return out
}

// stepPool steps pool's rollout. handled is false when the pool is not
// stepped (the MCO annotates none of its nodes): the caller decides as for
// any rollout.
func (s *stepper) stepPool(ctx context.Context, pool *unstructured.Unstructured, all []unstructured.Unstructured, v configView, rolling []itemKey, w windowCheck) (handled bool, after time.Duration, err error) {
	nodes, err := s.listNodes(ctx)
	if err != nil {
		return true, 0, err
	}
	gn, stepped, err := poolNodes(pool, all, nodes)
	if err != nil || !stepped {
		if s.notes.set(pool.GetName(), unstepped) {
			s.recorder.Eventf(pool, corev1.EventTypeNormal, "RolloutNotStepped", "virt-advisor does not step this rollout: %s", unstepped)
		}
		return false, 0, nil
	}
	settings, seqs := gatesOf(v, rolling)
	sv := stepView{pool: pool, nodes: gn, settings: settings, approvals: seqs, step: machineconfig.ReadStep(pool), now: s.clock.Now()}
	if settings.Alerts != nil {
		sv.alerts, sv.alertsErr = s.readAlerts(ctx)
	}
	if sv.step != nil {
		if sv.migrations, sv.moved, err = s.stepMigrations(ctx, sv.step); err != nil {
			return true, 0, err
		}
	}
	d := decideStep(sv)
	return true, d.after, s.applyStep(ctx, pool, all, d, v, rolling, w, seqs)
}

// applyStep does what decideStep decided.
func (s *stepper) applyStep(ctx context.Context, pool *unstructured.Unstructured, all []unstructured.Unstructured, d stepDecision, v configView, rolling []itemKey, w windowCheck, seqs map[string]int64) error {
	name := pool.GetName()
	log := klog.FromContext(ctx)
	switch d.action {
	case machineconfig.StepRecord:
		if machineconfig.ReadStep(pool) == nil { // a new step, not nodes joining one
			d.step.NotReadyVMs, d.step.VMsUnknown = s.notReadyVMs(d.step.Nodes)
		}
		if err := s.pauses.forStep(ctx, pool, d.step, nil); err != nil {
			return err
		}
		log.Info("Paused MachineConfigPool for a step of its rollout", "pool", name, "nodes", d.step.Nodes)
		s.wakeAll(rolling)
	case machineconfig.StepInFlight, machineconfig.StepGates:
		if s.notes.set(name, d.verdict.Message) {
			s.wakeAll(rolling) // the items say what the step waits for
		}
		switch d.verdict.Outcome {
		case gates.Halt:
			return s.halt(ctx, pool, d.verdict, seqs, rolling)
		case gates.Pass:
			for _, w := range d.verdict.Warnings {
				s.recorder.Eventf(pool, corev1.EventTypeWarning, "GateNotEvaluated", "virt-advisor started the next step without this gate: %s", w)
			}
			// The step is over: the next starts as a pause of ours ends.
			return s.nextStep(ctx, pool, all, v, rolling, w)
		}
	case machineconfig.StepStart:
		return s.nextStep(ctx, pool, all, v, rolling, w)
	case machineconfig.StepComplete:
		if machineconfig.ReadStep(pool) != nil || machineconfig.ReadPool(pool, cluster.FieldManager, "", "").Ours {
			return s.nextStep(ctx, pool, all, v, rolling, w)
		}
	}
	return nil
}

// nextStep ends our pause between two steps (the step record with it),
// after the same look at windows and VMs as any pause of ours.
func (s *stepper) nextStep(ctx context.Context, pool *unstructured.Unstructured, all []unstructured.Unstructured, v configView, rolling []itemKey, w windowCheck) error {
	if !w.Allowed {
		return nil // the window's pause holds it; the step starts as it opens
	}
	configs := configsOf(rolling, nil)
	// Someone else's maintenance holds it, then a write the MCO has not
	// rendered yet.
	reason, err := s.othersMaintenance(ctx, pool, all, nil)
	if err != nil {
		return err
	}
	if reason == "" {
		reason = v.unrendered(pool, rolling)
	}
	if reason != "" {
		s.resumer.hold(ctx, pool, configs, reason)
		return nil
	}
	held, err := s.resumer.resumeFor(ctx, pool, configs, v.allowsBlocking(configs), true)
	if err == nil && !held {
		s.wakeAll(rolling)
	}
	return err
}

// halt records that a gate tripped: the pool stays paused (it is, between
// steps) with the halt on it, an Event says why, the configs are woken to
// say so in their status.
func (s *stepper) halt(ctx context.Context, pool *unstructured.Unstructured, v gates.Verdict, seqs map[string]int64, rolling []itemKey) error {
	h := &machineconfig.PoolHalt{Gate: v.Gate, Node: v.Node, Message: v.Message, Evidence: v.Evidence, At: s.clock.Now().UTC().Truncate(time.Second), Approvals: seqs}
	if err := s.pauses.forStep(ctx, pool, machineconfig.ReadStep(pool), h); err != nil {
		return err
	}
	klog.FromContext(ctx).Info("Halted the rollout of MachineConfigPool: a gate tripped", "pool", pool.GetName(), "gate", v.Gate, "node", v.Node, "message", v.Message)
	s.recorder.Eventf(pool, corev1.EventTypeWarning, "RolloutHalted", "virt-advisor halted the rollout: gate %s tripped: %s%s; approve the plan again to resume, abort or revert it",
		v.Gate, v.Message, evidenceSuffix(v.Evidence))
	s.halts.set(pool.GetName(), v.Gate)
	s.wakeAll(rolling)
	return nil
}

func evidenceSuffix(ev []string) string {
	if len(ev) == 0 {
		return ""
	}
	return " (" + strings.Join(ev, "; ") + ")"
}

func (s *stepper) wakeAll(rolling []itemKey) {
	for _, k := range rolling {
		s.wake(k.config)
	}
}

// haltReleased is true when the halt recorded on a pool is over: a config
// it names was approved again (a higher approval sequence: a resume or a
// revert) or is gone. An abort's hold takes over before (the abort).
func haltReleased(h *machineconfig.PoolHalt, v configView) bool {
	for name := range h.Approvals {
		cfg := v.named(name)
		if cfg == nil || (cfg.Status.Approval != nil && h.Releases(name, cfg.Status.Approval.Sequence)) {
			return true
		}
	}
	return false
}

// holdHalt keeps a halted pool paused, or, once the halt is released,
// drops the halt and the step in flight with it: the next look steps the
// rollout from what the nodes run. done is false when the pool is not
// halted.
func (s *stepper) holdHalt(ctx context.Context, pool *unstructured.Unstructured, v configView) (done bool, after time.Duration, err error) {
	h := machineconfig.ReadHalt(pool)
	if h == nil {
		return false, 0, nil
	}
	if !haltReleased(h, v) {
		if p := machineconfig.ReadPool(pool, cluster.FieldManager, "", ""); !p.Paused && machineconfig.RollingOut(pool) {
			// Someone ended the pause but left the halt: it holds.
			return true, 0, s.pauses.forStep(ctx, pool, machineconfig.ReadStep(pool), h)
		}
		s.halts.set(pool.GetName(), h.Gate)
		// Looked at again: a pause someone ended is taken back.
		return true, machineconfig.HeldRetry, nil
	}
	if err := s.pauses.forStep(ctx, pool, nil, nil); err != nil {
		return true, 0, err
	}
	klog.FromContext(ctx).Info("The halt of a MachineConfigPool's rollout was released by a new approval", "pool", pool.GetName(), "gate", h.Gate)
	s.recorder.Eventf(pool, corev1.EventTypeNormal, "RolloutResumed", "virt-advisor resumes the rollout halted by gate %s: a plan of %s was approved again", h.Gate, strings.Join(sortedKeys(h.Approvals), ", "))
	s.halts.set(pool.GetName(), "")
	return true, StepPoll, nil
}

func sortedKeys(m map[string]int64) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// listNodes reads the Nodes: from Config.Nodes (a cache) when set, else live.
func (s *stepper) listNodes(ctx context.Context) ([]unstructured.Unstructured, error) {
	if s.nodes != nil {
		return s.nodes(ctx)
	}
	return s.cluster.List(ctx, nodeGVK)
}

var nodeGVK = corev1.SchemeGroupVersion.WithKind("Node")

// alertSettings are the alert gate as pkg/gates reads it; a matcher that
// does not parse (validation refused it at the spec) is dropped: the gate
// then halts on more alerts, never on fewer.
func alertSettings(g *v1alpha1.PlanAlertGate) *gates.AlertSettings {
	out := &gates.AlertSettings{Ignore: g.Ignore, IgnoreErrors: g.OnError == v1alpha1.GateErrorIgnore}
	for _, m := range g.Matchers {
		if parsed, err := advisor.ParseMatcher(m); err == nil {
			out.Matchers = append(out.Matchers, parsed)
		}
	}
	return out
}

// readAlerts reads the alerts firing now.
func (s *stepper) readAlerts(ctx context.Context) ([]gates.Alert, error) {
	if s.alerts == nil {
		return nil, fmt.Errorf("the server reads no alerts (--alert-source-url is not set)")
	}
	return s.alerts(ctx)
}

func alertKeys(alerts []gates.Alert) []string {
	out := make([]string, len(alerts))
	for i, a := range alerts {
		out[i] = a.Key()
	}
	return out
}

// haltMessage says that a gate halted the rollout on pool, which, on
// which node, and what ends it; "" when none did or an abort holds it.
func haltMessage(pool *unstructured.Unstructured, item string, aborted bool) (string, *status.Wait) {
	h := machineconfig.ReadHalt(pool)
	if aborted || h == nil {
		return "", nil
	}
	on := ""
	if h.Node != "" {
		on = " on node '" + h.Node + "'"
	}
	msg := fmt.Sprintf("The rollout on MachineConfigPool '%s' is halted: gate %s tripped%s at %s: %s%s; the pool stays paused until an approver approves the plan again (resume), aborts or reverts it",
		pool.GetName(), h.Gate, on, h.At.UTC().Format(time.RFC3339), h.Message, evidenceSuffix(h.Evidence))
	return msg, &status.Wait{Reason: status.WaitingRolloutHalted, Message: fmt.Sprintf("Item '%s': %s", item, msg)}
}

// stepProgress says which step of a stepped rollout is in flight and what
// its gates wait for, "" when no step is.
func (s *stepper) stepProgress(pool *unstructured.Unstructured) string {
	step := machineconfig.ReadStep(pool)
	if step == nil {
		return ""
	}
	waits := "the next step starts when the gates pass"
	if note := s.notes.get(pool.GetName()); note != "" {
		waits += ": " + note
	}
	return fmt.Sprintf("MachineConfigPool '%s' rolls out one step at a time: node(s) %s updating since %s (%d of %d nodes updated); %s",
		pool.GetName(), strings.Join(step.Nodes, ", "), step.Started.UTC().Format(time.RFC3339), machineconfig.Count(pool, "updatedMachineCount"), machineconfig.Count(pool, "machineCount"), waits)
}

// unstepped is the note of a pool whose rollout of ours is not stepped.
const unstepped = "not stepped: no Node of the pool carries the Machine Config daemon's annotations, so its rollout goes on as the MCO does it, without the gates between node reboots"

// gateNotes are, by pool, what the gates of the step in flight wait for
// (the last verdict's message): no cache holds that.
type gateNotes struct {
	mu    sync.Mutex
	notes map[string]string
}

// set records pool's note ("" drops it); false when unchanged.
func (n *gateNotes) set(pool, note string) bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.notes[pool] == note {
		return false
	}
	if note == "" {
		delete(n.notes, pool)
	} else {
		n.notes[pool] = note
	}
	return true
}

func (n *gateNotes) get(pool string) string {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.notes[pool]
}

// haltGauge keeps the halted pools the metric reports (pool to gate).
type haltGauge struct {
	metrics Metrics
	mu      sync.Mutex
	halted  map[string]string
}

// set reports pool halted by gate ("" : not halted).
func (g *haltGauge) set(pool, gate string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.halted[pool] == gate {
		return
	}
	if gate == "" {
		delete(g.halted, pool)
	} else {
		g.halted[pool] = gate
	}
	g.metrics.RolloutsHalted(maps.Clone(g.halted))
}

// replace reports exactly these halts (read from every pool).
func (g *haltGauge) replace(halted map[string]string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.halted = maps.Clone(halted)
	if g.halted == nil {
		g.halted = map[string]string{}
	}
	g.metrics.RolloutsHalted(maps.Clone(g.halted))
}

// notReadyVMs are the VMs on nodes that are not Ready now (namespace/name),
// from the VMI cache; unknown when it has not synced.
func (s *stepper) notReadyVMs(nodes []string) (vms []string, unknown bool) {
	if s.vmis == nil {
		return nil, true
	}
	all, ok := s.vmis()
	if !ok {
		return nil, true
	}
	for _, v := range all {
		if slices.Contains(nodes, v.Node) && v.Running() && !v.Ready {
			vms = append(vms, v.Namespace+"/"+v.Name)
		}
	}
	return vms, false
}
