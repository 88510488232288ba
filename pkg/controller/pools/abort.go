package pools

// Aborts: a person aborted an approved plan (POST .../abort). The pools
// its written MachineConfig items roll out on are paused, as when a
// maintenance window closes mid-rollout (a node already updating
// finishes, no other starts), and stay paused — whatever the pause's
// recorded end, and whoever paused them — until the config is approved
// again or deleted: the config controller then withdraws the hold and the
// pause ends as a coalescing pause of ours does.

import (
	"context"
	"errors"
	"reflect"
	"slices"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kubevirt/virt-advisor/pkg/machineconfig"
)

// HoldAborted records that config's plan was aborted while these
// MachineConfig changes of it were written or being written: every pool
// that renders one of them is held paused. No changes withdraws the hold.
// The pools are looked at again when the hold changed.
func (c *Controller) HoldAborted(config string, changes []machineconfig.Change) {
	if c.index.setAborted(config, changes) {
		c.Resync()
	}
}

// setAborted records config's abort hold; false when unchanged.
func (x *index) setAborted(config string, changes []machineconfig.Change) bool {
	x.mu.Lock()
	defer x.mu.Unlock()
	had, held := x.aborts[config]
	if len(changes) == 0 {
		delete(x.aborts, config)
		return held
	}
	x.aborts[config] = changes
	return !held || !reflect.DeepEqual(had, changes)
}

// abortedOn lists the configs whose abort holds pool paused, sorted.
func (x *index) abortedOn(pool *unstructured.Unstructured) []string {
	x.mu.Lock()
	defer x.mu.Unlock()
	var out []string
	for config, changes := range x.aborts {
		for _, change := range changes {
			if ok, err := change.RolledBy(pool); err != nil || ok {
				// A change that cannot be matched holds the pool: a
				// pause kept too long is safer than a drain resumed.
				out = append(out, config)
				break
			}
		}
	}
	slices.Sort(out)
	return out
}

// PauseAborted holds, as HoldAborted does, the pools that render the
// changes of config's aborted plan, and pauses at once those of them that
// are rolling out, before the abort is answered: the node in flight
// finishes, no other starts. It is the pool reconcile itself, called for
// each such pool rather than queued.
func (c *Controller) PauseAborted(ctx context.Context, config string, changes []machineconfig.Change) error {
	c.HoldAborted(config, changes)
	if len(changes) == 0 {
		return nil
	}
	pools, err := c.Cluster.List(ctx, machineconfig.MachineConfigPoolGVK)
	if err != nil {
		return err
	}
	var errs []error
	for i := range pools {
		if !slices.Contains(c.index.abortedOn(&pools[i]), config) {
			continue
		}
		if _, err := c.Reconcile(ctx, pools[i].GetName()); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
