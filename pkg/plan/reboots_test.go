package plan

import (
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

func testPool(name string, roles []interface{}, machines int64, paused bool) unstructured.Unstructured {
	return unstructured.Unstructured{Object: map[string]interface{}{
		"metadata": map[string]interface{}{"name": name},
		"spec": map[string]interface{}{"paused": paused, "machineConfigSelector": map[string]interface{}{"matchExpressions": []interface{}{
			map[string]interface{}{"key": "machineconfiguration.openshift.io/role", "operator": "In", "values": roles}}}},
		"status": map[string]interface{}{"machineCount": machines},
	}}
}

func TestRebootNote(t *testing.T) {
	worker := map[string]string{"machineconfiguration.openshift.io/role": "worker"}
	for _, tc := range []struct {
		name  string
		pools []unstructured.Unstructured
		want  string
	}{
		{"one pool", []unstructured.Unstructured{testPool("worker", []interface{}{"worker"}, 3, false), testPool("master", []interface{}{"master"}, 3, false)},
			"reboots: pool worker, 3 nodes, once"},
		{"a custom pool inherits worker MachineConfigs", []unstructured.Unstructured{testPool("worker-cnv", []interface{}{"worker", "worker-cnv"}, 1, false), testPool("worker", []interface{}{"worker"}, 2, false)},
			"reboots: pool worker, 2 nodes, once; pool worker-cnv, 1 node, once"},
		{"a paused pool", []unstructured.Unstructured{testPool("worker", []interface{}{"worker"}, 3, true)},
			"reboots: pool worker, 3 nodes, once, when the pool is unpaused"},
		{"no pool", []unstructured.Unstructured{testPool("master", []interface{}{"master"}, 3, false)},
			"reboots: none (no MachineConfigPool selects it)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := rebootNote(tc.pools, worker); got != tc.want {
				t.Errorf("got  %q\nwant %q", got, tc.want)
			}
		})
	}
}
