package plan

import (
	"context"
	"testing"

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
