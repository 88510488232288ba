package plan

import (
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kubevirt/virt-advisor/pkg/apis/advisor/v1alpha1"
	"github.com/kubevirt/virt-advisor/pkg/cluster"
	"github.com/kubevirt/virt-advisor/pkg/disruption"
)

// capNode is a worker Node with memGiB of allocatable memory and labels.
func capNode(name string, memGiB int64, labels map[string]string, allocatable map[string]interface{}) unstructured.Unstructured {
	l := map[string]interface{}{"node-role.kubernetes.io/worker": ""}
	for k, v := range labels {
		l[k] = v
	}
	alloc := map[string]interface{}{"cpu": "64", "memory": fmt.Sprintf("%dGi", memGiB), "pods": "250"}
	for k, v := range allocatable {
		alloc[k] = v
	}
	return unstructured.Unstructured{Object: map[string]interface{}{
		"apiVersion": "v1", "kind": "Node",
		"metadata": map[string]interface{}{"name": name, "labels": l},
		"status":   map[string]interface{}{"allocatable": alloc},
	}}
}

// capLauncher is a launcher asking memGiB of memory (and more).
func capLauncher(ns, vmi, node string, memGiB int64, more corev1.ResourceList, selector map[string]string) cluster.Launcher {
	req := corev1.ResourceList{corev1.ResourceMemory: *resource.NewQuantity(memGiB<<30, resource.BinarySI), corev1.ResourceCPU: resource.MustParse("1")}
	for k, v := range more {
		req[k] = v
	}
	return cluster.NewLauncher(ns, vmi, node, &corev1.Pod{Spec: corev1.PodSpec{
		NodeSelector: selector, Containers: []corev1.Container{{Name: "compute", Resources: corev1.ResourceRequirements{Requests: req}}},
	}})
}

func workerPool(maxUnavailable interface{}) *unstructured.Unstructured {
	spec := map[string]interface{}{"nodeSelector": map[string]interface{}{"matchLabels": map[string]interface{}{"node-role.kubernetes.io/worker": ""}}}
	if maxUnavailable != nil {
		spec["maxUnavailable"] = maxUnavailable
	}
	return &unstructured.Unstructured{Object: map[string]interface{}{"metadata": map[string]interface{}{"name": "worker"}, "spec": spec}}
}

// capReads are reads whose pods are the launchers given; each node's
// requests are its launchers'.
func capReads(launchers ...cluster.Launcher) *clusterReads {
	pods := cluster.PodRequests{Launchers: &cluster.LauncherIndex{}, Requested: map[string]corev1.ResourceList{}}
	for _, l := range launchers {
		pods.Launchers.Add(l)
		sum := pods.Requested[l.Node].DeepCopy()
		if sum == nil {
			sum = corev1.ResourceList{}
		}
		for k, q := range l.Pod.Spec.Containers[0].Resources.Requests {
			cur := sum[k]
			cur.Add(q)
			sum[k] = cur
		}
		pods.Requested[l.Node] = sum
	}
	return &clusterReads{pods: func() (cluster.PodRequests, error) { return pods, nil }, placement: &placementMemo{}}
}

func migrates(node, ns, name string) v1alpha1.VMImpact {
	return v1alpha1.VMImpact{Node: node, Namespace: ns, Name: name, Fate: v1alpha1.VMFateLiveMigrate}
}

