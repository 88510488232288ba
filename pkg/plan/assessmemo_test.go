package plan

import (
	"context"
	"strings"
	"testing"
	"unsafe"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kubevirt/virt-advisor/pkg/apis/advisor/v1alpha1"
	"github.com/kubevirt/virt-advisor/pkg/cluster"
	"github.com/kubevirt/virt-advisor/pkg/kubevirt"
)

// cachedAssessReads are assessReads as a plan from synced caches makes
// them: the Nodes and VMIs at a cache's resourceVersion, pods of version
// podsVersion, the assessments kept in memo.
func cachedAssessReads(memo *assessMemo, podsVersion int64) *clusterReads {
	r := assessReads(3, 2, true)
	r.at.set(func(a *ReadAt) { a.Nodes, a.VMIs = "10", "11" })
	pods, _ := r.pods()
	pods.Version = podsVersion
	r.pods = func() (cluster.PodRequests, error) { return pods, nil }
	r.memo, r.podsCached = memo, func() bool { return podsVersion != 0 }
	return r
}

// TestAssessMemo: an assessment made from the same cache views, pools and
// change is reused; anything else it depends on computes it again, and
// live reads never reuse one.
func TestAssessMemo(t *testing.T) {
	change := mcChange{after: map[string]interface{}{"kernelArguments": []interface{}{"psi=1"}}}
	pool := workerPool(nil)
	pool.SetResourceVersion("5")
	cases := []struct {
		name string
		// second changes the reads or pools of the second plan.
		second func(r *clusterReads, pools []unstructured.Unstructured) []unstructured.Unstructured
		// live: the second plan reads live (no memo).
		live   bool
		reused bool
	}{
		{name: "same views: reused", reused: true},
		{name: "a new VMI view", second: func(r *clusterReads, p []unstructured.Unstructured) []unstructured.Unstructured {
			vmis, served, err := r.vmis()
			fresh := append([]kubevirt.VMI(nil), vmis...)
			r.vmis = func() ([]kubevirt.VMI, bool, error) { return fresh, served, err }
			return p
		}},
		{name: "a new Node view", second: func(r *clusterReads, p []unstructured.Unstructured) []unstructured.Unstructured {
			nodes, err := r.nodes()
			fresh := append([]unstructured.Unstructured(nil), nodes...)
			r.nodes = func() ([]unstructured.Unstructured, error) { return fresh, err }
			return p
		}},
		{name: "pods changed", second: func(r *clusterReads, p []unstructured.Unstructured) []unstructured.Unstructured {
			pods, _ := r.pods()
			pods.Version++
			r.pods = func() (cluster.PodRequests, error) { return pods, nil }
			return p
		}},
		{name: "the pool's status changed: reused", reused: true, second: func(r *clusterReads, p []unstructured.Unstructured) []unstructured.Unstructured {
			changed := *p[0].DeepCopy()
			changed.SetResourceVersion("6")
			_ = unstructured.SetNestedField(changed.Object, int64(3), "status", "machineCount")
			return []unstructured.Unstructured{changed}
		}},
		{name: "the pool's maxUnavailable changed", second: func(r *clusterReads, p []unstructured.Unstructured) []unstructured.Unstructured {
			changed := *p[0].DeepCopy()
			_ = unstructured.SetNestedField(changed.Object, int64(2), "spec", "maxUnavailable")
			return []unstructured.Unstructured{changed}
		}},
		{name: "a custom pool appeared", second: func(r *clusterReads, p []unstructured.Unstructured) []unstructured.Unstructured {
			custom := *workerPool(nil)
			custom.SetName("worker-cnv")
			return append(p, custom)
		}},
		{name: "pods read live", second: func(r *clusterReads, p []unstructured.Unstructured) []unstructured.Unstructured {
			r.podsCached = func() bool { return false }
			return p
		}},
		{name: "VMIs read live", second: func(r *clusterReads, p []unstructured.Unstructured) []unstructured.Unstructured {
			r.at.set(func(a *ReadAt) { a.VMIs = "" })
			return p
		}},
		{name: "the drain check reads live", live: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			memo := &assessMemo{}
			first := cachedAssessReads(memo, 7)
			pools := []unstructured.Unstructured{*pool}
			reboots := []v1alpha1.PoolReboot{{Pool: "worker", Nodes: 3}}
			if _, err := first.assess(context.Background(), reboots, pools, change, false); err != nil {
				t.Fatal(err)
			}
			if reboots[0].LiveMigrations != 3 {
				t.Fatalf("first plan: %d live migrations, want 3 (%s)", reboots[0].LiveMigrations, reboots[0].VMSummary)
			}

			second := cachedAssessReads(memo, 7)
			// The same views as the first plan's, with every VM made
			// non-migratable in place (which a cache never does): a reused
			// assessment still says they migrate.
			vmis, _, _ := first.vmis()
			for i := range vmis {
				vmis[i].Migratable, vmis[i].Reason = false, "HostDeviceNotLiveMigratable"
			}
			nodes, _ := first.nodes()
			pods, _ := first.pods()
			second.vmis = func() ([]kubevirt.VMI, bool, error) { return vmis, true, nil }
			second.nodes = func() ([]unstructured.Unstructured, error) { return nodes, nil }
			second.pods = func() (cluster.PodRequests, error) { return pods, nil }
			if tc.second != nil {
				pools = tc.second(second, pools)
			}
			if tc.live {
				second.memo = nil
			}
			again := []v1alpha1.PoolReboot{{Pool: "worker", Nodes: 3}}
			if _, err := second.assess(context.Background(), again, pools, change, false); err != nil {
				t.Fatal(err)
			}
			if reused := again[0].LiveMigrations == 3; reused != tc.reused {
				t.Errorf("reused = %v, want %v (%s)", reused, tc.reused, again[0].VMSummary)
			}
		})
	}
}

