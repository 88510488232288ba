package controller

import (
	"context"
	"sync"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/sets"

	"github.com/kubevirt/virt-advisor/pkg/apis/advisor/v1alpha1"
	"github.com/kubevirt/virt-advisor/pkg/machineconfig"
)

// itemPools returns the pools an item that rolls pools (a MachineConfig or
// KubeletConfig) rolls out on: the pools noted when it was applied, else
// those rendering it now.
func (c *Controller) itemPools(ctx context.Context, it *v1alpha1.VirtPlatformConfigItem) ([]*unstructured.Unstructured, error) {
	if len(it.PoolConfigsBefore) > 0 {
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
	return c.rolledPools(ctx, machineconfig.ItemChange(it.TargetRef, it.DesiredState))
}

// rolledPools lists the pools and keeps those rendering the change.
func (c *Controller) rolledPools(ctx context.Context, change machineconfig.Change) ([]*unstructured.Unstructured, error) {
	all, err := c.Cluster.List(ctx, machineconfig.MachineConfigPoolGVK)
	if err != nil {
		return nil, err
	}
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

// notePoolConfigs records, before an item that rolls pools is written,
// the rendered config every pool rendering it is on.
func (c *Controller) notePoolConfigs(ctx context.Context, it *v1alpha1.VirtPlatformConfigItem) error {
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

// rolloutPools remembers, per config, the pools its items were last
// evaluated on, so that the controller watches them.
type rolloutPools struct {
	mu    sync.Mutex
	names map[string]sets.Set[string]
}

func (p *rolloutPools) set(config string, pools sets.Set[string]) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.names == nil {
		p.names = map[string]sets.Set[string]{}
	}
	p.names[config] = pools
}

// add remembers more pools of a config.
func (p *rolloutPools) add(config string, pools ...string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.names == nil {
		p.names = map[string]sets.Set[string]{}
	}
	if p.names[config] == nil {
		p.names[config] = sets.New[string]()
	}
	p.names[config].Insert(pools...)
}

func (p *rolloutPools) get(config string) []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return sets.List(p.names[config])
}