func TestCheckCapacity(t *testing.T) {
	three := []unstructured.Unstructured{capNode("w1", 64, nil, nil), capNode("w2", 64, nil, nil), capNode("w3", 64, nil, nil)}
	cases := []struct {
		name      string
		nodes     []unstructured.Unstructured
		launchers []cluster.Launcher
		impacts   []v1alpha1.VMImpact
		pool      *unstructured.Unstructured
		capacity  string
		blocked   map[string]string // VM -> reason prefix
	}{
		{
			name:  "three 64 GiB nodes, 96 GiB of VMs: fits",
			nodes: three,
			launchers: []cluster.Launcher{capLauncher("default", "a", "w1", 32, nil, nil), capLauncher("default", "b", "w2", 32, nil, nil),
				capLauncher("default", "c", "w3", 32, nil, nil)},
			impacts:  []v1alpha1.VMImpact{migrates("w1", "default", "a"), migrates("w2", "default", "b"), migrates("w3", "default", "c")},
			capacity: "fits: worst node w2 moves 64 GiB, 96 GiB free elsewhere", // a went to w2 when w1 drained
		},
		{
			name:  "three 64 GiB nodes, 150 GiB of VMs: no 50 GiB VM finds room",
			nodes: three,
			launchers: []cluster.Launcher{capLauncher("default", "a", "w1", 50, nil, nil), capLauncher("default", "b", "w2", 50, nil, nil),
				capLauncher("default", "c", "w3", 50, nil, nil)},
			impacts:  []v1alpha1.VMImpact{migrates("w1", "default", "a"), migrates("w2", "default", "b"), migrates("w3", "default", "c")},
			capacity: "does not fit: default/a (50 GiB, at most 14 GiB free on a node it may run on); default/b (50 GiB, at most 14 GiB free on a node it may run on); default/c (50 GiB, at most 14 GiB free on a node it may run on)",
			blocked:  map[string]string{"default/a": "InsufficientCapacity: 50 GiB, at most 14 GiB free", "default/b": "InsufficientCapacity", "default/c": "InsufficientCapacity"},
		},
		{
			name: "a GPU on one node only: named",
			nodes: []unstructured.Unstructured{capNode("w1", 64, nil, map[string]interface{}{"nvidia.com/A100": "1"}),
				capNode("w2", 64, nil, nil), capNode("w3", 64, nil, nil)},
			launchers: []cluster.Launcher{capLauncher("default", "db-0", "w1", 16, corev1.ResourceList{"nvidia.com/A100": resource.MustParse("1")}, nil)},
			impacts:   []v1alpha1.VMImpact{migrates("w1", "default", "db-0")},
			capacity:  "does not fit: default/db-0 (16 GiB, no node with `nvidia.com/A100` left)",
			blocked:   map[string]string{"default/db-0": "InsufficientCapacity: 16 GiB, no node with `nvidia.com/A100` left"},
		},
		{
			name: "a CPU model on one node only: named",
			nodes: []unstructured.Unstructured{capNode("w1", 64, map[string]string{"cpu-model.node.kubevirt.io/Icelake-Server": "true"}, nil),
				capNode("w2", 64, nil, nil), capNode("w3", 64, nil, nil)},
			launchers: []cluster.Launcher{capLauncher("default", "old", "w1", 8, nil, map[string]string{"cpu-model.node.kubevirt.io/Icelake-Server": "true"})},
			impacts:   []v1alpha1.VMImpact{migrates("w1", "default", "old")},
			capacity:  "does not fit: default/old (its CPU model Icelake-Server is on no other node)",
			blocked:   map[string]string{"default/old": "InsufficientCapacity: its CPU model Icelake-Server is on no other node"},
		},
		{
			name:  "maxUnavailable 2 of 3: two nodes drain at once",
			nodes: three,
			pool:  workerPool(int64(2)),
			launchers: []cluster.Launcher{capLauncher("default", "a", "w1", 40, nil, nil), capLauncher("default", "b", "w2", 40, nil, nil),
				capLauncher("default", "c", "w3", 10, nil, nil)},
			impacts:  []v1alpha1.VMImpact{migrates("w1", "default", "a"), migrates("w2", "default", "b"), migrates("w3", "default", "c")},
			capacity: "does not fit: default/b (40 GiB, at most 14 GiB free on a node it may run on)",
			blocked:  map[string]string{"default/b": "InsufficientCapacity"},
		},
		{
			name:     "no launcher pod at all: unknown, said in the field only",
			nodes:    three,
			impacts:  []v1alpha1.VMImpact{migrates("w1", "default", "a")},
			capacity: "unknown: no virt-launcher pod on their nodes for the 1 migrating VMs",
		},
		{
			name:    "a VM that shuts down is not placed",
			nodes:   three,
			impacts: []v1alpha1.VMImpact{{Node: "w1", Namespace: "default", Name: "a", Fate: v1alpha1.VMFateShutDown, Reason: "EvictionStrategyNone"}},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			pool := tc.pool
			if pool == nil {
				pool = workerPool(nil)
			}
			r := &v1alpha1.PoolReboot{Pool: "worker", Drains: true, VMImpacts: tc.impacts}
			c := &disruption.Cluster{Pools: []unstructured.Unstructured{*pool}, Nodes: tc.nodes}
			reads := capReads(tc.launchers...)
			timed := 0
			reads.capacityChecked = func(time.Duration) { timed++ }
			if _, err := reads.checkCapacity(r, pool, c, nil, nil, false, true); err != nil {
				t.Fatal(err)
			}
			if r.Capacity != tc.capacity {
				t.Errorf("capacity = %q, want %q", r.Capacity, tc.capacity)
			}
			// The pairing and the simulation, when a VM has a launcher.
			if len(tc.launchers) > 0 && timed != 2 {
				t.Errorf("the check's computation timed %d times, want 2", timed)
			}
			for _, v := range r.VMImpacts {
				key := v.Namespace + "/" + v.Name
				want, blocked := tc.blocked[key]
				if blocked != (v.Fate == v1alpha1.VMFateBlocksDrain && strings.HasPrefix(v.Reason, ReasonInsufficientCapacity)) || !strings.HasPrefix(v.Reason, want) {
					t.Errorf("%s: fate %s reason %q, want blocked=%v reason prefix %q", key, v.Fate, v.Reason, blocked, want)
				}
			}
			if len(tc.blocked) > 0 && !strings.Contains(r.VMSummary, "block the drain") && !strings.Contains(r.VMSummary, "blocks the drain") {
				t.Errorf("summary %q does not name the VMs that block", r.VMSummary)
			}
		})
	}
}

