package plan

import (
	"reflect"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kubevirt/virt-advisor/pkg/apis/advisor/v1alpha1"
	"github.com/kubevirt/virt-advisor/pkg/maintenance"
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

type windowList []*maintenance.Window

func (l windowList) Windows() ([]*maintenance.Window, error) { return l, nil }

// The plan says when a MachineConfig item would be written: pools no window
// selects say nothing.
func TestWindowNotes(t *testing.T) {
	pools := []unstructured.Unstructured{testPool("worker", []interface{}{"worker"}, 3, false), testPool("master", []interface{}{"master"}, 3, false)}
	weekend, err := maintenance.New("weekend", maintenance.Spec{PoolNames: []string{"worker"}, Schedule: "0 22 * * 6", Duration: 8 * time.Hour, TimeZone: "UTC"})
	if err != nil {
		t.Fatal(err)
	}
	wednesday := time.Date(2026, 11, 25, 10, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name string
		pool string
		now  time.Time
		want string
	}{
		{"closed: written when it opens", "worker", wednesday, "m; maintenance windows: pool 'worker': window 'weekend' opens Sat 28 Nov 22:00 UTC, in 3d12h; it is written then"},
		{"open: until when", "worker", time.Date(2026, 11, 28, 23, 0, 0, 0, time.UTC), "m; maintenance windows: pool 'worker': window 'weekend' is open until Sun 29 Nov 06:00 UTC, in 7h"},
		{"a pool no window selects", "master", wednesday, "m"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			items := []v1alpha1.PlanItem{{Name: "psi", Message: "m", Reboots: []v1alpha1.PoolReboot{{Pool: tc.pool, Nodes: 3}}}}
			addWindowNotes(items, func() ([]unstructured.Unstructured, error) { return pools, nil }, windowList{weekend}, tc.now)
			if items[0].Message != tc.want {
				t.Errorf("message %q\nwant    %q", items[0].Message, tc.want)
			}
		})
	}
}
