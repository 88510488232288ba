package controller

import (
	"encoding/json"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubevirt/virt-advisor/pkg/apis/advisor/v1alpha1"
)

// liveHCO is the HyperConverged as an administrator left it: two
// parallel migrations per cluster.
func liveHCO() *unstructured.Unstructured {
	obj := &unstructured.Unstructured{Object: map[string]interface{}{
		"apiVersion": "hco.kubevirt.io/v1", "kind": "HyperConverged",
		"spec": map[string]interface{}{"liveMigrationConfig": map[string]interface{}{"parallelMigrationsPerCluster": int64(2)}},
	}}
	obj.SetName("kubevirt-hyperconverged")
	obj.SetNamespace("openshift-cnv")
	obj.SetUID("hco-uid")
	return obj
}

// replacedJSON is the record as stored.
func replacedJSON(t *testing.T, recs []v1alpha1.ReplacedObject) string {
	t.Helper()
	b, err := json.Marshal(recs)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// What a write replaces is stored before the write: a crash right after
// it (before the status that records the write) must not lose the value
// a revert restores. The retry that finds the write made completes the
// record with the value written, and writes nothing again.
func TestWhatAWriteReplacesIsStoredBeforeTheWrite(t *testing.T) {
	const (
		beforeWrite = `[{"targetRef":{"apiVersion":"hco.kubevirt.io/v1","kind":"HyperConverged","name":"kubevirt-hyperconverged","namespace":"openshift-cnv"},"uid":"hco-uid","fields":[{"path":"spec.liveMigrationConfig","previous":{"parallelMigrationsPerCluster":2},"written":{"parallelMigrationsPerCluster":5},"pending":true}]}]`
		confirmed   = `[{"targetRef":{"apiVersion":"hco.kubevirt.io/v1","kind":"HyperConverged","name":"kubevirt-hyperconverged","namespace":"openshift-cnv"},"uid":"hco-uid","fields":[{"path":"spec.liveMigrationConfig","previous":{"parallelMigrationsPerCluster":2},"written":{"parallelMigrationsPerCluster":5}}]}]`
	)
	h := newHarness(t, "v1", false)
	h.planner.targets = map[string]*unstructured.Unstructured{hcoItem: liveHCO()}
	h.planner.result = planOf("snap-1", hcoPlanItem(v1alpha1.OperationUpdate))
	h.create(v1alpha1.VirtPlatformConfigSpec{Action: v1alpha1.PlanActionDryRun}, "alice")
	h.mustReconcile(v1alpha1.PhaseReviewRequired)
	h.approve("bob")

	// The write is made, and its answer lost: as a crash right after it,
	// nothing after the write is stored.
	var stored string
	h.planner.onApply = func() { stored = replacedJSON(t, h.get().Status.Replaced) }
	h.planner.applyErr[hcoItem] = apierrors.NewServiceUnavailable("the answer was lost")
	h.mustReconcile(v1alpha1.PhaseInProgress)
	if stored != beforeWrite {
		t.Fatalf("stored as the write started:\n got %s\nwant %s", stored, beforeWrite)
	}

	// The retry finds the write made (the target holds what we wrote).
	written := liveHCO()
	_ = unstructured.SetNestedField(written.Object, int64(5), "spec", "liveMigrationConfig", "parallelMigrationsPerCluster")
	h.planner.targets[hcoItem] = written
	h.planner.found = map[string]*unstructured.Unstructured{hcoItem: written}
	delete(h.planner.applyErr, hcoItem)
	h.clock.Step(time.Second)
	h.mustReconcile(v1alpha1.PhaseCompleted)
	if n := h.planner.attempts[hcoItem]; n != 1 {
		t.Errorf("%d writes, want 1: the retry found the write made", n)
	}
	if got := replacedJSON(t, h.get().Status.Replaced); got != confirmed {
		t.Errorf("recorded after the retry:\n got %s\nwant %s (the value before, not the one the retry read; confirmed)", got, confirmed)
	}
}

// A write refused (here: a conflict) leaves its record pending; when the
// field changes before the next attempt, that attempt records the value
// it replaces then, not the one the refused write would have: a revert
// restores what was there before a write that was made.
func TestARefusedWriteLeavesNoStaleRecord(t *testing.T) {
	const (
		refused = `[{"targetRef":{"apiVersion":"hco.kubevirt.io/v1","kind":"HyperConverged","name":"kubevirt-hyperconverged","namespace":"openshift-cnv"},"uid":"hco-uid","fields":[{"path":"spec.liveMigrationConfig","previous":{"parallelMigrationsPerCluster":2},"written":{"parallelMigrationsPerCluster":5},"pending":true}]}]`
		written = `[{"targetRef":{"apiVersion":"hco.kubevirt.io/v1","kind":"HyperConverged","name":"kubevirt-hyperconverged","namespace":"openshift-cnv"},"uid":"hco-uid","fields":[{"path":"spec.liveMigrationConfig","previous":{"parallelMigrationsPerCluster":3},"written":{"parallelMigrationsPerCluster":5}}]}]`
	)
	h := newHarness(t, "v1", false)
	h.planner.targets = map[string]*unstructured.Unstructured{hcoItem: liveHCO()}
	h.planner.result = planOf("snap-1", hcoPlanItem(v1alpha1.OperationUpdate))
	h.create(v1alpha1.VirtPlatformConfigSpec{Action: v1alpha1.PlanActionDryRun}, "alice")
	h.mustReconcile(v1alpha1.PhaseReviewRequired)
	h.approve("bob")
	h.planner.applyErr[hcoItem] = apierrors.NewServiceUnavailable("admission webhook unavailable")
	h.mustReconcile(v1alpha1.PhaseInProgress)
	if got := replacedJSON(t, h.get().Status.Replaced); got != refused {
		t.Fatalf("after the refused write:\n got %s\nwant %s", got, refused)
	}

	// Someone sets 3 meanwhile; the next attempt writes over 3.
	three := liveHCO()
	_ = unstructured.SetNestedField(three.Object, int64(3), "spec", "liveMigrationConfig", "parallelMigrationsPerCluster")
	h.planner.targets[hcoItem] = three
	delete(h.planner.applyErr, hcoItem)
	h.clock.Step(time.Second)
	h.mustReconcile(v1alpha1.PhaseCompleted)
	if got := replacedJSON(t, h.get().Status.Replaced); got != written {
		t.Errorf("after the write:\n got %s\nwant %s (the value the write replaced)", got, written)
	}
}

// An object the write creates is recorded as created before the write,
// and given its UID once the write (or a retry that finds it) made it.
func TestACreateIsRecordedBeforeTheWrite(t *testing.T) {
	h := newHarness(t, "v1", false)
	h.planner.result = planOf("snap-1", hcoPlanItem(v1alpha1.OperationCreate))
	h.create(v1alpha1.VirtPlatformConfigSpec{Action: v1alpha1.PlanActionDryRun}, "alice")
	h.mustReconcile(v1alpha1.PhaseReviewRequired)
	h.approve("bob")
	var stored []v1alpha1.ReplacedObject
	h.planner.onApply = func() { stored = h.get().Status.Replaced }
	h.planner.applyErr[hcoItem] = apierrors.NewServiceUnavailable("the answer was lost")
	h.mustReconcile(v1alpha1.PhaseInProgress)
	if len(stored) != 1 || !stored[0].Created || stored[0].UID != "" || stored[0].TargetRef.Name != "kubevirt-hyperconverged" {
		t.Fatalf("stored as the write started: %+v, want the create noted, its UID not known yet", stored)
	}

	made := liveHCO()
	made.SetUID(types.UID("made-uid"))
	h.planner.found = map[string]*unstructured.Unstructured{hcoItem: made}
	delete(h.planner.applyErr, hcoItem)
	h.clock.Step(time.Second)
	h.mustReconcile(v1alpha1.PhaseCompleted)
	got := h.get().Status.Replaced
	if len(got) != 1 || !got[0].Created || got[0].UID != "made-uid" {
		t.Errorf("recorded after the retry: %+v, want one record of the object created, with its UID", got)
	}
}

// What a write replaces is recorded with the intent to write it when a
// watch cache holds the target the checks then read: one status write
// before the write instead of two. A cache behind the cluster costs the
// second write (the record is made again from what the checks read), and
// checks that fail take both back.
func TestWhatAWriteReplacesGoesWithItsIntent(t *testing.T) {
	const (
		overTwo   = `[{"targetRef":{"apiVersion":"hco.kubevirt.io/v1","kind":"HyperConverged","name":"kubevirt-hyperconverged","namespace":"openshift-cnv"},"uid":"hco-uid","fields":[{"path":"spec.liveMigrationConfig","previous":{"parallelMigrationsPerCluster":2},"written":{"parallelMigrationsPerCluster":5},"pending":true}]}]`
		overThree = `[{"targetRef":{"apiVersion":"hco.kubevirt.io/v1","kind":"HyperConverged","name":"kubevirt-hyperconverged","namespace":"openshift-cnv"},"uid":"hco-uid","fields":[{"path":"spec.liveMigrationConfig","previous":{"parallelMigrationsPerCluster":3},"written":{"parallelMigrationsPerCluster":5},"pending":true}]}]`
		created   = `[{"targetRef":{"apiVersion":"hco.kubevirt.io/v1","kind":"HyperConverged","name":"kubevirt-hyperconverged","namespace":"openshift-cnv"},"uid":"","created":true}]`
	)
	three := liveHCO()
	_ = unstructured.SetNestedField(three.Object, int64(3), "spec", "liveMigrationConfig", "parallelMigrationsPerCluster")
	for _, tc := range []struct {
		name         string
		op           v1alpha1.Operation
		live, cached *unstructured.Unstructured
		noCache      bool
		// writes are the status writes from the approval to the write;
		// stored is the record then.
		writes int
		stored string
	}{
		{name: "no cache holds the target", op: v1alpha1.OperationUpdate, live: liveHCO(), noCache: true, writes: 2, stored: overTwo},
		{name: "the cache holds what the checks read", op: v1alpha1.OperationUpdate, live: liveHCO(), cached: liveHCO(), writes: 1, stored: overTwo},
		{name: "the cache is behind the cluster", op: v1alpha1.OperationUpdate, live: three, cached: liveHCO(), writes: 2, stored: overThree},
		{name: "a create: nothing to read", op: v1alpha1.OperationCreate, noCache: true, writes: 2, stored: created},
		{name: "a create the review expects absent", op: v1alpha1.OperationCreate, writes: 1, stored: created},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, "v1", false)
			if tc.live != nil {
				h.planner.targets = map[string]*unstructured.Unstructured{hcoItem: tc.live}
			}
			if !tc.noCache {
				h.planner.cached = map[string]*unstructured.Unstructured{hcoItem: tc.cached}
			}
			h.planner.result = planOf("snap-1", hcoPlanItem(tc.op))
			h.create(v1alpha1.VirtPlatformConfigSpec{Action: v1alpha1.PlanActionDryRun}, "alice")
			h.mustReconcile(v1alpha1.PhaseReviewRequired)
			h.approve("bob")
			before := h.status.writes
			writes, stored := -1, ""
			h.planner.onApply = func() {
				writes, stored = h.status.writes-before, replacedJSON(t, h.get().Status.Replaced)
			}
			h.mustReconcile(v1alpha1.PhaseCompleted)
			if writes != tc.writes {
				t.Errorf("%d status writes before the write, want %d", writes, tc.writes)
			}
			if stored != tc.stored {
				t.Errorf("stored as the write started:\n got %s\nwant %s", stored, tc.stored)
			}
		})
	}
}

