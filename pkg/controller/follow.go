package controller

import (
	"context"
	"fmt"
	"time"

	"github.com/kubevirt/virt-advisor/pkg/apis/advisor/v1alpha1"
	"github.com/kubevirt/virt-advisor/pkg/controller/pools"
)

// follower follows the rollouts of written MachineConfig items: step
// progress after an item's write, and workTrack for a config whose phase
// is terminal. It asks the pool controller (Rollout), which writes
// nothing.
type follower struct {
	pools *pools.Controller
	seen  *seenPools
	out   outcomes
}

// followItem follows the rollout of a written MachineConfig item.
func (f *follower) followItem(ctx context.Context, p *progression, it *v1alpha1.VirtPlatformConfigItem) {
	r := f.rollout(ctx, p.cfg, it, true)
	waited := f.out.since(it.LastTransitionTime)
	p.requeue = soonest(p.requeue, r.After)
	if !r.Done {
		p.waitFor(0, r.Wait)
	}
	switch {
	case r.Done:
		f.out.setItem(it, v1alpha1.ItemStateCompleted, r.Message)
		it.MaintenanceWindow = nil
	case r.Windowed:
		// Maintenance windows bound this rollout, not waitTimeout: it may
		// span several of them.
		it.Message = r.Message
	case p.timeout > 0 && waited >= p.timeout:
		f.out.setItem(it, v1alpha1.ItemStateFailed, fmt.Sprintf("Timeout waiting for resource to become healthy (waited %v, timeout %v): %s",
			waited.Round(time.Second), p.timeout, r.Message))
	default:
		it.Message = r.Message
		if p.timeout > 0 {
			p.requeue = soonest(p.requeue, p.timeout-waited)
		}
	}
}

// track updates the items whose MachineConfig rolls out, and
// nothing else: the phase stays, no item is written.
func (f *follower) track(ctx context.Context, cfg *v1alpha1.VirtPlatformConfig) {
	for i := range cfg.Status.Items {
		it := &cfg.Status.Items[i]
		if it.State != v1alpha1.ItemStateInProgress || !rollsPools(it) || writePending(it) {
			continue
		}
		if r := f.rollout(ctx, cfg, it, true); r.Done {
			f.out.setItem(it, v1alpha1.ItemStateCompleted, r.Message)
		} else {
			it.Message = r.Message
		}
	}
}

// rollout asks the pool controller how far the pools of a MachineConfig
// item rolled it out (written: virt-advisor wrote it under an approval,
// so a closing window pauses them), and records on the item the window
// its rollout waits for and the pauses at a window's close.
func (f *follower) rollout(ctx context.Context, cfg *v1alpha1.VirtPlatformConfig, it *v1alpha1.VirtPlatformConfigItem, written bool) pools.ItemRollout {
	r := f.pools.Rollout(ctx, cfg, it, written)
	f.seen.add(cfg.Name, r.Pools)
	it.MaintenanceWindow = r.Window
	it.WindowPauses = r.WindowPauses
	return r
}
