package pools

import (
	"reflect"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kubevirt/virt-advisor/pkg/machineconfig"
)

func pool(name string) *unstructured.Unstructured {
	p := &unstructured.Unstructured{Object: map[string]interface{}{
		"spec": map[string]interface{}{"machineConfigSelector": map[string]interface{}{"matchLabels": map[string]interface{}{machineconfig.RoleLabel: name}}},
	}}
	p.SetName(name)
	return p
}

// The index answers a pool's reconcile without a list of configs: which
// configs wait to write to the pool, which items roll out on it, and how
// many window pauses each written item had.
func TestIndex(t *testing.T) {
	worker, infra := pool("worker"), pool("infra")
	for _, tc := range []struct {
		name        string
		do          func(x *index)
		dueWorker   []string
		dueInfra    []string
		rolling     []itemKey
		pausesOfPSI int32
	}{
		{"empty", func(*index) {}, nil, nil, nil, 0},
		{"an item waits on its pools", func(x *index) { x.setWaiting(itemKey{"a", "psi"}, []string{"worker", "infra"}) }, []string{"a"}, []string{"a"}, nil, 0},
		{"written: no longer waiting once kept as rolling", func(x *index) {
			x.setWaiting(itemKey{"a", "psi"}, []string{"worker"})
			x.keep("a", nil, []string{"psi"})
		}, nil, nil, nil, 0},
		{"expected at the start of a term, by its labels", func(x *index) {
			x.expect(itemKey{"b", "swap"}, expectedItem{change: machineconfig.Change{Name: "90-worker-kubelet-swap", Labels: map[string]string{machineconfig.RoleLabel: "worker"}}})
		}, []string{"b"}, nil, nil, 0},
		{"an expected item that asked Admit waits on the pools it read", func(x *index) {
			x.expect(itemKey{"b", "swap"}, expectedItem{change: machineconfig.Change{Name: "90-worker-kubelet-swap", Labels: map[string]string{machineconfig.RoleLabel: "worker"}}})
			x.setWaiting(itemKey{"b", "swap"}, []string{"infra"})
		}, nil, []string{"b"}, nil, 0},
		{"expected written at the start of a term: not due, not rolling until it asks Rollout", func(x *index) {
			x.expect(itemKey{"b", "swap"}, expectedItem{change: machineconfig.Change{Name: "90-worker-kubelet-swap", Labels: map[string]string{machineconfig.RoleLabel: "worker"}}, written: true})
		}, nil, nil, nil, 0},
		{"rolling, paused twice, its status said one before", func(x *index) {
			x.follow(itemKey{"a", "psi"}, 1)
			x.setRolling(itemKey{"a", "psi"}, "worker")
			x.paused("worker")
			x.paused("worker")
			x.paused("infra")
		}, nil, nil, []itemKey{{"a", "psi"}}, 3},
		{"completed: dropped, and its count with it", func(x *index) {
			x.follow(itemKey{"a", "psi"}, 0)
			x.setRolling(itemKey{"a", "psi"}, "worker")
			x.paused("worker")
			x.keep("a", nil, nil)
		}, nil, nil, nil, 0},
		{"another config's items stay", func(x *index) {
			x.setWaiting(itemKey{"a", "psi"}, []string{"worker"})
			x.setWaiting(itemKey{"b", "swap"}, []string{"worker"})
			x.forget("b")
		}, []string{"a"}, nil, nil, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			x := newIndex()
			tc.do(x)
			if got := x.due(worker, nil); !reflect.DeepEqual(got, tc.dueWorker) && len(got)+len(tc.dueWorker) > 0 {
				t.Errorf("due on worker %v, want %v", got, tc.dueWorker)
			}
			if got := x.due(infra, nil); !reflect.DeepEqual(got, tc.dueInfra) && len(got)+len(tc.dueInfra) > 0 {
				t.Errorf("due on infra %v, want %v", got, tc.dueInfra)
			}
			if got := x.rollingOn("worker"); !reflect.DeepEqual(got, tc.rolling) && len(got)+len(tc.rolling) > 0 {
				t.Errorf("rolling on worker %v, want %v", got, tc.rolling)
			}
			if got := x.follow(itemKey{"a", "psi"}, 0); got != tc.pausesOfPSI {
				t.Errorf("window pauses of a/psi %d, want %d", got, tc.pausesOfPSI)
			}
		})
	}
}

// An expected KubeletConfig for worker is due on every pool that renders
// the MachineConfig generated from it: a custom pool selecting role
// worker too, whose pause must not end under it either.
func TestDueKubeletConfigOnCustomPool(t *testing.T) {
	worker, infra := pool("worker"), pool("infra")
	worker.SetLabels(map[string]string{machineconfig.PoolLabelPrefix + "worker": ""})
	cnv := pool("worker-cnv")
	_ = unstructured.SetNestedField(cnv.Object, map[string]interface{}{"matchExpressions": []interface{}{map[string]interface{}{
		"key": machineconfig.RoleLabel, "operator": "In", "values": []interface{}{"worker", "worker-cnv"}}}}, "spec", "machineConfigSelector")
	all := []unstructured.Unstructured{*worker, *cnv, *infra}
	x := newIndex()
	x.expect(itemKey{"dc", "kubelet"}, expectedItem{change: machineconfig.Change{Name: "dedicated-cpus", KubeletConfig: true,
		PoolSelector: map[string]interface{}{"matchLabels": map[string]interface{}{machineconfig.PoolLabelPrefix + "worker": ""}}}})
	for _, tc := range []struct {
		pool *unstructured.Unstructured
		want []string
	}{{worker, []string{"dc"}}, {cnv, []string{"dc"}}, {infra, nil}} {
		if got := x.due(tc.pool, all); !reflect.DeepEqual(got, tc.want) && len(got)+len(tc.want) > 0 {
			t.Errorf("due on %s: %v, want %v", tc.pool.GetName(), got, tc.want)
		}
	}
}
