package plan

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/kubevirt/virt-advisor/pkg/apis/advisor/v1alpha1"
	"github.com/kubevirt/virt-advisor/pkg/capacity"
	"github.com/kubevirt/virt-advisor/pkg/cluster"
	"github.com/kubevirt/virt-advisor/pkg/disruption"
)

// Pods serves the virt-launcher pods and the requests per node the
// capacity check reads (*cluster.PodCache); ok is false until its cache
// has synced, and the plan then lists the pods live.
type Pods interface {
	Pods() (cluster.PodRequests, bool)
}

// ReasonInsufficientCapacity starts the reason of a VM that would find no
// node to migrate to: its drain would wait, as for a VM that blocks it.
const ReasonInsufficientCapacity = "InsufficientCapacity"

// noLaunchers starts the capacity of a pool none of whose migrating VMs
// has a virt-launcher pod on its node (a cluster whose VMIs are not run by
// KubeVirt pods): nothing is known, and the item's message stays silent.
const noLaunchers = "unknown: no virt-launcher pod on their nodes for the "

// podReads reads the pods from the cache when cached and it has synced,
// else lists them live.
func (e *Engine) podReads(ctx context.Context, cached bool) func() (cluster.PodRequests, error) {
	return func() (cluster.PodRequests, error) {
		if cached && e.Pods != nil {
			if p, ok := e.Pods.Pods(); ok {
				return p, nil
			}
		}
		items, err := e.Cluster.List(ctx, podGVK)
		if err != nil {
			return cluster.PodRequests{}, err
		}
		return cluster.ReadPodRequests(ctx, items), nil
	}
}

var podGVK = cluster.PodGVR.GroupVersion().WithKind("Pod")

// capacityInputs is what a capacity check read of a pool that stays the
// same while only pods change: the pool's nodes in rollout order and the
// migrating VMs paired with their launchers and classified, valid while
// the launcher index is at the same generation. Never modified once made:
// plans running at the same time share it.
type capacityInputs struct {
	order []string
	// orderErr: the pool's nodes could not be read (order is nil).
	orderErr  string
	launchers *cluster.LauncherIndex
	// generation of launchers when vms were paired; -1 when the index
	// changed while they were (not to be reused).
	generation int64
	vms        []capacity.VM
	classified *capacity.Classified
	missing    int
}

// holds is true when the VMs of in are still paired as the launchers
// of pods are.
func (in *capacityInputs) holds(pods cluster.PodRequests) bool {
	return in != nil && in.launchers == pods.Launchers && in.generation == pods.Launchers.Generation()
}

// checkCapacity simulates the drains of a pool whose nodes drain: a VM
// that live-migrates and finds no node becomes one that blocks the drain
// (reason InsufficientCapacity: …), and r.Capacity says the result. A
// failure to read the pods is said (strict: returned). kept is what an
// earlier check of the same nodes, pools and VM impacts read (nil: none),
// and early the simulation of kept started while the VMs were assessed
// (nil: none); keep asks for what this check read, returned to be kept
// for the next (nil without keep: its pairs are in a pooled buffer).
func (r *clusterReads) checkCapacity(reboot *v1alpha1.PoolReboot, pool *unstructured.Unstructured, c *disruption.Cluster, kept *capacityInputs, early func() capacity.Result, keep, strict bool) (*capacityInputs, error) {
	vms := migrating(reboot.VMImpacts)
	if !reboot.Drains || vms == 0 || r.pods == nil {
		return nil, nil // nothing migrates, or reads that do not look at pods
	}
	pods, err := r.pods()
	if err != nil {
		if strict {
			return nil, fmt.Errorf("listing pods for the capacity check: %w", err)
		}
		reboot.Capacity = "unknown: cannot list pods: " + apiMessage(err)
		return nil, nil
	}
	paired := time.Now()
	inputs, release := capacityInputsOf(reboot, pool, c, pods, kept, keep)
	defer release()
	r.timeCapacityCheck(paired)
	read := inputs
	if !keep {
		read = nil
	}
	switch {
	case len(inputs.vms) == 0:
		reboot.Capacity = fmt.Sprintf("%s%d migrating VMs", noLaunchers, vms)
		return read, nil
	case inputs.orderErr != "":
		reboot.Capacity = "unknown: " + inputs.orderErr
		return read, nil
	}
	var res capacity.Result
	if early != nil && inputs == kept {
		res = early()
	} else {
		res = r.simulate(inputs, pool, c, pods)
	}
	reboot.Capacity = res.Summary()
	if inputs.missing > 0 {
		reboot.Capacity += fmt.Sprintf(" (%d migrating VMs without a virt-launcher pod on their node not counted)", inputs.missing)
	}
	if !res.Fits() {
		markUnfit(reboot, res.Unfit)
	}
	return read, nil
}

