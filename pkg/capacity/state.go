package capacity

import (
	"encoding/json"

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
	VM
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
	s := &state{index: map[corev1.ResourceName]int{}, byName: map[string]*nodeState{}, allowedBy: map[string][]*nodeState{}}
	s.memory = s.indexOf(corev1.ResourceMemory)
	s.indexOf(corev1.ResourcePods)
	reqs := make([]corev1.ResourceList, len(vms))
	for i, v := range vms {
		reqs[i] = requestsOfPod(v.Launcher)
		for name := range reqs[i] {
			s.indexOf(name)
		}
	}
	for _, n := range nodes {
		ns := &nodeState{Node: n, free: s.vector(subtract(n.Status.Allocatable, n.Requested), true)}
		if _, limited := n.Status.Allocatable[corev1.ResourcePods]; !limited {
			ns.free[s.index[corev1.ResourcePods]] = 1 << 40 // a node that states no pod limit
		}
		s.nodes = append(s.nodes, ns)
		s.byName[n.Name] = ns
	}
	for i, v := range vms {
		vs := &vmState{VM: v, req: s.vector(reqs[i], false), key: constraintsKey(v.Launcher)}
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

// constraintsKey identifies what decides where a pod may run.
func constraintsKey(pod *corev1.Pod) string {
	if pod == nil {
		return ""
	}
	b, _ := json.Marshal(struct {
		S map[string]string
		A *corev1.Affinity
		T []corev1.Toleration
	}{pod.Spec.NodeSelector, pod.Spec.Affinity, pod.Spec.Tolerations})
	return string(b)
}
