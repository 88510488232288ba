package controller

import (
	"net"
	"net/url"
	"os"
	"reflect"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubevirt/virt-advisor/pkg/apis/advisor/v1alpha1"
	"github.com/kubevirt/virt-advisor/pkg/cluster"
	"github.com/kubevirt/virt-advisor/pkg/disruption"
	"github.com/kubevirt/virt-advisor/pkg/kubevirt"
	"github.com/kubevirt/virt-advisor/pkg/machineconfig"
	"github.com/kubevirt/virt-advisor/pkg/plan"
	"github.com/kubevirt/virt-advisor/pkg/profiles"
	"github.com/kubevirt/virt-advisor/pkg/status"
)

// connectionRefused is the error of a request to a main API server that is down.
var connectionRefused = &url.Error{Op: "Patch", URL: "https://127.0.0.1:6443/apis", Err: &net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}}

// The setups bring a config into a phase through the controller itself
// (and the approve subresource's approval.Record), as a cluster would.

var (
	dryRun = v1alpha1.VirtPlatformConfigSpec{Action: v1alpha1.PlanActionDryRun}
	apply  = v1alpha1.VirtPlatformConfigSpec{Action: v1alpha1.PlanActionApply}
)

// The plans of the descheduler item: one to write, and the same once written.
func deschedulerPlan() *plan.Result {
	return planOf("snap-1", deschedulerItem(v1alpha1.OperationUpdate, "Automatic", 5))
}

// laterItem is a second KubeDescheduler item, written after the first.
func laterItem() v1alpha1.PlanItem {
	it := deschedulerItem(v1alpha1.OperationUpdate, "Predictive", 3)
	it.Name, it.TargetRef.Name = later, "later"
	return it
}

const later = "later-item"

func deschedulerInSync() *plan.Result {
	return planOf("snap-2", deschedulerItem(v1alpha1.OperationNone, "Automatic", 5))
}

func givenReviewRequired(h *harness, spec v1alpha1.VirtPlatformConfigSpec) {
	h.create(spec, "alice")
	h.planner.result = deschedulerPlan()
	h.mustReconcile(v1alpha1.PhaseReviewRequired)
}

// givenApproved: approved by admin after a review, or by alice's action
// Apply; the controller has not written anything yet.
func givenApproved(h *harness, spec v1alpha1.VirtPlatformConfigSpec) {
	if spec.Action == v1alpha1.PlanActionApply && !h.c.approvals.distinct {
		h.create(spec, "alice")
		h.planner.result = deschedulerPlan()
		h.mustReconcile(v1alpha1.PhaseInProgress)
		return
	}
	givenReviewRequired(h, spec)
	h.approve("admin")
}

func givenCompleted(h *harness, spec v1alpha1.VirtPlatformConfigSpec) {
	givenApproved(h, spec)
	h.mustReconcile(v1alpha1.PhaseCompleted)
	h.planner.result = deschedulerInSync()
}

// givenPSIApproved: the PSI MachineConfig's Create, reviewed and approved
// by admin, nothing written yet; the worker pool is there.
func givenPSIApproved(h *harness, spec v1alpha1.VirtPlatformConfigSpec) {
	h.cluster.put(workerPool{}.obj())
	h.create(spec, "alice")
	h.planner.result = planOf("snap-1", psiItem(v1alpha1.OperationCreate))
	h.mustReconcile(v1alpha1.PhaseReviewRequired)
	h.approve("admin")
}

// givenRolling: the PSI MachineConfig is written, the worker pool has not
// picked it up yet.
func givenRolling(h *harness, spec v1alpha1.VirtPlatformConfigSpec) {
	givenPSIApproved(h, spec)
	h.mustReconcile(v1alpha1.PhaseInProgress)
	// The next plan sees the MachineConfig as written.
	h.planner.result = planOf("snap-2", psiItem(v1alpha1.OperationNone))
}

func givenDrifted(h *harness, spec v1alpha1.VirtPlatformConfigSpec) {
	givenCompleted(h, spec)
	h.planner.result = differing(planOf("snap-3", deschedulerItem(v1alpha1.OperationUpdate, "Automatic", 5)), descheduler, "spec.mode")
	h.mustReconcile(v1alpha1.PhaseDrifted)
}

// givenInputDrift: the HCO's migration limit changed the descheduler's
// eviction limit after it was applied.
func givenInputDrift(h *harness, spec v1alpha1.VirtPlatformConfigSpec) {
	givenCompleted(h, spec)
	h.planner.result = planOf("snap-3", deschedulerItem(v1alpha1.OperationUpdate, "Automatic", 4))
	h.mustReconcile(v1alpha1.PhaseReviewRequired)
}

func givenPrerequisiteFailed(h *harness, spec v1alpha1.VirtPlatformConfigSpec) {
	h.create(spec, "alice")
	h.planner.result = missingPrerequisite()
	h.mustReconcile(v1alpha1.PhasePrerequisiteFailed)
}

