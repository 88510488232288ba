package pools

// Aborts: a person aborted an approved plan (POST .../abort). The pools
// its written MachineConfig items roll out on are paused, as when a
// maintenance window closes mid-rollout (a node already updating
// finishes, no other starts), and stay paused — whatever the pause's
// recorded end, and whoever paused them — while the config's
// status.abort says so: until the config is approved again (which clears
// it) or deleted. The pause then ends as a coalescing pause of ours does.

import (
	"context"
	"errors"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/kubevirt/virt-advisor/pkg/apis/advisor/v1alpha1"
	"github.com/kubevirt/virt-advisor/pkg/machineconfig"
)

// pauses applies our pauses and unpauses of pools, and says on a pool
// why it was paused.
type pauses struct {
	pauser   Pauser
	recorder record.EventRecorder
	clock    clock.Clock
	counts   *pauseCounts
	wake     func(config string)
}

// PauseAborted pauses at once, before an abort is answered, the pools that
// render the changes cfg's aborted plan (cfg as stored, its status.abort
// set) wrote and that are rolling out: the node in flight finishes, no
// other starts. It is the pool reconcile itself, called for each such
// pool rather than queued; until the cache holds the abort, the pools'
// reconciles read it from cfg.
func (c *Controller) PauseAborted(ctx context.Context, cfg *v1alpha1.VirtPlatformConfig) error {
	changes := abortHold(cfg)
	if len(changes) == 0 {
		return nil
	}
	c.aborting.put(cfg)
	c.term.resync()
	pools, err := c.Cluster.List(ctx, machineconfig.MachineConfigPoolGVK)
	if err != nil {
		return err
	}
	var errs []error
	for i := range pools {
		if !holds(changes, &pools[i], pools) {
			continue
		}
		if _, err := c.Reconcile(ctx, pools[i].GetName()); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// forAbort pauses pool for the aborted plans of configs rolling out
// on it. Marked as a pause of ours that ends at once: the hold, not the
// time, keeps it; withdrawn, the pause ends as a coalescing one.
func (p *pauses) forAbort(ctx context.Context, pool *unstructured.Unstructured, aborted []string) error {
	name := pool.GetName()
	now := p.clock.Now()
	if err := p.apply(ctx, name, &now, ""); err != nil {
		return fmt.Errorf("pausing MachineConfigPool '%s' for the aborted plan of %v: %w", name, aborted, err)
	}
	klog.FromContext(ctx).Info("Paused MachineConfigPool: the plan rolling out on it was aborted", "pool", name, "configs", aborted)
	p.recorder.Eventf(pool, corev1.EventTypeNormal, "PausedByVirtAdvisor",
		"Paused by virt-advisor: the plan of VirtPlatformConfig %s rolling out on it was aborted; a node already updating finishes, no other starts until a plan is approved again or the config is deleted", strings.Join(aborted, ", "))
	for _, config := range aborted {
		p.wake(config)
	}
	return nil
}
