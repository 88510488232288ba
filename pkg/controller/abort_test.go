package controller

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubevirt/virt-advisor/pkg/apis/advisor/v1alpha1"
	"github.com/kubevirt/virt-advisor/pkg/approval"
	"github.com/kubevirt/virt-advisor/pkg/status"
)

// abort does what POST .../abort does to the stored config.
func (h *harness) abort(user string) *v1alpha1.AbortRecord {
	h.t.Helper()
	var rec *v1alpha1.AbortRecord
	h.edit(false, "", func(cfg *v1alpha1.VirtPlatformConfig) {
		var err error
		if rec, err = approval.Abort(cfg, "", user, metav1.NewTime(h.clock.Now())); err != nil {
			h.t.Fatalf("abort: %v", err)
		}
	})
	return rec
}

// givenAbortedMidRollout: the PSI MachineConfig is written and rolls out
// (1 of 3 nodes), the HyperConverged item after it failed to be written
// and waits for a retry; then bob aborts.
func givenAbortedMidRollout(h *harness) *v1alpha1.AbortRecord {
	h.cluster.put(workerPool{}.obj())
	h.create(v1alpha1.VirtPlatformConfigSpec{Action: v1alpha1.PlanActionDryRun}, "alice")
	h.planner.result = planOf("snap-1", psiItem(v1alpha1.OperationCreate), hcoPlanItem(v1alpha1.OperationCreate))
	h.mustReconcile(v1alpha1.PhaseReviewRequired)
	h.approve("admin")
	h.planner.applyErr[hcoItem] = apierrors.NewServiceUnavailable("etcd leader changed")
	h.mustReconcile(v1alpha1.PhaseInProgress)
	h.cluster.put(workerPool{updating: true, updated: 1}.obj())
	h.mustReconcile(v1alpha1.PhaseInProgress)
	if !slices.Equal(h.planner.applied, []string{psi}) || findItem(h.get().Status.Items, hcoItem).Retry == nil {
		h.t.Fatalf("setting up: applied %v, want the PSI item only and the HCO item retried", h.planner.applied)
	}
	return h.abort("bob")
}

