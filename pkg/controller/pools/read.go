package pools

import (
	"context"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kubevirt/virt-advisor/pkg/apis/advisor/v1alpha1"
	"github.com/kubevirt/virt-advisor/pkg/machineconfig"
	"github.com/kubevirt/virt-advisor/pkg/plan"
)

// writePools are the pools that render an item's change.
func writePools(ctx context.Context, cluster Reader, it *v1alpha1.VirtPlatformConfigItem) ([]*unstructured.Unstructured, error) {
	change, err := writeChange(ctx, cluster, it)
	if err != nil {
		return nil, err
	}
	all, err := cluster.List(ctx, machineconfig.MachineConfigPoolGVK)
	if err != nil {
		return nil, err
	}
	return rendering(all, change)
}

// writeChange is what an item's write changes (a MachineConfig or
// KubeletConfig); a deleted one has no desired state: the live object
// tells it.
func writeChange(ctx context.Context, cluster Reader, it *v1alpha1.VirtPlatformConfigItem) (machineconfig.Change, error) {
	change := machineconfig.ItemChange(it.TargetRef, it.DesiredState)
	if it.Operation == v1alpha1.OperationDelete {
		live, err := cluster.Get(ctx, plan.TargetGVK(it.TargetRef), "", it.TargetRef.Name)
		if err != nil {
			return change, err
		}
		if live != nil && (machineconfig.IsKubeletConfig(it.TargetRef) || len(live.GetLabels()) > 0) {
			change = machineconfig.ChangeOf(it.TargetRef, live.Object)
		}
	}
	return change, nil
}

// itemPools returns, of all the pools, those an item rolls out on: the
// pools noted when it was applied (one of them gone: an empty pool of
// that name, which EvaluateRollout reports missing), else those rendering
// its change now.
func itemPools(it *v1alpha1.VirtPlatformConfigItem, all []unstructured.Unstructured) ([]*unstructured.Unstructured, error) {
	if len(it.PoolConfigsBefore) == 0 {
		return rendering(all, machineconfig.ItemChange(it.TargetRef, it.DesiredState))
	}
	var out []*unstructured.Unstructured
	for _, pc := range it.PoolConfigsBefore {
		pool := byName(all, pc.Pool)
		if pool == nil {
			pool = &unstructured.Unstructured{Object: map[string]interface{}{}}
			pool.SetName(pc.Pool)
		}
		out = append(out, pool)
	}
	return out, nil
}

// rendering keeps, of all the pools, those rendering the change.
func rendering(all []unstructured.Unstructured, change machineconfig.Change) ([]*unstructured.Unstructured, error) {
	pools, err := machineconfig.RolledPools(all, change)
	if err != nil {
		return nil, err
	}
	out := make([]*unstructured.Unstructured, len(pools))
	for i := range pools {
		out[i] = &pools[i]
	}
	return out, nil
}
