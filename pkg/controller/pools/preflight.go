package pools

// Preflight before every drain: before a due MachineConfig item pauses its
// pools and is written, the pool controller looks at what the rollout will
// do beyond the pools themselves (their own gate, busy, degraded or paused
// by someone else, is decideWrites). Each finding is a wait with a
// message, never a silent skip:
//
//   - a cluster upgrade in progress (ClusterVersion Progressing=True): the
//     upgrade rolls the pools itself;
//   - a VM that would block the drain of a node of the item's pools
//     (eviction strategy LiveMigrate and not migratable, or External): the
//     node would stay cordoned and the pool stuck until someone intervenes,
//     so the change waits until no VM blocks, unless the config says
//     spec.rollout.allowBlockingDrains.
//
// The same look also ends the review: a VM the drain would now shut down or
// be blocked by that the approved plan did not show with that fate makes
// the plan stale; nothing is written.

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/kubevirt/virt-advisor/pkg/apis/advisor/v1alpha1"
	"github.com/kubevirt/virt-advisor/pkg/disruption"
	"github.com/kubevirt/virt-advisor/pkg/plan"
	"github.com/kubevirt/virt-advisor/pkg/status"
)

// PreflightRetry is how often an item waiting in preflight is looked at
// again: VMs and their conditions are not watched (there may be
// thousands), so a VM that was stopped or became migratable is seen then.
const PreflightRetry = 10 * time.Second

// preflightResult: why a due MachineConfig item must wait ("" when it
// need not) and for what (a Waiting reason of pkg/status: an upgrade
// before a blocked drain), and when to look again; or stale when the plan
// turned out stale (nothing may be written).
type preflightResult struct {
	reason, kind string
	retry        time.Duration
	stale        *plan.StaleTargetError
}

func (c *Controller) preflight(ctx context.Context, cfg *v1alpha1.VirtPlatformConfig, it *v1alpha1.VirtPlatformConfigItem) (preflightResult, error) {
	cv, err := c.Cluster.Get(ctx, disruption.ClusterVersionGVK, "", disruption.ClusterVersionName)
	if err != nil {
		return preflightResult{}, fmt.Errorf("reading ClusterVersion '%s' before writing %s '%s': %w", disruption.ClusterVersionName, it.TargetRef.Kind, it.TargetRef.Name, err)
	}
	reboots, err := c.Drains.DrainImpact(ctx, it)
	if err != nil {
		return preflightResult{}, fmt.Errorf("assessing what draining the nodes of %s '%s' does to the VMs there: %w", it.TargetRef.Kind, it.TargetRef.Name, err)
	}
	return decidePreflight(cfg, it, disruption.UpgradeInProgress(cv), reboots), nil
}

// decidePreflight decides from the upgrade in progress ("" when none) and
// what draining the item's pools does now. Pure.
func decidePreflight(cfg *v1alpha1.VirtPlatformConfig, it *v1alpha1.VirtPlatformConfigItem, upgrade string, reboots []v1alpha1.PoolReboot) preflightResult {
	var out preflightResult
	var waits []string
	if upgrade != "" {
		waits, out.kind = append(waits, upgrade), status.WaitingClusterUpgrading
	}
	now := disruption.Disrupted(reboots)
	if unreviewed := disruption.Unreviewed(it.ReviewedVMImpact, now); len(unreviewed) > 0 && !cfg.Spec.BypassOptimisticLock {
		return preflightResult{stale: &plan.StaleTargetError{Item: it.Name, Target: fmt.Sprintf("%s '%s'", it.TargetRef.Kind, it.TargetRef.Name),
			What: "would now drain nodes whose VMs the reviewed plan did not show with that fate: " + disruption.DescribeVMs(unreviewed)}}
	}
	if blocking := blocked(reboots, cfg.Spec.AllowsBlockingDrains()); len(blocking) > 0 {
		waits = append(waits, disruption.BlockedMessage(it.TargetRef.Name, blocking))
		if out.kind == "" {
			out.kind = status.WaitingDrainBlocked
		}
	}
	if len(waits) > 0 {
		out.reason, out.retry = strings.Join(waits, "; "), PreflightRetry
	}
	return out
}
