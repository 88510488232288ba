// Package capacity answers whether the VMs a pool's rollout live-migrates
// find room: it simulates the drains in the order the rollout takes them
// and places every migrating VM's virt-launcher pod on the nodes that stay
// schedulable, first fit, largest memory first. VMs that ask the same and
// may run on the same nodes are placed together, as many on a node as it
// holds: 10 000 VMs made from a few templates cost a few placements per
// drain, not 10 000.
//
// The model is the scheduler's filters that decide most real failures:
// resource requests (CPU, memory with the launcher's overhead, huge
// pages, extended resources such as GPUs and host devices, the pod
// count), the node selector and required node affinity (which carry the
// CPU model a VM needs, cpu-model.node.kubevirt.io/*), and NoSchedule /
// NoExecute taints against the pod's tolerations. It ignores inter-pod
// affinity and topology spread, volume topology, the CPU manager's
// exclusive pool and NUMA alignment, the order in which the MachineConfig
// operator really picks nodes (the caller gives one), and other pools
// draining at the same time; a VM it places may still fail to migrate for
// those. docs/disruption.md says the same to administrators.
package capacity

import (
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"unique"

	corev1 "k8s.io/api/core/v1"
)

// Node is a node of the cluster and what its pods request already.
type Node struct {
	*corev1.Node
	// Requested is the sum of the requests of the pods running on it
	// (the VMs' launchers included).
	Requested corev1.ResourceList
}

// VM is a VM that live-migrates when its node drains.
type VM struct {
	Namespace, Name string
	// Node is where it runs now.
	Node string
	// Launcher is its virt-launcher pod: requests, node selector,
	// affinity and tolerations; a migration target pod asks the same.
	Launcher *corev1.Pod
	// Demand is DemandOf(Launcher) when the caller keeps it (nil:
	// computed here).
	Demand *Demand
}

// Demand is what a launcher asks of a node, resolved once per pod rather
// than in every simulation: its requests as the scheduler sums them
// (containers added, each init container's taken when larger, the
// overhead added; CPU in millicores) and its ConstraintsKey.
type Demand struct {
	Requests []Request
	Key      string
	// id is the same for equal demands: their VMs are placed together.
	id unique.Handle[string]
}

// Request is an amount of one resource.
type Request struct {
	Name  corev1.ResourceName
	Value int64
}

// DemandOf resolves what pod asks.
func DemandOf(pod *corev1.Pod) *Demand {
	d := &Demand{Key: ConstraintsKey(pod)}
	if pod == nil {
		d.id = demandID(d)
		return d
	}
	sum := map[corev1.ResourceName]int64{}
	for _, c := range pod.Spec.Containers {
		for name, q := range c.Resources.Requests {
			sum[name] += value(name, q)
		}
	}
	for _, c := range pod.Spec.InitContainers {
		for name, q := range c.Resources.Requests {
			sum[name] = max(sum[name], value(name, q))
		}
	}
	for name, q := range pod.Spec.Overhead {
		sum[name] += value(name, q)
	}
	for name, v := range sum {
		d.Requests = append(d.Requests, Request{Name: name, Value: v})
	}
	sort.Slice(d.Requests, func(i, j int) bool { return d.Requests[i].Name < d.Requests[j].Name })
	d.id = demandID(d)
	return d
}

func demandID(d *Demand) unique.Handle[string] {
	var b strings.Builder
	for _, r := range d.Requests {
		b.WriteString(string(r.Name) + "=" + strconv.FormatInt(r.Value, 10) + "\x00")
	}
	b.WriteString("\x02" + d.Key)
	return unique.Make(b.String())
}

func (v VM) String() string { return v.Namespace + "/" + v.Name }

// Rollout is the order in which a pool's nodes drain.
type Rollout struct {
	Pool string
	// Nodes in the order they drain.
	Nodes []string
	// MaxUnavailable nodes drain at once (at least 1).
	MaxUnavailable int
}

// Result is the answer for one pool.
type Result struct {
	Pool string
	// Worst is the drain that moves the most memory, Moved that memory
	// and Free the memory free on the nodes that stay schedulable then.
	Worst       []string
	Moved, Free int64
	Unfit       []Unfit
	movedAny    bool
}

// Unfit is a VM that finds no node when its node drains, and why.
type Unfit struct {
	VM     VM
	Reason string
	// on is the node it stays on.
	on string
}

// Fits is true when every migrating VM found a node.
func (r Result) Fits() bool { return len(r.Unfit) == 0 }

// maxNamed bounds the VMs a summary names.
const maxNamed = 5