// Checks that fail before the write take back the record made with the
// intent: nothing was written, nothing is there to revert.
func TestFailedChecksTakeBackWhatTheIntentRecorded(t *testing.T) {
	h := newHarness(t, "v1", false)
	h.planner.targets = map[string]*unstructured.Unstructured{hcoItem: liveHCO()}
	h.planner.cached = map[string]*unstructured.Unstructured{hcoItem: liveHCO()}
	h.planner.result = planOf("snap-1", hcoPlanItem(v1alpha1.OperationUpdate))
	h.create(v1alpha1.VirtPlatformConfigSpec{Action: v1alpha1.PlanActionDryRun}, "alice")
	h.mustReconcile(v1alpha1.PhaseReviewRequired)
	h.approve("bob")
	// The checks find the reviewed target changed after the cache had it
	// (the plan's snapshot too).
	h.planner.snapshot = "snap-2"
	h.reconcile()
	c := h.get()
	if len(h.planner.applied) != 0 {
		t.Fatalf("written: %v", h.planner.applied)
	}
	if len(c.Status.Replaced) != 0 {
		t.Errorf("recorded as replaced though nothing was written: %s", replacedJSON(t, c.Status.Replaced))
	}
	if c.Status.Items[0].State == v1alpha1.ItemStateInProgress {
		t.Errorf("item %s: the intent was not taken back", c.Status.Items[0].State)
	}
}
