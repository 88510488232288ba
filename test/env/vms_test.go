package env

import (
	"testing"

	"github.com/kubevirt/virt-advisor/pkg/kubevirt"
)

// The VMIs the environment creates read as KubeVirt's own do.
func TestVMIObject(t *testing.T) {
	tests := []struct {
		name string
		vmi  VMI
		want kubevirt.VMI
	}{
		{"migratable", VMI{Namespace: "default", Name: "a", Node: "worker-0", EvictionStrategy: "LiveMigrate", Migratable: true},
			kubevirt.VMI{Namespace: "default", Name: "a", Node: "worker-0", Phase: "Running", Strategy: "LiveMigrate", Condition: true, Migratable: true}},
		{"not migratable", VMI{Namespace: "default", Name: "gpu", Node: "worker-2", EvictionStrategy: "LiveMigrate", Reason: "HostDeviceNotLiveMigratable"},
			kubevirt.VMI{Namespace: "default", Name: "gpu", Node: "worker-2", Phase: "Running", Strategy: "LiveMigrate", Condition: true, Reason: "HostDeviceNotLiveMigratable"}},
		{"no strategy, no condition, ended", VMI{Namespace: "x", Name: "b", Node: "worker-1", NoCondition: true, Phase: "Succeeded"},
			kubevirt.VMI{Namespace: "x", Name: "b", Node: "worker-1", Phase: "Succeeded"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			obj := tc.vmi.Object()
			if got := kubevirt.ReadVMI(obj); got != tc.want {
				t.Errorf("ReadVMI = %+v, want %+v", got, tc.want)
			}
			if obj.GetLabels()[kubevirt.NodeNameLabel] != tc.vmi.Node {
				t.Errorf("labels %v", obj.GetLabels())
			}
		})
	}
}
