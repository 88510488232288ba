package capacity

import (
	"encoding/json"
	"math"
	"sort"
	"strings"
	"unique"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	corev1helpers "k8s.io/component-helpers/scheduling/corev1"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"
	"k8s.io/klog/v2"
)

// state is the cluster as the simulation goes. Resources are vectors
// indexed by s.names. VMs that ask the same and may run on the same nodes
// (a class: 10 000 VMs made from a few templates have a few) are placed
// together, as many at once as a node holds, and the nodes a class may
// run on are computed once per distinct set of constraints.
type state struct {
	// names and index are the Classified's, shared.
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
	// vms are the migrating VMs on it now, by class.
	vms      []chunk
	draining bool
}

// chunk is VMs of one class on one node.
type chunk struct {
	class *class
	vms   []*VM // the caller's, not copied: 10 000 of them per plan
}

// add puts vms of class c on n. A new chunk keeps vms itself rather than
// a copy (10 000 VMs a plan), clipped: an append to the chunk then
// never writes into what follows vms in the caller's array.
func (n *nodeState) add(c *class, vms ...*VM) {
	for i := range n.vms {
		if n.vms[i].class == c {
			n.vms[i].vms = append(n.vms[i].vms, vms...)
			return
		}
	}
	n.vms = append(n.vms, chunk{class: c, vms: vms[:len(vms):len(vms)]})
}

// target: a node a migrating VM may go to now.
func (n *nodeState) target() bool { return !n.draining && !n.Spec.Unschedulable }

// class is what VMs of the same Demand share.
type class struct {
	demand *Demand
	req    amounts
	// launcher is one of its VMs' launchers: all place alike.
	launcher *corev1.Pod
	// affinity is the launcher's node selector and required node
	// affinity, parsed once rather than for every node.
	affinity nodeaffinity.RequiredNodeAffinity
}

// amounts are quantities by resource index (milli-units for CPU, units
// otherwise); unset means the node does not have the resource.
type amounts []int64

const unset = -1 << 62

// count is how many times a holds req.
func (a amounts) count(req amounts) int64 {
	n := int64(math.MaxInt64)
	for i, want := range req {
		if want <= 0 {
			continue
		}
		if a[i] == unset || a[i] < want {
			return 0
		}
		n = min(n, a[i]/want)
	}
	return n
}

// take takes req from a, times times.
func (a amounts) take(req amounts, times int64) {
	for i, want := range req {
		if want > 0 && a[i] != unset {
			a[i] -= want * times
		}
	}
}

func (a amounts) minus(vms []chunk) amounts {
	out := append(amounts(nil), a...)
	for _, c := range vms {
		out.take(c.class.req, int64(len(c.vms)))
	}
	return out
}

// Classified are migrating VMs sorted into classes, ready for any number
// of simulations: a pool's VMs change less often than the pods around them,
// which change what the nodes have free.
type Classified struct {
	names  []corev1.ResourceName
	index  map[corev1.ResourceName]int
	memory int
	// runs are VMs next to each other on one node and of one class (the
	// caller's VMs come node by node), added to their node at once.
	runs []run
}

type run struct {
	node  string
	class *class
	vms   []*VM
}

