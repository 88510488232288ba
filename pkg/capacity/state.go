package capacity

import (
	"encoding/json"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	corev1helpers "k8s.io/component-helpers/scheduling/corev1"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"
	"k8s.io/klog/v2"
)

// state is the cluster as the simulation goes. Resources are vectors
// indexed by s.names, and the nodes a VM may run on are computed once per
// distinct set of constraints: 10 000 VMs share few of them.
type state struct {
	names  []corev1.ResourceName
	index  map[corev1.ResourceName]int
	memory int
	nodes  []*nodeState
	byName map[string]*nodeState
	// allowedBy caches, per constraints key, the nodes a pod may run on.
	allowedBy map[string][]*nodeState
}

type nodeState struct {
	Node
	// base is what the node has for the migrating VMs (allocatable less
	// what its other pods request); free is base less the VMs on it now.
	base, free amounts
	vms        []*vmState
	draining   bool
}

// target: a node a migrating VM may go to now.
func (n *nodeState) target() bool { return !n.draining && !n.Spec.Unschedulable }

type vmState struct {
	*VM // the caller's, not copied: 10 000 of them per plan
	req amounts
	// key identifies the VM's constraints (selector, affinity, tolerations).
	key string
}

// amounts are quantities by resource index (milli-units for CPU, units
// otherwise); unset means the node does not have the resource.
type amounts []int64

const unset = -1 << 62

func (a amounts) holds(req amounts) bool {
	for i, want := range req {
		if want > 0 && (a[i] == unset || a[i] < want) {
			return false
		}
	}
	return true
}

func (a amounts) take(req amounts) {
	for i, want := range req {
		if want > 0 && a[i] != unset {
			a[i] -= want
		}
	}
}

func (a amounts) minus(vms []*vmState) amounts {
	out := append(amounts(nil), a...)
	for _, v := range vms {
		out.take(v.req)
	}
	return out
}

func newState(nodes []Node, vms []VM) *state {
	s := &state{index: map[corev1.ResourceName]int{}, byName: make(map[string]*nodeState, len(nodes)), allowedBy: map[string][]*nodeState{}}
	s.memory = s.indexOf(corev1.ResourceMemory)
	s.indexOf(corev1.ResourcePods)
	for _, v := range vms {
		if v.Demand != nil {
			for _, r := range v.Demand.Requests {
				s.indexOf(r.Name)
			}
			continue
		}
		s.indexResources(v.Launcher)
	}
	for _, n := range nodes {
		ns := &nodeState{Node: n, free: s.vector(subtract(n.Status.Allocatable, n.Requested), true)}
		if _, limited := n.Status.Allocatable[corev1.ResourcePods]; !limited {
			ns.free[s.index[corev1.ResourcePods]] = 1 << 40 // a node that states no pod limit
		}
		s.nodes = append(s.nodes, ns)
		s.byName[n.Name] = ns
	}
	// One allocation for every VM's state and one for their vectors.
	states := make([]vmState, len(vms))
	reqs := make(amounts, len(vms)*len(s.names))
	for i, v := range vms {
		vs := &states[i]
		vs.VM, vs.req = &vms[i], reqs[i*len(s.names):(i+1)*len(s.names):(i+1)*len(s.names)]
		if d := v.Demand; d != nil {
			vs.req[s.index[corev1.ResourcePods]] = 1
			for _, r := range d.Requests {
				vs.req[s.index[r.Name]] += r.Value
			}
			vs.key = d.Key
		} else {
			s.podVector(v.Launcher, vs.req)
			vs.key = v.ConstraintsKey
		}
		if vs.key == "" {
			vs.key = ConstraintsKey(v.Launcher)
		}
		if n := s.byName[v.Node]; n != nil {
			n.vms = append(n.vms, vs)
		}
	}
	for _, n := range s.nodes {
		n.base = append(amounts(nil), n.free...)
		for _, v := range n.vms {
			for i, q := range v.req {
				if n.base[i] != unset {
					n.base[i] += q
				}
			}
		}
	}
	return s
}

