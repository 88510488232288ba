package machineconfig

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
			"reboots: none (no MachineConfigPool selects 90-worker-swap)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, got := ItemReboots(tc.pools, Change{Name: "90-worker-swap", Labels: worker}); got != tc.want {
				t.Errorf("got  %q\nwant %q", got, tc.want)
			}
		})
	}
}

const roleLabel = RoleLabel

func TestRollsAndFormatReboots(t *testing.T) {
	worker := Change{Name: "99-worker-psi-karg", Labels: map[string]string{roleLabel: "worker"}}
	swap := Change{Name: "90-worker-kubelet-swap", Labels: map[string]string{roleLabel: "worker"}}
	master := Change{Name: "99-master-psi-karg", Labels: map[string]string{roleLabel: "master"}}
	for _, tc := range []struct {
		name    string
		pools   []*unstructured.Unstructured
		changes []Change
		want    string
	}{
		{"no MachineConfig changes", []*unstructured.Unstructured{mcPool("worker", roleSelector("worker"), 3, false)}, nil, "none"},
		{"one pool by matchExpressions", []*unstructured.Unstructured{mcPool("worker", roleSelector("worker"), 3, false), mcPool("master", roleSelector("master"), 3, false)},
			[]Change{worker}, "pool worker, 3 nodes, once"},
		{"by matchLabels", []*unstructured.Unstructured{mcPool("worker", map[string]interface{}{"matchLabels": map[string]interface{}{roleLabel: "worker"}}, 2, false)},
			[]Change{worker}, "pool worker, 2 nodes, once"},
		{"a custom pool inherits worker MachineConfigs", []*unstructured.Unstructured{mcPool("worker-cnv", roleSelector("worker", "worker-cnv"), 1, false), mcPool("worker", roleSelector("worker"), 3, false)},
			[]Change{worker}, "pool worker, 3 nodes, once; pool worker-cnv, 1 node, once"},
		{"two MachineConfigs of one pool roll out together", []*unstructured.Unstructured{mcPool("worker", roleSelector("worker"), 3, false)},
			[]Change{worker, swap}, "pool worker, 3 nodes, once (2 MachineConfigs rolled out together: 99-worker-psi-karg, 90-worker-kubelet-swap)"},
		{"a paused pool reboots when unpaused", []*unstructured.Unstructured{mcPool("worker", roleSelector("worker"), 3, true)},
			[]Change{worker}, "pool worker, 3 nodes, once, when the pool is unpaused"},
		{"a pool without a selector selects nothing", []*unstructured.Unstructured{{Object: map[string]interface{}{"metadata": map[string]interface{}{"name": "bare"}}}},
			[]Change{worker}, "none (no MachineConfigPool selects 99-worker-psi-karg)"},
		{"pools of each change", []*unstructured.Unstructured{mcPool("worker", roleSelector("worker"), 3, false), mcPool("master", roleSelector("master"), 3, false)},
			[]Change{worker, master}, "pool master, 3 nodes, once; pool worker, 3 nodes, once"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pools := make([]unstructured.Unstructured, len(tc.pools))
			for i, p := range tc.pools {
				pools[i] = *p
			}
			r, err := Rolls(pools, tc.changes)
			if err != nil {
				t.Fatal(err)
			}
			if got := FormatReboots(tc.changes, r); got != tc.want {
				t.Errorf("got  %q\nwant %q", got, tc.want)
			}
		})
	}
}

// mcPool is a MachineConfigPool as the reboot note reads it: its
// selector, machine count and spec.paused.
func mcPool(name string, selector map[string]interface{}, machines int64, paused bool) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]interface{}{
		"metadata": map[string]interface{}{"name": name},
		"spec":     map[string]interface{}{"machineConfigSelector": selector, "paused": paused},
		"status":   map[string]interface{}{"machineCount": machines},
	}}
}

func roleSelector(roles ...interface{}) map[string]interface{} {
	return map[string]interface{}{"matchExpressions": []interface{}{map[string]interface{}{"key": roleLabel, "operator": "In", "values": roles}}}
}