// An abort mid-rollout: nothing more is written, the pool is paused for
// it and stays paused, whatever our pause's end, until a new approval;
// the new plan writes what the aborted one did not, and the pause ends.
func TestAbortPausesTheRolloutUntilApprovedAgain(t *testing.T) {
	h := newHarness(t, "v1", false)
	rec := givenAbortedMidRollout(h)
	if !slices.Equal(rec.Written, []string{psi}) || !slices.Equal(rec.InFlight, []string{hcoItem}) || len(rec.NotWritten) != 0 {
		t.Fatalf("abort record written %v, not written %v, in flight %v", rec.Written, rec.NotWritten, rec.InFlight)
	}
	// The abort is answered before the informer's cache holds it.
	h.cacheBehindTheAbort(func() {
		if !slices.Equal(h.cluster.pauses, []bool{true}) {
			t.Fatalf("pauses %v, want the pool paused before the abort is answered", h.cluster.pauses)
		}
		// A pool reconcile from a cache that has not seen the abort yet
		// (the approval it shows is older than the abort) does not end
		// the hold.
		h.clock.Step(time.Minute)
		h.syncPools()
		if !slices.Equal(h.cluster.pauses, []bool{true}) {
			t.Fatalf("pauses %v after a stale reconcile, want the pool still paused", h.cluster.pauses)
		}
	})
	if it := findItem(h.get().Status.Items, psi); it.State != v1alpha1.ItemStateInProgress || !strings.Contains(it.Message, "Written; its rollout stops: the plan") {
		t.Errorf("PSI item %s %q once aborted, want it to say its rollout stops, not that its pool is updating", it.State, it.Message)
	}

	h.mustReconcile(v1alpha1.PhaseAborted)
	cfg := h.get()
	msg := status.PhaseMessage(&cfg.Status)
	for _, want := range []string{"aborted by bob", "written: " + psi, "not written: none", "may have been written): " + hcoItem, "approve it"} {
		if !strings.Contains(msg, want) {
			t.Errorf("phase message %q, want %q in it", msg, want)
		}
	}
	if it := findItem(cfg.Status.Items, hcoItem); it.Retry != nil || !strings.Contains(it.Message, "may have been written") {
		t.Errorf("HCO item %s %q retry %+v: no retry after an abort", it.State, it.Message, it.Retry)
	}
	// Hours later, past every pause end: nothing written, still paused.
	for range 3 {
		h.clock.Step(time.Hour)
		h.mustReconcile(v1alpha1.PhaseAborted)
		h.syncPools()
	}
	if !slices.Equal(h.planner.applied, []string{psi}) || !slices.Equal(h.cluster.pauses, []bool{true}) {
		t.Fatalf("after the abort: applied %v, pauses %v; want nothing more written and the pause kept", h.planner.applied, h.cluster.pauses)
	}
	if it := findItem(h.get().Status.Items, psi); !strings.Contains(it.Message, "paused: the plan rolling out on it was aborted (1 of 3 nodes updated)") {
		t.Errorf("PSI item %q, want it to say its rollout is paused by the abort", it.Message)
	}

	// Approved again: the plan starts from what is live.
	delete(h.planner.applyErr, hcoItem)
	h.planner.result = planOf("snap-2", psiItem(v1alpha1.OperationNone), hcoPlanItem(v1alpha1.OperationCreate))
	h.approve("admin")
	h.mustReconcile(v1alpha1.PhaseInProgress)
	if h.get().Status.Abort != nil {
		t.Errorf("the approval kept the abort record")
	}
	if !slices.Equal(h.planner.applied, []string{psi, hcoItem}) {
		t.Errorf("applied %v, want the HCO item written by the new plan", h.planner.applied)
	}
	h.syncPools()
	if !slices.Equal(h.cluster.pauses, []bool{true, false}) {
		t.Errorf("pauses %v, want the abort's pause ended by the approval", h.cluster.pauses)
	}
}

// Storage holds the abort while this replica's cache still shows the
// approved plan: the write the stale reconcile would make is not made.
func TestAbortStopsAWriteReconciledFromAStaleCache(t *testing.T) {
	h := newHarness(t, "v1", false)
	h.cluster.put(workerPool{}.obj())
	h.create(v1alpha1.VirtPlatformConfigSpec{Action: v1alpha1.PlanActionDryRun}, "alice")
	h.planner.result = planOf("snap-1", deschedulerItem(v1alpha1.OperationCreate, "Automatic", 5), hcoPlanItem(v1alpha1.OperationCreate))
	h.mustReconcile(v1alpha1.PhaseReviewRequired)
	h.approve("admin")
	stale := h.get()
	rec := h.abort("bob")
	if !slices.Equal(rec.NotWritten, []string{descheduler, hcoItem}) || len(rec.Written)+len(rec.InFlight) != 0 {
		t.Fatalf("abort record %+v, want nothing written", rec)
	}
	aborted := h.get()
	// The cache goes back to before the abort; storage is ahead.
	h.status.ahead = aborted
	if err := h.indexer.Update(stale); err != nil {
		t.Fatal(err)
	}
	h.reconcile()
	if len(h.planner.applied) != 0 {
		t.Fatalf("applied %v from a stale cache after the abort", h.planner.applied)
	}
	if h.err == nil {
		t.Errorf("reconcile from the stale cache returned no error: it must look again")
	}
	// The cache catches up: Aborted, nothing written.
	h.status.ahead = nil
	if err := h.indexer.Update(aborted); err != nil {
		t.Fatal(err)
	}
	h.mustReconcile(v1alpha1.PhaseAborted)
	if len(h.planner.applied) != 0 {
		t.Errorf("applied %v after the abort", h.planner.applied)
	}
}

