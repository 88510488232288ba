package controller

import (
	"testing"

	"github.com/kubevirt/virt-advisor/pkg/apis/advisor/v1alpha1"
)

// The controller does not plan again after its own status writes, except
// when what it wrote has work to do at once (an approval to apply).
func TestOwnStatusWritesNeedNoReconcile(t *testing.T) {
	h := newHarness(t, "v1", false)
	h.planner.result = deschedulerPlan()
	h.create(v1alpha1.VirtPlatformConfigSpec{Action: v1alpha1.PlanActionDryRun}, "alice")
	h.mustReconcile(v1alpha1.PhaseReviewRequired)
	if !h.c.ownWrite(h.get()) {
		t.Fatal("the event of the ReviewRequired write would plan again")
	}

	// Someone else's change of the same object is reconciled.
	h.approve("bob")
	if h.c.ownWrite(h.get()) {
		t.Fatal("an approval stored by the API is taken for the controller's own write")
	}

	// An approval under action Apply is written as InProgress: that write
	// is followed up at once.
	h2 := newHarness(t, "v1", false)
	h2.planner.result = deschedulerPlan()
	h2.create(v1alpha1.VirtPlatformConfigSpec{Action: v1alpha1.PlanActionApply}, "alice")
	h2.mustReconcile(v1alpha1.PhaseInProgress)
	if h2.c.ownWrite(h2.get()) {
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
		intentOwn = h3.c.ownWrite(cfg)
	}
	h3.mustReconcile(v1alpha1.PhaseCompleted)
	if !intentStored {
		t.Fatal("the item was written before its intent was stored")
	}
	if !intentOwn {
		t.Fatal("the event of the intent write would reconcile again")
	}
}
