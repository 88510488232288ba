//go:build bench

package plan

import (
	"fmt"
	"runtime"
	"sort"
	"syscall"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kubevirt/virt-advisor/pkg/apis/advisor/v1alpha1"
	"github.com/kubevirt/virt-advisor/pkg/cluster"
	"github.com/kubevirt/virt-advisor/pkg/disruption"
)

// capacityTarget bounds the capacity check of one pool of 500 nodes with
// 10 000 VMs: 20 % of the plan GET p50 with 10 000 VMIs on 500 nodes that
// test/cmd/bench measured without it when the bound was set (69.8 ms).
// The plan is faster since; the bench measures the check against the plan
// of today on the control plane (--vm-capacity-factor).
const capacityTarget = 14 * time.Millisecond

// cpuTime is the CPU time the process has used: on a shared machine the
// wall clock measures the neighbours too.
func cpuTime(t *testing.T) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		t.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// capacityOf10000VMs is a pool of 500 nodes with 20 migrating VMs each,
// read as a plan reads them from the caches (the Nodes as the cache
// serves them, the launchers and requests per node as the pod cache
// does), and the VM impact of draining it.
func capacityOf10000VMs() (*clusterReads, *unstructured.Unstructured, *disruption.Cluster, []v1alpha1.VMImpact) {
	const nodes, perNode = 500, 20
	var nodeObjs []unstructured.Unstructured
	var launchers []cluster.Launcher
	var impacts []v1alpha1.VMImpact
	sel := map[string]string{"cpu-model.node.kubevirt.io/Icelake-Server": "true"}
	for i := 0; i < nodes; i++ {
		name := fmt.Sprintf("n%03d", i)
		n := capNode(name, 512, sel, nil)
		n.SetResourceVersion("1") // as the Node cache serves them
		nodeObjs = append(nodeObjs, n)
		for j := 0; j < perNode; j++ {
			vm := fmt.Sprintf("vm-%d-%d", i, j)
			launchers = append(launchers, capLauncher("default", vm, name, 16, nil, sel))
			impacts = append(impacts, migrates(name, "default", vm))
		}
	}
	pool := workerPool(nil)
	return capReads(launchers...), pool, &disruption.Cluster{Pools: []unstructured.Unstructured{*pool}, Nodes: nodeObjs}, impacts
}

// BenchmarkCapacityCheck10000VMs500Nodes is the check alone, in a loop
// (wall time and allocations per check; the target above is CPU time):
// pairing the VMs with their launchers each time, as after a VM or
// launcher change, and on the pairs of the check before, as after a
// change of other pods.
func BenchmarkCapacityCheck10000VMs500Nodes(b *testing.B) {
	reads, pool, c, impacts := capacityOf10000VMs()
	b.Run("paired", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			r := &v1alpha1.PoolReboot{Pool: "worker", Drains: true, VMImpacts: impacts}
			if _, err := reads.checkCapacity(r, pool, c, nil, nil, false, true); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("pairs kept", func(b *testing.B) {
		kept, err := reads.checkCapacity(&v1alpha1.PoolReboot{Pool: "worker", Drains: true, VMImpacts: impacts}, pool, c, nil, nil, true, true)
		if err != nil {
			b.Fatal(err)
		}
		b.ReportAllocs()
		for b.Loop() {
			r := &v1alpha1.PoolReboot{Pool: "worker", Drains: true, VMImpacts: impacts}
			if again, err := reads.checkCapacity(r, pool, c, kept, nil, true, true); err != nil || again != kept {
				b.Fatalf("the kept pairs were not used (%v)", err)
			}
		}
	})
}

// TestCapacitySpeedTarget runs the check as a plan does (the Nodes as the
// cache serves them, the launchers and requests per node as the pod cache
// does) and fails when its median CPU time misses capacityTarget.
func TestCapacitySpeedTarget(t *testing.T) {
	reads, pool, c, impacts := capacityOf10000VMs()
	// The garbage of building 10 000 launchers is collected before the
	// clock starts (CPU time counts the collector's threads too); the
	// checks' own garbage is collected while they run, as in a server.
	runtime.GC()
	var runs []time.Duration
	for i := 0; i < 15; i++ {
		r := &v1alpha1.PoolReboot{Pool: "worker", Drains: true, VMImpacts: append([]v1alpha1.VMImpact(nil), impacts...)}
		start := cpuTime(t)
		if _, err := reads.checkCapacity(r, pool, c, nil, nil, false, true); err != nil {
			t.Fatal(err)
		}
		runs = append(runs, cpuTime(t)-start)
		if r.Capacity[:5] != "fits:" {
			t.Fatalf("capacity = %q", r.Capacity)
		}
	}
	sort.Slice(runs, func(i, j int) bool { return runs[i] < runs[j] })
	median := runs[len(runs)/2]
	t.Logf("capacity check of 10 000 VMs on 500 nodes: median CPU time %s (target ≤ %s)", median, capacityTarget)
	if median > capacityTarget {
		t.Errorf("the capacity check took %s of CPU, more than the %s target", median, capacityTarget)
	}
}
