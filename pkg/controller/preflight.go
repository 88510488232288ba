package controller

// Preflight before every drain: before a due MachineConfig item pauses its
// pools and is written, the controller looks at what the rollout will do
// beyond the pools themselves (their own gate, busy, degraded or paused by
// someone else, is holdPools). Each finding is a wait with a message,
// never a silent skip:
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
	"slices"
	"strings"
	"time"

	"github.com/kubevirt/virt-advisor/pkg/apis/advisor/v1alpha1"
	"github.com/kubevirt/virt-advisor/pkg/disruption"
	"github.com/kubevirt/virt-advisor/pkg/plan"
	"github.com/kubevirt/virt-advisor/pkg/status"
)

// preflightRetry is how often an item waiting in preflight is looked at
// again: VMs and their conditions are not watched (there may be
// thousands), so a VM that was stopped or became migratable is seen then.
const preflightRetry = 10 * time.Second

// preflight returns why a due MachineConfig item must wait ("" when it
// need not) and for what (a Waiting reason of pkg/status: an upgrade
// before a blocked drain), and when to look again, or stopped when the
// plan turned out stale (the config failed, nothing was written).
func (c *Controller) preflight(ctx context.Context, cfg *v1alpha1.VirtPlatformConfig, it *v1alpha1.VirtPlatformConfigItem) (reason, kind string, retry time.Duration, stopped bool, err error) {
	var waits []string
	cv, err := c.Cluster.Get(ctx, disruption.ClusterVersionGVK, "", disruption.ClusterVersionName)
	if err != nil {
		return "", "", 0, false, fmt.Errorf("reading ClusterVersion '%s' before writing %s '%s': %w", disruption.ClusterVersionName, it.TargetRef.Kind, it.TargetRef.Name, err)
	}
	if upgrade := disruption.UpgradeInProgress(cv); upgrade != "" {
		waits, kind = append(waits, upgrade), status.WaitingClusterUpgrading
	}

	reboots, err := c.Planner.DrainImpact(ctx, it)
	if err != nil {
		return "", "", 0, false, fmt.Errorf("assessing what draining the nodes of %s '%s' does to the VMs there: %w", it.TargetRef.Kind, it.TargetRef.Name, err)
	}
	now := disruption.Disrupted(reboots)
	if unreviewed := disruption.Unreviewed(it.ReviewedVMImpact, now); len(unreviewed) > 0 && !cfg.Spec.BypassOptimisticLock {
		i := slices.IndexFunc(cfg.Status.Items, func(x v1alpha1.VirtPlatformConfigItem) bool { return x.Name == it.Name })
		c.staleItem(cfg, i, &plan.StaleTargetError{Item: it.Name, Target: fmt.Sprintf("%s '%s'", it.TargetRef.Kind, it.TargetRef.Name),
			What: "would now drain nodes whose VMs the reviewed plan did not show with that fate: " + disruption.DescribeVMs(unreviewed)})
		return "", "", 0, true, nil
	}
	if blocking := disruption.Blocking(reboots); len(blocking) > 0 && !cfg.Spec.AllowsBlockingDrains() {
		waits = append(waits, disruption.BlockedMessage(it.TargetRef.Name, blocking))
		if kind == "" {
			kind = status.WaitingDrainBlocked
		}
	}
	if len(waits) == 0 {
		return "", "", 0, false, nil
	}
	return "Waiting: " + strings.Join(waits, "; "), kind, preflightRetry, false, nil
}
