package controller

import (
	"context"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/util/workqueue"

	"github.com/kubevirt/virt-advisor/pkg/apis/advisor/v1alpha1"
	"github.com/kubevirt/virt-advisor/pkg/cluster"
	"github.com/kubevirt/virt-advisor/pkg/controller/pools"
	"github.com/kubevirt/virt-advisor/pkg/machineconfig"
	"github.com/kubevirt/virt-advisor/pkg/maintenance"
	"github.com/kubevirt/virt-advisor/pkg/status"
)

// nightly opens every day at 22:00 UTC for an hour, for the worker pool;
// the harness's clock starts at 10:00 UTC.
func nightly(t *testing.T, kind maintenance.Kind, schedule string, d time.Duration) *maintenance.Window {
	t.Helper()
	w, err := maintenance.New("night", maintenance.Spec{PoolNames: []string{machineconfig.WorkerPool}, Schedule: schedule, Duration: d, Kind: kind})
	if err != nil {
		t.Fatal(err)
	}
	return w
}

func psiItemOf(h *harness) *v1alpha1.VirtPlatformConfigItem {
	for i := range h.get().Status.Items {
		if it := &h.get().Status.Items[i]; it.Name == psi {
			return it
		}
	}
	h.t.Fatalf("no item %s", psi)
	return nil
}

// An approved MachineConfig change waits for its pool's window (however
// long: waitTimeout does not count it), is written when it opens, and its
// rollout is paused when the window closes and resumed at the next opening.
func TestMaintenanceWindowGatesWritesAndPausesRollouts(t *testing.T) {
	h := newHarness(t, "v1", true)
	h.setWindows(fakeWindows{nightly(t, maintenance.Allow, "0 22 * * *", time.Hour)})
	givenPSIApproved(h, v1alpha1.VirtPlatformConfigSpec{Action: v1alpha1.PlanActionDryRun, WaitTimeout: "30s"})

	h.mustReconcile(v1alpha1.PhaseInProgress)
	it := psiItemOf(h)
	if len(h.planner.applied) != 0 || it.State != v1alpha1.ItemStatePending || !strings.Contains(it.Message, "window 'night' opens") {
		t.Fatalf("before the window: applied %v, item %s %q", h.planner.applied, it.State, it.Message)
	}
	if it.MaintenanceWindow == nil || it.MaintenanceWindow.Name != "night" || it.MaintenanceWindow.RolloutPaused {
		t.Errorf("maintenanceWindow %+v, want waiting for 'night' before the write", it.MaintenanceWindow)
	}
	if want := 12 * time.Hour; h.requeue != want {
		t.Errorf("requeue after %v, want %v (the opening)", h.requeue, want)
	}
	h.clock.Step(time.Hour) // far past waitTimeout
	h.mustReconcile(v1alpha1.PhaseInProgress)
	if it := psiItemOf(h); it.State != v1alpha1.ItemStatePending {
		t.Fatalf("a wait for a window failed the item: %s %q", it.State, it.Message)
	}

	h.clock.SetTime(time.Date(2026, 11, 20, 22, 0, 1, 0, time.UTC))
	h.mustReconcile(v1alpha1.PhaseInProgress)
	if len(h.planner.applied) != 1 {
		t.Fatalf("the window opened: applied %v, want the PSI item", h.planner.applied)
	}
	h.cluster.put(workerPool{updating: true, updated: 1}.obj())
	h.mustReconcile(v1alpha1.PhaseInProgress)
	if len(h.cluster.pauses) != 0 {
		t.Fatalf("paused %v while the window is open", h.cluster.pauses)
	}
	if want := time.Hour - time.Second; h.requeue != want {
		t.Errorf("requeue after %v, want %v (the close)", h.requeue, want)
	}

	// The window closes mid-rollout: the pool controller pauses the pool
	// until it opens, and the item says so.
	h.clock.SetTime(time.Date(2026, 11, 20, 23, 0, 1, 0, time.UTC))
	h.mustReconcile(v1alpha1.PhaseInProgress)
	h.syncPools()
	h.mustReconcile(v1alpha1.PhaseInProgress)
	it = psiItemOf(h)
	if len(h.cluster.pauses) != 1 || !h.cluster.pauses[0] {
		t.Fatalf("pauses %v, want one pause at the close", h.cluster.pauses)
	}
	if it.State != v1alpha1.ItemStateInProgress || it.WindowPauses != 1 || it.MaintenanceWindow == nil || !it.MaintenanceWindow.RolloutPaused ||
		!strings.Contains(it.Message, "maintenance window closed: 1 of 3 nodes updated; resumes Sat 21 Nov 22:00 UTC, in 22h59m") {
		t.Errorf("item %s pauses %d window %+v %q", it.State, it.WindowPauses, it.MaintenanceWindow, it.Message)
	}
	h.mustReconcile(v1alpha1.PhaseInProgress)
	h.syncPools()
	h.mustReconcile(v1alpha1.PhaseInProgress)
	if len(h.cluster.pauses) != 1 || psiItemOf(h).WindowPauses != 1 {
		t.Errorf("pauses %v, windowPauses %d: a paused pool is not paused again", h.cluster.pauses, psiItemOf(h).WindowPauses)
	}
	if h.syncPools(); len(h.cluster.pauses) != 1 {
		t.Fatalf("pool reconcile while closed: pauses %v", h.cluster.pauses)
	}

	// At the next opening the pause ends and the rollout resumes.
	h.clock.SetTime(time.Date(2026, 11, 21, 22, 0, 1, 0, time.UTC))
	if h.syncPools(); len(h.cluster.pauses) != 2 || h.cluster.pauses[1] {
		t.Fatalf("pool reconcile at the opening: pauses %v, want the pause ended", h.cluster.pauses)
	}
	h.cluster.put(workerPool{rolled: true}.obj())
	h.mustReconcile(v1alpha1.PhaseCompleted)
	if it := psiItemOf(h); it.MaintenanceWindow != nil {
		t.Errorf("a completed item still waits for %+v", it.MaintenanceWindow)
	}
}