func TestCapacityNote(t *testing.T) {
	got := capacityNote([]v1alpha1.PoolReboot{{Pool: "worker", Capacity: "fits: worst node w1 moves 32 GiB, 64 GiB free elsewhere"}, {Pool: "infra", Capacity: noLaunchers + "2 migrating VMs"}, {Pool: "gpu"}})
	if want := "; capacity: pool worker fits: worst node w1 moves 32 GiB, 64 GiB free elsewhere"; got != want {
		t.Errorf("note = %q, want %q", got, want)
	}
}

func TestMaxUnavailable(t *testing.T) {
	for _, tc := range []struct {
		v    interface{}
		want int
	}{{nil, 1}, {int64(3), 3}, {int64(0), 1}, {"50%", 5}, {"5%", 1}, {"bad", 1}} {
		if got := maxUnavailable(workerPool(tc.v), 10); got != tc.want {
			t.Errorf("maxUnavailable(%v) = %d, want %d", tc.v, got, tc.want)
		}
	}
}

// What the capacity check keeps across plans follows the objects: a Node
// by its resourceVersion.
func TestPlacementMemoFollowsChanges(t *testing.T) {
	var m placementMemo
	n := capNode("w1", 64, nil, nil)
	n.SetResourceVersion("1")
	first := m.nodesMemo().of(&n, 1)
	if again := m.nodesMemo().of(&n, 1); again != first {
		t.Errorf("the same Node read twice")
	}
	changed := capNode("w1", 32, map[string]string{"gpu": "a100"}, nil)
	changed.SetResourceVersion("2")
	if got := m.nodesMemo().of(&changed, 1); got == first || got.Labels["gpu"] != "a100" {
		t.Errorf("a changed Node read as before: %+v", got)
	}
	var none *placementMemo
	if none.nodesMemo().of(&n, 1) == nil {
		t.Errorf("a nil memo keeps nothing but still reads")
	}
}

// TestLauncherOf: each VM finds its launcher on its node whatever the
// order it comes in, and one without a launcher finds none.
func TestLauncherOf(t *testing.T) {
	on := []cluster.Launcher{{Namespace: "a", VMI: "x"}, {Namespace: "a", VMI: "y"}, {Namespace: "b", VMI: "x"}}
	for _, tt := range []struct {
		name  string
		order []string
	}{
		{"in the launchers' order", []string{"a/x", "a/y", "b/x"}},
		{"reversed", []string{"b/x", "a/y", "a/x"}},
		{"one missing between", []string{"a/x", "a/z", "b/x"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			next := 0
			for _, vm := range tt.order {
				ns, name, _ := strings.Cut(vm, "/")
				l := launcherOf(on, &next, ns, name)
				switch {
				case vm == "a/z" && l != nil:
					t.Errorf("a/z found %s/%s", l.Namespace, l.VMI)
				case vm != "a/z" && (l == nil || l.Namespace+"/"+l.VMI != vm):
					t.Errorf("%s found %+v", vm, l)
				}
			}
		})
	}
}
