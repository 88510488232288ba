//go:build bench

package pools

import (
	"context"
	"fmt"
	"runtime"
	"sort"
	"syscall"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kubevirt/virt-advisor/pkg/cluster"
	"github.com/kubevirt/virt-advisor/pkg/gates"
	"github.com/kubevirt/virt-advisor/pkg/machineconfig"
)

// gatesTarget bounds the CPU time of the gates between two steps of a
// pool of 500 nodes on a cluster of 10 000 VMIs, each with a migration on
// record (KubeVirt keeps the last ones), 20 of them the step's.
const gatesTarget = 5 * time.Millisecond

// bigCluster serves the pool, its nodes, the migrations and the VMIs from
// memory, as the caches would.
type bigCluster struct {
	pools, nodes, migrations []unstructured.Unstructured
	vmis                     map[string]*unstructured.Unstructured
}

func (c *bigCluster) Get(_ context.Context, gvk schema.GroupVersionKind, ns, name string) (*unstructured.Unstructured, error) {
	return c.vmis[ns+"/"+name], nil
}

func (c *bigCluster) List(_ context.Context, gvk schema.GroupVersionKind) ([]unstructured.Unstructured, error) {
	switch gvk.Kind {
	case "MachineConfigPool":
		return c.pools, nil
	case "VirtualMachineInstanceMigration":
		return c.migrations, nil
	}
	return c.nodes, nil
}

func stepOf10000VMIs(started time.Time) (*bigCluster, *unstructured.Unstructured, *machineconfig.PoolStep) {
	const nodes, perNode = 500, 20
	c := &bigCluster{vmis: map[string]*unstructured.Unstructured{}}
	pool := pool(machineconfig.WorkerPool)
	_ = unstructured.SetNestedField(pool.Object, "rendered-b", "spec", "configuration", "name")
	_ = unstructured.SetNestedField(pool.Object, true, "spec", "paused")
	_ = unstructured.SetNestedStringMap(pool.Object, map[string]string{"node-role.kubernetes.io/worker": ""}, "spec", "nodeSelector", "matchLabels")
	c.pools = []unstructured.Unstructured{*pool}
	for i := range nodes {
		name := fmt.Sprintf("n%03d", i)
		current := "rendered-a"
		if i == 0 {
			current = "rendered-b" // the step's node, back
		}
		n := unstructured.Unstructured{Object: map[string]interface{}{"apiVersion": "v1", "kind": "Node",
			"status": map[string]interface{}{"conditions": []interface{}{map[string]interface{}{"type": "Ready", "status": "True", "lastTransitionTime": started.Add(time.Minute).Format(time.RFC3339)}}}}}
		n.SetName(name)
		n.SetLabels(map[string]string{"node-role.kubernetes.io/worker": ""})
		n.SetAnnotations(map[string]string{machineconfig.NodeCurrentConfigAnnotation: current, machineconfig.NodeDesiredConfigAnnotation: current, machineconfig.NodeStateAnnotation: "Done"})
		c.nodes = append(c.nodes, n)
		for j := range perNode {
			vm := fmt.Sprintf("vm-%d-%d", i, j)
			v := &unstructured.Unstructured{Object: map[string]interface{}{"status": map[string]interface{}{"phase": "Running", "nodeName": name,
				"conditions": []interface{}{map[string]interface{}{"type": "Ready", "status": "True"}}}}}
			c.vmis["default/"+vm] = v
			m := unstructured.Unstructured{Object: map[string]interface{}{"spec": map[string]interface{}{"vmiName": vm},
				"status": map[string]interface{}{"phase": "Succeeded", "migrationState": map[string]interface{}{"sourceNode": name}}}}
			m.SetNamespace("default")
			m.SetName("m-" + vm)
			created := started.Add(-time.Hour) // an earlier migration
			if i == 0 {
				created = started.Add(time.Second) // the step's
			}
			m.SetCreationTimestamp(metav1.NewTime(created))
			c.migrations = append(c.migrations, m)
		}
	}
	return c, pool, &machineconfig.PoolStep{Nodes: []string{"n000"}, Desired: "rendered-b", Started: started}
}

// evaluateStep is what a stepped pool's reconcile computes between two
// steps, but its writes: the pool's nodes, the step's migrations and VMs,
// the gates' verdict.
func evaluateStep(t testing.TB, c *stepper, cl *bigCluster, pool *unstructured.Unstructured, step *machineconfig.PoolStep, now time.Time) stepDecision {
	gn, stepped, err := poolNodes(pool, cl.pools, cl.nodes)
	if err != nil || !stepped {
		t.Fatalf("pool nodes: %v (stepped %v)", err, stepped)
	}
	migrations, moved, err := c.stepMigrations(context.Background(), step)
	if err != nil {
		t.Fatal(err)
	}
	return decideStep(stepView{pool: pool, nodes: gn, settings: gates.Settings{NodeReadyTimeout: 20 * time.Minute}, step: step, now: now, migrations: migrations, moved: moved})
}

func cpuTime(t testing.TB) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		t.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// TestGatesSpeedTarget fails when the median CPU time of the gates between
// two steps misses gatesTarget.
func TestGatesSpeedTarget(t *testing.T) {
	started := time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)
	cl, pool, step := stepOf10000VMIs(started)
	// The migrations as the Node cache serves them (cut down as they came).
	cached := make([]cluster.Migration, len(cl.migrations))
	for i := range cl.migrations {
		cached[i] = cluster.ReadMigration(&cl.migrations[i])
	}
	c := New(Config{Cluster: cl, Migrations: func() ([]cluster.Migration, bool) { return cached, true }}).stepper
	now := started.Add(5 * time.Minute)
	if d := evaluateStep(t, c, cl, pool, step, now); d.action != machineconfig.StepGates || d.verdict.Outcome != gates.Pass {
		t.Fatalf("decision %s %s: %s", d.action, d.verdict.Outcome, d.verdict.Message)
	}
	runtime.GC()
	var runs []time.Duration
	for range 15 {
		start := cpuTime(t)
		evaluateStep(t, c, cl, pool, step, now)
		runs = append(runs, cpuTime(t)-start)
	}
	sort.Slice(runs, func(i, j int) bool { return runs[i] < runs[j] })
	median := runs[len(runs)/2]
	t.Logf("gates between two steps, 500 nodes, 10 000 VMIs and migrations: median CPU time %s (target ≤ %s)", median, gatesTarget)
	if median > gatesTarget {
		t.Errorf("the gates took %s of CPU, more than the %s target", median, gatesTarget)
	}
}