// Only an approved plan being applied can be aborted; the refusal says
// what to do.
func TestAbortRefused(t *testing.T) {
	h := newHarness(t, "v1", false)
	h.cluster.put(workerPool{}.obj())
	h.create(v1alpha1.VirtPlatformConfigSpec{Action: v1alpha1.PlanActionDryRun}, "alice")
	h.planner.result = planOf("snap-1", psiItem(v1alpha1.OperationCreate))
	h.mustReconcile(v1alpha1.PhaseReviewRequired)
	now := metav1.NewTime(h.clock.Now())
	for _, tc := range []struct {
		name, hash, want string
		setup            func()
	}{
		{"not approved", "", "no approved plan is being applied (phase ReviewRequired)", func() {}},
		{"another plan's hash", strings.Repeat("0", 64), "but the approved plan is", func() { h.approve("admin") }},
		{"already aborted", "", "was already aborted by bob", func() { h.abort("bob") }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.setup()
			cfg := h.get()
			before := cfg.DeepCopy()
			_, err := approval.Abort(cfg, tc.hash, "carol", now)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("abort = %v, want an error containing %q", err, tc.want)
			}
			if cfg.Status.Phase != before.Status.Phase || cfg.Status.Abort != nil && before.Status.Abort == nil {
				t.Errorf("a refused abort changed the config: phase %s, abort %+v", cfg.Status.Phase, cfg.Status.Abort)
			}
		})
	}
}

// givenAbortedPaused: aborted mid-rollout, the worker pool paused before
// the abort is answered and the controller has seen the abort.
// cacheBehindTheAbort has the pools of the stored abort paused, as the
// abort does before it answers, and runs fn, while the informer's cache
// still holds the config as it was before the abort; then the cache
// catches up.
func (h *harness) cacheBehindTheAbort(fn func()) {
	h.t.Helper()
	aborted := h.get()
	stale := aborted.DeepCopy()
	stale.Status.Abort, stale.Status.Phase = nil, v1alpha1.PhaseInProgress
	stale.ResourceVersion = "1"
	if err := h.indexer.Update(stale); err != nil {
		h.t.Fatal(err)
	}
	if err := h.c.PauseAborted(context.Background(), aborted); err != nil {
		h.t.Fatal(err)
	}
	fn()
	if err := h.indexer.Update(aborted); err != nil {
		h.t.Fatal(err)
	}
}

func givenAbortedPaused(h *harness) {
	h.t.Helper()
	givenAbortedMidRollout(h)
	if err := h.c.PauseAborted(context.Background(), h.get()); err != nil {
		h.t.Fatal(err)
	}
	h.mustReconcile(v1alpha1.PhaseAborted)
	h.syncPools()
	if !slices.Equal(h.cluster.pauses, []bool{true}) {
		h.t.Fatalf("setting up: pauses %v, want the pool paused by the abort", h.cluster.pauses)
	}
}

// An editor's spec change after an abort drafts a new plan, whose items
// replace the aborted ones; the pools stay held (the hold is the abort's
// record, not the items) until an approver approves a plan.
func TestAbortHoldOutlivesASpecChange(t *testing.T) {
	h := newHarness(t, "v1", false)
	givenAbortedPaused(h)
	h.edit(true, "eve", func(cfg *v1alpha1.VirtPlatformConfig) { cfg.Spec.WaitTimeout = "1h" })
	h.planner.result = planOf("snap-2", psiItem(v1alpha1.OperationNone), hcoPlanItem(v1alpha1.OperationCreate))
	h.mustReconcile(v1alpha1.PhaseReviewRequired)
	for range 3 {
		h.clock.Step(time.Hour)
		h.syncPools()
		h.mustReconcile(v1alpha1.PhaseReviewRequired)
	}
	if !slices.Equal(h.cluster.pauses, []bool{true}) {
		t.Fatalf("pauses %v after an editor's spec change, want the pool still held by the abort", h.cluster.pauses)
	}
	if h.get().Status.Abort == nil {
		t.Fatalf("the spec change dropped status.abort")
	}
	if msg := status.PhaseMessage(&h.get().Status); !strings.Contains(msg, "render MachineConfig "+psiMC+" stay paused") || !strings.Contains(msg, "review the plan and approve it") {
		t.Errorf("phase message %q, want it to say the pools stay paused by the abort and how to release them", msg)
	}
	h.approve("admin")
	h.mustReconcile(v1alpha1.PhaseInProgress)
	h.syncPools()
	if !slices.Equal(h.cluster.pauses, []bool{true, false}) {
		t.Errorf("pauses %v, want the pause ended by the approval", h.cluster.pauses)
	}
}