// markUnfit makes the migrating VMs that find no node VMs that block the
// drain.
func markUnfit(reboot *v1alpha1.PoolReboot, unfits []capacity.Unfit) {
	unfit := make(map[string]string, len(unfits))
	for _, u := range unfits {
		unfit[u.VM.String()] = u.Reason
	}
	for i := range reboot.VMImpacts {
		v := &reboot.VMImpacts[i]
		if why, ok := unfit[v.Namespace+"/"+v.Name]; ok && v.Fate == v1alpha1.VMFateLiveMigrate {
			v.Fate, v.Reason = v1alpha1.VMFateBlocksDrain, ReasonInsufficientCapacity+": "+why
			reboot.LiveMigrations--
		}
	}
	reboot.VMSummary = disruption.Summarize(int(reboot.LiveMigrations), reboot.VMImpacts)
}

// simulate drains the pool's nodes with the VMs of in on the nodes as
// their pods leave them now.
func (r *clusterReads) simulate(in *capacityInputs, pool *unstructured.Unstructured, c *disruption.Cluster, pods cluster.PodRequests) capacity.Result {
	defer r.timeCapacityCheck(time.Now())
	nodes := capacityNodes(c.Nodes, pods.Requested, r.placement.nodesMemo())
	return in.classified.Simulate(nodes, capacity.Rollout{Pool: pool.GetName(), Nodes: in.order, MaxUnavailable: maxUnavailable(pool, len(in.order))})
}

// startSimulation starts the simulation of kept, when it holds, while
// the VMs of its pool are assessed again: with the same nodes, pools and
// decision as when kept was made, the assessment finds the same migrating
// VMs, and only the pods around them changed. It returns the wait for the
// result, nil when kept cannot be used.
func (r *clusterReads) startSimulation(kept *capacityInputs, pool *unstructured.Unstructured, c *disruption.Cluster) func() capacity.Result {
	if kept == nil || len(kept.vms) == 0 || kept.orderErr != "" || r.pods == nil {
		return nil
	}
	pods, err := r.pods()
	if err != nil || !kept.holds(pods) {
		return nil
	}
	done := make(chan capacity.Result, 1)
	go func() { done <- r.simulate(kept, pool, c, pods) }()
	return sync.OnceValue(func() capacity.Result { return <-done })
}

