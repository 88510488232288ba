package cluster

import (
	"encoding/json"
	"testing"

	jsonv2 "github.com/go-json-experiment/json"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kubevirt/virt-advisor/pkg/cluster/clustertest"
	"github.com/kubevirt/virt-advisor/pkg/kubevirt"
)

// The list decoded field by field reads each VMI as the whole object
// does.
func TestVMIListReadsAsWholeObjects(t *testing.T) {
	objs := []unstructured.Unstructured{
		clustertest.VMI("gpu-0", "worker-2", "LiveMigrate", "False", "HostDeviceNotLiveMigratable"),
		clustertest.VMI("vm-none", "worker-1", "None", "True", ""),
		withReady("ready", "worker-1", "True"),
		{Object: map[string]interface{}{"metadata": map[string]interface{}{"namespace": "a", "name": "labelled",
			"labels": map[string]interface{}{"kubevirt.io/nodeName": "worker-0"}}, "status": map[string]interface{}{"phase": "Running"}}},
		{Object: map[string]interface{}{"metadata": map[string]interface{}{"namespace": "a", "name": "pending"}, "spec": map[string]interface{}{}}},
	}
	var items []interface{}
	for i := range objs {
		items = append(items, objs[i].Object)
	}
	raw, err := json.Marshal(map[string]interface{}{"kind": "VirtualMachineInstanceList", "items": items})
	if err != nil {
		t.Fatal(err)
	}
	var list vmiList
	if err := jsonv2.Unmarshal(raw, &list); err != nil {
		t.Fatal(err)
	}
	got := list.vmis()
	if len(got) != len(objs) {
		t.Fatalf("%d VMIs, want %d", len(got), len(objs))
	}
	for i := range objs {
		if want := kubevirt.ReadVMI(&objs[i]); got[i] != want {
			t.Errorf("VMI %d: %+v, want %+v", i, got[i], want)
		}
	}
}
