package disruption

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/kubevirt/virt-advisor/pkg/apis/advisor/v1alpha1"
	"github.com/kubevirt/virt-advisor/pkg/kubevirt"
	"github.com/kubevirt/virt-advisor/pkg/machineconfig"
)

const (
	// WorkerRoleLabel marks worker nodes.
	WorkerRoleLabel = "node-role.kubernetes.io/worker"
	// TopologyAnnotation is what the MachineConfig operator's node controller
	// puts on every Node: SingleReplica on a single-node cluster, whose node
	// is never drained (docs/SingleNodeOpenShift.md).
	TopologyAnnotation = "machineconfiguration.openshift.io/controlPlaneTopology"
	singleReplica      = "SingleReplica"

	// VMIsNotServed is why VM impact is unknown on a cluster without KubeVirt.
	VMIsNotServed = "kubevirt.io/v1 VirtualMachineInstance not served"
)

// Cluster is what the assessment reads of the cluster, once per plan.
type Cluster struct {
	// Pools are every MachineConfigPool: a node both the worker pool and a
	// custom pool select belongs to the custom pool.
	Pools []unstructured.Unstructured
	Nodes []unstructured.Unstructured
	// NodesUnknown says why the Nodes could not be read, if they could not.
	NodesUnknown string
	// VMIs are the VirtualMachineInstances; VMIsUnknown says why they could
	// not be read (VMIsNotServed, a forbidden list…), if they could not.
	VMIs        []kubevirt.VMI
	VMIsUnknown string
	Default     Default
	// UpdatedTo, when set, is the rendered config a paused rollout
	// resumes to: a node that runs it already (CurrentConfigAnnotation)
	// is not drained for it again.
	UpdatedTo string
}

// CurrentConfigAnnotation is where the Machine Config Daemon says which
// rendered config a node runs.
const CurrentConfigAnnotation = "machineconfiguration.openshift.io/currentConfig"

// SingleNode is true on a single-node cluster: the MachineConfig operator
// annotates its node SingleReplica (and a cluster with one Node is one).
func (c *Cluster) SingleNode() bool {
	for i := range c.Nodes {
		if annotation(&c.Nodes[i], TopologyAnnotation) == singleReplica {
			return true
		}
	}
	return len(c.Nodes) == 1
}

// WorkerNodes counts the worker nodes (for the default eviction strategy).
func WorkerNodes(nodes []unstructured.Unstructured) int {
	n := 0
	for i := range nodes {
		if labelsOf(&nodes[i]).Has(WorkerRoleLabel) {
			n++
		}
	}
	return n
}

// PoolNodes are the names of the nodes a pool's nodeSelector selects,
// sorted, but for those already on UpdatedTo. A node the worker pool and a custom pool both select is the
// custom pool's, as the MachineConfig operator assigns it.
func (c *Cluster) PoolNodes(pool *unstructured.Unstructured) ([]string, error) {
	sel, err := machineconfig.PoolSelector(pool, "nodeSelector")
	if err != nil {
		return nil, fmt.Errorf("MachineConfigPool '%s' has an invalid nodeSelector: %w", pool.GetName(), err)
	}
	var custom []labels.Selector
	if pool.GetName() == machineconfig.WorkerPool {
		for i := range c.Pools {
			if name := c.Pools[i].GetName(); name != machineconfig.WorkerPool && name != machineconfig.MasterPool {
				if s, err := machineconfig.PoolSelector(&c.Pools[i], "nodeSelector"); err == nil {
					custom = append(custom, s)
				}
			}
		}
	}
	var out []string
	for i := range c.Nodes {
		set := labelsOf(&c.Nodes[i])
		if !sel.Matches(set) || c.UpdatedTo != "" && annotation(&c.Nodes[i], CurrentConfigAnnotation) == c.UpdatedTo {
			continue
		}
		other := false
		for _, s := range custom {
			other = other || s.Matches(set)
		}
		if !other {
			out = append(out, c.Nodes[i].GetName())
		}
	}
	sort.Strings(out)
	return out, nil
}