// A freeze (Deny) covering now beats an open Allow window: nothing is
// written until it ends.
func TestFreezeBeatsAnOpenWindow(t *testing.T) {
	h := newHarness(t, "v1", true)
	always := nightly(t, maintenance.Allow, "0 * * * *", time.Hour) // always open
	freeze, err := maintenance.New("holidays", maintenance.Spec{PoolNames: []string{machineconfig.WorkerPool}, Schedule: "0 9 * * *", Duration: 3 * time.Hour, Kind: maintenance.Deny})
	if err != nil {
		t.Fatal(err)
	}
	h.setWindows(fakeWindows{always, freeze})
	givenPSIApproved(h, v1alpha1.VirtPlatformConfigSpec{Action: v1alpha1.PlanActionDryRun})
	h.mustReconcile(v1alpha1.PhaseInProgress)
	if it := psiItemOf(h); len(h.planner.applied) != 0 || !strings.Contains(it.Message, "freeze 'holidays' until") {
		t.Fatalf("during the freeze: applied %v, %q", h.planner.applied, it.Message)
	}
	if want := 2 * time.Hour; h.requeue != want {
		t.Errorf("requeue after %v, want %v (the end of the freeze)", h.requeue, want)
	}
	h.clock.Step(2*time.Hour + time.Second)
	h.mustReconcile(v1alpha1.PhaseInProgress)
	if len(h.planner.applied) != 1 {
		t.Errorf("after the freeze: applied %v", h.planner.applied)
	}
}

