package controller

import (
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubevirt/virt-advisor/pkg/apis/advisor/v1alpha1"
	"github.com/kubevirt/virt-advisor/pkg/maintenance"
	"github.com/kubevirt/virt-advisor/pkg/status"
)

// givenWindowWait: the PSI item approved while the worker pool's nightly
// window (22:00 UTC, 1h) is closed; the harness's clock is Fri 10:00 UTC.
func givenWindowWait(h *harness, spec v1alpha1.VirtPlatformConfigSpec) {
	h.setWindows(fakeWindows{nightly(h.t, maintenance.Allow, "0 22 * * *", time.Hour)})
	h.cluster.put(workerPool{}.obj())
	h.create(spec, "alice")
	h.planner.result = planOf("snap-1", psiItem(v1alpha1.OperationCreate))
	if spec.Action == v1alpha1.PlanActionApply {
		h.mustReconcile(v1alpha1.PhaseInProgress) // approved by alice's action Apply
	} else {
		h.mustReconcile(v1alpha1.PhaseReviewRequired)
		h.approve("admin")
	}
	h.mustReconcile(v1alpha1.PhaseInProgress)
}

// givenRollingInWindow: the PSI item written in the open window, its pool
// rolling (1 of 3 nodes updated).
func givenRollingInWindow(h *harness, spec v1alpha1.VirtPlatformConfigSpec) {
	givenWindowWait(h, spec)
	h.clock.SetTime(time.Date(2026, 11, 20, 22, 0, 1, 0, time.UTC))
	h.mustReconcile(v1alpha1.PhaseInProgress)
	h.cluster.put(workerPool{updating: true, updated: 1}.obj())
	h.mustReconcile(v1alpha1.PhaseInProgress)
}

// waiting checks the Waiting condition: True with reason and a message
// containing message, or False (reason "").
func waiting(reason, message string) func(*testing.T, *harness) {
	return func(t *testing.T, h *harness) {
		t.Helper()
		c := meta.FindStatusCondition(h.get().Status.Conditions, status.ConditionWaiting)
		if reason == "" {
			if c != nil && c.Status != metav1.ConditionFalse {
				t.Errorf("Waiting = %+v, want False or absent", c)
			}
			return
		}
		if c == nil || c.Status != metav1.ConditionTrue || c.Reason != reason || !strings.Contains(c.Message, message) {
			t.Errorf("Waiting = %+v, want True, reason %s, message containing %q", c, reason, message)
		}
	}
}

func both(checks ...func(*testing.T, *harness)) func(*testing.T, *harness) {
	return func(t *testing.T, h *harness) {
		for _, c := range checks {
			c(t, h)
		}
	}
}

