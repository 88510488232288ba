package hardware

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kubevirt/virt-advisor/pkg/machineconfig"
)

// rolledPool is a pool with its own label, rendering these roles.
func rolledPool(name string, roles ...interface{}) unstructured.Unstructured {
	p := pool(name)
	p.SetLabels(map[string]string{machineconfig.PoolLabelPrefix + name: ""})
	_ = unstructured.SetNestedField(p.Object, map[string]interface{}{"matchExpressions": []interface{}{map[string]interface{}{
		"key": machineconfig.RoleLabel, "operator": "In", "values": roles}}}, "spec", "machineConfigSelector")
	return p
}

func kubeletFor(pool string) machineconfig.Change {
	return machineconfig.Change{Name: "kc", KubeletConfig: true,
		PoolSelector: map[string]interface{}{"matchLabels": map[string]interface{}{machineconfig.PoolLabelPrefix + pool: ""}}}
}

// A KubeletConfig lands on the nodes of every pool that renders the
// MachineConfig generated from it: for worker, worker-cnv's too.
func TestReadRolled(t *testing.T) {
	poolGVK := schema.GroupVersionKind{Group: "machineconfiguration.openshift.io", Version: "v1", Kind: "MachineConfigPool"}
	objs := map[schema.GroupVersionKind][]unstructured.Unstructured{
		poolGVK: {rolledPool("worker", "worker"), rolledPool("worker-cnv", "worker", "worker-cnv"), rolledPool("infra", "worker")},
		NodeGVK: {node("w-0", "worker", "32", "128Gi", intel, nil), node("cnv-0", "worker-cnv", "64", "256Gi", intel, nil),
			node("infra-0", "infra", "8", "32Gi", intel, nil)},
		NodeResourceTopologyGVK: {nrt("w-0", 32), nrt("cnv-0", 32, 32)},
	}
	tests := []struct {
		name    string
		pool    string
		change  machineconfig.Change
		nodes   []string
		others  []string
		wantErr string
	}{
		{name: "for worker: worker-cnv and infra render role worker too", pool: "worker", change: kubeletFor("worker"),
			nodes: []string{"cnv-0", "infra-0", "w-0"}, others: []string{"infra", "worker-cnv"}},
		{name: "for worker-cnv: itself only", pool: "worker-cnv", change: kubeletFor("worker-cnv"), nodes: []string{"cnv-0"}},
		{name: "a pool that does not render its own role", pool: "infra", change: kubeletFor("infra"),
			wantErr: "MachineConfigPool 'infra' does not render what KubeletConfig 'kc' is rendered as (its spec.machineConfigSelector does not select role 'infra')"},
		{name: "no such pool", pool: "rt", change: kubeletFor("rt"), wantErr: "there is no MachineConfigPool 'rt'"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sel, err := ReadRolled(context.Background(), fakeLister{objs: objs, version: "v1alpha2"}, tt.pool, tt.change)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
				return
			}
			var names []string
			for _, n := range sel.Pool.Nodes {
				names = append(names, n.Name)
			}
			if err != nil || !reflect.DeepEqual(names, tt.nodes) || !reflect.DeepEqual(sel.Others, tt.others) || sel.Pool.Name != tt.pool {
				t.Errorf("ReadRolled = %s %v others %v, %v; want %v others %v", sel.Pool.Name, names, sel.Others, err, tt.nodes, tt.others)
			}
			for _, n := range sel.Pool.Nodes {
				if n.Name == "cnv-0" && len(n.Zones) != 2 {
					t.Errorf("cnv-0 read with %d NUMA zones, want 2", len(n.Zones))
				}
			}
		})
	}
}

// Explain names the pools and each node's pool; a single pool's error,
// or any other error, stays as it is.
func TestExplain(t *testing.T) {
	sel := Selected{Pool: Pool{Name: "worker", Nodes: []Node{{Name: "cnv-0", CPUs: 64}, {Name: "w-0", CPUs: 32}, {Name: "w-1", CPUs: 32}}},
		Others: []string{"worker-cnv"}, PoolOf: map[string]string{"cnv-0": "worker-cnv", "w-0": "worker", "w-1": "worker"}}
	err := sel.Pool.Uniform(CPUs)
	got := sel.Explain(err, "MachineConfig 'x'").Error()
	want := "MachineConfig 'x' for MachineConfigPool 'worker' is rendered by MachineConfigPools 'worker', 'worker-cnv' (each one's machineConfigSelector selects it), whose nodes differ in CPU count: w-0, w-1 of pool worker have 32; cnv-0 of pool worker-cnv has 64; choose a pool whose nodes are alike and whose MachineConfigs no other pool renders (a custom pool such as worker-cnv), or make the nodes alike"
	if got != want {
		t.Errorf("Explain =\n%s\nwant\n%s", got, want)
	}
	wrapped := sel.Explain(errors.Join(errors.New("x"), err), "MachineConfig 'x'")
	if !strings.Contains(wrapped.Error(), "of pool worker-cnv") {
		t.Errorf("a wrapped NotUniformError: %v", wrapped)
	}
	single := Selected{Pool: sel.Pool}
	if got := single.Explain(err, "MachineConfig 'x'"); got != err {
		t.Errorf("one pool: %v, want the error as it is", got)
	}
	other := errors.New("no nodes")
	if got := sel.Explain(other, "MachineConfig 'x'"); got != other {
		t.Errorf("another error: %v", got)
	}
}
