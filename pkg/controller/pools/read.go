package pools

import (
	"context"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kubevirt/virt-advisor/pkg/apis/advisor/v1alpha1"
	"github.com/kubevirt/virt-advisor/pkg/machineconfig"
)

// writePools are the pools that render a MachineConfig item's change; a
// deleted MachineConfig is found through the labels of the live object.
func (c *Controller) writePools(ctx context.Context, it *v1alpha1.VirtPlatformConfigItem) ([]*unstructured.Unstructured, error) {
	mcLabels := machineconfig.ItemLabels(it.DesiredState)
	if it.Operation == v1alpha1.OperationDelete {
		live, err := c.Cluster.Get(ctx, machineconfig.MachineConfigGVK, "", it.TargetRef.Name)
		if err != nil {
			return nil, err
		}
		if live != nil && len(live.GetLabels()) > 0 {
			mcLabels = live.GetLabels()
		}
	}
	return c.selectingPools(ctx, mcLabels)
}

// itemPools returns the pools a MachineConfig item rolls out on: the
// pools noted when it was applied, else those selecting its labels now.
func (c *Controller) itemPools(ctx context.Context, it *v1alpha1.VirtPlatformConfigItem) ([]*unstructured.Unstructured, error) {
	if len(it.PoolConfigsBefore) == 0 {
		return c.selectingPools(ctx, machineconfig.ItemLabels(it.DesiredState))
	}
	var out []*unstructured.Unstructured
	for _, pc := range it.PoolConfigsBefore {
		pool, err := c.Cluster.Get(ctx, machineconfig.MachineConfigPoolGVK, "", pc.Pool)
		if err != nil {
			return nil, err
		}
		if pool == nil { // EvaluateRollout reports it missing
			pool = &unstructured.Unstructured{Object: map[string]interface{}{}}
			pool.SetName(pc.Pool)
		}
		out = append(out, pool)
	}
	return out, nil
}

// selectingPools lists the pools and keeps those selecting the labels.
func (c *Controller) selectingPools(ctx context.Context, mcLabels map[string]string) ([]*unstructured.Unstructured, error) {
	all, err := c.Cluster.List(ctx, machineconfig.MachineConfigPoolGVK)
	if err != nil {
		return nil, err
	}
	pools, err := machineconfig.SelectingPools(all, mcLabels)
	if err != nil {
		return nil, err
	}
	out := make([]*unstructured.Unstructured, len(pools))
	for i := range pools {
		out[i] = &pools[i]
	}
	return out, nil
}

// NotePoolConfigs records, before a MachineConfig item is written, the
// rendered config every pool that renders it is on (how its rollout is
// followed).
func (c *Controller) NotePoolConfigs(ctx context.Context, it *v1alpha1.VirtPlatformConfigItem) error {
	pools, err := c.writePools(ctx, it)
	if err != nil {
		return err
	}
	it.PoolConfigsBefore = nil
	for _, pool := range pools {
		name, _, _ := unstructured.NestedString(pool.Object, "spec", "configuration", "name")
		it.PoolConfigsBefore = append(it.PoolConfigsBefore, v1alpha1.PoolConfiguration{Pool: pool.GetName(), Configuration: name})
	}
	return nil
}