// A spec change after an abort whose plan has nothing left to write
// (every item was written before the abort) still waits for an approval:
// it is not a rollout waiting for pools the abort holds paused.
func TestAbortSpecChangeWithNothingToWrite(t *testing.T) {
	h := newHarness(t, "v1", false)
	givenAbortedPaused(h)
	h.edit(true, "eve", func(cfg *v1alpha1.VirtPlatformConfig) { cfg.Spec.WaitTimeout = "1h" })
	h.planner.result = planOf("snap-2", psiItem(v1alpha1.OperationNone), hcoPlanItem(v1alpha1.OperationNone))
	h.mustReconcile(v1alpha1.PhaseReviewRequired)
	h.clock.Step(time.Hour)
	h.syncPools()
	if !slices.Equal(h.cluster.pauses, []bool{true}) {
		t.Fatalf("pauses %v, want the pool still held by the abort", h.cluster.pauses)
	}
	if msg := status.PhaseMessage(&h.get().Status); !strings.Contains(msg, "stay paused") {
		t.Errorf("phase message %q, want it to say the pools stay paused until an approval", msg)
	}
	h.approve("admin")
	h.mustReconcile(v1alpha1.PhaseInProgress)
	h.syncPools()
	if !slices.Equal(h.cluster.pauses, []bool{true, false}) {
		t.Errorf("pauses %v, want the pause ended by the approval", h.cluster.pauses)
	}
}

// A replica that takes over after the spec changed (the items are a new
// draft) holds the pools from status.abort in its cache, nothing rebuilt,
// and a reconcile from its cache does not end the hold; an approval then
// does.
func TestAbortHoldReadAtTakeover(t *testing.T) {
	h := newHarness(t, "v1", false)
	givenAbortedPaused(h)
	h.edit(true, "eve", func(cfg *v1alpha1.VirtPlatformConfig) { cfg.Spec.WaitTimeout = "1h" })
	h.planner.result = planOf("snap-2", psiItem(v1alpha1.OperationNone), hcoPlanItem(v1alpha1.OperationCreate))
	h.mustReconcile(v1alpha1.PhaseReviewRequired)

	next := newHarness(t, "v1", false)
	next.clock.SetTime(h.clock.Now().Add(3 * time.Hour))
	next.cluster.objects = h.cluster.objects
	next.planner.result = h.planner.result
	if err := next.indexer.Add(h.get()); err != nil {
		t.Fatal(err)
	}
	next.syncPools()
	next.mustReconcile(v1alpha1.PhaseReviewRequired)
	next.syncPools()
	if len(next.cluster.pauses) != 0 {
		t.Fatalf("pauses %v by the replica that took over, want the pool kept paused by the abort", next.cluster.pauses)
	}
	next.approve("admin")
	next.mustReconcile(v1alpha1.PhaseInProgress)
	next.syncPools()
	if !slices.Equal(next.cluster.pauses, []bool{false}) {
		t.Errorf("pauses %v, want the pause ended by the approval", next.cluster.pauses)
	}
}

