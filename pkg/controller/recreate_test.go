package controller

import (
	"reflect"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubevirt/virt-advisor/pkg/apis/advisor/v1alpha1"
)

// A config deleted and created again under the same name may reach the
// controller as one reconcile (the queue holds names): what the controller
// keeps by name for the old config (its own write's resourceVersion, the
// retry time of an item, the watches) must not hold up or hide the new one.
func TestConfigCreatedAgainBeforeItsDeletionWasReconciled(t *testing.T) {
	tests := []struct {
		name  string
		given func(*harness)
	}{
		{name: "Completed --deleted, created again with Apply--> InProgress --item applied--> Completed",
			given: func(h *harness) { givenCompleted(h, apply) }},
		{name: "InProgress (retrying a write) --deleted, created again with Apply--> InProgress --item applied at once, not after the old backoff--> Completed",
			given: func(h *harness) {
				givenApproved(h, dryRun)
				h.planner.applyErr[descheduler] = connectionRefused
				h.mustReconcile(v1alpha1.PhaseInProgress)
				delete(h.planner.applyErr, descheduler)
			}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, thisVersion, false)
			tc.given(h)
			old := h.get()
			h.forget()
			// The old config goes and the new one comes before the
			// controller looks: it never sees the name missing.
			if err := h.indexer.Delete(old); err != nil {
				t.Fatal(err)
			}
			if err := h.indexer.Add(&v1alpha1.VirtPlatformConfig{
				ObjectMeta: metav1.ObjectMeta{Name: configName, Generation: 1, ResourceVersion: "100", UID: "uid-2"},
				Spec:       v1alpha1.VirtPlatformConfigSpec{Profile: configName, Action: v1alpha1.PlanActionApply},
				Status:     v1alpha1.VirtPlatformConfigStatus{SpecChangedBy: "alice"},
			}); err != nil {
				t.Fatal(err)
			}
			h.planner.result = deschedulerPlan()
			h.mustReconcile(v1alpha1.PhaseInProgress)
			// The event of that write (an approval to apply) is followed up.
			if h.c.writes.ownWrite(h.get()) {
				t.Fatal("the InProgress write of the new config's standing approval is dropped as already handled")
			}
			h.mustReconcile(v1alpha1.PhaseCompleted)
			if !reflect.DeepEqual(h.planner.applied, []string{descheduler}) {
				t.Errorf("applied %v, want the new config's item written once", h.planner.applied)
			}
			cfg := h.get()
			if a := cfg.Status.Approval; a == nil || a.UID != "uid-2" {
				t.Errorf("approval = %+v, want the new config's own", a)
			}
			if len(h.watches.watching(configName)) == 0 {
				t.Error("the new config's target is not watched")
			}
		})
	}
}
