package dashboard

import (
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kubevirt/virt-advisor/pkg/apis/advisor/v1alpha1"
	"github.com/kubevirt/virt-advisor/pkg/cmd/advisor/internal/pools"
	"github.com/kubevirt/virt-advisor/pkg/machineconfig"
)

// The annotations the MachineConfig operator's daemon keeps on every node.
const (
	currentConfigAnnotation = "machineconfiguration.openshift.io/currentConfig"
	desiredConfigAnnotation = "machineconfiguration.openshift.io/desiredConfig"
	stateAnnotation         = "machineconfiguration.openshift.io/state"
	reasonAnnotation        = "machineconfiguration.openshift.io/reason"
)

// nodeState is where a node is in its pool's rollout.
type nodeState string

const (
	nodeUpdated  nodeState = "updated"
	nodeUpdating nodeState = "updating"
	nodeWaiting  nodeState = "waiting"
	nodeDegraded nodeState = "degraded"
)

// gridNode is one cell of a pool's grid.
type gridNode struct {
	Name   string
	State  nodeState
	Detail string
}

// gridPool is one MachineConfigPool of a config's rollout.
type gridPool struct {
	Name                                     string
	Configs                                  []string // the config's MachineConfigs it selects
	Machines, Updated, Degraded, Unavailable int64
	Target, Current                          string // rendered configs: spec and status
	Paused                                   bool
	PausedBy, PausedUntil                    string
	State, Tone                              string // summary in words, and its tone
	Message                                  string // the pool condition that explains State
	Nodes                                    []gridNode
	// NodesNote says where the cells come from when not from Nodes.
	NodesNote string
	// Halt is the halt of a stepped rollout on the pool, Step the step in
	// flight (or the one the halt stopped); nil when there is none.
	Halt *pools.Halt
	Step *pools.Step
}

// Counts of each node state, for the legend.
func (p gridPool) Count(s nodeState) int {
	n := 0
	for _, c := range p.Nodes {
		if c.State == s {
			n++
		}
	}
	return n
}

// newGridPool reads a pool. nodes are the Nodes its nodeSelector selects;
// when none carries the MachineConfig daemon's annotations (or they could
// not be listed: nodesErr) the cells come from the pool's counts.
func newGridPool(pool *unstructured.Unstructured, configs []string, nodes []corev1.Node, nodesErr string) gridPool {
	g := gridPool{
		Name: pool.GetName(), Configs: configs,
		Machines: machineconfig.Count(pool, "machineCount"), Updated: machineconfig.Count(pool, "updatedMachineCount"),
		Degraded: machineconfig.Count(pool, "degradedMachineCount"), Unavailable: machineconfig.Count(pool, "unavailableMachineCount"),
	}
	g.Target, _, _ = unstructured.NestedString(pool.Object, "spec", "configuration", "name")
	g.Current, _, _ = unstructured.NestedString(pool.Object, "status", "configuration", "name")
	g.Paused, _, _ = unstructured.NestedBool(pool.Object, "spec", "paused")
	if g.Paused {
		g.PausedBy = pausedBy(pool)
		g.PausedUntil = pool.GetAnnotations()[machineconfig.PausedUntilAnnotation]
	}
	if cells := nodesFromAnnotations(g.Target, nodes); len(cells) > 0 {
		g.Nodes = cells
	} else {
		g.Nodes = nodesFromCounts(g.Machines, g.Updated, g.Degraded, g.Unavailable, g.Paused)
		why := nodesErr
		switch {
		case why != "":
		case len(nodes) == 0:
			why = "no Node matches the pool's nodeSelector"
		default:
			why = "its nodes carry no MachineConfig daemon annotations"
		}
		g.NodesNote = "Cells follow the pool's counts (updated, degraded, unavailable machines), not named nodes: " + why + "."
	}
	g.State, g.Tone, g.Message = poolState(pool, g)
	return g
}

