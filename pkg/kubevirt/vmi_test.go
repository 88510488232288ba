package kubevirt

import (
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

func vmiObject(ns, name, node, phase, strategy string, conds ...map[string]interface{}) unstructured.Unstructured {
	u := unstructured.Unstructured{Object: map[string]interface{}{
		"apiVersion": "kubevirt.io/v1", "kind": "VirtualMachineInstance",
		"metadata": map[string]interface{}{"namespace": ns, "name": name},
		"spec":     map[string]interface{}{},
		"status":   map[string]interface{}{"phase": phase},
	}}
	if node != "" {
		u.Object["status"].(map[string]interface{})["nodeName"] = node
	}
	if strategy != "" {
		u.Object["spec"].(map[string]interface{})["evictionStrategy"] = strategy
	}
	var list []interface{}
	for _, c := range conds {
		list = append(list, c)
	}
	if list != nil {
		u.Object["status"].(map[string]interface{})["conditions"] = list
	}
	return u
}

func TestReadVMI(t *testing.T) {
	cond := map[string]interface{}{"type": "LiveMigratable", "status": "False", "reason": "HostDeviceNotLiveMigratable"}
	other := map[string]interface{}{"type": "Ready", "status": "True"}
	tests := []struct {
		name    string
		obj     unstructured.Unstructured
		want    VMI
		running bool
	}{
		{"running with the condition", vmiObject("default", "gpu-0", "worker-1", "Running", "LiveMigrate", other, cond),
			VMI{Namespace: "default", Name: "gpu-0", Node: "worker-1", Phase: "Running", Strategy: "LiveMigrate", Condition: true, Reason: "HostDeviceNotLiveMigratable", Ready: true}, true},
		{"scheduled, no condition yet", vmiObject("default", "a", "worker-1", "Scheduled", ""),
			VMI{Namespace: "default", Name: "a", Node: "worker-1", Phase: "Scheduled"}, true},
		{"ended", vmiObject("default", "a", "worker-1", "Succeeded", ""),
			VMI{Namespace: "default", Name: "a", Node: "worker-1", Phase: "Succeeded"}, false},
		{"failed", vmiObject("default", "a", "worker-1", "Failed", ""),
			VMI{Namespace: "default", Name: "a", Node: "worker-1", Phase: "Failed"}, false},
		{"pending, no node", vmiObject("default", "a", "", "Pending", ""),
			VMI{Namespace: "default", Name: "a", Phase: "Pending"}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := ReadVMI(&tc.obj)
			if got != tc.want || got.Running() != tc.running {
				t.Errorf("ReadVMI = %+v (running %t), want %+v (running %t)", got, got.Running(), tc.want, tc.running)
			}
		})
	}
	labelled := vmiObject("default", "a", "", "Running", "")
	labelled.SetLabels(map[string]string{NodeNameLabel: "worker-2"})
	if got := ReadVMI(&labelled); got.Node != "worker-2" {
		t.Errorf("node from the %s label: %q", NodeNameLabel, got.Node)
	}
}
