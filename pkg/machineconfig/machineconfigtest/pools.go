// Package machineconfigtest builds MachineConfigPools for tests.
package machineconfigtest

import (
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kubevirt/virt-advisor/pkg/machineconfig"
)

// Pool is a MachineConfigPool with a machineConfigSelector, its machine
// counts (ready = updated, none degraded) and spec.paused.
func Pool(name string, selector map[string]interface{}, machines, updated int64, paused bool) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]interface{}{
		"apiVersion": machineconfig.MachineConfigPoolGVK.GroupVersion().String(), "kind": machineconfig.MachineConfigPoolGVK.Kind,
		"metadata": map[string]interface{}{"name": name},
		"spec":     map[string]interface{}{"machineConfigSelector": selector, "paused": paused},
		"status": map[string]interface{}{"machineCount": machines, "updatedMachineCount": updated,
			"readyMachineCount": updated, "degradedMachineCount": int64(0)},
	}}
}

// RoleSelector selects the MachineConfigs of any of roles, as custom
// pools select worker's and their own.
func RoleSelector(roles ...interface{}) map[string]interface{} {
	return map[string]interface{}{"matchExpressions": []interface{}{map[string]interface{}{
		"key": machineconfig.RoleLabel, "operator": "In", "values": roles}}}
}