// TestCapacityInputsKept: after a change of pods only, the capacity check
// runs again, on the pool's node order and the VM-launcher pairs of the
// plan before while no launcher changed; a launcher change pairs again.
func TestCapacityInputsKept(t *testing.T) {
	change := mcChange{after: map[string]interface{}{"kernelArguments": []interface{}{"psi=1"}}}
	pools := []unstructured.Unstructured{*workerPool(nil)}
	memo := &assessMemo{}
	first := cachedAssessReads(memo, 7)
	plan := func(r *clusterReads) (v1alpha1.PoolReboot, *capacityInputs) {
		t.Helper()
		reboots := []v1alpha1.PoolReboot{{Pool: "worker", Nodes: 3}}
		if _, err := r.assess(context.Background(), reboots, pools, change, false); err != nil {
			t.Fatal(err)
		}
		return reboots[0], memo.byPool["worker"].inputs
	}
	before, kept := plan(first)
	if kept == nil || len(kept.vms) != 3 || len(kept.order) != 3 {
		t.Fatalf("first plan kept %+v, want 3 VMs paired and 3 nodes in order (%s)", kept, before.Capacity)
	}

	// Another pod asks for most of n000's memory: a new pods version,
	// the same launchers.
	nodes, _ := first.nodes()
	vmis, _, _ := first.vmis()
	pods, _ := first.pods()
	busy := pods
	busy.Version = 8
	busy.Requested = map[string]corev1.ResourceList{}
	for node, l := range pods.Requested {
		busy.Requested[node] = l
	}
	busy.Requested["n000"] = corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("500Gi")}
	second := cachedAssessReads(memo, 8)
	second.nodes = func() ([]unstructured.Unstructured, error) { return nodes, nil }
	second.vmis = func() ([]kubevirt.VMI, bool, error) { return vmis, true, nil }
	second.pods = func() (cluster.PodRequests, error) { return busy, nil }
	after, again := plan(second)
	if after.Capacity == before.Capacity {
		t.Errorf("the capacity was not checked again after the pods changed: %q", after.Capacity)
	}
	if again != kept {
		t.Errorf("the pairs and node order were not reused while no launcher changed")
	}

	// A launcher appears: the VMs are paired again, the node order kept.
	busy.Launchers.Add(capLauncher("other", "vm-x", "n001", 16, nil, nil))
	busy.Version = 9
	third := cachedAssessReads(memo, 9)
	third.nodes, third.vmis = second.nodes, second.vmis
	third.pods = func() (cluster.PodRequests, error) { return busy, nil }
	_, paired := plan(third)
	if paired == kept || len(paired.vms) != 3 || unsafe.SliceData(paired.order) != unsafe.SliceData(kept.order) {
		t.Errorf("after a launcher change: reused pairs %v, %d VMs, same order %v; want new pairs of 3 VMs and the same order",
			paired == kept, len(paired.vms), unsafe.SliceData(paired.order) == unsafe.SliceData(kept.order))
	}

	// Every node fills up: the simulation of the kept pairs, run while
	// the VMs are assessed, finds no room, and the VMs block the drain.
	full := busy
	full.Version = 10
	full.Requested = map[string]corev1.ResourceList{}
	for _, n := range []string{"n000", "n001", "n002"} {
		full.Requested[n] = corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("510Gi")}
	}
	fourth := cachedAssessReads(memo, 10)
	fourth.nodes, fourth.vmis = second.nodes, second.vmis
	fourth.pods = func() (cluster.PodRequests, error) { return full, nil }
	stuck, again := plan(fourth)
	if again != paired || !strings.HasPrefix(stuck.Capacity, "does not fit") || stuck.LiveMigrations != 0 {
		t.Errorf("on full nodes: pairs reused %v, capacity %q, %d live migrations; want the pairs reused, does not fit, 0", again == paired, stuck.Capacity, stuck.LiveMigrations)
	}
	for _, v := range stuck.VMImpacts {
		if v.Fate == v1alpha1.VMFateLiveMigrate {
			t.Errorf("%s/%s still migrates on full nodes", v.Namespace, v.Name)
		}
	}
}

// Whether a running VMI leaves its eviction strategy to the cluster is
// answered once per view of the VMIs: a view handed out again reuses the
// answer, another view is scanned.
func TestUnsetStrategyPerView(t *testing.T) {
	set := []kubevirt.VMI{{Namespace: "default", Name: "a", Phase: "Running", Strategy: "LiveMigrate"}}
	unset := []kubevirt.VMI{{Namespace: "default", Name: "a", Phase: "Running", Node: "worker-0"}}
	stopped := []kubevirt.VMI{{Namespace: "default", Name: "a", Phase: "Succeeded", Node: "worker-0"}}
	m := &assessMemo{}
	for _, tc := range []struct {
		name string
		vmis []kubevirt.VMI
		want bool
	}{
		{"every strategy set", set, false},
		{"the same view again", set, false},
		{"another view: one unset", unset, true},
		{"a stopped VMI's strategy does not matter", stopped, false},
		{"no VMIs", nil, false},
	} {
		if got := m.unsetStrategy(tc.vmis); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
	var none *assessMemo // live reads keep no memo
	if !none.unsetStrategy(unset) {
		t.Error("without a memo: want the unset strategy seen")
	}
}