// A rollout paused by a closing window resumes as soon as its pool may be
// disrupted again (here an Allow window added for the night), not only at
// the opening recorded on the pause.
func TestRolloutPausedForAWindowResumesWhenAWindowOpens(t *testing.T) {
	h := newHarness(t, "v1", true)
	night := nightly(t, maintenance.Allow, "0 22 * * *", time.Hour)
	h.setWindows(fakeWindows{night})
	givenPSIApproved(h, v1alpha1.VirtPlatformConfigSpec{Action: v1alpha1.PlanActionDryRun})
	h.clock.SetTime(time.Date(2026, 11, 20, 22, 0, 1, 0, time.UTC))
	h.mustReconcile(v1alpha1.PhaseInProgress)
	h.cluster.put(workerPool{updating: true, updated: 1}.obj())
	h.clock.SetTime(time.Date(2026, 11, 20, 23, 0, 1, 0, time.UTC))
	h.mustReconcile(v1alpha1.PhaseInProgress)
	h.syncPools()
	pool, _ := h.cluster.Get(context.Background(), machineconfig.MachineConfigPoolGVK, "", machineconfig.WorkerPool)
	if got := pool.GetAnnotations()[machineconfig.PausedForAnnotation]; got != "night" || len(h.cluster.pauses) != 1 {
		t.Fatalf("pauses %v, %s=%q: want one pause for window 'night'", h.cluster.pauses, machineconfig.PausedForAnnotation, got)
	}

	extra, err := maintenance.New("extra", maintenance.Spec{PoolNames: []string{machineconfig.WorkerPool}, Schedule: "0 23 * * *", Duration: 2 * time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	h.setWindows(fakeWindows{night, extra})
	if h.syncPools(); len(h.cluster.pauses) != 2 || h.cluster.pauses[1] {
		t.Fatalf("pool reconcile with a window open: pauses %v, want the pause ended", h.cluster.pauses)
	}
}

// A config whose MachineConfig waits on a pool we still hold past its
// coalescing window has the pool controller look at the pool: the
// reconcile planned when the pool was paused may have run while the pool
// could not be read (an outage, a takeover), and nothing else would end
// the pause.
func TestRolloutPastOurPauseAsksToEndIt(t *testing.T) {
	for _, tc := range []struct {
		name    string
		until   time.Duration // from now
		checked bool
		message string
	}{
		{"pause over", -time.Second, true, "its window ended at"},
		{"pause running", time.Minute, false, "is paused by virt-advisor until"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, "v1", true)
			h.poolQueue = workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[string](),
				workqueue.TypedRateLimitingQueueConfig[string]{Clock: h.clock})
			h.c.pools.UseQueue(h.poolQueue)
			givenPSIApproved(h, v1alpha1.VirtPlatformConfigSpec{Action: v1alpha1.PlanActionDryRun})
			h.mustReconcile(v1alpha1.PhaseInProgress)
			held := workerPool{updating: true, updated: 1, paused: true}.obj()
			held.SetAnnotations(map[string]string{machineconfig.PausedUntilAnnotation: h.clock.Now().Add(tc.until).UTC().Format(time.RFC3339)})
			held.SetManagedFields([]metav1.ManagedFieldsEntry{{Manager: cluster.FieldManager, Operation: metav1.ManagedFieldsOperationApply,
				FieldsV1: &metav1.FieldsV1{Raw: []byte(`{"f:spec":{"f:paused":{}}}`)}}})
			h.cluster.put(held)

			h.mustReconcile(v1alpha1.PhaseInProgress)
			if msg := psiItemOf(h).Message; !strings.Contains(msg, tc.message) {
				t.Errorf("item message %q, want it to contain %q", msg, tc.message)
			}
			h.clock.Step(machineconfig.HoldRetry)
			queued := false
			_ = wait.PollUntilContextTimeout(context.Background(), 10*time.Millisecond, time.Second, true, func(context.Context) (bool, error) {
				for h.poolQueue.Len() > 0 {
					key, _ := h.poolQueue.Get()
					queued = queued || key == machineconfig.WorkerPool
					h.poolQueue.Done(key)
				}
				return queued, nil
			})
			if queued != tc.checked {
				t.Errorf("window check queued: %v, want %v", queued, tc.checked)
			}
		})
	}
}

// A rollout virt-advisor did not write (a plan with nothing to write,
// nothing approved) is followed, never paused: pausing a pool is a write
// that needs an approval.
func TestNoPauseForARolloutNobodyApproved(t *testing.T) {
	h := newHarness(t, "v1", true)
	h.setWindows(fakeWindows{nightly(t, maintenance.Allow, "0 22 * * *", time.Hour)})
	h.cluster.put(workerPool{updating: true, updated: 1}.obj())
	h.create(v1alpha1.VirtPlatformConfigSpec{Action: v1alpha1.PlanActionDryRun}, "alice")
	h.planner.result = planOf("snap-1", psiItem(v1alpha1.OperationNone))
	h.mustReconcile(v1alpha1.PhaseInProgress)
	if len(h.cluster.pauses) != 0 {
		t.Errorf("pauses %v: a pool was paused for a rollout nobody approved", h.cluster.pauses)
	}
	if it := psiItemOf(h); it.MaintenanceWindow != nil || it.WindowPauses != 0 {
		t.Errorf("item %+v waits for a window it is not ours to wait for", it)
	}
}