// heldByAbort: the config's plan was aborted (a, still recorded whatever
// the phase, the spec or the action now), and a pause of ours lasts until
// an approver approves a plan, whatever time the pause annotation (which
// every pause of ours carries, long past by now) says.
func (g *gridPool) heldByAbort(a *v1alpha1.AbortRecord) {
	if g.Paused && g.PausedUntil != "" {
		g.PausedUntil = fmt.Sprintf("an approver approves a plan of this config or the config is deleted (plan %s was aborted by %s)",
			v1alpha1.ShortHash(a.PlanHash), a.AbortedBy)
	}
}

// followSteps reads the records of a stepped rollout on the pool: the
// step in flight, and a halt, which says more than any other state (the
// pool stays paused until an approver acts), its nodes' cells marked.
func (g *gridPool) followSteps(pool *unstructured.Unstructured, cfg *v1alpha1.VirtPlatformConfig) {
	g.Step = pools.ReadStep(pool)
	if g.Step != nil {
		for i := range g.Nodes {
			if slices.Contains(g.Step.Nodes, g.Nodes[i].Name) {
				g.Nodes[i].Detail = strings.TrimPrefix(g.Nodes[i].Detail+"; in the step", "; ")
			}
		}
	}
	g.Halt = pools.ReadHalt(pool, cfg)
	if g.Halt == nil {
		return
	}
	g.State, g.Tone = "Halted: gate "+g.Halt.Gate, "bad" // the legend counts the nodes
	if g.Paused && g.PausedUntil != "" && cfg.Status.Abort == nil {
		g.PausedUntil = "the halt below ends" // not the time its pause annotation says
	}
	for i := range g.Nodes {
		if g.Nodes[i].Name == g.Halt.Node {
			g.Nodes[i].Detail = strings.TrimPrefix(g.Nodes[i].Detail+"; gate "+g.Halt.Gate+" tripped here", "; ")
		}
	}
}

// nodesFromAnnotations reads each node's rollout from the MachineConfig
// daemon's annotations: currentConfig, desiredConfig and state.
func nodesFromAnnotations(target string, nodes []corev1.Node) []gridNode {
	var out []gridNode
	for _, n := range nodes {
		a := n.Annotations
		current, ok := a[currentConfigAnnotation]
		if !ok {
			continue
		}
		desired, state := a[desiredConfigAnnotation], a[stateAnnotation]
		c := gridNode{Name: n.Name}
		switch {
		case state == "Degraded" || state == "Unreconcilable":
			c.State, c.Detail = nodeDegraded, orText(a[reasonAnnotation], state)
		case current == target && desired == target && state != "Working":
			c.State = nodeUpdated
		case desired == target && target != "":
			c.State, c.Detail = nodeUpdating, "from "+current
		case current == target:
			c.State = nodeUpdated
		default:
			c.State, c.Detail = nodeWaiting, "runs "+current
		}
		out = append(out, c)
	}
	return out
}

// nodesFromCounts lays the counts out as cells: the MCO updates nodes one
// at a time, so the updated ones come first, then the degraded ones, then
// the one in flight (unavailable while it drains and reboots), then those
// that wait.
func nodesFromCounts(machines, updated, degraded, unavailable int64, paused bool) []gridNode {
	degraded = min(max(degraded, 0), machines)
	updated = min(max(updated, 0), machines-degraded)
	updating := int64(0)
	if !paused {
		updating = min(max(unavailable-degraded, 0), machines-degraded-updated)
	}
	out := make([]gridNode, 0, machines)
	for i := int64(0); i < machines; i++ {
		c := gridNode{Name: fmt.Sprintf("node %d of %d", i+1, machines), State: nodeWaiting}
		switch {
		case i < updated:
			c.State = nodeUpdated
		case i < updated+degraded:
			c.State = nodeDegraded
		case i < updated+degraded+updating:
			c.State = nodeUpdating
		}
		out = append(out, c)
	}
	return out
}

// pausedBy names the field managers that own spec.paused.
func pausedBy(pool *unstructured.Unstructured) string {
	return strings.Join(machineconfig.PausedManagers(pool), ", ")
}

