package controller

import (
	"testing"

	"github.com/kubevirt/virt-advisor/pkg/apis/advisor/v1alpha1"
	"github.com/kubevirt/virt-advisor/pkg/cluster"
	"github.com/kubevirt/virt-advisor/pkg/plan"
	"github.com/kubevirt/virt-advisor/pkg/profiles"
	"github.com/kubevirt/virt-advisor/pkg/status"
)

// The controller does not plan again after its own status writes, except
// when what it wrote has work to do at once (an approval to apply).
func TestOwnStatusWritesNeedNoReconcile(t *testing.T) {
	h := newHarness(t, "v1", false)
	h.planner.result = deschedulerPlan()
	h.create(v1alpha1.VirtPlatformConfigSpec{Action: v1alpha1.PlanActionDryRun}, "alice")
	h.mustReconcile(v1alpha1.PhaseReviewRequired)
	if !h.c.writes.ownWrite(h.get()) {
		t.Fatal("the event of the ReviewRequired write would plan again")
	}

	// Someone else's change of the same object is reconciled.
	h.approve("bob")
	if h.c.writes.ownWrite(h.get()) {
		t.Fatal("an approval stored by the API is taken for the controller's own write")
	}

	// An approval under action Apply is written as InProgress: that write
	// is followed up at once.
	h2 := newHarness(t, "v1", false)
	h2.planner.result = deschedulerPlan()
	h2.create(v1alpha1.VirtPlatformConfigSpec{Action: v1alpha1.PlanActionApply}, "alice")
	h2.mustReconcile(v1alpha1.PhaseInProgress)
	if h2.c.writes.ownWrite(h2.get()) {
		t.Fatal("the InProgress write of a standing approval is dropped: nothing would apply it")
	}

	// The intent to write an item is stored by the reconcile that goes on
	// to write it and ends with a write of its own: its event is not
	// followed up (that reconcile would find its cache behind storage).
	h3 := newHarness(t, "v1", false)
	h3.planner.result = deschedulerPlan()
	h3.create(v1alpha1.VirtPlatformConfigSpec{Action: v1alpha1.PlanActionDryRun}, "alice")
	h3.mustReconcile(v1alpha1.PhaseReviewRequired)
	h3.approve("bob")
	var intentStored, intentOwn bool
	h3.planner.onApply = func() {
		cfg := h3.get()
		intentStored = cfg.Status.Items[0].State == v1alpha1.ItemStateInProgress
		intentOwn = h3.c.writes.ownWrite(cfg)
	}
	h3.mustReconcile(v1alpha1.PhaseCompleted)
	if !intentStored {
		t.Fatal("the item was written before its intent was stored")
	}
	if !intentOwn {
		t.Fatal("the event of the intent write would reconcile again")
	}
}