// The same plan approved again in the second of its abort ends the hold:
// approvals are ordered by their sequence, not by their 1 s times; the
// aborted approval, seen again from a stale cache, does not.
func TestAbortReapprovedInTheSameSecond(t *testing.T) {
	h := newHarness(t, "v1", false)
	givenAbortedPaused(h)
	aborted := h.get().Status.Abort
	h.cacheBehindTheAbort(h.syncPools)
	if !slices.Equal(h.cluster.pauses, []bool{true}) {
		t.Fatalf("pauses %v after a stale reconcile, want the pool still paused", h.cluster.pauses)
	}

	h.approve("admin")
	a := h.get().Status.Approval
	if !a.ApprovedAt.Equal(&aborted.AbortedAt) || a.PlanHash != aborted.PlanHash || a.Sequence <= aborted.ApprovalSequence {
		t.Fatalf("setting up: approval %+v, want the aborted plan approved again in the abort's second (%s), with a later sequence than %d",
			a, aborted.AbortedAt, aborted.ApprovalSequence)
	}
	h.mustReconcile(v1alpha1.PhaseInProgress)
	h.clock.Step(time.Hour) // past any coalescing pause of ours
	h.syncPools()
	if !slices.Equal(h.cluster.pauses, []bool{true, false}) {
		t.Errorf("pauses %v, want the pause ended by the approval in the abort's second", h.cluster.pauses)
	}
}

// Action Ignore on an aborted config keeps its pools held, and its
// status says so and how to release them.
func TestAbortHoldKeptUnderIgnore(t *testing.T) {
	h := newHarness(t, "v1", false)
	givenAbortedPaused(h)
	h.edit(true, "eve", func(cfg *v1alpha1.VirtPlatformConfig) { cfg.Spec.Action = v1alpha1.PlanActionIgnore })
	for range 3 {
		h.mustReconcile(v1alpha1.PhaseIgnored)
		h.clock.Step(time.Hour)
		h.syncPools()
	}
	if !slices.Equal(h.cluster.pauses, []bool{true}) {
		t.Fatalf("pauses %v under action Ignore, want the pool still held by the abort", h.cluster.pauses)
	}
	msg := status.PhaseMessage(&h.get().Status)
	for _, want := range []string{"stay paused", "aborted by bob", psiMC, "set spec.action to DryRun", "approve", "delete the config"} {
		if !strings.Contains(msg, want) {
			t.Errorf("phase message %q, want %q in it", msg, want)
		}
	}
}

// After an abort, an editor's spec change is not approved by a policy
// that covers the new plan: only an approver ends the abort.
func TestAbortNotEndedByAPolicy(t *testing.T) {
	h := newHarness(t, "v1", false)
	givenAbortedPaused(h)
	h.c.approvals.PolicyLister = fakePolicies{quietTuning()}
	h.edit(true, "eve", func(cfg *v1alpha1.VirtPlatformConfig) { cfg.Spec.WaitTimeout = "1h" })
	unchanged := psiItem(v1alpha1.OperationNone)
	unchanged.ImpactSeverity = v1alpha1.ImpactNone
	h.planner.result = planOf("snap-2", unchanged, deschedulerItem(v1alpha1.OperationCreate, "Automatic", 5))
	h.mustReconcile(v1alpha1.PhaseReviewRequired)
	h.clock.Step(time.Hour)
	h.syncPools()
	cfg := h.get()
	if cfg.Status.Approval.ApprovedBy != "admin" || cfg.Status.Abort == nil || !slices.Equal(h.cluster.pauses, []bool{true}) {
		t.Fatalf("approval by %s, abort %+v, pauses %v: want no policy approval, the abort kept and the pool held",
			cfg.Status.Approval.ApprovedBy, cfg.Status.Abort, h.cluster.pauses)
	}
	msg := status.PhaseMessage(&cfg.Status)
	for _, want := range []string{"approval policies approve no plan of this config until an approver approves one", "stay paused", "review the plan and approve it"} {
		if !strings.Contains(msg, want) {
			t.Errorf("phase message %q, want %q in it", msg, want)
		}
	}
}