// poolState sums a pool up in words, as kubectl get mcp and the
// controller's item messages do.
func poolState(pool *unstructured.Unstructured, g gridPool) (state, tone, message string) {
	cond := func(t string) (string, string) {
		conds, _, _ := unstructured.NestedSlice(pool.Object, "status", "conditions")
		for _, c := range conds {
			if m, ok := c.(map[string]any); ok && m["type"] == t {
				s, _ := m["status"].(string)
				msg, _ := m["message"].(string)
				return s, msg
			}
		}
		return "", ""
	}
	if s, msg := cond("Degraded"); s == "True" || g.Degraded > 0 {
		return fmt.Sprintf("Degraded (%d of %d nodes)", g.Degraded, g.Machines), "bad", msg
	}
	done := g.Target != "" && g.Target == g.Current && g.Updated >= g.Machines
	switch {
	case done:
		return fmt.Sprintf("Updated (%d of %d nodes)", g.Updated, g.Machines), "ok", "runs " + g.Current
	case g.Paused:
		_, msg := cond("Updating")
		return fmt.Sprintf("Paused (%d of %d nodes updated)", g.Updated, g.Machines), "warn", msg
	}
	_, msg := cond("Updating")
	return fmt.Sprintf("Updating (%d of %d nodes updated)", g.Updated, g.Machines), "info", orText(msg, "updating to "+g.Target)
}

// itemsRolledBy are the config's MachineConfig items with something to
// write whose MachineConfig is one of configs (those a pool renders).
func itemsRolledBy(items []v1alpha1.VirtPlatformConfigItem, configs []string) []v1alpha1.VirtPlatformConfigItem {
	var out []v1alpha1.VirtPlatformConfigItem
	for _, it := range items {
		if machineconfig.IsMachineConfig(it.TargetRef) && it.Operation != v1alpha1.OperationNone && it.Operation != "" && slices.Contains(configs, it.TargetRef.Name) {
			out = append(out, it)
		}
	}
	return out
}

// followItems tells the pool's state as far as this config's change goes:
// a pool all of whose nodes run its current config is not "Updated" for a
// change that was not written yet (the items wait: for a maintenance
// window, say) or that the pool has not rendered yet. Its nodes then wait
// for the change.
func (g *gridPool) followItems(items []v1alpha1.VirtPlatformConfigItem) {
	if g.Tone == "bad" {
		return // degraded says more
	}
	pending, written, unrendered, waitingFor := g.countItems(items)
	switch {
	case pending > 0 && written == 0:
		g.State, g.Tone, g.Message = fmt.Sprintf("Not started: nothing written yet (%d nodes on %s)", g.Machines, g.Current), "neutral", waitingFor
	case unrendered > 0:
		g.State, g.Tone, g.Message = fmt.Sprintf("Written; not rendered yet (%d nodes on %s)", g.Machines, g.Current), "info",
			"The MachineConfig is written; the pool has not rendered a config with it yet"
	case pending > 0 && g.Tone == "ok":
		g.State, g.Tone, g.Message = fmt.Sprintf("%d of %d changes written (%d of %d nodes updated)", written, written+pending, g.Updated, g.Machines), "info", waitingFor
		return // the nodes run what was written so far
	default:
		return
	}
	for i := range g.Nodes {
		if g.Nodes[i].State == nodeUpdated {
			g.Nodes[i].State, g.Nodes[i].Detail = nodeWaiting, "runs "+g.Current
		}
	}
}

// countItems counts the items not written yet, those written, and those
// in progress that the pool has not rendered yet; waitingFor is the first
// pending item's message.
func (g *gridPool) countItems(items []v1alpha1.VirtPlatformConfigItem) (pending, written, unrendered int, waitingFor string) {
	for i := range items {
		it := &items[i]
		switch it.State {
		case v1alpha1.ItemStatePending:
			pending++
			if waitingFor == "" {
				waitingFor = it.Message
			}
		case v1alpha1.ItemStateInProgress, v1alpha1.ItemStateCompleted:
			written++
			if before := machineconfig.ConfigBefore(it, g.Name); it.State == v1alpha1.ItemStateInProgress && before != "" && g.Target == before {
				unrendered++
			}
		}
	}
	return pending, written, unrendered, waitingFor
}

func orText(s, def string) string {
	if s == "" {
		return def
	}
	return s
}
