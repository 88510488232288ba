package pools

import (
	"context"
	"fmt"
	"slices"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kubevirt/virt-advisor/pkg/gates"
	"github.com/kubevirt/virt-advisor/pkg/kubevirt"
	"github.com/kubevirt/virt-advisor/pkg/machineconfig"
)

// migrationGVK is KubeVirt's VirtualMachineInstanceMigration: a drain's
// eviction of a VM that live-migrates creates one.
var migrationGVK = schema.GroupVersionKind{Group: "kubevirt.io", Version: "v1", Kind: "VirtualMachineInstanceMigration"}

// stepMigrations are the live migrations the step's drains started: those
// created since the step started whose source is a node of the step (one
// that names no source counts too: a gate that looks at too many
// migrations halts sooner, never later), and the VMs they moved, as they
// are now. A cluster without KubeVirt has none.
func (c *Controller) stepMigrations(ctx context.Context, step *machineconfig.PoolStep) ([]gates.Migration, []gates.VMI, error) {
	list, err := c.Cluster.List(ctx, migrationGVK)
	if err != nil {
		return nil, nil, fmt.Errorf("reading the live migrations of the step: %w", err)
	}
	var migrations []gates.Migration
	var moved []gates.VMI
	for i := range list {
		m := &list[i]
		if m.GetCreationTimestamp().Time.Before(step.Started.Truncate(1e9)) {
			continue
		}
		source, _, _ := unstructured.NestedString(m.Object, "status", "migrationState", "sourceNode")
		if source != "" && !slices.Contains(step.Nodes, source) {
			continue
		}
		vmi, _, _ := unstructured.NestedString(m.Object, "spec", "vmiName")
		phase, _, _ := unstructured.NestedString(m.Object, "status", "phase")
		migrations = append(migrations, gates.Migration{Namespace: m.GetNamespace(), Name: m.GetName(), VMI: vmi, Phase: phase})
		if phase != gates.MigrationSucceeded {
			continue
		}
		live, err := c.Cluster.Get(ctx, kubevirt.VirtualMachineInstanceGVK, m.GetNamespace(), vmi)
		if err != nil {
			return nil, nil, fmt.Errorf("reading VM %s/%s moved by the step: %w", m.GetNamespace(), vmi, err)
		}
		moved = append(moved, movedVMI(m.GetNamespace(), vmi, live))
	}
	return migrations, moved, nil
}

// movedVMI is a VM a migration moved, as it is now (gone: not running).
func movedVMI(namespace, name string, live *unstructured.Unstructured) gates.VMI {
	v := gates.VMI{Namespace: namespace, Name: name}
	if live == nil {
		return v
	}
	phase, _, _ := unstructured.NestedString(live.Object, "status", "phase")
	v.Running = phase == "Running"
	return v
}