// capacityInputsOf pairs the migrating VMs of reboot with their
// launchers, or takes kept when it holds (and its node order when the
// launchers changed). Pairs that are not to be kept live in a pooled
// buffer until release (the simulation keeps none).
func capacityInputsOf(reboot *v1alpha1.PoolReboot, pool *unstructured.Unstructured, c *disruption.Cluster, pods cluster.PodRequests, kept *capacityInputs, keep bool) (inputs *capacityInputs, release func()) {
	if kept.holds(pods) {
		return kept, func() {}
	}
	inputs = &capacityInputs{launchers: pods.Launchers, generation: pods.Launchers.Generation()}
	if kept != nil {
		inputs.order, inputs.orderErr = kept.order, kept.orderErr
	} else if order, err := c.PoolNodes(pool); err != nil {
		inputs.orderErr = err.Error()
	} else {
		inputs.order = order
	}
	release = func() {}
	if keep {
		inputs.vms, inputs.missing = capacityVMs(nil, reboot.VMImpacts, pods)
		if pods.Launchers.Generation() != inputs.generation {
			inputs.generation = -1 // a launcher changed during the walk
		}
	} else {
		buf := vmBuffers.Get().(*[]capacity.VM)
		inputs.vms, inputs.missing = capacityVMs((*buf)[:0], reboot.VMImpacts, pods)
		*buf = inputs.vms
		release = func() { vmBuffers.Put(buf) }
	}
	inputs.classified = capacity.Classify(inputs.vms)
	return inputs, release
}

// migrating counts the VMs that live-migrate.
func migrating(impacts []v1alpha1.VMImpact) int {
	n := 0
	for i := range impacts {
		if impacts[i].Fate == v1alpha1.VMFateLiveMigrate {
			n++
		}
	}
	return n
}

// vmBuffers keeps the slices of VMs a check hands the simulation (10 000
// per plan): the result keeps none of them.
var vmBuffers = sync.Pool{New: func() any { return new([]capacity.VM) }}

// capacityVMs appends to out each VM of vms that live-migrates, paired
// with its launcher on its node; the count of those without one (not
// placed: what they ask is not known). vms come node by node, each node's
// in namespace and name order as the launchers are: a walk of both, one
// lookup per node.
func capacityVMs(out []capacity.VM, vms []v1alpha1.VMImpact, pods cluster.PodRequests) ([]capacity.VM, int) {
	missing := 0
	var on []cluster.Launcher
	node, next := "", 0
	for _, v := range vms {
		if v.Fate != v1alpha1.VMFateLiveMigrate {
			continue
		}
		if v.Node != node || on == nil {
			node, on, next = v.Node, pods.Launchers.OnNode(v.Node), 0
		}
		launcher := launcherOf(on, &next, v.Namespace, v.Name)
		if launcher == nil {
			missing++
			continue
		}
		demand, _ := launcher.Derived(demandOf).(*capacity.Demand)
		out = append(out, capacity.VM{Namespace: v.Namespace, Name: v.Name, Node: v.Node, Launcher: launcher.Pod, Demand: demand})
	}
	return out, missing
}

// launcherOf finds the launcher of namespace/name in on, from *next (where
// the VM before it was found) round to it: VMs in the launchers' order
// cost one step each, VMs in any other order at most a walk of the node.
func launcherOf(on []cluster.Launcher, next *int, namespace, name string) *cluster.Launcher {
	for k := range on {
		i := (*next + k) % len(on)
		if on[i].VMI == name && on[i].Namespace == namespace {
			*next = i + 1
			return &on[i]
		}
	}
	return nil
}

// demandOf is what a launcher asks of a node (cluster.Launcher.Derived).
func demandOf(pod *corev1.Pod) any { return capacity.DemandOf(pod) }

// placementMemo is what the capacity check keeps across plans: each Node
// as placement reads it (what each launcher asks, the launcher keeps).
type placementMemo struct {
	nodes nodeMemo
}

func (p *placementMemo) nodesMemo() *nodeMemo {
	if p == nil {
		return nil
	}
	return &p.nodes
}

// capacityNodes are the Nodes as the simulation reads them (labels,
// taints, schedulable, allocatable), with what their pods request.
func capacityNodes(nodes []unstructured.Unstructured, requested map[string]corev1.ResourceList, memo *nodeMemo) []capacity.Node {
	out := make([]capacity.Node, 0, len(nodes))
	for i := range nodes {
		if n := memo.of(&nodes[i], len(nodes)); n != nil {
			out = append(out, capacity.Node{Node: n, Requested: requested[n.Name]})
		}
	}
	return out
}