// Assess fills what the decided change does to one pool's nodes and VMs:
// the disruption, whether the nodes drain and, if they do, the fate of
// every VMI running on them, with a summary in words.
func (c *Cluster) Assess(r *v1alpha1.PoolReboot, pool *unstructured.Unstructured, d Decision) {
	r.Disruption, r.DisruptionReason = d.Action, d.Reason
	r.VMImpacts, r.LiveMigrations, r.VMSummary, r.VMImpactUnknown = nil, 0, "", ""
	r.Drains = Drains(d.Action) && !c.SingleNode()
	switch {
	case !Drains(d.Action):
		r.VMSummary = "not drained: no VM is affected"
		return
	case !r.Drains:
		r.VMSummary = "not drained (single-node cluster): no VM is evicted; the VMs there stop while the node reboots"
		if d.Action == v1alpha1.NodeDisruptionDrain {
			r.VMSummary = "not drained (single-node cluster): no VM is affected"
		}
		return
	case c.NodesUnknown != "":
		r.VMImpactUnknown = c.NodesUnknown
	case c.VMIsUnknown != "":
		r.VMImpactUnknown = c.VMIsUnknown
	}
	if r.VMImpactUnknown != "" {
		r.VMSummary = "VM impact unknown: " + r.VMImpactUnknown
		return
	}
	nodes, err := c.PoolNodes(pool)
	if err != nil {
		r.VMImpactUnknown = err.Error()
		r.VMSummary = "VM impact unknown: " + r.VMImpactUnknown
		return
	}
	on := c.vmisOn(nodes)
	if len(on) > 0 {
		r.VMImpacts = make([]v1alpha1.VMImpact, 0, len(on))
	}
	for _, v := range on {
		fate, reason := Fate(v, c.Default)
		if fate == v1alpha1.VMFateLiveMigrate {
			r.LiveMigrations++
		}
		r.VMImpacts = append(r.VMImpacts, v1alpha1.VMImpact{Node: v.Node, Namespace: v.Namespace, Name: v.Name, Fate: fate, Reason: reason})
	}
	r.VMSummary = Summarize(int(r.LiveMigrations), r.VMImpacts)
	if r.VMSummary == "" {
		r.VMSummary = "no VM runs on its nodes"
	}
}

// vmisOn are the running VMIs on nodes (sorted by name), ordered by node,
// namespace and name. VMIs sorted by namespace and name (as the cache and
// a list serve them) are put in node order in one pass, keeping that
// order within each node: on 10 000 VMs a sort costs more than the rest.
func (c *Cluster) vmisOn(nodes []string) []kubevirt.VMI {
	index := make(map[string]int, len(nodes))
	for i, n := range nodes {
		index[n] = i
	}
	count := make([]int, len(nodes)+1)
	for _, v := range c.VMIs {
		if i, on := index[v.Node]; on && v.Running() {
			count[i+1]++
		}
	}
	for i := 1; i < len(count); i++ {
		count[i] += count[i-1] // count[i]: where node i's VMs start
	}
	out := make([]kubevirt.VMI, count[len(nodes)])
	for _, v := range c.VMIs {
		if i, on := index[v.Node]; on && v.Running() {
			out[count[i]] = v
			count[i]++
		}
	}
	if !slices.IsSortedFunc(c.VMIs, kubevirt.CompareVMIs) {
		slices.SortStableFunc(out, func(a, b kubevirt.VMI) int {
			if a.Node != b.Node {
				return strings.Compare(a.Node, b.Node)
			}
			return kubevirt.CompareVMIs(a, b)
		})
	}
	return out
}

// MaxListedMigrations bounds the VMs that live-migrate a pool's vmImpacts
// name once Bound: they are counted (liveMigrations), and the VMs at risk
// are all listed, so that a plan over 10 000 VMs stays kilobytes.
const MaxListedMigrations = 20

