package controller

import (
	"context"
	"fmt"
	"strings"
	"sync"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/sets"

	"github.com/kubevirt/virt-advisor/pkg/apis/advisor/v1alpha1"
	"github.com/kubevirt/virt-advisor/pkg/profiles"
)

// A MachineConfig is rendered by every MachineConfigPool whose
// machineConfigSelector selects its labels (custom pools such as
// worker-cnv select role worker too), so an item is rolled out only when
// all of them have rolled it out.

// itemPools returns the pools a MachineConfig item rolls out on: the
// pools noted when it was applied, else those selecting its labels now.
func (c *Controller) itemPools(ctx context.Context, it *v1alpha1.VirtPlatformConfigItem) ([]*unstructured.Unstructured, error) {
	if len(it.PoolConfigsBefore) > 0 {
		var out []*unstructured.Unstructured
		for _, pc := range it.PoolConfigsBefore {
			pool, err := c.Cluster.Get(ctx, profiles.MachineConfigPoolGVK, "", pc.Pool)
			if err != nil {
				return nil, err
			}
			if pool == nil { // evaluateRollout reports it missing
				pool = &unstructured.Unstructured{Object: map[string]interface{}{}}
				pool.SetName(pc.Pool)
			}
			out = append(out, pool)
		}
		return out, nil
	}
	return c.selectingPools(ctx, machineConfigLabels(it))
}

// selectingPools lists the pools and keeps those selecting the labels.
func (c *Controller) selectingPools(ctx context.Context, mcLabels map[string]string) ([]*unstructured.Unstructured, error) {
	pools, err := profiles.PoolsFor(ctx, c.Cluster, mcLabels)
	if err != nil {
		return nil, err
	}
	out := make([]*unstructured.Unstructured, len(pools))
	for i := range pools {
		out[i] = &pools[i]
	}
	return out, nil
}

// notePoolConfigs records, before a MachineConfig item is written, the
// rendered config every selecting pool is on. A deleted MachineConfig has
// no desired state: the labels of the live object tell its pools.
func (c *Controller) notePoolConfigs(ctx context.Context, it *v1alpha1.VirtPlatformConfigItem) error {
	mcLabels := machineConfigLabels(it)
	if it.Operation == v1alpha1.OperationDelete {
		live, err := c.Cluster.Get(ctx, profiles.MachineConfigGVK, "", it.TargetRef.Name)
		if err != nil {
			return err
		}
		if live != nil && len(live.GetLabels()) > 0 {
			mcLabels = live.GetLabels()
		}
	}
	pools, err := c.selectingPools(ctx, mcLabels)
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

// configBefore is the rendered config a pool was on when the item was applied.
func configBefore(it *v1alpha1.VirtPlatformConfigItem, pool string) string {
	for _, pc := range it.PoolConfigsBefore {
		if pc.Pool == pool {
			return pc.Configuration
		}
	}
	if pool == poolOf(it) {
		return it.PoolConfigBefore // recorded by earlier versions, for one pool
	}
	return ""
}

// combineRollouts: done when every pool is; the message names each pool
// still rolling out (or, when done, each pool).
func combineRollouts(mcName string, results []rollout) rollout {
	if len(results) == 0 {
		return rollout{message: fmt.Sprintf("No MachineConfigPool selects MachineConfig '%s': nothing will roll it out", mcName)}
	}
	all := rollout{done: true}
	var pending, ready []string
	for _, r := range results {
		if r.done {
			ready = append(ready, r.message)
			continue
		}
		all.done = false
		all.degraded = all.degraded || r.degraded
		pending = append(pending, r.message)
	}
	if all.done {
		all.message = strings.Join(ready, "; ")
	} else {
		all.message = strings.Join(pending, "; ")
	}
	return all
}

// machineConfigLabels are the labels of an item's desired MachineConfig;
// without a desired state, the role of its pool.
func machineConfigLabels(it *v1alpha1.VirtPlatformConfigItem) map[string]string {
	if l := profiles.DesiredLabels(it.DesiredState); len(l) > 0 {
		return l
	}
	return map[string]string{profiles.MachineConfigRoleLabel: poolOf(it)}
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
