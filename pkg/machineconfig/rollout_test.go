package machineconfig

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kubevirt/virt-advisor/pkg/apis/advisor/v1alpha1"
)

// pool builds a MachineConfigPool in a given Rollout state.
type poolState struct {
	generation, observed               int64
	specName, statusName               string
	specSources, statusSources         []string
	machines, updated, ready, degraded int64
	updatedCond, updatingCond          string
	paused                             bool
}

func (p poolState) obj() *unstructured.Unstructured {
	src := func(names []string) []interface{} {
		var out []interface{}
		for _, n := range names {
			out = append(out, map[string]interface{}{"kind": "MachineConfig", "name": n})
		}
		return out
	}
	o := &unstructured.Unstructured{Object: map[string]interface{}{
		"metadata": map[string]interface{}{"name": "worker", "generation": p.generation},
		"spec": map[string]interface{}{"paused": p.paused,
			"configuration": map[string]interface{}{"name": p.specName, "source": src(p.specSources)}},
		"status": map[string]interface{}{
			"observedGeneration": p.observed,
			"configuration":      map[string]interface{}{"name": p.statusName, "source": src(p.statusSources)},
			"machineCount":       p.machines, "updatedMachineCount": p.updated, "readyMachineCount": p.ready, "degradedMachineCount": p.degraded,
			"conditions": []interface{}{
				map[string]interface{}{"type": "Updated", "status": p.updatedCond},
				map[string]interface{}{"type": "Updating", "status": p.updatingCond},
			},
		},
	}}
	return o
}

func TestEvaluateRollout(t *testing.T) {
	base := []string{"00-worker"}
	withX := []string{"00-worker", "99-x"}
	settled := poolState{generation: 1, observed: 1, specName: "rendered-a", statusName: "rendered-a", specSources: base, statusSources: base,
		machines: 3, updated: 3, ready: 3, updatedCond: "True", updatingCond: "False"}
	tests := []struct {
		name    string
		pool    *unstructured.Unstructured
		op      v1alpha1.Operation
		before  string
		done    bool
		message string
	}{
		{"pool missing", nil, v1alpha1.OperationCreate, "", false, "MachineConfigPool 'worker' not found"},
		{"just applied: still Updated for the old config", settled.obj(), v1alpha1.OperationCreate, "rendered-a", false,
			"MachineConfigPool 'worker' is processing changes (Updated: 3/3, Ready: 3/3)"},
		{"rendered, not yet observed", func() *unstructured.Unstructured {
			p := settled
			p.generation, p.specName, p.specSources = 2, "rendered-b", withX
			return p.obj()
		}(), v1alpha1.OperationCreate, "rendered-a", false, "MachineConfigPool 'worker' is processing changes (Updated: 3/3, Ready: 3/3)"},
		{"updating node by node", func() *unstructured.Unstructured {
			p := settled
			p.generation, p.observed, p.specName, p.specSources = 2, 2, "rendered-b", withX
			p.updated, p.ready, p.updatedCond, p.updatingCond = 1, 1, "False", "True"
			return p.obj()
		}(), v1alpha1.OperationCreate, "rendered-a", false, "MachineConfigPool 'worker' is updating (Updated: 1/3, Ready: 1/3)"},
		{"degraded", func() *unstructured.Unstructured {
			p := settled
			p.generation, p.observed, p.specName, p.specSources, p.degraded = 2, 2, "rendered-b", withX, 1
			return p.obj()
		}(), v1alpha1.OperationCreate, "rendered-a", false, "MachineConfigPool 'worker' is degraded (1 degraded machines)"},
		{"paused", func() *unstructured.Unstructured {
			p := settled
			p.generation, p.observed, p.specName, p.specSources, p.paused = 2, 2, "rendered-b", withX, true
			return p.obj()
		}(), v1alpha1.OperationCreate, "rendered-a", false, "MachineConfigPool 'worker' is paused: it will not roll out until it is unpaused (Updated: 3/3, Ready: 3/3)"},
		{"all nodes done but status.configuration not yet copied", func() *unstructured.Unstructured {
			p := settled
			p.generation, p.observed, p.specName, p.specSources = 2, 2, "rendered-b", withX
			return p.obj()
		}(), v1alpha1.OperationCreate, "rendered-a", false, "Waiting for MachineConfigPool 'worker' to stabilize (Updated: 3/3, Ready: 3/3)"},
		{"rolled out", func() *unstructured.Unstructured {
			p := settled
			p.generation, p.observed, p.specName, p.statusName, p.specSources, p.statusSources = 2, 2, "rendered-b", "rendered-b", withX, withX
			return p.obj()
		}(), v1alpha1.OperationCreate, "rendered-a", true, "MachineConfigPool 'worker' is ready (all 3 nodes updated)"},
		{"update: membership alone is not enough", func() *unstructured.Unstructured {
			p := settled
			p.specSources, p.statusSources = withX, withX
			return p.obj()
		}(), v1alpha1.OperationUpdate, "rendered-a", false, "MachineConfigPool 'worker' is processing changes (Updated: 3/3, Ready: 3/3)"},
		{"delete: rolled out once the config is gone", settled.obj(), v1alpha1.OperationDelete, "rendered-x", true, "is ready (all 3 nodes updated)"},
		{"delete: still listed", func() *unstructured.Unstructured {
			p := settled
			p.specSources, p.statusSources = withX, withX
			return p.obj()
		}(), v1alpha1.OperationDelete, "rendered-a", false, "is processing changes"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := EvaluateRollout(tt.pool, "worker", "99-x", tt.op, tt.before)
			if r.Done != tt.done || !strings.Contains(r.Message, tt.message) {
				t.Errorf("got done=%v %q, want done=%v %q", r.Done, r.Message, tt.done, tt.message)
			}
		})
	}
}