// A reconcile may read the informer's cache before the cache holds the
// controller's last status write (its watch event is still on its way:
// the target's event came first). That reconcile decides from the older
// object; when it finds nothing to write, only the write's own event can
// bring the config to what the cluster says now, so that event is not
// dropped as the controller's own. Otherwise a drift reverted that fast
// left the config Drifted until some other event (seen once in the
// bench's drift step, which reverts as soon as it sees Drifted), and a
// drift right after DriftResolved left it Completed.
func TestOwnWriteEventAfterAReconcileOnAStaleCache(t *testing.T) {
	drift := newPlan(func() *plan.Result {
		return differing(planOf("snap-3", deschedulerItem(v1alpha1.OperationUpdate, "Automatic", 5)), descheduler, "spec.mode")
	})
	revert := newPlan(deschedulerInSync)
	tests := []struct {
		name  string
		given func(*harness, v1alpha1.VirtPlatformConfigSpec)
		// write: the event whose reconcile writes the status, in phase written.
		write   func(*harness)
		written v1alpha1.ConfigPhase
		// next: the event of the next reconcile, which reads the cache
		// while it is behind storage (behind) or after it caught up.
		next   func(*harness)
		behind bool
		// reconciled: the event of the write, once it arrives, is
		// reconciled (not dropped as the controller's own); phase is the
		// phase after it.
		reconciled bool
		phase      v1alpha1.ConfigPhase
	}{
		{name: "Completed --drift--> Drifted --reverted, read before the cache holds Drifted--> Completed",
			given: givenCompleted, write: drift, written: v1alpha1.PhaseDrifted, next: revert, behind: true,
			reconciled: true, phase: v1alpha1.PhaseCompleted},
		{name: "Drifted --reverted--> Completed --drift again, read before the cache holds Completed--> Drifted",
			given: givenDrifted, write: revert, written: v1alpha1.PhaseCompleted, next: drift, behind: true,
			reconciled: true, phase: v1alpha1.PhaseDrifted},
		{name: "Completed --drift--> Drifted --drift goes on, read once the cache holds Drifted--> Drifted (the write's event still needs no reconcile)",
			given: givenCompleted, write: drift, written: v1alpha1.PhaseDrifted, next: drift, behind: false,
			reconciled: false, phase: v1alpha1.PhaseDrifted},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, thisVersion, false)
			tc.given(h, apply)
			before := h.get()
			tc.write(h)
			h.mustReconcile(tc.written)
			stored := h.get()
			if tc.behind {
				// Storage holds the write; the cache does not yet.
				if err := h.indexer.Update(before); err != nil {
					t.Fatal(err)
				}
				h.status.ahead = stored
			}
			h.forget()
			tc.next(h)
			h.reconcile() // on the target's watch event
			if h.err != nil {
				t.Fatalf("reconcile: %v", h.err)
			}
			if h.status.writes != 0 {
				t.Fatalf("setting up: the reconcile wrote %d times, want none (it decides from the cache)", h.status.writes)
			}

			// The write's event arrives: the cache holds it, and the
			// informer's handler decides whether to reconcile.
			h.status.ahead = nil
			if err := h.indexer.Update(stored); err != nil {
				t.Fatal(err)
			}
			reconciled := !h.c.writes.ownWrite(stored)
			if reconciled {
				h.reconcile()
				if h.err != nil {
					t.Fatalf("reconcile of the write's event: %v", h.err)
				}
			}
			if reconciled != tc.reconciled {
				t.Errorf("the event of the %s write reconciled: %v, want %v", tc.written, reconciled, tc.reconciled)
			}
			if got := h.get().Status.Phase; got != tc.phase {
				t.Errorf("phase = %s, want %s (%s)", got, tc.phase, status.PhaseMessage(&h.get().Status))
			}
		})
	}
}

// A reconcile whose cache does not hold the controller's last status
// write yet (its event behind a target's) does nothing: no check, no
// plan, no write refused by storage. The watch events seen so far are
// left for the reconcile the write's event brings, which that event now
// does (it is no longer dropped as our own).
func TestReconcileBehindItsOwnWriteWaitsForIt(t *testing.T) {
	h := newHarness(t, "v1", false)
	h.planner.result = deschedulerPlan()
	h.create(v1alpha1.VirtPlatformConfigSpec{Action: v1alpha1.PlanActionDryRun}, "alice")
	before := h.get()
	h.mustReconcile(v1alpha1.PhaseReviewRequired)
	written := h.get()
	computes, writes := h.planner.computes, h.status.writes

	// The cache still holds the config before that write; a target's
	// event came meanwhile.
	if err := h.indexer.Update(before); err != nil {
		t.Fatal(err)
	}
	target := cluster.ObjectKey{GVK: profiles.KubeDeschedulerGVK, Namespace: profiles.DeschedulerNamespace, Name: profiles.DeschedulerName}
	h.c.objects.seen(configName, target)
	h.reconcile()
	if h.err != nil || h.requeue != 0 {
		t.Fatalf("reconcile behind its own write: requeue %v, error %v; want neither", h.requeue, h.err)
	}
	if h.planner.computes != computes || h.status.writes != writes {
		t.Fatalf("reconcile behind its own write planned %d and wrote %d times; want none", h.planner.computes-computes, h.status.writes-writes)
	}
	if !h.c.objects.take(configName).Has(target) {
		t.Fatal("the target's event was taken by the reconcile that did nothing")
	}
	h.c.objects.seen(configName, target)

	// The write's event reaches the cache: it is reconciled, not dropped.
	if err := h.indexer.Update(written); err != nil {
		t.Fatal(err)
	}
	if h.c.writes.ownWrite(written) {
		t.Fatal("the event of the write a reconcile waits for is dropped as our own: nothing would bring the config back")
	}
	h.mustReconcile(v1alpha1.PhaseReviewRequired)
	if h.c.objects.take(configName).Len() != 0 {
		t.Fatal("the reconcile the write's event brought left the target's event")
	}
}

func TestOlderThan(t *testing.T) {
	for _, tc := range []struct {
		rv, own string
		want    bool
	}{
		{"9", "10", true}, // numerically, not as strings
		{"10", "10", false},
		{"11", "10", false},
		{"", "10", false},
		{"x", "10", false},
		{"9", "y", false},
	} {
		if got := olderThan(tc.rv, tc.own); got != tc.want {
			t.Errorf("olderThan(%q, %q) = %v, want %v", tc.rv, tc.own, got, tc.want)
		}
	}
}