// givenUpgrade: applied by an older build whose logic differs.
func givenUpgrade(h *harness, spec v1alpha1.VirtPlatformConfigSpec) {
	givenCompleted(h, spec)
	h.edit(false, "", func(cfg *v1alpha1.VirtPlatformConfig) { cfg.Status.OperatorVersion = olderVersion })
	h.planner.result = planOf("snap-3", deschedulerItem(v1alpha1.OperationUpdate, "Automatic", 5), hcoPlanItem(v1alpha1.OperationUpdate))
	h.mustReconcile(v1alpha1.PhaseCompletedWithUpgrade)
}

func givenFailed(h *harness, spec v1alpha1.VirtPlatformConfigSpec) {
	givenApproved(h, spec)
	h.planner.snapshot = "snap-changed"
	h.mustReconcile(v1alpha1.PhaseFailed)
	h.planner.snapshot = ""
}

func givenIgnored(h *harness, spec v1alpha1.VirtPlatformConfigSpec) {
	spec.Action = v1alpha1.PlanActionIgnore
	h.create(spec, "alice")
	h.planner.result = deschedulerPlan()
	h.mustReconcile(v1alpha1.PhaseIgnored)
}

// Events.

func specChange(by string, fn func(*v1alpha1.VirtPlatformConfigSpec)) func(*harness) {
	return func(h *harness) {
		h.edit(true, by, func(cfg *v1alpha1.VirtPlatformConfig) { fn(&cfg.Spec) })
	}
}

func setAction(a v1alpha1.PlanAction) func(*harness) {
	return specChange("alice", func(s *v1alpha1.VirtPlatformConfigSpec) { s.Action = a })
}

func newPlan(res func() *plan.Result) func(*harness) {
	return func(h *harness) { h.planner.result = res() }
}

func pool(p workerPool) func(*harness) {
	return func(h *harness) { h.cluster.put(p.obj()) }
}

func nothing(*harness) {}

type itemWant struct {
	state   v1alpha1.ItemState
	message string // a substring
}

type edge struct {
	name     string
	spec     v1alpha1.VirtPlatformConfigSpec
	distinct bool // --require-distinct-approver
	given    func(*harness, v1alpha1.VirtPlatformConfigSpec)
	event    func(*harness)

	phase   v1alpha1.ConfigPhase
	reason  string
	message string // a substring of the phase condition's message
	items   map[string]itemWant
	noItems bool
	applied []string
	events  []string // prefixes, in order
	requeue time.Duration
	err     bool
	check   func(*testing.T, *harness)
}

// TestReconcileEdges walks every edge of the state machine: each test is
// named "phase --event--> phase".
func TestReconcileEdges(t *testing.T) {
	tests := slices.Concat(draftEdges(), writeEdges(), rolloutAndCheckEdges())
	for from, given := range map[string]func(*harness, v1alpha1.VirtPlatformConfigSpec){
		"ReviewRequired": givenReviewRequired, "InProgress": givenRolling, "Completed": givenCompleted, "Drifted": givenDrifted,
		"PrerequisiteFailed": givenPrerequisiteFailed, "Failed": givenFailed, "CompletedWithUpgrade": givenUpgrade,
	} {
		tests = append(tests, edge{name: from + " --Ignore--> Ignored (nothing rolled back, watches dropped)", spec: dryRun, given: given,
			event: setAction(v1alpha1.PlanActionIgnore), phase: v1alpha1.PhaseIgnored, reason: "Ignored", message: status.MessageIgnored,
			events: []string{"Normal Ignored"},
			check: func(t *testing.T, h *harness) {
				if keys := h.watches.keys[configName]; len(keys) != 0 {
					t.Errorf("still watching %v", keys)
				}
			}})
	}

	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, thisVersion, tc.distinct)
			tc.given(h, tc.spec)
			h.forget()
			tc.event(h)
			h.reconcile()

			if (h.err != nil) != tc.err {
				t.Fatalf("reconcile error = %v, want error: %v", h.err, tc.err)
			}
			cfg := h.get()
			st := cfg.Status
			if st.Phase != tc.phase {
				t.Fatalf("phase = %s, want %s (%s)", st.Phase, tc.phase, status.PhaseMessage(&st))
			}
			var trueConds []string
			for _, name := range status.PhaseNames() {
				if meta.IsStatusConditionTrue(st.Conditions, name) {
					trueConds = append(trueConds, name)
				}
			}
			if len(trueConds) != 1 || trueConds[0] != string(tc.phase) {
				t.Errorf("True phase conditions = %v, want exactly [%s]", trueConds, tc.phase)
			}
			cond := meta.FindStatusCondition(st.Conditions, string(tc.phase))
			if tc.reason != "" && cond.Reason != tc.reason {
				t.Errorf("reason = %s, want %s", cond.Reason, tc.reason)
			}
			if !strings.Contains(cond.Message, tc.message) {
				t.Errorf("message = %q, want it to contain %q", cond.Message, tc.message)
			}
			if tc.noItems && len(st.Items) != 0 {
				t.Errorf("items = %+v, want none", st.Items)
			}
			for name, want := range tc.items {
				it := findItem(st.Items, name)
				if it == nil {
					t.Errorf("item %s missing", name)
					continue
				}
				if it.State != want.state || !strings.Contains(it.Message, want.message) {
					t.Errorf("item %s = %s %q, want %s containing %q", name, it.State, it.Message, want.state, want.message)
				}
			}
			if !reflect.DeepEqual(h.planner.applied, tc.applied) {
				t.Errorf("applied %v, want %v", h.planner.applied, tc.applied)
			}
			events := h.events()
			if len(events) != len(tc.events) {
				t.Errorf("events = %q, want %d starting with %q", events, len(tc.events), tc.events)
			} else {
				for i := range events {
					if !strings.HasPrefix(events[i], tc.events[i]) {
						t.Errorf("event %d = %q, want it to start with %q", i, events[i], tc.events[i])
					}
				}
			}
			if tc.requeue != 0 && h.requeue != tc.requeue {
				t.Errorf("requeue after %v, want %v", h.requeue, tc.requeue)
			}
			if tc.check != nil {
				tc.check(t, h)
			}
		})
	}
}

