package plan

import (
	"reflect"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kubevirt/virt-advisor/pkg/apis/advisor/v1alpha1"
)

func testPool(name string, roles []interface{}, machines int64, paused bool) unstructured.Unstructured {
	return unstructured.Unstructured{Object: map[string]interface{}{
		"metadata": map[string]interface{}{"name": name},
		"spec": map[string]interface{}{"paused": paused, "machineConfigSelector": map[string]interface{}{"matchExpressions": []interface{}{
			map[string]interface{}{"key": "machineconfiguration.openshift.io/role", "operator": "In", "values": roles}}}},
		"status": map[string]interface{}{"machineCount": machines},
	}}
}

// A Delete has no desired state: the pools that select the live object's
// labels roll its removal, and the item says so.
func TestRebootNotesOfEveryOperation(t *testing.T) {
	pools := []unstructured.Unstructured{testPool("worker", []interface{}{"worker"}, 3, false)}
	mc := v1alpha1.ObjectReference{APIVersion: "machineconfiguration.openshift.io/v1", Kind: "MachineConfig", Name: "90-worker-kubelet-swap"}
	worker := map[string]string{"machineconfiguration.openshift.io/role": "worker"}
	for _, op := range []v1alpha1.Operation{v1alpha1.OperationCreate, v1alpha1.OperationUpdate, v1alpha1.OperationDelete} {
		t.Run(string(op), func(t *testing.T) {
			items := []v1alpha1.PlanItem{{Name: "swap", TargetRef: mc, Operation: op, Message: "m"}}
			addRebootNotes(items, []map[string]string{worker}, func() ([]unstructured.Unstructured, error) { return pools, nil })
			if want := "m; reboots: pool worker, 3 nodes, once"; items[0].Message != want {
				t.Errorf("message %q, want %q", items[0].Message, want)
			}
			if want := []v1alpha1.PoolReboot{{Pool: "worker", Nodes: 3}}; !reflect.DeepEqual(items[0].Reboots, want) {
				t.Errorf("reboots %+v, want %+v", items[0].Reboots, want)
			}
		})
	}
}