// Bound drops from r's vmImpacts the VMs that live-migrate beyond the
// first MaxListedMigrations (Assess lists them all: the capacity check
// places each).
func Bound(r *v1alpha1.PoolReboot) {
	kept, listed := r.VMImpacts[:0], 0
	for _, v := range r.VMImpacts {
		if v.Fate == v1alpha1.VMFateLiveMigrate {
			if listed == MaxListedMigrations {
				continue
			}
			listed++
		}
		kept = append(kept, v)
	}
	r.VMImpacts = kept
}

// maxNamed bounds the VMs a summary names per fate; the plan's vmImpacts
// list them all.
const maxNamed = 5

// Summarize says what a drain does to VMs, e.g. "14 VMs live-migrate, 1
// shuts down: default/db-0 (EvictionStrategyNone); 2 block the drain:
// default/gpu-0 (HostDeviceNotLiveMigratable), …"; "" for none. VMs that
// migrate are counted (migrating of them), the others in vms named.
func Summarize(migrating int, vms []v1alpha1.VMImpact) string {
	migrate := migrating
	var shut, block namedList
	for _, v := range vms {
		if v.Fate == v1alpha1.VMFateLiveMigrate {
			continue // counted, not named
		}
		l := &block
		if v.Fate == v1alpha1.VMFateShutDown {
			l = &shut
		}
		l.add(func() string { return v.Namespace + "/" + v.Name + " (" + v.Reason + ")" })
	}
	var parts []string
	first := true
	count := func(n int, one, many string) string {
		noun := ""
		if first {
			noun = " VMs"
			if n == 1 {
				noun = " VM"
			}
		}
		first = false
		if n == 1 {
			return fmt.Sprintf("%d%s %s", n, noun, one)
		}
		return fmt.Sprintf("%d%s %s", n, noun, many)
	}
	if migrate > 0 {
		parts = append(parts, count(migrate, "live-migrates", "live-migrate"))
	}
	if shut.n > 0 {
		parts = append(parts, count(shut.n, "shuts down", "shut down")+": "+shut.String())
	}
	if block.n > 0 {
		parts = append(parts, count(block.n, "blocks the drain", "block the drain")+": "+block.String())
	}
	// Groups that name VMs end in a list: a semicolon tells where it ends.
	var b strings.Builder
	for i, p := range parts {
		if i > 0 {
			if strings.Contains(parts[i-1], ": ") {
				b.WriteString("; ")
			} else {
				b.WriteString(", ")
			}
		}
		b.WriteString(p)
	}
	return b.String()
}

// namedList names the first maxNamed of a list and counts the rest: on
// 10 000 VMs a plan would otherwise format hundreds of names to show five.
type namedList struct {
	n     int
	named []string
}

// add counts one more, named by name (called only while it is shown).
func (l *namedList) add(name func() string) {
	if l.n < maxNamed {
		l.named = append(l.named, name())
	}
	l.n++
}

// String is "a, b, c, d, e, … (N more)".
func (l *namedList) String() string {
	if l.n <= maxNamed {
		return strings.Join(l.named, ", ")
	}
	return strings.Join(l.named, ", ") + fmt.Sprintf(", … (%d more)", l.n-maxNamed)
}

// Disrupted are the VMs of the pools that a drain shuts down or is
// blocked by: what an approver accepts to suffer, part of the plan hash.
// VMs that migrate are left out, so ordinary migrations do not make a
// reviewed plan stale. Sorted by pool, namespace and name.
func Disrupted(reboots []v1alpha1.PoolReboot) []v1alpha1.DisruptedVM {
	var out []v1alpha1.DisruptedVM
	for _, r := range reboots {
		for _, v := range r.VMImpacts {
			if v.Fate != v1alpha1.VMFateLiveMigrate {
				out = append(out, v1alpha1.DisruptedVM{Pool: r.Pool, Namespace: v.Namespace, Name: v.Name, Fate: v.Fate, Reason: v.Reason})
			}
		}
	}
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if a.Pool != b.Pool {
			return a.Pool < b.Pool
		}
		if a.Namespace != b.Namespace {
			return a.Namespace < b.Namespace
		}
		return a.Name < b.Name
	})
	return out
}