// indexResources indexes the resources pod asks.
func (s *state) indexResources(pod *corev1.Pod) {
	if pod == nil {
		return
	}
	for _, c := range pod.Spec.Containers {
		for name := range c.Resources.Requests {
			s.indexOf(name)
		}
	}
	for _, c := range pod.Spec.InitContainers {
		for name := range c.Resources.Requests {
			s.indexOf(name)
		}
	}
	for name := range pod.Spec.Overhead {
		s.indexOf(name)
	}
}

// podVector writes into out what pod asks of a node, as requestsOfPod
// says, without building a ResourceList.
func (s *state) podVector(pod *corev1.Pod, out amounts) {
	out[s.index[corev1.ResourcePods]] = 1
	if pod == nil {
		return
	}
	for _, c := range pod.Spec.Containers {
		for name, q := range c.Resources.Requests {
			out[s.index[name]] += value(name, q)
		}
	}
	for _, c := range pod.Spec.InitContainers {
		for name, q := range c.Resources.Requests {
			if i := s.index[name]; value(name, q) > out[i] {
				out[i] = value(name, q)
			}
		}
	}
	for name, q := range pod.Spec.Overhead {
		out[s.index[name]] += value(name, q)
	}
}

func (s *state) indexOf(name corev1.ResourceName) int {
	if i, ok := s.index[name]; ok {
		return i
	}
	s.index[name] = len(s.names)
	s.names = append(s.names, name)
	return s.index[name]
}

// vector reads l into amounts; resources l lacks are unset when missing
// says so (a node without them), else zero (a pod not asking them).
func (s *state) vector(l corev1.ResourceList, missingUnset bool) amounts {
	out := make(amounts, len(s.names))
	for i, name := range s.names {
		q, ok := l[name]
		switch {
		case ok:
			out[i] = value(name, q)
		case missingUnset:
			out[i] = unset
		}
	}
	return out
}

func value(name corev1.ResourceName, q resource.Quantity) int64 {
	if name == corev1.ResourceCPU {
		return q.MilliValue()
	}
	return q.Value()
}

// allowed are the nodes v's launcher may run on by its selector, affinity
// and tolerations, whatever their room.
func (s *state) allowed(v *vmState) []*nodeState {
	if nodes, ok := s.allowedBy[v.key]; ok {
		return nodes
	}
	nodes := []*nodeState{}
	for _, n := range s.nodes {
		if allows(n, v.Launcher) == "" {
			nodes = append(nodes, n)
		}
	}
	s.allowedBy[v.key] = nodes
	return nodes
}

// allows is "" when pod may run on n, else why not.
func allows(n *nodeState, pod *corev1.Pod) string {
	if pod == nil {
		return ""
	}
	if ok, _ := nodeaffinity.GetRequiredNodeAffinity(pod).Match(n.Node.Node); !ok {
		return "selector"
	}
	noSchedule := func(t *corev1.Taint) bool {
		return t.Effect == corev1.TaintEffectNoSchedule || t.Effect == corev1.TaintEffectNoExecute
	}
	if t, untolerated := corev1helpers.FindMatchingUntoleratedTaint(klog.Background(), n.Spec.Taints, pod.Spec.Tolerations, noSchedule, false); untolerated {
		return "taint " + t.Key
	}
	return ""
}

// ConstraintsKey identifies what decides where a pod may run: its node
// selector, required node affinity and NoSchedule/NoExecute tolerations.
// Pods with the same key may run on the same nodes; a cache may compute it
// once per pod (VM.ConstraintsKey) rather than per simulation.
func ConstraintsKey(pod *corev1.Pod) string {
	if pod == nil {
		return ""
	}
	var b strings.Builder
	keys := make([]string, 0, len(pod.Spec.NodeSelector))
	for k := range pod.Spec.NodeSelector {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		b.WriteString(k + "=" + pod.Spec.NodeSelector[k] + "\x00")
	}
	b.WriteString("\x01")
	for _, t := range pod.Spec.Tolerations {
		b.WriteString(t.Key + "\x00" + string(t.Operator) + "\x00" + t.Value + "\x00" + string(t.Effect) + "\x00")
	}
	if a := pod.Spec.Affinity; a != nil && a.NodeAffinity != nil && a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution != nil {
		j, _ := json.Marshal(a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution)
		b.WriteString("\x01")
		b.Write(j)
	}
	return b.String()
}