// InProgress --windows cannot be evaluated--> InProgress, not written:
// windows whose evaluation exceeds the bound (maintenance.MaxSteps) allow
// nothing; the item says why and the controller looks again in a minute.
func TestWindowsThatCannotBeEvaluatedAllowNothing(t *testing.T) {
	h := newHarness(t, "v1", true)
	var windows fakeWindows
	for _, w := range []struct{ name, schedule, zone string }{
		{"a", "* 0-22 * * *", "Europe/Berlin"}, {"b", "*/2 0-22 * * *", "Europe/London"}, {"c", "0-59 0-22 * * *", "Europe/Paris"},
	} {
		d := time.Minute
		if w.name == "b" {
			d = 2 * time.Minute
		}
		freeze, err := maintenance.New(w.name, maintenance.Spec{PoolNames: []string{machineconfig.WorkerPool}, Schedule: w.schedule, Duration: d, TimeZone: w.zone, Kind: maintenance.Deny})
		if err != nil {
			t.Fatal(err)
		}
		windows = append(windows, freeze)
	}
	midnight, err := maintenance.New("midnight", maintenance.Spec{PoolNames: []string{machineconfig.WorkerPool}, Schedule: "0 0 * * *", Duration: time.Minute, TimeZone: "Europe/Berlin"})
	if err != nil {
		t.Fatal(err)
	}
	h.setWindows(append(windows, midnight))
	givenPSIApproved(h, v1alpha1.VirtPlatformConfigSpec{Action: v1alpha1.PlanActionDryRun})
	h.mustReconcile(v1alpha1.PhaseInProgress)
	it := psiItemOf(h)
	if len(h.planner.applied) != 0 || it.State != v1alpha1.ItemStatePending ||
		!strings.Contains(it.Message, "Waiting: MachineConfigPool 'worker': the maintenance windows of pool 'worker' (a, b, c, midnight) cannot be evaluated: too complex") {
		t.Fatalf("applied %v, item %s %q", h.planner.applied, it.State, it.Message)
	}
	if h.requeue != time.Minute {
		t.Errorf("requeue after %v, want a minute", h.requeue)
	}
}

// givenPausedAtTheNightClose has the approved PSI item written when
// 'night' opens (22:00 UTC), its pool rolling (1 of 3 nodes updated), and
// the pool paused by the pool controller when 'night' closes.
func givenPausedAtTheNightClose(t *testing.T) *harness {
	t.Helper()
	h := newHarness(t, "v1", true)
	h.setWindows(fakeWindows{nightly(t, maintenance.Allow, "0 22 * * *", time.Hour)})
	givenPSIApproved(h, v1alpha1.VirtPlatformConfigSpec{Action: v1alpha1.PlanActionDryRun})
	h.clock.SetTime(time.Date(2026, 11, 20, 22, 0, 1, 0, time.UTC))
	h.mustReconcile(v1alpha1.PhaseInProgress)
	h.cluster.put(workerPool{updating: true, updated: 1}.obj())
	h.mustReconcile(v1alpha1.PhaseInProgress)
	h.clock.SetTime(time.Date(2026, 11, 20, 23, 0, 1, 0, time.UTC))
	h.syncPools()
	if len(h.cluster.pauses) != 1 || !h.cluster.pauses[0] {
		t.Fatalf("pauses %v, want one pause at the close", h.cluster.pauses)
	}
	return h
}