// Unreviewed are the VMs now shut down or blocking a drain that the
// review did not show with that fate (in that pool): a VM that became
// non-migratable or a new VM with strategy None since. Fewer such VMs than
// reviewed is fine, and so is another reason for the same fate.
func Unreviewed(reviewed, now []v1alpha1.DisruptedVM) []v1alpha1.DisruptedVM {
	type key struct {
		pool, ns, name string
		fate           v1alpha1.VMFate
	}
	seen := make(map[key]bool, len(reviewed))
	for _, v := range reviewed {
		seen[key{v.Pool, v.Namespace, v.Name, v.Fate}] = true
	}
	var out []v1alpha1.DisruptedVM
	for _, v := range now {
		if !seen[key{v.Pool, v.Namespace, v.Name, v.Fate}] {
			out = append(out, v)
		}
	}
	return out
}

// Blocking are the VMs that would block the drain of a node of the pools,
// with their pool.
func Blocking(reboots []v1alpha1.PoolReboot) []v1alpha1.DisruptedVM {
	var out []v1alpha1.DisruptedVM
	for _, v := range Disrupted(reboots) {
		if v.Fate == v1alpha1.VMFateBlocksDrain {
			out = append(out, v)
		}
	}
	return out
}

// DescribeVMs names VMs with their fate and reason, for messages.
func DescribeVMs(vms []v1alpha1.DisruptedVM) string {
	var l namedList
	for _, v := range vms {
		l.add(func() string {
			return v.Namespace + "/" + v.Name + " (" + fateWords(v.Fate) + ", " + v.Reason + ", pool " + v.Pool + ")"
		})
	}
	return l.String()
}

func fateWords(f v1alpha1.VMFate) string {
	switch f {
	case v1alpha1.VMFateShutDown:
		return "shuts down"
	case v1alpha1.VMFateBlocksDrain:
		return "blocks the drain"
	}
	return "live-migrates"
}

// BlockedMessage is why an approved MachineConfig item waits (the
// controller prefixes "Waiting: "): a drain of one of its pools' nodes
// would block on these VMs.
func BlockedMessage(mc string, blocking []v1alpha1.DisruptedVM) string {
	vms, its := blockingVMs(blocking)
	return fmt.Sprintf("writing MachineConfig '%s' would drain nodes that run %s; migrate, stop, or change %s eviction strategy (or set spec.rollout.allowBlockingDrains: true to write it anyway); the change is written when no VM blocks",
		mc, vms, its)
}

// ResumeBlockedMessage is why the pool controller keeps a pool it paused
// paused: resuming its rollout would drain nodes whose drain would block
// on these VMs.
func ResumeBlockedMessage(pool string, blocking []v1alpha1.DisruptedVM) string {
	vms, its := blockingVMs(blocking)
	return fmt.Sprintf("resuming its rollout would drain nodes that run %s; migrate, stop, or change %s eviction strategy (or set spec.rollout.allowBlockingDrains: true to resume it anyway); MachineConfigPool '%s' stays paused until no VM blocks",
		vms, its, pool)
}

// blockingVMs names the blocking VMs for the messages above: "a VM that
// would block the drain: ns/name (reason, pool p)", and "its" or "their".
func blockingVMs(blocking []v1alpha1.DisruptedVM) (string, string) {
	var list namedList
	for _, v := range blocking {
		list.add(func() string { return v.Namespace + "/" + v.Name + " (" + v.Reason + ", pool " + v.Pool + ")" })
	}
	vms := "a VM that"
	its := "its"
	if len(blocking) > 1 {
		vms, its = fmt.Sprintf("%d VMs that", len(blocking)), "their"
	}
	return fmt.Sprintf("%s would block the drain: %s", vms, list.String()), its
}