// nodeMemo keeps each Node as placement reads it (nodeOf) across plans,
// by name and resourceVersion (the watch's Nodes change only with it). It
// is dropped whole when it holds twice the Nodes there are. The zero
// value is ready; a nil one keeps nothing.
type nodeMemo struct {
	m atomic.Pointer[sync.Map]
	n atomic.Int64
}

type memoNode struct {
	resourceVersion string
	node            *corev1.Node
}

func (m *nodeMemo) of(u *unstructured.Unstructured, nodes int) *corev1.Node {
	rv := u.GetResourceVersion()
	if m == nil || rv == "" {
		return nodeOf(u)
	}
	byName := m.m.Load()
	if byName == nil || m.n.Load() > int64(2*nodes+64) {
		byName = &sync.Map{}
		m.m.Store(byName)
		m.n.Store(0)
	}
	if e, ok := byName.Load(u.GetName()); ok && e.(memoNode).resourceVersion == rv {
		return e.(memoNode).node
	}
	n := nodeOf(u)
	if n != nil {
		if _, had := byName.Swap(u.GetName(), memoNode{rv, n}); !had {
			m.n.Add(1)
		}
	}
	return n
}

// nodeOf reads what placement needs of a Node without the generic
// converter, which costs milliseconds on 500 nodes per plan.
func nodeOf(u *unstructured.Unstructured) *corev1.Node {
	n := &corev1.Node{}
	n.Name, n.Labels = u.GetName(), u.GetLabels()
	n.Spec.Unschedulable, _, _ = unstructured.NestedBool(u.Object, "spec", "unschedulable")
	if taints, found, _ := unstructured.NestedSlice(u.Object, "spec", "taints"); found {
		spec := &corev1.NodeSpec{}
		if runtime.DefaultUnstructuredConverter.FromUnstructured(map[string]interface{}{"taints": taints}, spec) != nil {
			return nil
		}
		n.Spec.Taints = spec.Taints
	}
	alloc, _, _ := unstructured.NestedMap(u.Object, "status", "allocatable")
	n.Status.Allocatable = make(corev1.ResourceList, len(alloc))
	for name, v := range alloc {
		s, _ := v.(string)
		q, err := resource.ParseQuantity(s)
		if err != nil {
			return nil
		}
		n.Status.Allocatable[corev1.ResourceName(name)] = q
	}
	return n
}

// maxUnavailable is how many of the pool's nodes the MachineConfig
// operator updates at once: spec.maxUnavailable (a count or a percentage,
// rounded down), at least 1.
func maxUnavailable(pool *unstructured.Unstructured, nodes int) int {
	raw, found, _ := unstructured.NestedFieldNoCopy(pool.Object, "spec", "maxUnavailable")
	if !found || raw == nil {
		return 1
	}
	var v intstr.IntOrString
	switch x := raw.(type) {
	case int64:
		v = intstr.FromInt(int(x))
	case float64:
		v = intstr.FromInt(int(x))
	case string:
		v = intstr.FromString(x)
	default:
		return 1
	}
	n, err := intstr.GetScaledValueFromIntOrPercent(&v, nodes, false)
	if err != nil || n < 1 {
		return 1
	}
	return n
}

// capacityNote is what an item's message says of capacity: each pool's
// result, e.g. "; capacity: pool worker fits: worst node n2 moves 96 GiB,
// 140 GiB free elsewhere"; nothing when no VM migrates.
func capacityNote(reboots []v1alpha1.PoolReboot) string {
	var parts []string
	for _, r := range reboots {
		if r.Capacity != "" && !strings.HasPrefix(r.Capacity, noLaunchers) {
			parts = append(parts, "pool "+r.Pool+" "+r.Capacity)
		}
	}
	if len(parts) == 0 {
		return ""
	}
	return "; capacity: " + strings.Join(parts, "; ")
}
