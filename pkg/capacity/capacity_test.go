package capacity

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func node(name string, memGiB int64, opts ...func(*corev1.Node)) *corev1.Node {
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{}}}
	n.Status.Allocatable = corev1.ResourceList{
		corev1.ResourceCPU:    resource.MustParse("64"),
		corev1.ResourceMemory: *resource.NewQuantity(memGiB<<30, resource.BinarySI),
		corev1.ResourcePods:   resource.MustParse("250"),
	}
	for _, o := range opts {
		o(n)
	}
	return n
}

func withLabel(k string) func(*corev1.Node) {
	return func(n *corev1.Node) { n.Labels[k] = "true" }
}

func withGPU(name string) func(*corev1.Node) {
	return func(n *corev1.Node) { n.Status.Allocatable[corev1.ResourceName(name)] = resource.MustParse("1") }
}

func withTaint(key string) func(*corev1.Node) {
	return func(n *corev1.Node) {
		n.Spec.Taints = append(n.Spec.Taints, corev1.Taint{Key: key, Effect: corev1.TaintEffectNoSchedule})
	}
}

func unschedulable(n *corev1.Node) { n.Spec.Unschedulable = true }

func vm(name, on string, memGiB int64, opts ...func(*corev1.Pod)) VM {
	pod := &corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{{Resources: corev1.ResourceRequirements{
		Requests: corev1.ResourceList{
			corev1.ResourceCPU:    resource.MustParse("1"),
			corev1.ResourceMemory: *resource.NewQuantity(memGiB<<30, resource.BinarySI),
		}}}}}}
	for _, o := range opts {
		o(pod)
	}
	return VM{Namespace: "default", Name: name, Node: on, Launcher: pod}
}

func needs(res string) func(*corev1.Pod) {
	return func(p *corev1.Pod) {
		p.Spec.Containers[0].Resources.Requests[corev1.ResourceName(res)] = resource.MustParse("1")
	}
}

func selects(k string) func(*corev1.Pod) {
	return func(p *corev1.Pod) {
		if p.Spec.NodeSelector == nil {
			p.Spec.NodeSelector = map[string]string{}
		}
		p.Spec.NodeSelector[k] = "true"
	}
}

func overhead(mib int64) func(*corev1.Pod) {
	return func(p *corev1.Pod) {
		p.Spec.Overhead = corev1.ResourceList{corev1.ResourceMemory: *resource.NewQuantity(mib<<20, resource.BinarySI)}
	}
}

// cluster makes Nodes whose Requested is what the given VMs ask.
func cluster(nodes []*corev1.Node, vms []VM) []Node {
	out := make([]Node, 0, len(nodes))
	for _, n := range nodes {
		var on []VM
		for _, v := range vms {
			if v.Node == n.Name {
				on = append(on, v)
			}
		}
		out = append(out, Node{Node: n, Requested: RequestsOf(launchers(on))})
	}
	return out
}