// Summary says it in a line, e.g. "fits: worst node n2 moves 96 GiB,
// 140 GiB free elsewhere".
func (r Result) Summary() string {
	if !r.Fits() {
		parts := make([]string, 0, min(len(r.Unfit), maxNamed))
		for _, u := range r.Unfit[:min(len(r.Unfit), maxNamed)] {
			parts = append(parts, fmt.Sprintf("%s (%s)", u.VM, u.Reason))
		}
		if more := len(r.Unfit) - len(parts); more > 0 {
			// Each is in the plan's vmImpacts; a message stays short.
			parts = append(parts, fmt.Sprintf("… (%d more)", more))
		}
		return "does not fit: " + strings.Join(parts, "; ")
	}
	if !r.movedAny {
		return "fits: no VM migrates"
	}
	return fmt.Sprintf("fits: worst %s %s moves %s, %s free elsewhere",
		plural(len(r.Worst), "node", "nodes"), strings.Join(r.Worst, ", "), GiB(r.Moved), GiB(r.Free))
}

// Simulate drains rollout's nodes batch by batch; the VMs of a batch move
// to the other schedulable nodes and stay there (a drained node comes back
// empty after its reboot). A VM that finds no node stays where it was
// (its drain would wait for it).
func Simulate(nodes []Node, vms []VM, rollout Rollout) Result {
	return Classify(vms).Simulate(nodes, rollout)
}

// Simulate is Simulate of the classified VMs.
func (cv *Classified) Simulate(nodes []Node, rollout Rollout) Result {
	s := newState(nodes, cv)
	res := Result{Pool: rollout.Pool}
	step := max(rollout.MaxUnavailable, 1)
	for i := 0; i < len(rollout.Nodes); i += step {
		s.drain(rollout.Nodes[i:min(i+step, len(rollout.Nodes))], &res)
	}
	return res
}

// drain moves the VMs of batch. The batch that moves the most memory is
// the result's worst, with the memory free then on the nodes the VMs may
// go to (summed only for such a batch: every node for each of 500
// batches costs more than placing the VMs).
func (s *state) drain(batch []string, res *Result) {
	moving, moved := s.evict(batch)
	res.movedAny = res.movedAny || moved > 0
	if moved > res.Moved || res.Worst == nil {
		var free int64
		for _, n := range s.nodes {
			if n.target() {
				free += n.free[s.memory]
			}
		}
		res.Worst, res.Moved, res.Free = batch, moved, free
	}
	// Largest memory first; the VMs of a class go together.
	sort.SliceStable(moving, func(i, j int) bool { return moving[i].class.req[s.memory] > moving[j].class.req[s.memory] })
	for _, l := range moving {
		s.place(l)
		s.keepUnfit(l, res)
	}
	for _, name := range batch {
		if n := s.byName[name]; n != nil {
			// Back after its reboot with the VMs that could not leave.
			n.draining = false
			n.free = n.base.minus(n.vms)
		}
	}
}

// evict marks the nodes of batch draining and takes their VMs off them:
// the VMs leaving, by class, and the memory they move.
func (s *state) evict(batch []string) (moving []*leaving, moved int64) {
	for _, name := range batch {
		n := s.byName[name]
		if n == nil {
			continue
		}
		n.draining = true
		for _, c := range n.vms {
			moved += c.class.req[s.memory] * int64(len(c.vms))
			i := slices.IndexFunc(moving, func(l *leaving) bool { return l.class == c.class })
			if i < 0 {
				i = len(moving)
				moving = append(moving, &leaving{class: c.class})
			}
			moving[i].from = append(moving[i].from, from{node: n, vms: c.vms})
		}
		n.vms = nil
	}
	return moving, moved
}

// keepUnfit puts the VMs of l that place found no room for back on their
// nodes, and notes them in res with why.
func (s *state) keepUnfit(l *leaving, res *Result) {
	if len(l.from) == 0 {
		return
	}
	why := s.whyNot(l.class)
	for _, f := range l.from {
		for _, v := range f.vms {
			res.Unfit = append(res.Unfit, Unfit{VM: *v, Reason: why, on: f.node.Name})
		}
		// Its drain would wait for them: they stay.
		f.node.add(l.class, f.vms...)
	}
}

// leaving are the VMs of a class that leave the nodes of a batch, by the
// node they leave.
type leaving struct {
	class *class
	from  []from
}

type from struct {
	node *nodeState
	vms  []*VM
}

// place puts l's VMs on the nodes that take them, first fit: each node as
// many as it holds, as placing them one by one would. What finds no node
// is left in l.from.
func (s *state) place(l *leaving) {
	for _, n := range s.allowed(l.class) {
		if len(l.from) == 0 {
			return
		}
		if !n.target() {
			continue
		}
		fits := n.free.count(l.class.req)
		for fits > 0 && len(l.from) > 0 {
			f := &l.from[0]
			k := int(min(fits, int64(len(f.vms))))
			n.free.take(l.class.req, int64(k))
			n.add(l.class, f.vms[:k]...)
			fits -= int64(k)
			if f.vms = f.vms[k:]; len(f.vms) == 0 {
				l.from = l.from[1:]
			}
		}
	}
}

// GiB formats bytes as GiB, one decimal when not whole.
func GiB(b int64) string {
	const gib = 1 << 30
	if b%gib == 0 {
		return fmt.Sprintf("%d GiB", b/gib)
	}
	return fmt.Sprintf("%.1f GiB", float64(b)/gib)
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