// A pause at a window's close is counted once in windowPauses, even when
// the status write that would record it loses a conflict: the next
// reconcile records it.
func TestWindowPauseCountedDespiteAConflict(t *testing.T) {
	h := givenPausedAtTheNightClose(t)
	h.status.conflict = true
	h.reconcile()
	if !apierrors.IsConflict(h.err) {
		t.Fatalf("reconcile: %v, want the conflict", h.err)
	}
	h.mustReconcile(v1alpha1.PhaseInProgress)
	h.mustReconcile(v1alpha1.PhaseInProgress)
	if got := psiItemOf(h).WindowPauses; got != 1 {
		t.Errorf("windowPauses %d, want 1", got)
	}
}

// A VM that came while a window kept the rollout paused is seen before the
// pause ends: at the opening the pool controller reads again, live, what
// the drains do (as before a write); a VM that would block one keeps the
// pool paused, the item and the config's Waiting condition say why, and
// once it is gone the pause ends and the rollout resumes.
func TestWindowOpeningLooksAtTheVMsBeforeResuming(t *testing.T) {
	h := givenPausedAtTheNightClose(t)
	h.mustReconcile(v1alpha1.PhaseInProgress)

	// Meanwhile a VM that cannot migrate started on a worker node.
	h.planner.pending = drainWith(v1alpha1.VMImpact{Node: "worker-2", Namespace: "default", Name: "vm-gpu", Fate: v1alpha1.VMFateBlocksDrain, Reason: "HostDeviceNotLiveMigratable"})
	h.clock.SetTime(time.Date(2026, 11, 21, 22, 0, 1, 0, time.UTC))
	if h.syncPools(); len(h.cluster.pauses) != 1 || h.planner.pendingDrains == 0 {
		t.Fatalf("at the opening with a VM that blocks: pauses %v, live looks %d; want the pool kept paused after a look", h.cluster.pauses, h.planner.pendingDrains)
	}
	h.mustReconcile(v1alpha1.PhaseInProgress)
	const held = "MachineConfigPool 'worker' is paused by virt-advisor: resuming its rollout would drain nodes that run a VM that would block the drain: " +
		"default/vm-gpu (HostDeviceNotLiveMigratable, pool worker); migrate, stop, or change its eviction strategy " +
		"(or set spec.rollout.allowBlockingDrains: true to resume it anyway); MachineConfigPool 'worker' stays paused until no VM blocks"
	it := psiItemOf(h)
	if it.State != v1alpha1.ItemStateInProgress || !strings.Contains(it.Message, held) || it.MaintenanceWindow != nil {
		t.Errorf("item %s %q window %+v, want it held by the VM", it.State, it.Message, it.MaintenanceWindow)
	}
	cond := meta.FindStatusCondition(h.get().Status.Conditions, status.ConditionWaiting)
	if cond == nil || cond.Status != metav1.ConditionTrue || cond.Reason != status.WaitingDrainBlocked || !strings.Contains(cond.Message, held) {
		t.Errorf("Waiting condition %+v, want DrainBlocked saying %q", cond, held)
	}
	if h.requeue != pools.PreflightRetry {
		t.Errorf("requeue after %v, want %v: VMs are not watched", h.requeue, pools.PreflightRetry)
	}

	// The VM is gone: the next look ends the pause.
	h.planner.pending = drainWith()
	h.clock.Step(pools.PreflightRetry)
	if h.syncPools(); len(h.cluster.pauses) != 2 || h.cluster.pauses[1] {
		t.Fatalf("once no VM blocks: pauses %v, want the pause ended", h.cluster.pauses)
	}
	h.mustReconcile(v1alpha1.PhaseInProgress)
	if msg := psiItemOf(h).Message; strings.Contains(msg, "stays paused") {
		t.Errorf("item message %q still says the pool is held", msg)
	}
	if cond := meta.FindStatusCondition(h.get().Status.Conditions, status.ConditionWaiting); cond != nil && cond.Status == metav1.ConditionTrue {
		t.Errorf("Waiting condition %+v after the pool resumed", cond)
	}
}

// drainWith is the live look at the worker pool's drain with these VMs.
func drainWith(vms ...v1alpha1.VMImpact) []v1alpha1.PoolReboot {
	return []v1alpha1.PoolReboot{{Pool: machineconfig.WorkerPool, Nodes: 3, Disruption: v1alpha1.NodeDisruptionReboot, Drains: true, VMImpacts: vms}}
}