func TestCombineRollouts(t *testing.T) {
	ready := Rollout{Done: true, Message: "MachineConfigPool 'worker' is ready (all 3 nodes updated)"}
	rolling := Rollout{Message: "MachineConfigPool 'worker-cnv' is updating (Updated: 1/2, Ready: 1/2)"}
	degraded := Rollout{Degraded: true, Message: "MachineConfigPool 'worker-cnv' is degraded (1 degraded machines)"}
	tests := []struct {
		name     string
		results  []Rollout
		done     bool
		degraded bool
		message  string
	}{
		{"all pools rolled out", []Rollout{ready, {Done: true, Message: "MachineConfigPool 'worker-cnv' has no machines"}}, true, false,
			"MachineConfigPool 'worker' is ready (all 3 nodes updated); MachineConfigPool 'worker-cnv' has no machines"},
		{"one pool still rolling names it", []Rollout{ready, rolling}, false, false, rolling.Message},
		{"a degraded pool is reported", []Rollout{ready, degraded}, false, true, degraded.Message},
		{"no pool selects it", nil, false, false, "No MachineConfigPool selects MachineConfig '99-x': nothing will roll it out"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := CombineRollouts("99-x", tt.results)
			if got.Done != tt.done || got.Degraded != tt.degraded || got.Message != tt.message {
				t.Errorf("got %+v, want done=%v degraded=%v %q", got, tt.done, tt.degraded, tt.message)
			}
		})
	}
}

func TestEvaluateRolloutEmptyPool(t *testing.T) {
	p := poolState{generation: 1, observed: 1, specName: "rendered-a", statusName: "rendered-a"}.obj()
	r := EvaluateRollout(p, "infra", "99-x", v1alpha1.OperationCreate, "")
	if !r.Done || r.Message != "MachineConfigPool 'infra' has no machines" {
		t.Errorf("got %+v, want done: a pool without machines has nothing to roll out", r)
	}
}

// An item written to a pool is rendered once the configuration the pool's
// spec names reflects it: before that, the spec still names what the nodes
// would be updated to without it.
func TestRenders(t *testing.T) {
	mc := v1alpha1.ObjectReference{APIVersion: "machineconfiguration.openshift.io/v1", Kind: "MachineConfig", Name: "50-psi"}
	kc := v1alpha1.ObjectReference{APIVersion: "machineconfiguration.openshift.io/v1", Kind: "KubeletConfig", Name: "virt-kubelet"}
	before := []v1alpha1.PoolConfiguration{{Pool: "worker", Configuration: "rendered-a"}}
	for _, tc := range []struct {
		name    string
		ref     v1alpha1.ObjectReference
		op      v1alpha1.Operation
		before  []v1alpha1.PoolConfiguration
		spec    string
		sources []string
		want    bool
	}{
		{"a created MachineConfig the spec does not list yet", mc, v1alpha1.OperationCreate, before, "rendered-a", []string{"00-worker"}, false},
		{"a created MachineConfig the spec lists", mc, v1alpha1.OperationCreate, before, "rendered-b", []string{"00-worker", "50-psi"}, true},
		{"a deleted MachineConfig the spec still lists (a revert before its render)", mc, v1alpha1.OperationDelete, before, "rendered-b", []string{"00-worker", "50-psi"}, false},
		{"a deleted MachineConfig the spec no longer lists", mc, v1alpha1.OperationDelete, before, "rendered-a", []string{"00-worker"}, true},
		{"a changed MachineConfig, the spec on the configuration before", mc, v1alpha1.OperationUpdate, before, "rendered-a", []string{"00-worker", "50-psi"}, false},
		{"a changed MachineConfig, the spec on another configuration", mc, v1alpha1.OperationUpdate, before, "rendered-c", []string{"00-worker", "50-psi"}, true},
		{"a KubeletConfig, the spec on the configuration before", kc, v1alpha1.OperationCreate, before, "rendered-a", []string{"00-worker"}, false},
		{"a KubeletConfig, the spec on another configuration", kc, v1alpha1.OperationDelete, before, "rendered-c", []string{"00-worker"}, true},
		{"a changed MachineConfig with nothing noted for the pool", mc, v1alpha1.OperationUpdate, nil, "rendered-a", []string{"00-worker", "50-psi"}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pool := poolState{specName: tc.spec, specSources: tc.sources}.obj()
			it := &v1alpha1.VirtPlatformConfigItem{Name: "item", TargetRef: tc.ref, Operation: tc.op, PoolConfigsBefore: tc.before}
			if got := Renders(pool, it); got != tc.want {
				t.Errorf("Renders = %v, want %v", got, tc.want)
			}
		})
	}
}