func findItem(items []v1alpha1.VirtPlatformConfigItem, name string) *v1alpha1.VirtPlatformConfigItem {
	for i := range items {
		if items[i].Name == name {
			return &items[i]
		}
	}
	return nil
}

// targetEvent: a watch event of the descheduler's KubeDescheduler, whose
// drift the watch caches decide as given (nil: they cannot tell).
func targetEvent(fromCaches map[string][]string) func(*harness) {
	return func(h *harness) {
		h.planner.fromCaches = fromCaches
		h.planner.computes = 0
		h.c.objects.seen(configName, cluster.ObjectKey{GVK: profiles.KubeDeschedulerGVK, Namespace: "openshift-kube-descheduler-operator", Name: "cluster"})
	}
}

func noPlan(t *testing.T, h *harness) {
	t.Helper()
	if h.planner.computes != 0 {
		t.Errorf("%d plans computed, want none", h.planner.computes)
	}
}

func noWrite(t *testing.T, h *harness) {
	t.Helper()
	if h.status.writes != 0 {
		t.Errorf("%d status writes, want none", h.status.writes)
	}
}

func conditionIs(t *testing.T, h *harness, condType string, want metav1.ConditionStatus, reason string) {
	t.Helper()
	c := meta.FindStatusCondition(h.get().Status.Conditions, condType)
	if c == nil || c.Status != want || c.Reason != reason {
		t.Errorf("condition %s = %+v, want %s with reason %s", condType, c, want, reason)
	}
}

func appliedItemsRecorded(t *testing.T, h *harness) {
	t.Helper()
	st := h.get().Status
	if len(st.AppliedItems) != len(st.Items) {
		t.Errorf("appliedItems = %+v, want the items as applied", st.AppliedItems)
	}
}

func TestReconcileDeletedConfigDropsItsWatches(t *testing.T) {
	h := newHarness(t, thisVersion, false)
	givenCompleted(h, dryRun)
	if len(h.watches.watching(configName)) == 0 {
		t.Fatal("setting up: a Completed config watches its targets")
	}
	h.forget()
	if err := h.indexer.Delete(h.get()); err != nil {
		t.Fatal(err)
	}
	h.reconcile()
	if h.err != nil {
		t.Fatalf("reconcile of a deleted config: %v", h.err)
	}
	if keys := h.watches.watching(configName); len(keys) != 0 {
		t.Errorf("still watching %v", keys)
	}
	if h.status.writes != 0 || len(h.events()) != 0 || len(h.planner.applied) != 0 {
		t.Error("a deleted config is written, announced or applied")
	}
}

func TestReconcileWatchesTargetsPoolsAndInputs(t *testing.T) {
	h := newHarness(t, thisVersion, false)
	givenRolling(h, dryRun)
	keys := h.watches.watching(configName)
	for _, want := range []cluster.ObjectKey{
		{GVK: machineconfig.MachineConfigGVK, Name: psiMC},                                          // the target
		{GVK: machineconfig.MachineConfigPoolGVK, Name: machineconfig.WorkerPool},                   // its pool
		{GVK: kubevirt.HyperConvergedGVK, Namespace: kubevirt.HCONamespace, Name: kubevirt.HCOName}, // an input
		{GVK: disruption.ClusterVersionGVK, Name: disruption.ClusterVersionName},                    // the preflight's upgrade
	} {
		found := false
		for _, k := range keys {
			found = found || (k.GVK.Kind == want.GVK.Kind && k.Namespace == want.Namespace && k.Name == want.Name)
		}
		if !found {
			t.Errorf("%s %s/%s is not watched; watched: %v", want.GVK.Kind, want.Namespace, want.Name, keys)
		}
	}
}