// TestWaitingIsSaid walks the edges where an approved plan waits, and
// where the wait ends: the phase stays InProgress, its message and the
// Waiting condition say for what, with absolute times only.
func TestWaitingIsSaid(t *testing.T) {
	plan := "plan " + v1alpha1.ShortHash(planOf("snap-1", psiItem(v1alpha1.OperationCreate)).Status.PlanHash)
	windowWait := "Waiting for maintenance window 'night' (opens Fri 20 Nov 22:00 UTC) before writing item 'enable-psi-metrics'"
	tests := []edge{
		{name: "ReviewRequired --approval into a closed window--> InProgress (Waiting MaintenanceWindow, nothing written)", spec: dryRun,
			given: func(h *harness, s v1alpha1.VirtPlatformConfigSpec) {
				h.setWindows(fakeWindows{nightly(h.t, maintenance.Allow, "0 22 * * *", time.Hour)})
				givenPSIApproved(h, s)
			},
			event: nothing, phase: v1alpha1.PhaseInProgress, reason: "Waiting",
			message: windowWait + "; " + plan + " approved by admin, nothing written yet",
			items:   map[string]itemWant{psi: {v1alpha1.ItemStatePending, "window 'night' opens"}},
			events:  []string{"Normal Waiting " + windowWait}, check: waiting(status.WaitingMaintenanceWindow, windowWait)},
		{name: "InProgress (waiting for a window) --an hour later--> InProgress, still waiting, the same message, no new Event", spec: dryRun, given: givenWindowWait,
			event: func(h *harness) { h.clock.Step(time.Hour) }, phase: v1alpha1.PhaseInProgress, reason: "Waiting", message: windowWait,
			check: both(waiting(status.WaitingMaintenanceWindow, windowWait), func(t *testing.T, h *harness) {
				h.clock.Step(time.Hour)
				h.reconcile()
				if events := h.events(); len(events) != 0 {
					t.Errorf("events %q while the same wait goes on, want none", events)
				}
			})},
		{name: "InProgress (waiting for a window) --the window opens--> InProgress (written; Waiting False, applying)", spec: dryRun, given: givenWindowWait,
			event: func(h *harness) { h.clock.SetTime(time.Date(2026, 11, 20, 22, 0, 1, 0, time.UTC)) },
			phase: v1alpha1.PhaseInProgress, reason: "Approved", message: "Applying " + plan + " approved by admin", applied: []string{psi},
			check: both(waiting("", ""), func(t *testing.T, h *harness) {
				conditionIs(t, h, status.ConditionWaiting, metav1.ConditionFalse, "NotWaiting")
			})},
		{name: "InProgress (rolling out) --the window closes--> InProgress (Waiting MaintenanceWindow to resume the rollout)", spec: dryRun, given: givenRollingInWindow,
			event: func(h *harness) { h.clock.SetTime(time.Date(2026, 11, 20, 23, 0, 1, 0, time.UTC)) },
			phase: v1alpha1.PhaseInProgress, reason: "Waiting",
			message: "Waiting for maintenance window 'night' (opens Sat 21 Nov 22:00 UTC) to resume the rollout of item 'enable-psi-metrics'; " + plan + " approved by admin",
			check: both(waiting(status.WaitingMaintenanceWindow, "to resume the rollout"), func(t *testing.T, h *harness) {
				if m := status.PhaseMessage(&h.get().Status); strings.Contains(m, "nothing written") {
					t.Errorf("message %q says nothing was written, but the item was", m)
				}
			})},
		{name: "InProgress (rollout paused by a window) --the window opens--> InProgress (Waiting False, applying)", spec: dryRun,
			given: func(h *harness, s v1alpha1.VirtPlatformConfigSpec) {
				givenRollingInWindow(h, s)
				h.clock.SetTime(time.Date(2026, 11, 20, 23, 0, 1, 0, time.UTC))
				h.mustReconcile(v1alpha1.PhaseInProgress)
			},
			event: func(h *harness) { h.clock.SetTime(time.Date(2026, 11, 21, 22, 0, 1, 0, time.UTC)) },
			phase: v1alpha1.PhaseInProgress, reason: "Approved", message: "Applying " + plan + " approved by admin",
			check: waiting("", "")},
		{name: "InProgress --approved, a VM blocks the drain--> InProgress (Waiting DrainBlocked)", spec: dryRun, given: givenApprovedPSI(migrating, vmNone, gpu0),
			event: nothing, phase: v1alpha1.PhaseInProgress, reason: "Waiting",
			message: "Waiting before writing item 'enable-psi-metrics': writing MachineConfig '99-worker-psi-karg' would drain nodes that run a VM that would block the drain",
			check:   waiting(status.WaitingDrainBlocked, "default/gpu-0")},
		{name: "InProgress --approved during a cluster upgrade--> InProgress (Waiting ClusterUpgrading)", spec: dryRun, given: givenApprovedPSI(migrating),
			event: clusterVersion("True", "Working towards 4.17.3"), phase: v1alpha1.PhaseInProgress, reason: "Waiting",
			message: "Waiting before writing item 'enable-psi-metrics': cluster upgrade in progress",
			check:   waiting(status.WaitingClusterUpgrading, "Working towards 4.17.3")},
		{name: "InProgress --approved, the pool is degraded--> InProgress (Waiting PoolBusy)", spec: dryRun, given: givenApprovedPSI(migrating),
			event: pool(workerPool{degraded: 1}), phase: v1alpha1.PhaseInProgress, reason: "Waiting",
			message: "Waiting before writing item 'enable-psi-metrics': MachineConfigPool 'worker' is degraded",
			check:   waiting(status.WaitingPoolBusy, "is degraded")},
		{name: "InProgress (waiting on a VM) --the VM is gone--> InProgress (written; Waiting False)", spec: dryRun, given: waitingOn(dryRun),
			event: drainNow(migrating, vmNone), phase: v1alpha1.PhaseInProgress, reason: "Approved", message: "Applying plan", applied: []string{psi},
			check: waiting("", "")},
		{name: "InProgress (waiting for a window, DryRun) --spec change--> Failed (ApprovalMismatch; Waiting False; approve the new plan)", spec: dryRun, given: givenWindowWait,
			event: specChange("alice", func(s *v1alpha1.VirtPlatformConfigSpec) { s.WaitTimeout = "1h" }),
			phase: v1alpha1.PhaseFailed, reason: "ApprovalMismatch",
			message: "Review the plan of the current spec and approve it: GET .../virtplatformconfigs/" + configName + "/plan, then POST its planHash to .../approve",
			noItems: true, events: []string{"Warning Failed"},
			check: both(waiting("", ""), func(t *testing.T, h *harness) {
				if m := status.PhaseMessage(&h.get().Status); strings.Contains(m, "spec.action to DryRun") || strings.Contains(m, "change the spec again") {
					t.Errorf("message %q gives advice that does not fit action DryRun", m)
				}
			})},
		{name: "InProgress (waiting for a window, Apply) --spec change--> Failed (ApprovalMismatch; approve, or change the spec again)", spec: apply, given: givenWindowWait,
			event: specChange("alice", func(s *v1alpha1.VirtPlatformConfigSpec) { s.WaitTimeout = "1h" }),
			phase: v1alpha1.PhaseFailed, reason: "ApprovalMismatch",
			message: "approve it: GET .../virtplatformconfigs/" + configName + "/plan, then POST its planHash to .../approve (kubectl advisor plan " + configName +
				", then kubectl advisor approve " + configName + "); or change the spec again: with action Apply, a spec change approves the plan of the new spec",
			noItems: true, events: []string{"Warning Failed"}, check: waiting("", "")},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) { runEdge(t, tc) })
	}
}