// Classify sorts vms into their classes; the result keeps vms (not
// copied) and neither it nor a simulation modifies them.
func Classify(vms []VM) *Classified {
	cv := &Classified{index: map[corev1.ResourceName]int{}}
	cv.memory = cv.indexOf(corev1.ResourceMemory)
	cv.indexOf(corev1.ResourcePods)
	// Each VM is only sorted into its class: what a class asks is read
	// once.
	classes := map[unique.Handle[string]]*class{}
	var ordered []*class
	all := make([]*VM, len(vms))
	start, runClass, runNode := 0, (*class)(nil), ""
	for i := range vms {
		v := &vms[i]
		all[i] = v
		d := v.Demand
		if d == nil {
			d = DemandOf(v.Launcher)
		}
		c := classes[d.id]
		if c == nil {
			c = &class{demand: d, launcher: v.Launcher}
			classes[d.id] = c
			ordered = append(ordered, c)
			for _, r := range d.Requests {
				cv.indexOf(r.Name)
			}
		}
		if c != runClass || v.Node != runNode {
			cv.addRun(runNode, runClass, all[start:i])
			start, runClass, runNode = i, c, v.Node
		}
	}
	cv.addRun(runNode, runClass, all[start:])
	for _, c := range ordered {
		if c.launcher != nil {
			c.affinity = nodeaffinity.GetRequiredNodeAffinity(c.launcher)
		}
		c.req = make(amounts, len(cv.names))
		c.req[cv.index[corev1.ResourcePods]] = 1
		for _, r := range c.demand.Requests {
			c.req[cv.index[r.Name]] += r.Value
		}
	}
	return cv
}

func (cv *Classified) addRun(node string, c *class, vms []*VM) {
	if len(vms) > 0 {
		cv.runs = append(cv.runs, run{node: node, class: c, vms: vms})
	}
}

func (cv *Classified) indexOf(name corev1.ResourceName) int {
	if i, ok := cv.index[name]; ok {
		return i
	}
	cv.index[name] = len(cv.names)
	cv.names = append(cv.names, name)
	return cv.index[name]
}

// newState places the classified VMs on nodes. The classes and their
// runs are shared with other simulations: only the nodes' states are its
// own.
func newState(nodes []Node, cv *Classified) *state {
	s := &state{names: cv.names, index: cv.index, memory: cv.memory, byName: make(map[string]*nodeState, len(nodes)), allowedBy: map[string][]*nodeState{}}
	states := make([]nodeState, len(nodes)) // one allocation, not 500
	s.nodes = make([]*nodeState, len(nodes))
	for i, n := range nodes {
		states[i].Node = n
		s.nodes[i] = &states[i]
		s.byName[n.Name] = &states[i]
	}
	for _, r := range cv.runs {
		if n := s.byName[r.node]; n != nil {
			n.add(r.class, r.vms...)
		}
	}
	for _, n := range s.nodes {
		n.free = s.free(n.Node)
		if _, limited := n.Status.Allocatable[corev1.ResourcePods]; !limited {
			n.free[s.index[corev1.ResourcePods]] = 1 << 40 // a node that states no pod limit
		}
		n.base = append(amounts(nil), n.free...)
		for _, c := range n.vms {
			for i, q := range c.class.req {
				if n.base[i] != unset {
					n.base[i] += q * int64(len(c.vms))
				}
			}
		}
	}
	return s
}

// free is what n's allocatable leaves after what its pods request;
// resources n does not have are unset.
func (s *state) free(n Node) amounts {
	out := make(amounts, len(s.names))
	for i, name := range s.names {
		q, ok := n.Status.Allocatable[name]
		if !ok {
			out[i] = unset
			continue
		}
		out[i] = value(name, q)
		if r, ok := n.Requested[name]; ok {
			out[i] -= value(name, r)
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

// allowed are the nodes c's launchers may run on by their selector,
// affinity and tolerations, whatever their room.
func (s *state) allowed(c *class) []*nodeState {
	if nodes, ok := s.allowedBy[c.demand.Key]; ok {
		return nodes
	}
	nodes := []*nodeState{}
	for _, n := range s.nodes {
		if allows(n, c) == "" {
			nodes = append(nodes, n)
		}
	}
	s.allowedBy[c.demand.Key] = nodes
	return nodes
}

// allows is "" when c's launchers may run on n, else why not.
func allows(n *nodeState, c *class) string {
	pod := c.launcher
	if pod == nil {
		return ""
	}
	if ok, _ := c.affinity.Match(n.Node.Node); !ok {
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
// Pods with the same key may run on the same nodes.
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
