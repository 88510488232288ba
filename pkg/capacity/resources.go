package capacity

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// CPU model labels virt-controller puts in a launcher's node selector
// (kubevirt pkg/virt-controller/services/nodeselectorrenderer.go): the
// model a VM needs, and for a migration target the host model it runs on.
var cpuModelLabels = []string{"cpu-model.node.kubevirt.io/", "cpu-model-migration.node.kubevirt.io/", "host-model-cpu.node.kubevirt.io/"}

// requestsOfPod is what scheduling pod asks of a node: the larger of its
// containers' sum and any init container, plus its overhead and one pod.
func requestsOfPod(pod *corev1.Pod) corev1.ResourceList {
	out := corev1.ResourceList{corev1.ResourcePods: *resource.NewQuantity(1, resource.DecimalSI)}
	if pod == nil {
		return out
	}
	for _, c := range pod.Spec.Containers {
		add(out, c.Resources.Requests)
	}
	for _, c := range pod.Spec.InitContainers {
		for name, q := range c.Resources.Requests {
			if cur, ok := out[name]; !ok || q.Cmp(cur) > 0 {
				out[name] = q.DeepCopy()
			}
		}
	}
	add(out, pod.Spec.Overhead)
	return out
}

// RequestsOf is what the pods ask together (a node's Requested).
func RequestsOf(pods []*corev1.Pod) corev1.ResourceList {
	out := corev1.ResourceList{}
	for _, p := range pods {
		add(out, requestsOfPod(p))
	}
	return out
}

func add(into, more corev1.ResourceList) {
	for name, q := range more {
		cur := into[name]
		cur.Add(q)
		into[name] = cur
	}
}

// whyNot says why a VM of class c found no node: the nodes it may run on
// (selector, affinity, taints) and then the resource they lack.
func (s *state) whyNot(c *class) string {
	var targets []*nodeState
	for _, n := range s.nodes {
		if n.target() {
			targets = append(targets, n)
		}
	}
	if len(targets) == 0 {
		return "no other node is schedulable"
	}
	var allowed []*nodeState
	taint := ""
	for _, n := range targets {
		switch why := allows(n, c); {
		case why == "":
			allowed = append(allowed, n)
		case strings.HasPrefix(why, "taint "):
			taint = strings.TrimPrefix(why, "taint ")
		}
	}
	if len(allowed) == 0 {
		return noNodeAllowed(c, targets, taint)
	}
	return s.noRoom(c, allowed)
}

func noNodeAllowed(c *class, targets []*nodeState, taint string) string {
	if model := missingCPUModel(c.launcher, targets); model != "" {
		return fmt.Sprintf("its CPU model %s is on no other node", model)
	}
	if taint != "" {
		return fmt.Sprintf("the other nodes it may run on have a taint it does not tolerate (%s)", taint)
	}
	return "no other node matches its node selector or affinity"
}

// missingCPUModel is the CPU model label of pod's node selector that no
// target carries.
func missingCPUModel(pod *corev1.Pod, targets []*nodeState) string {
	if pod == nil {
		return ""
	}
	for key := range pod.Spec.NodeSelector {
		if !hasCPUModelPrefix(key) {
			continue
		}
		found := false
		for _, n := range targets {
			if _, ok := n.Labels[key]; ok {
				found = true
				break
			}
		}
		if !found {
			return key[strings.Index(key, "/")+1:]
		}
	}
	return ""
}

func hasCPUModelPrefix(key string) bool {
	for _, prefix := range cpuModelLabels {
		if strings.HasPrefix(key, prefix) {
			return true
		}
	}
	return false
}

// noRoom names the resource the allowed nodes lack: one that none of them
// has at all (a GPU, a host device), else the one the roomiest lacks.
func (s *state) noRoom(c *class, allowed []*nodeState) string {
	size := GiB(c.req[s.memory])
	for i, want := range c.req {
		if want > 0 && isExtended(s.names[i]) && !anyHas(allowed, s.names[i]) {
			return fmt.Sprintf("%s, no node with `%s` left", size, s.names[i])
		}
	}
	best := allowed[0]
	for _, n := range allowed[1:] {
		if n.free[s.memory] > best.free[s.memory] {
			best = n
		}
	}
	if c.req[s.memory] > best.free[s.memory] {
		return fmt.Sprintf("%s, at most %s free on a node it may run on", size, GiB(max(best.free[s.memory], 0)))
	}
	for i, want := range c.req {
		if want > 0 && (best.free[i] == unset || best.free[i] < want) {
			return fmt.Sprintf("%s, needs %s %s; the node with the most free memory (%s) has %s",
				size, amount(s.names[i], want), s.names[i], best.Name, amount(s.names[i], max(best.free[i], 0)))
		}
	}
	return size + ", no single node has room for all it asks"
}

func amount(name corev1.ResourceName, v int64) string {
	if name == corev1.ResourceCPU {
		return resource.NewMilliQuantity(v, resource.DecimalSI).String()
	}
	return resource.NewQuantity(v, resource.DecimalSI).String()
}

// isExtended: not CPU, memory, huge pages, storage or the pod count, but a
// device plugin's or an operator's resource.
func isExtended(name corev1.ResourceName) bool {
	switch {
	case name == corev1.ResourceCPU, name == corev1.ResourceMemory, name == corev1.ResourcePods,
		name == corev1.ResourceEphemeralStorage, strings.HasPrefix(string(name), corev1.ResourceHugePagesPrefix):
		return false
	}
	return strings.Contains(string(name), "/")
}

func anyHas(nodes []*nodeState, name corev1.ResourceName) bool {
	for _, n := range nodes {
		if q, ok := n.Status.Allocatable[name]; ok && !q.IsZero() {
			return true
		}
	}
	return false
}
