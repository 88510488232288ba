package controller

import (
	"context"
	"fmt"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubevirt/virt-advisor/pkg/apis/advisor/v1alpha1"
	"github.com/kubevirt/virt-advisor/pkg/controller/pools"
	"github.com/kubevirt/virt-advisor/pkg/status"
)

// gate is asked before an approved item is written (step progress): the
// admission policies that confine the write, then, for a MachineConfig
// item, the pool controller (Admit, Hold).
type gate struct {
	pools       *pools.Controller
	seen        *seenPools
	confinement Confinement
	out         outcomes
}

type itemGate int

const (
	gateOpen     itemGate = iota // write the item
	gateWaiting                  // not yet: the item's message says why
	gateTimedOut                 // waited longer than waitTimeout: the item failed
	gateStopped                  // the review no longer holds: the config failed
)

// item runs before an approved item is written: a MachineConfig item
// asks the pool controller whether it may write to its pools now (their
// maintenance windows, the preflight, their pauses) and, if so, has them
// paused for the coalescing window. waitTimeout counts from when the item
// became due, not while a window keeps it waiting. A wait is returned
// with what it waits for (the config's Waiting condition).
func (g *gate) item(ctx context.Context, cfg *v1alpha1.VirtPlatformConfig, it *v1alpha1.VirtPlatformConfigItem, timeout time.Duration) (itemGate, time.Duration, *status.Wait, error) {
	if !rollsPools(it) || it.Operation == v1alpha1.OperationNone {
		return gateOpen, 0, nil, nil
	}
	adm, err := g.pools.Admit(ctx, cfg, it)
	g.seen.add(cfg.Name, adm.Pools)
	g.noteWindow(it, adm)
	switch {
	case adm.Stale != nil:
		g.out.staleItem(cfg, itemIndex(cfg, it.Name, 0), adm.Stale)
		return gateStopped, 0, nil, nil
	case err == nil && adm.Open():
		err = g.pools.Hold(ctx, cfg.Name, it, adm)
		if err == nil {
			return gateOpen, 0, nil, nil
		}
	case err == nil && adm.Window != nil:
		// The windows ask for that wait, not a stuck write: waitTimeout
		// does not count it.
		it.Message = adm.Message
		return gateWaiting, adm.After, adm.Wait, nil
	}
	if err != nil {
		it.Message = "Not written yet: " + err.Error()
		return gateWaiting, 0, nil, err
	}
	waited := g.out.since(status.ItemDue(&cfg.Status, it))
	if timeout > 0 && waited >= timeout {
		g.out.setItem(it, v1alpha1.ItemStateFailed, fmt.Sprintf("Timeout waiting for resource to become healthy (waited %v, timeout %v): %s; nothing was written",
			waited.Round(time.Second), timeout, strings.TrimPrefix(adm.Message, "Waiting: ")))
		return gateTimedOut, 0, nil, nil
	}
	it.Message = adm.Message
	retry := adm.After
	if timeout > 0 {
		retry = soonest(retry, timeout-waited)
	}
	return gateWaiting, retry, adm.Wait, nil
}

// noteWindow records on the item what the windows of its pools said: the
// window it waits for, if any; the first pass after such a wait ended
// makes the item due from then (waitTimeout and the stuck-write alert
// count the waits after the opening only).
func (g *gate) noteWindow(it *v1alpha1.VirtPlatformConfigItem, adm pools.Admission) {
	if !adm.WindowsChecked {
		return
	}
	waited := it.MaintenanceWindow != nil && !it.MaintenanceWindow.RolloutPaused
	it.MaintenanceWindow = adm.Window
	if waited && adm.Window == nil {
		t := metav1.NewTime(g.out.clock.Now())
		it.LastTransitionTime = &t
	}
}
