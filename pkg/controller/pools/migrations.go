package pools

import (
	"context"
	"fmt"
	"slices"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kubevirt/virt-advisor/pkg/cluster"
	"github.com/kubevirt/virt-advisor/pkg/gates"
	"github.com/kubevirt/virt-advisor/pkg/kubevirt"
	"github.com/kubevirt/virt-advisor/pkg/machineconfig"
)

// stepMigrations are the live migrations the step's drains started: those
// created since the step started whose source is a node of the step (one
// that names no source counts too: a gate that looks at too many
// migrations halts sooner, never later), and the VMs they moved, as they
// are now. A cluster without KubeVirt has none.
func (s *stepper) stepMigrations(ctx context.Context, step *machineconfig.PoolStep) ([]gates.Migration, []gates.VMI, error) {
	all, err := s.listMigrations(ctx)
	if err != nil {
		return nil, nil, fmt.Errorf("reading the live migrations of the step: %w", err)
	}
	since := step.Started.Truncate(time.Second) // creation times have seconds
	var migrations []gates.Migration
	var moved []gates.VMI
	for _, m := range all {
		if (m.Source != "" && !slices.Contains(step.Nodes, m.Source)) || m.Created.Before(since) {
			continue
		}
		migrations = append(migrations, gates.Migration{Namespace: m.Namespace, Name: m.Name, VMI: m.VMI, Phase: m.Phase})
		if m.Phase != gates.MigrationSucceeded {
			continue
		}
		live, err := s.cluster.Get(ctx, kubevirt.VirtualMachineInstanceGVK, m.Namespace, m.VMI)
		if err != nil {
			return nil, nil, fmt.Errorf("reading VM %s/%s moved by the step: %w", m.Namespace, m.VMI, err)
		}
		vm := movedVMI(m.Namespace, m.VMI, live)
		vm.WasReady = step.WasReady(m.Namespace + "/" + m.VMI)
		moved = append(moved, vm)
	}
	return migrations, moved, nil
}

// listMigrations reads the migrations from Config.Migrations (a cache)
// when set, else live.
func (s *stepper) listMigrations(ctx context.Context) ([]cluster.Migration, error) {
	if s.migrations != nil {
		if cached, ok := s.migrations(); ok {
			return cached, nil
		}
	}
	list, err := s.cluster.List(ctx, cluster.VirtualMachineInstanceMigrationGVK)
	if err != nil {
		return nil, err
	}
	out := make([]cluster.Migration, len(list))
	for i := range list {
		out[i] = cluster.ReadMigration(&list[i])
	}
	return out, nil
}

// movedVMI is a VM a migration moved, as it is now (gone: not running).
func movedVMI(namespace, name string, live *unstructured.Unstructured) gates.VMI {
	v := gates.VMI{Namespace: namespace, Name: name}
	if live == nil {
		return v
	}
	read := kubevirt.ReadVMI(live)
	v.Running, v.Ready = read.Phase == "Running", read.Ready
	return v
}