func TestSimulate(t *testing.T) {
	three := func(opts ...func(*corev1.Node)) []*corev1.Node {
		return []*corev1.Node{node("n1", 64, opts...), node("n2", 64, opts...), node("n3", 64, opts...)}
	}
	pool := Rollout{Pool: "worker", Nodes: []string{"n1", "n2", "n3"}, MaxUnavailable: 1}
	tests := []struct {
		name    string
		nodes   []*corev1.Node
		vms     []VM
		rollout Rollout
		summary string
		unfit   []string
	}{{
		name:    "no VM migrates",
		nodes:   three(),
		rollout: pool,
		summary: "fits: no VM migrates",
	}, {
		name:  "150 GiB of VMs on three 64 GiB nodes: the first drain finds no room",
		nodes: three(),
		vms:   []VM{vm("a", "n1", 48), vm("b", "n2", 48), vm("c", "n3", 54)},
		// n1's 48 GiB: 16 and 10 GiB free on n2 and n3; a stays on n1
		// (its drain would wait), so no later drain finds room either.
		rollout: pool,
		unfit: []string{
			"default/a: 48 GiB, at most 16 GiB free on a node it may run on",
			"default/b: 48 GiB, at most 16 GiB free on a node it may run on",
			"default/c: 54 GiB, at most 16 GiB free on a node it may run on",
		},
	}, {
		name:    "one VM fewer: each drain fits, VMs stay where they moved",
		nodes:   three(),
		vms:     []VM{vm("b", "n2", 48), vm("c", "n3", 54)},
		rollout: pool,
		summary: "fits: worst node n3 moves 54 GiB, 80 GiB free elsewhere",
	}, {
		name:    "the launcher's overhead counts",
		nodes:   []*corev1.Node{node("n1", 64), node("n2", 64)},
		vms:     []VM{vm("a", "n1", 32, overhead(512)), vm("b", "n2", 32)},
		rollout: Rollout{Pool: "worker", Nodes: []string{"n1"}},
		unfit:   []string{"default/a: 32.5 GiB, at most 32 GiB free on a node it may run on"},
	}, {
		name:    "a GPU no other node has",
		nodes:   []*corev1.Node{node("n1", 64, withGPU("nvidia.com/A100")), node("n2", 64), node("n3", 64, withGPU("nvidia.com/T4"))},
		vms:     []VM{vm("db-0", "n1", 8, needs("nvidia.com/A100"))},
		rollout: Rollout{Pool: "worker", Nodes: []string{"n1"}},
		unfit:   []string{"default/db-0: 8 GiB, no node with `nvidia.com/A100` left"},
	}, {
		name:    "a GPU another node has",
		nodes:   []*corev1.Node{node("n1", 64, withGPU("nvidia.com/A100")), node("n2", 64, withGPU("nvidia.com/A100"))},
		vms:     []VM{vm("db-0", "n1", 8, needs("nvidia.com/A100"))},
		rollout: Rollout{Pool: "worker", Nodes: []string{"n1"}},
		summary: "fits: worst node n1 moves 8 GiB, 64 GiB free elsewhere",
	}, {
		name:    "a CPU model on no other node",
		nodes:   []*corev1.Node{node("n1", 64, withLabel("cpu-model.node.kubevirt.io/Icelake-Server")), node("n2", 64, withLabel("cpu-model.node.kubevirt.io/Skylake-Server"))},
		vms:     []VM{vm("legacy", "n1", 4, selects("cpu-model.node.kubevirt.io/Icelake-Server"))},
		rollout: Rollout{Pool: "worker", Nodes: []string{"n1"}},
		unfit:   []string{"default/legacy: its CPU model Icelake-Server is on no other node"},
	}, {
		name:    "a taint the VM does not tolerate",
		nodes:   []*corev1.Node{node("n1", 64), node("n2", 64, withTaint("dedicated"))},
		vms:     []VM{vm("a", "n1", 4)},
		rollout: Rollout{Pool: "worker", Nodes: []string{"n1"}},
		unfit:   []string{"default/a: the other nodes it may run on have a taint it does not tolerate (dedicated)"},
	}, {
		name:    "an unschedulable node takes nothing",
		nodes:   []*corev1.Node{node("n1", 64), node("n2", 64, unschedulable)},
		vms:     []VM{vm("a", "n1", 4)},
		rollout: Rollout{Pool: "worker", Nodes: []string{"n1"}},
		unfit:   []string{"default/a: no other node is schedulable"},
	}, {
		name:    "two at a time: the nodes draining together take nothing from each other",
		nodes:   []*corev1.Node{node("n1", 64), node("n2", 64), node("n3", 16)},
		vms:     []VM{vm("a", "n1", 20), vm("b", "n2", 8)},
		rollout: Rollout{Pool: "worker", Nodes: []string{"n1", "n2", "n3"}, MaxUnavailable: 2},
		unfit:   []string{"default/a: 20 GiB, at most 16 GiB free on a node it may run on"},
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			res := Simulate(cluster(tc.nodes, tc.vms), tc.vms, tc.rollout)
			var unfit []string
			for _, u := range res.Unfit {
				unfit = append(unfit, u.VM.String()+": "+u.Reason)
			}
			if strings.Join(unfit, "\n") != strings.Join(tc.unfit, "\n") {
				t.Errorf("unfit:\n%s\nwant:\n%s", strings.Join(unfit, "\n"), strings.Join(tc.unfit, "\n"))
			}
			if tc.summary != "" && res.Summary() != tc.summary {
				t.Errorf("Summary() = %q, want %q", res.Summary(), tc.summary)
			}
			if res.Fits() != (len(tc.unfit) == 0) {
				t.Errorf("Fits() = %v with unfit %v", res.Fits(), unfit)
			}
		})
	}
}

func launchers(vms []VM) []*corev1.Pod {
	out := make([]*corev1.Pod, 0, len(vms))
	for _, v := range vms {
		out = append(out, v.Launcher)
	}
	return out
}

func TestSummaryNamesAtMostFive(t *testing.T) {
	var unfit []Unfit
	for i := 0; i < 8; i++ {
		unfit = append(unfit, Unfit{VM: VM{Namespace: "default", Name: string(rune('a' + i))}, Reason: "r"})
	}
	got := Result{Unfit: unfit}.Summary()
	if want := "does not fit: default/a (r); default/b (r); default/c (r); default/d (r); default/e (r); … (3 more)"; got != want {
		t.Errorf("summary = %q, want %q", got, want)
	}
}
