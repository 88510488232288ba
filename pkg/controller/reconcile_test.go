package controller

import (
	"errors"
	"net"
	"net/url"
	"os"
	"reflect"
	"strings"
	"syscall"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

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
	tests := []edge{
		// Drafting.
		{name: "(new) --DryRun--> ReviewRequired", spec: dryRun, given: func(h *harness, s v1alpha1.VirtPlatformConfigSpec) { h.create(s, "alice") },
			event: newPlan(deschedulerPlan), phase: v1alpha1.PhaseReviewRequired, reason: "ReviewRequired", message: status.MessageReview,
			items:  map[string]itemWant{descheduler: {v1alpha1.ItemStatePending, "KubeDescheduler 'cluster' will be configured"}},
			events: []string{"Normal ReviewRequired"}},
		{name: "(new) --plan cannot be made--> Drafting (PlanGenerationFailed), retried", spec: dryRun,
			given: func(h *harness, s v1alpha1.VirtPlatformConfigSpec) { h.create(s, "alice") },
			event: func(h *harness) { h.planner.err = errors.New("discovery failed") },
			phase: v1alpha1.PhaseDrafting, reason: "PlanGenerationFailed", message: "Plan generation failed, will retry: discovery failed",
			events: []string{"Normal Drafting"}, err: true},
		{name: "(new) --prerequisite missing--> PrerequisiteFailed", spec: dryRun,
			given: func(h *harness, s v1alpha1.VirtPlatformConfigSpec) { h.create(s, "alice") },
			event: newPlan(missingPrerequisite), phase: v1alpha1.PhasePrerequisiteFailed, reason: "PrerequisitesFailed",
			message: "KubeDescheduler (operator.openshift.io.v1): Please install the Descheduler Operator via OLM", noItems: true,
			events: []string{"Warning PrerequisiteFailed"}, requeue: prerequisiteRetry},
		{name: "(new) --nothing to change--> Completed", spec: dryRun,
			given: func(h *harness, s v1alpha1.VirtPlatformConfigSpec) { h.create(s, "alice") },
			event: newPlan(deschedulerInSync), phase: v1alpha1.PhaseCompleted, reason: "Completed", message: status.MessageNoop,
			items:  map[string]itemWant{descheduler: {v1alpha1.ItemStateCompleted, unchangedMessage}},
			events: []string{"Normal Completed"}},
		{name: "PrerequisiteFailed --CRD back--> ReviewRequired", spec: dryRun, given: givenPrerequisiteFailed,
			event: newPlan(deschedulerPlan), phase: v1alpha1.PhaseReviewRequired, reason: "ReviewRequired",
			items: map[string]itemWant{descheduler: {v1alpha1.ItemStatePending, ""}}, events: []string{"Normal ReviewRequired"}},
		{name: "PrerequisiteFailed --still missing--> PrerequisiteFailed (no write, looked at again later)", spec: dryRun, given: givenPrerequisiteFailed,
			event: nothing, phase: v1alpha1.PhasePrerequisiteFailed, reason: "PrerequisitesFailed", requeue: prerequisiteRetry,
			check: noWrite},
		{name: "ReviewRequired --live plan changed--> ReviewRequired with the new items", spec: dryRun, given: givenReviewRequired,
			event: newPlan(func() *plan.Result {
				return planOf("snap-1", deschedulerItem(v1alpha1.OperationUpdate, "Automatic", 7))
			}),
			phase: v1alpha1.PhaseReviewRequired, reason: "ReviewRequired",
			check: func(t *testing.T, h *harness) {
				if !strings.Contains(string(h.get().Status.Items[0].DesiredState.Raw), `"total":7`) {
					t.Errorf("items show %s, want the new plan", h.get().Status.Items[0].DesiredState.Raw)
				}
			}},

		// Approvals.
		{name: "ReviewRequired --approval--> InProgress --item applied--> Completed", spec: dryRun, given: givenApproved,
			event: nothing, phase: v1alpha1.PhaseCompleted, reason: "Completed", message: status.MessageApplied,
			items: map[string]itemWant{descheduler: {v1alpha1.ItemStateCompleted, appliedMessage}}, applied: []string{descheduler},
			events: []string{"Normal Completed"}, check: appliedItemsRecorded},
		{name: "ReviewRequired --Apply--> InProgress (standing approval by the spec's author)", spec: dryRun, given: givenReviewRequired,
			event: setAction(v1alpha1.PlanActionApply), phase: v1alpha1.PhaseInProgress, reason: "Approved", message: "approved by alice",
			items:  map[string]itemWant{descheduler: {v1alpha1.ItemStatePending, ""}},
			events: []string{"Normal Approved Plan", "Normal InProgress"},
			check: func(t *testing.T, h *harness) {
				if a := h.get().Status.Approval; a == nil || a.ApprovedBy != "alice" || a.Generation != 2 {
					t.Errorf("approval = %+v, want one by alice of generation 2", a)
				}
			}},
		{name: "(new) --Apply--> InProgress --item applied--> Completed", spec: apply,
			given: func(h *harness, s v1alpha1.VirtPlatformConfigSpec) {
				h.create(s, "alice")
				h.planner.result = deschedulerPlan()
				h.mustReconcile(v1alpha1.PhaseInProgress)
			},
			event: nothing, phase: v1alpha1.PhaseCompleted, reason: "Completed", applied: []string{descheduler},
			events: []string{"Normal Completed"}},
		{name: "four eyes: ReviewRequired --Apply--> ReviewRequired (DistinctApproverRequired, nothing approved)", spec: dryRun, distinct: true,
			given: givenReviewRequired, event: setAction(v1alpha1.PlanActionApply),
			phase: v1alpha1.PhaseReviewRequired, reason: "DistinctApproverRequired", message: `a user other than "alice" must review the plan and approve it`,
			check: func(t *testing.T, h *harness) {
				if a := h.get().Status.Approval; a != nil {
					t.Errorf("approval = %+v, want none", a)
				}
			}},
		{name: "four eyes: ReviewRequired --approval by another user--> InProgress --item applied--> Completed", spec: apply, distinct: true,
			given: func(h *harness, s v1alpha1.VirtPlatformConfigSpec) {
				givenReviewRequired(h, s)
				h.approve("bob")
			},
			event: nothing, phase: v1alpha1.PhaseCompleted, applied: []string{descheduler}, events: []string{"Normal Completed"}},

		// Governance before every write.
		{name: "InProgress --spec change before the write--> Failed (ApprovalMismatch, nothing written)", spec: dryRun, given: givenApproved,
			event: specChange("alice", func(s *v1alpha1.VirtPlatformConfigSpec) { s.FailurePolicy = v1alpha1.FailurePolicyContinue }),
			phase: v1alpha1.PhaseFailed, reason: "ApprovalMismatch", message: "Nothing was written: the spec changed after plan", noItems: true,
			events: []string{"Warning Failed"}},
		{name: "InProgress --items tampered in storage--> Failed (ApprovalMismatch, nothing written)", spec: dryRun, given: givenApproved,
			event: func(h *harness) {
				h.edit(false, "", func(cfg *v1alpha1.VirtPlatformConfig) {
					cfg.Status.Items[0].DesiredState = deschedulerItem(v1alpha1.OperationUpdate, "Predictive", 5).DesiredState
				})
			},
			phase: v1alpha1.PhaseFailed, reason: "ApprovalMismatch", message: "status.items are not the items of plan", noItems: true,
			events: []string{"Warning Failed"}},
		{name: "InProgress --no approval recorded--> Failed (ApprovalMismatch, nothing written)", spec: dryRun, given: givenApproved,
			event: func(h *harness) {
				h.edit(false, "", func(cfg *v1alpha1.VirtPlatformConfig) { cfg.Status.Approval = nil })
			},
			phase: v1alpha1.PhaseFailed, reason: "ApprovalMismatch", message: "no approval of these items is recorded", noItems: true,
			events: []string{"Warning Failed"}},
		{name: "InProgress --targets changed since the review (stale snapshot)--> Failed (StalePlan, nothing written)", spec: dryRun, given: givenApproved,
			event: func(h *harness) { h.planner.snapshot = "snap-changed" },
			phase: v1alpha1.PhaseFailed, reason: "StalePlan", message: status.MessageStale, events: []string{"Warning Failed"},
			// The intent, recorded while the targets were read, is taken back.
			items: map[string]itemWant{descheduler: {v1alpha1.ItemStatePending, ""}}},
		{name: "InProgress --reading the targets for the whole-plan check fails transiently--> nothing written, the item pending and retrying with the error, checked again after the backoff", spec: dryRun, given: givenApproved,
			event:   func(h *harness) { h.planner.snapshotErr = connectionRefused },
			phase:   v1alpha1.PhaseInProgress,
			items:   map[string]itemWant{descheduler: {v1alpha1.ItemStatePending, "Retrying in 1s (attempt 1): reading the targets of " + configName + " before its first write: Patch"}},
			requeue: time.Second,
			check: func(t *testing.T, h *harness) {
				// The intent recorded while the targets were read is taken
				// back in storage too: the whole plan is still due, and the
				// next look checks it again.
				if it := h.get().Status.Items[0]; it.State != v1alpha1.ItemStatePending || it.Retry == nil {
					t.Errorf("stored item %s (retry %+v), want Pending and retrying", it.State, it.Retry)
				}
				h.planner.snapshotErr, h.planner.snapshot = nil, "snap-changed"
				h.clock.Step(time.Second)
				h.mustReconcile(v1alpha1.PhaseFailed)
				if len(h.planner.applied) != 0 {
					t.Errorf("applied %v after a stale snapshot, want nothing", h.planner.applied)
				}
			}},
		// Before: a permanent error became "look again" and the item waited
		// forever with its old message, the error logged at V(2) only.
		{name: "InProgress --reading the targets for the whole-plan check is forbidden (permanent)--> Failed naming the error, nothing written", spec: dryRun, given: givenApproved,
			event: func(h *harness) {
				h.planner.snapshotErr = apierrors.NewForbidden(schema.GroupResource{Group: "operator.openshift.io", Resource: "kubedeschedulers"}, "cluster", errors.New("RBAC: access denied"))
			},
			phase: v1alpha1.PhaseFailed, reason: "ItemFailed", message: "reading the targets of " + configName + " before its first write: kubedeschedulers.operator.openshift.io \"cluster\" is forbidden",
			items:  map[string]itemWant{descheduler: {v1alpha1.ItemStateFailed, "Failed to apply: reading the targets"}},
			events: []string{"Warning Failed"}},
		// A kube-apiserver that has just started refuses what RBAC allows
		// until its authorizer's caches are filled: before, the item failed
		// for good at the first such 403.
		{name: "InProgress --reading the targets is refused by the authorizer (403 User … cannot …)--> retrying; the sixth refusal is permanent: Failed naming it, nothing written", spec: dryRun, given: givenApproved,
			event: func(h *harness) {
				h.planner.snapshotErr = apierrors.NewForbidden(schema.GroupResource{Group: "operator.openshift.io", Resource: "kubedeschedulers"}, "cluster",
					errors.New(`User "system:serviceaccount:virt-advisor:virt-advisor-apiserver" cannot get resource "kubedeschedulers" in API group "operator.openshift.io" in the namespace "openshift-kube-descheduler-operator"`))
			},
			phase:   v1alpha1.PhaseInProgress,
			items:   map[string]itemWant{descheduler: {v1alpha1.ItemStatePending, "Retrying in 1s (attempt 1): reading the targets of " + configName + " before its first write"}},
			requeue: time.Second,
			check: func(t *testing.T, h *harness) {
				for _, wait := range []time.Duration{time.Second, 2 * time.Second, 4 * time.Second, 8 * time.Second} {
					h.clock.Step(wait)
					h.mustReconcile(v1alpha1.PhaseInProgress)
				}
				h.clock.Step(16 * time.Second)
				h.mustReconcile(v1alpha1.PhaseFailed)
				if it := h.get().Status.Items[0]; it.State != v1alpha1.ItemStateFailed || !strings.Contains(it.Message, `cannot get resource "kubedeschedulers"`) {
					t.Errorf("item %s %q, want Failed naming the refusal", it.State, it.Message)
				}
				if len(h.planner.applied) != 0 {
					t.Errorf("applied %v, want nothing", h.planner.applied)
				}
			}},
		// The write carries the read its checks judged: a target changed
		// between the checks and the write is not written over.
		{name: "InProgress --the target changes between its checks and its write (409)--> nothing written, looked at again; stale on the next look", spec: dryRun, given: givenApproved,
			event: func(h *harness) {
				h.planner.applyErr[descheduler] = apierrors.NewConflict(schema.GroupResource{Group: "operator.openshift.io", Resource: "kubedeschedulers"}, "cluster", errors.New("the object has been modified"))
			},
			phase: v1alpha1.PhaseInProgress, err: true,
			check: func(t *testing.T, h *harness) {
				if len(h.planner.applied) != 0 {
					t.Errorf("applied %v, want nothing", h.planner.applied)
				}
				delete(h.planner.applyErr, descheduler)
				h.planner.stale = map[string]string{descheduler: "changed after the plan was reviewed (spec.mode)"}
				h.mustReconcile(v1alpha1.PhaseFailed)
				if len(h.planner.applied) != 0 {
					t.Errorf("applied %v after a stale target, want nothing", h.planner.applied)
				}
				if st := h.get().Status; !strings.Contains(status.PhaseMessage(&st), "changed after the plan was reviewed (spec.mode)") {
					t.Errorf("message %q, want the stale target named", status.PhaseMessage(&st))
				}
			}},
		{name: "InProgress --stale snapshot with bypassOptimisticLock--> Completed", spec: v1alpha1.VirtPlatformConfigSpec{Action: v1alpha1.PlanActionDryRun, BypassOptimisticLock: true},
			given: givenApproved, event: func(h *harness) { h.planner.snapshot = "snap-changed" },
			phase: v1alpha1.PhaseCompleted, applied: []string{descheduler}, events: []string{"Normal Completed"}},
		{name: "InProgress --restart after the intent was stored (Applying)--> Completed (written again, no stale check)", spec: dryRun, given: givenApproved,
			event: func(h *harness) {
				h.edit(false, "", func(cfg *v1alpha1.VirtPlatformConfig) {
					cfg.Status.Items[0].State, cfg.Status.Items[0].Message = v1alpha1.ItemStateInProgress, applyingMessage
				})
				h.planner.snapshot = "snap-changed-by-our-own-write"
			},
			phase: v1alpha1.PhaseCompleted, applied: []string{descheduler}, events: []string{"Normal Completed"}},

		{name: "InProgress --a later item's target changed after the review--> Failed (StalePlan naming it; the earlier item written, it not)", spec: dryRun,
			given: func(h *harness, s v1alpha1.VirtPlatformConfigSpec) {
				h.create(s, "alice")
				h.planner.result = planOf("snap-1", deschedulerItem(v1alpha1.OperationUpdate, "Automatic", 5), hcoPlanItem(v1alpha1.OperationUpdate))
				h.mustReconcile(v1alpha1.PhaseReviewRequired)
				h.approve("admin")
			},
			event: func(h *harness) {
				h.planner.stale = map[string]string{hcoItem: "changed after the plan was reviewed (spec.liveMigrationConfig)"}
			},
			phase: v1alpha1.PhaseFailed, reason: "StalePlan", message: "Nothing was written for item 'hco-migration-limits': HyperConverged 'kubevirt-hyperconverged' changed after the plan was reviewed",
			items: map[string]itemWant{descheduler: {v1alpha1.ItemStateCompleted, appliedMessage},
				hcoItem: {v1alpha1.ItemStateFailed, "Not written: item 'hco-migration-limits'"}},
			applied: []string{descheduler}, events: []string{"Warning Failed"}},
		{name: "InProgress --cache behind storage (a spec change not yet seen)--> nothing written, looked at again", spec: dryRun, given: givenApproved,
			event: func(h *harness) {
				ahead := h.get()
				ahead.Generation++
				bump(ahead)
				h.status.ahead = ahead
			},
			phase: v1alpha1.PhaseInProgress, err: true, check: func(t *testing.T, h *harness) {
				noWrite(t, h)
				// The intent write is refused (its resourceVersion is the
				// cache's): the checks read beside it, but nothing is applied.
				if n := h.planner.attempts[descheduler]; n != 0 {
					t.Errorf("the target was written %d times, want 0", n)
				}
			}},
		{name: "InProgress --config deleted and created again (other UID, same generation)--> Failed (ApprovalMismatch, nothing written)", spec: dryRun, given: givenApproved,
			event: func(h *harness) {
				h.edit(false, "", func(cfg *v1alpha1.VirtPlatformConfig) { cfg.UID = "uid-2" })
			},
			phase: v1alpha1.PhaseFailed, reason: "ApprovalMismatch", message: "for another object of this name (UID uid-1; this one is uid-2)", noItems: true,
			events: []string{"Warning Failed"}},
		{name: "InProgress --MachineConfig created--> its UID recorded as ours", spec: dryRun,
			given: func(h *harness, s v1alpha1.VirtPlatformConfigSpec) {
				h.cluster.put(workerPool{}.obj())
				h.create(s, "alice")
				item := psiItem(v1alpha1.OperationCreate)
				item.DesiredState = raw(map[string]interface{}{
					"apiVersion": "machineconfiguration.openshift.io/v1", "kind": "MachineConfig",
					"metadata": map[string]interface{}{"name": psiMC, "labels": map[string]interface{}{machineconfig.RoleLabel: machineconfig.WorkerPool, profiles.ManagedByLabel: configName}},
					"spec":     map[string]interface{}{"kernelArguments": []interface{}{"psi=1"}},
				})
				h.planner.result = planOf("snap-1", item, hcoPlanItem(v1alpha1.OperationUpdate))
				h.mustReconcile(v1alpha1.PhaseReviewRequired)
				h.approve("admin")
			},
			event: nothing, phase: v1alpha1.PhaseInProgress, applied: []string{psi, hcoItem},
			check: func(t *testing.T, h *harness) {
				got := plan.OwnershipOf(&h.get().Status)
				if created, ok := got["uid-"+psiMC]; !ok || !created {
					t.Errorf("ownership = %v, want the MachineConfig recorded as created", got)
				}
			}},
		{name: "InProgress --object of someone else updated--> its UID recorded as not ours", spec: dryRun, given: givenApproved,
			event: nothing, phase: v1alpha1.PhaseCompleted, applied: []string{descheduler}, events: []string{"Normal Completed"},
			check: func(t *testing.T, h *harness) {
				got := plan.OwnershipOf(&h.get().Status)
				if created, ok := got["uid-cluster"]; !ok || created {
					t.Errorf("ownership = %v, want the KubeDescheduler recorded as written over", got)
				}
			}},
		{name: "CompletedWithErrors --desired state of the failed item changed (input)--> ReviewRequired (InputDependencyDrift), even with Apply and bypassOptimisticLock",
			spec: v1alpha1.VirtPlatformConfigSpec{Action: v1alpha1.PlanActionApply, BypassOptimisticLock: true, FailurePolicy: v1alpha1.FailurePolicyContinue},
			given: func(h *harness, s v1alpha1.VirtPlatformConfigSpec) {
				h.create(s, "alice")
				h.planner.result = planOf("snap-1", deschedulerItem(v1alpha1.OperationUpdate, "Automatic", 5), hcoPlanItem(v1alpha1.OperationUpdate))
				h.planner.applyErr[descheduler] = errors.New("denied")
				h.mustReconcile(v1alpha1.PhaseInProgress)
				h.mustReconcile(v1alpha1.PhaseCompletedWithErrors)
				delete(h.planner.applyErr, descheduler)
				h.planner.applied = nil
			},
			event: newPlan(func() *plan.Result {
				return planOf("snap-2", deschedulerItem(v1alpha1.OperationUpdate, "Automatic", 4), hcoPlanItem(v1alpha1.OperationNone))
			}),
			phase: v1alpha1.PhaseReviewRequired, reason: "InputDependencyDrift", message: "Input dependency changed", applied: nil,
			events: []string{"Normal ReviewRequired Input dependency changed"},
			check: func(t *testing.T, h *harness) {
				if a := h.get().Status.Approval; a == nil || a.PlanHash == h.planner.result.Status.PlanHash {
					t.Errorf("approval = %+v, want the old one kept, not the new plan approved", a)
				}
			}},
		{name: "PrerequisiteFailed --CRD back, plan changed meanwhile, action Apply--> ReviewRequired (not re-approved)", spec: apply,
			given: func(h *harness, s v1alpha1.VirtPlatformConfigSpec) {
				givenCompleted(h, s)
				h.planner.result = missingPrerequisite()
				h.mustReconcile(v1alpha1.PhasePrerequisiteFailed)
				h.planner.applied = nil
			},
			event: newPlan(func() *plan.Result {
				return planOf("snap-4", deschedulerItem(v1alpha1.OperationUpdate, "Automatic", 4))
			}),
			phase: v1alpha1.PhaseReviewRequired, reason: "InputDependencyDrift", message: "the plan is now different", applied: nil,
			events: []string{"Normal ReviewRequired action Apply approved plan"},
			check: func(t *testing.T, h *harness) {
				if a := h.get().Status.Approval; a == nil || a.PlanHash == h.planner.result.Status.PlanHash {
					t.Errorf("approval = %+v, want the old one kept", a)
				}
			}},
		{name: "PrerequisiteFailed --CRD back, the plan approved before, action Apply--> InProgress (re-approved)", spec: apply,
			given: func(h *harness, s v1alpha1.VirtPlatformConfigSpec) {
				h.create(s, "alice")
				h.planner.result = deschedulerPlan()
				h.mustReconcile(v1alpha1.PhaseInProgress)
				h.edit(false, "", func(cfg *v1alpha1.VirtPlatformConfig) {
					status.FailPrerequisites(&cfg.Status, "Missing required dependencies")
				})
			},
			// A new standing approval (the next in sequence), announced.
			event: newPlan(deschedulerPlan), phase: v1alpha1.PhaseInProgress, reason: "Approved", events: []string{"Normal Approved", "Normal InProgress"}},

		// Transient failures are retried; permanent ones fail.
		{name: "InProgress --write fails transiently (connection refused)--> InProgress, the item says it retries and why", spec: dryRun, given: givenApproved,
			event: func(h *harness) { h.planner.applyErr[descheduler] = connectionRefused },
			phase: v1alpha1.PhaseInProgress, reason: "Approved",
			items:   map[string]itemWant{descheduler: {v1alpha1.ItemStateInProgress, "Retrying in 1s (attempt 1): Patch \"https://127.0.0.1:6443/apis\": dial tcp: connect: connection refused"}},
			requeue: time.Second,
			check: func(t *testing.T, h *harness) {
				if r := h.get().Status.Items[0].Retry; r == nil || r.Attempts != 1 || !strings.Contains(r.LastError, "connection refused") {
					t.Errorf("retry = %+v, want attempt 1 with the error", r)
				}
			}},
		{name: "InProgress (retrying) --main API server back--> Completed, written once", spec: dryRun,
			given: func(h *harness, s v1alpha1.VirtPlatformConfigSpec) {
				givenApproved(h, s)
				h.planner.applyErr[descheduler] = connectionRefused
				h.mustReconcile(v1alpha1.PhaseInProgress)
				delete(h.planner.applyErr, descheduler)
			},
			event: func(h *harness) { h.clock.Step(time.Second) }, // the backoff ends
			phase: v1alpha1.PhaseCompleted, applied: []string{descheduler}, events: []string{"Normal Completed"},
			check: func(t *testing.T, h *harness) {
				if r := h.get().Status.Items[0].Retry; r != nil {
					t.Errorf("retry = %+v, want none after the write", r)
				}
			}},
		{name: "InProgress (retrying) --an event before the backoff ends (its own status write, a pool)--> InProgress, no attempt, looked at again when it ends", spec: dryRun,
			given: func(h *harness, s v1alpha1.VirtPlatformConfigSpec) {
				givenApproved(h, s)
				h.planner.applyErr[descheduler] = connectionRefused
				h.mustReconcile(v1alpha1.PhaseInProgress) // attempt 1: retrying in 1s
				h.clock.Step(400 * time.Millisecond)
			},
			event: nothing, phase: v1alpha1.PhaseInProgress,
			items:   map[string]itemWant{descheduler: {v1alpha1.ItemStateInProgress, "Retrying in 1s (attempt 1): "}},
			requeue: 600 * time.Millisecond,
			check: func(t *testing.T, h *harness) {
				if n := h.planner.attempts[descheduler]; n != 1 {
					t.Errorf("%d write attempts, want 1: the backoff is not over", n)
				}
				if h.status.writes != 0 {
					t.Errorf("%d status writes, want none", h.status.writes)
				}
			}},
		{name: "InProgress (retrying) --the backoff ends--> InProgress, attempt 2 with a longer backoff", spec: dryRun,
			given: func(h *harness, s v1alpha1.VirtPlatformConfigSpec) {
				givenApproved(h, s)
				h.planner.applyErr[descheduler] = connectionRefused
				h.mustReconcile(v1alpha1.PhaseInProgress)
			},
			event:   func(h *harness) { h.clock.Step(time.Second) },
			phase:   v1alpha1.PhaseInProgress,
			items:   map[string]itemWant{descheduler: {v1alpha1.ItemStateInProgress, "Retrying in 2s (attempt 2): "}},
			requeue: 2 * time.Second,
			check: func(t *testing.T, h *harness) {
				if n := h.planner.attempts[descheduler]; n != 2 {
					t.Errorf("%d write attempts, want 2", n)
				}
			}},
		{name: "InProgress --reading a later item's target before its write fails transiently--> InProgress, the first written, the later still pending, retrying", spec: dryRun,
			given: func(h *harness, s v1alpha1.VirtPlatformConfigSpec) {
				h.create(s, "alice")
				h.planner.result = planOf("snap-1", deschedulerItem(v1alpha1.OperationUpdate, "Automatic", 5), laterItem())
				h.mustReconcile(v1alpha1.PhaseReviewRequired)
				h.approve("admin")
			},
			event:   func(h *harness) { h.planner.readErr = map[string]error{later: connectionRefused} },
			phase:   v1alpha1.PhaseInProgress,
			applied: []string{descheduler},
			items: map[string]itemWant{descheduler: {v1alpha1.ItemStateCompleted, ""},
				later: {v1alpha1.ItemStatePending, "Retrying in 1s (attempt 1)"}},
			requeue: time.Second},
		{name: "InProgress (retrying) --past --transient-error-deadline--> Failed with the last error and the deadline", spec: dryRun,
			given: func(h *harness, s v1alpha1.VirtPlatformConfigSpec) {
				givenApproved(h, s)
				h.planner.applyErr[descheduler] = connectionRefused
				h.mustReconcile(v1alpha1.PhaseInProgress)
			},
			event: func(h *harness) { h.clock.Step(10*time.Minute + time.Second) },
			phase: v1alpha1.PhaseFailed, reason: "ItemFailed",
			message: "gave up after retrying for 10m1s (attempt 2; the deadline is 10m0s, --transient-error-deadline): Patch \"https://127.0.0.1:6443/apis\": dial tcp: connect: connection refused",
			items:   map[string]itemWant{descheduler: {v1alpha1.ItemStateFailed, "gave up after retrying"}},
			events:  []string{"Warning Failed"}},
		{name: "InProgress (retrying) --past spec.waitTimeout--> Failed naming waitTimeout", spec: v1alpha1.VirtPlatformConfigSpec{Action: v1alpha1.PlanActionDryRun, WaitTimeout: "30s"},
			given: func(h *harness, s v1alpha1.VirtPlatformConfigSpec) {
				givenApproved(h, s)
				h.planner.applyErr[descheduler] = connectionRefused
				h.mustReconcile(v1alpha1.PhaseInProgress)
			},
			event: func(h *harness) { h.clock.Step(31 * time.Second) },
			phase: v1alpha1.PhaseFailed, reason: "ItemFailed", message: "the deadline is 30s, spec.waitTimeout",
			events: []string{"Warning Failed"}},

		// Before: a retry checked the approval before the pools' gate only;
		// a spec change made while the gate read the pools was written over.
		{name: "InProgress (MachineConfig retrying) --action Ignore set while the gate reads the pools--> nothing written, looked at again, Ignored", spec: dryRun,
			given: func(h *harness, s v1alpha1.VirtPlatformConfigSpec) {
				givenPSIApproved(h, s)
				h.planner.applyErr[psi] = connectionRefused
				h.mustReconcile(v1alpha1.PhaseInProgress) // attempt 1: retrying in 1s
				delete(h.planner.applyErr, psi)
			},
			event: func(h *harness) {
				h.clock.Step(time.Second)
				h.cluster.onRead = func(kind string) {
					if kind == "MachineConfigPool" {
						h.cluster.onRead = nil
						h.edit(true, "bob", func(cfg *v1alpha1.VirtPlatformConfig) { cfg.Spec.Action = v1alpha1.PlanActionIgnore })
					}
				}
			},
			phase: v1alpha1.PhaseInProgress, err: true,
			check: func(t *testing.T, h *harness) {
				if len(h.planner.applied) != 0 {
					t.Fatalf("applied %v after the action became Ignore, want nothing", h.planner.applied)
				}
				h.mustReconcile(v1alpha1.PhaseIgnored)
				if len(h.planner.applied) != 0 {
					t.Errorf("applied %v, want nothing", h.planner.applied)
				}
			}},
		{name: "InProgress --a later item fails permanently after a MachineConfig was written--> Failed, PartiallyApplied naming what was written", spec: dryRun,
			given: func(h *harness, s v1alpha1.VirtPlatformConfigSpec) {
				h.cluster.put(workerPool{}.obj())
				h.create(s, "alice")
				h.planner.result = planOf("snap-1", psiItem(v1alpha1.OperationCreate), hcoPlanItem(v1alpha1.OperationUpdate))
				h.mustReconcile(v1alpha1.PhaseReviewRequired)
				h.approve("admin")
			},
			event: func(h *harness) {
				h.planner.applyErr[hcoItem] = apierrors.NewForbidden(schema.GroupResource{Group: "hco.kubevirt.io", Resource: "hyperconvergeds"}, "kubevirt-hyperconverged", errors.New("denied by policy"))
			},
			phase: v1alpha1.PhaseFailed, reason: "ItemFailed",
			message: "1 of 2 items were written: 'enable-psi-metrics' (MachineConfig 99-worker-psi-karg); not written: 'hco-migration-limits' (HyperConverged kubevirt-hyperconverged); the cluster is partially configured",
			applied: []string{psi}, events: []string{"Warning Failed"},
			check: func(t *testing.T, h *harness) {
				conditionIs(t, h, status.ConditionPartiallyApplied, metav1.ConditionTrue, "ItemsNotWritten")
			}},
		{name: "Failed (partially applied) --the written MachineConfig finished rolling out--> Failed, its item Completed", spec: dryRun,
			given: func(h *harness, s v1alpha1.VirtPlatformConfigSpec) {
				h.cluster.put(workerPool{}.obj())
				h.create(s, "alice")
				h.planner.result = planOf("snap-1", psiItem(v1alpha1.OperationCreate), hcoPlanItem(v1alpha1.OperationUpdate))
				h.mustReconcile(v1alpha1.PhaseReviewRequired)
				h.approve("admin")
				h.planner.applyErr[hcoItem] = errors.New("denied")
				h.mustReconcile(v1alpha1.PhaseFailed)
			},
			event: pool(workerPool{rolled: true}),
			phase: v1alpha1.PhaseFailed, reason: "ItemFailed",
			items: map[string]itemWant{psi: {v1alpha1.ItemStateCompleted, ""}, hcoItem: {v1alpha1.ItemStateFailed, "denied"}}},

		// Item failures.
		{name: "InProgress --item apply fails, failurePolicy Abort--> Failed (ItemFailed)", spec: dryRun, given: givenApproved,
			event: func(h *harness) { h.planner.applyErr[descheduler] = errors.New("admission webhook denied the request") },
			phase: v1alpha1.PhaseFailed, reason: "ItemFailed", message: "Item 'enable-load-aware-descheduling' failed: Failed to apply: admission webhook denied the request",
			items:  map[string]itemWant{descheduler: {v1alpha1.ItemStateFailed, "Failed to apply: admission webhook denied the request"}},
			events: []string{"Warning Failed"}},
		{name: "InProgress --first item fails, failurePolicy Abort--> Failed (the next item not written)", spec: dryRun,
			given: func(h *harness, s v1alpha1.VirtPlatformConfigSpec) {
				h.create(s, "alice")
				h.planner.result = planOf("snap-1", deschedulerItem(v1alpha1.OperationUpdate, "Automatic", 5), hcoPlanItem(v1alpha1.OperationUpdate))
				h.mustReconcile(v1alpha1.PhaseReviewRequired)
				h.approve("admin")
			},
			event: func(h *harness) { h.planner.applyErr[descheduler] = errors.New("denied") },
			phase: v1alpha1.PhaseFailed, reason: "ItemFailed",
			items:  map[string]itemWant{descheduler: {v1alpha1.ItemStateFailed, "denied"}, hcoItem: {v1alpha1.ItemStatePending, ""}},
			events: []string{"Warning Failed"}},
		{name: "InProgress --item apply fails, failurePolicy Continue--> CompletedWithErrors", spec: v1alpha1.VirtPlatformConfigSpec{Action: v1alpha1.PlanActionDryRun, FailurePolicy: v1alpha1.FailurePolicyContinue},
			given: func(h *harness, s v1alpha1.VirtPlatformConfigSpec) {
				h.create(s, "alice")
				h.planner.result = planOf("snap-1", deschedulerItem(v1alpha1.OperationUpdate, "Automatic", 5), hcoPlanItem(v1alpha1.OperationUpdate))
				h.mustReconcile(v1alpha1.PhaseReviewRequired)
				h.approve("admin")
			},
			event: func(h *harness) { h.planner.applyErr[descheduler] = errors.New("denied") },
			phase: v1alpha1.PhaseCompletedWithErrors, reason: "ItemsFailed", message: "1 of 2 items failed: 'enable-load-aware-descheduling': Failed to apply: denied",
			items:   map[string]itemWant{descheduler: {v1alpha1.ItemStateFailed, "denied"}, hcoItem: {v1alpha1.ItemStateCompleted, appliedMessage}},
			applied: []string{hcoItem}, events: []string{"Warning CompletedWithErrors"}},
		{name: "CompletedWithErrors --nothing changed but the known failure--> CompletedWithErrors (no write)", spec: v1alpha1.VirtPlatformConfigSpec{Action: v1alpha1.PlanActionDryRun, FailurePolicy: v1alpha1.FailurePolicyContinue},
			given: func(h *harness, s v1alpha1.VirtPlatformConfigSpec) {
				h.create(s, "alice")
				h.planner.result = planOf("snap-1", deschedulerItem(v1alpha1.OperationUpdate, "Automatic", 5), hcoPlanItem(v1alpha1.OperationUpdate))
				h.mustReconcile(v1alpha1.PhaseReviewRequired)
				h.approve("admin")
				h.planner.applyErr[descheduler] = errors.New("denied")
				h.mustReconcile(v1alpha1.PhaseCompletedWithErrors)
				h.planner.result = planOf("snap-2", deschedulerItem(v1alpha1.OperationUpdate, "Automatic", 5), hcoPlanItem(v1alpha1.OperationNone))
			},
			event: nothing, phase: v1alpha1.PhaseCompletedWithErrors, check: noWrite},

		// MachineConfig rollouts.
		{name: "InProgress --MachineConfig written, pool not yet picked it up--> InProgress", spec: dryRun,
			given: func(h *harness, s v1alpha1.VirtPlatformConfigSpec) {
				givenPSIApproved(h, s)
			},
			event: nothing, phase: v1alpha1.PhaseInProgress, reason: "Approved", applied: []string{psi},
			items: map[string]itemWant{psi: {v1alpha1.ItemStateInProgress, "MachineConfigPool 'worker' is processing changes (Updated: 3/3, Ready: 3/3)"}},
			check: func(t *testing.T, h *harness) {
				it := h.get().Status.Items[0]
				if want := []v1alpha1.PoolConfiguration{{Pool: "worker", Configuration: "rendered-a"}}; !reflect.DeepEqual(it.PoolConfigsBefore, want) {
					t.Errorf("poolConfigsBefore = %+v, want %+v (noted before the write)", it.PoolConfigsBefore, want)
				}
			}},
		{name: "InProgress --pool updating--> InProgress (node progress in the item message)", spec: dryRun, given: givenRolling,
			event: pool(workerPool{updating: true, updated: 1}), phase: v1alpha1.PhaseInProgress,
			items: map[string]itemWant{psi: {v1alpha1.ItemStateInProgress, "MachineConfigPool 'worker' is updating (Updated: 1/3, Ready: 1/3)"}}},
		{name: "InProgress --pool rolled out--> Completed", spec: dryRun, given: givenRolling,
			event: pool(workerPool{rolled: true}), phase: v1alpha1.PhaseCompleted, reason: "Completed", message: status.MessageApplied,
			items:  map[string]itemWant{psi: {v1alpha1.ItemStateCompleted, "MachineConfigPool 'worker' is ready (all 3 nodes updated)"}},
			events: []string{"Normal Completed"}},
		{name: "InProgress --pool degraded--> InProgress (degraded named in the item message)", spec: dryRun, given: givenRolling,
			event: pool(workerPool{updating: true, updated: 1, degraded: 1}), phase: v1alpha1.PhaseInProgress,
			items: map[string]itemWant{psi: {v1alpha1.ItemStateInProgress, "MachineConfigPool 'worker' is degraded (1 degraded machines)"}}},
		{name: "InProgress --pool paused--> InProgress (paused named in the item message)", spec: dryRun, given: givenRolling,
			event: pool(workerPool{paused: true}), phase: v1alpha1.PhaseInProgress,
			items: map[string]itemWant{psi: {v1alpha1.ItemStateInProgress, "MachineConfigPool 'worker' is paused"}}},
		{name: "InProgress --rollout within waitTimeout--> InProgress, looked at again when it runs out", spec: v1alpha1.VirtPlatformConfigSpec{Action: v1alpha1.PlanActionDryRun, WaitTimeout: "30m"},
			given: givenRolling, event: func(h *harness) { h.clock.Step(10 * time.Minute) },
			phase: v1alpha1.PhaseInProgress, requeue: 20 * time.Minute,
			items: map[string]itemWant{psi: {v1alpha1.ItemStateInProgress, "is processing changes"}}},
		{name: "InProgress --waitTimeout--> Failed", spec: v1alpha1.VirtPlatformConfigSpec{Action: v1alpha1.PlanActionDryRun, WaitTimeout: "30m"},
			given: givenRolling, event: func(h *harness) { h.clock.Step(31 * time.Minute) },
			phase: v1alpha1.PhaseFailed, reason: "ItemFailed", message: "Timeout waiting for resource to become healthy (waited 31m0s, timeout 30m0s)",
			items:  map[string]itemWant{psi: {v1alpha1.ItemStateFailed, "MachineConfigPool 'worker' is processing changes"}},
			events: []string{"Warning Failed"}},
		{name: "InProgress --pool degraded past waitTimeout--> Failed", spec: v1alpha1.VirtPlatformConfigSpec{Action: v1alpha1.PlanActionDryRun, WaitTimeout: "30m"},
			given: givenRolling, event: func(h *harness) {
				h.cluster.put(workerPool{updating: true, updated: 1, degraded: 1}.obj())
				h.clock.Step(time.Hour)
			},
			phase: v1alpha1.PhaseFailed, reason: "ItemFailed", message: "is degraded (1 degraded machines)", events: []string{"Warning Failed"}},
		{name: "InProgress --pool gone--> InProgress (the pool named missing)", spec: dryRun, given: givenRolling,
			event: func(h *harness) { delete(h.cluster.objects, clusterKey("MachineConfigPool", "", "worker")) },
			phase: v1alpha1.PhaseInProgress, items: map[string]itemWant{psi: {v1alpha1.ItemStateInProgress, "MachineConfigPool 'worker' not found"}}},
		{name: "InProgress (rolling out) --spec change, nothing left to write--> InProgress (RollingOut)", spec: dryRun, given: givenRolling,
			event: specChange("alice", func(s *v1alpha1.VirtPlatformConfigSpec) { s.WaitTimeout = "2h" }),
			phase: v1alpha1.PhaseInProgress, reason: "RollingOut",
			items: map[string]itemWant{psi: {v1alpha1.ItemStateInProgress, "is processing changes"}}},

		// Drift.
		{name: "Completed --nothing changed--> Completed (no write, no event)", spec: dryRun, given: givenCompleted,
			event: nothing, phase: v1alpha1.PhaseCompleted, check: noWrite},
		{name: "Completed --managed field drift--> Drifted", spec: dryRun, given: givenCompleted,
			event: newPlan(func() *plan.Result {
				return differing(planOf("snap-3", deschedulerItem(v1alpha1.OperationUpdate, "Automatic", 5)), descheduler, "spec.mode")
			}),
			phase: v1alpha1.PhaseDrifted, reason: "DriftDetected",
			message: "Configuration has drifted from desired state: item 'enable-load-aware-descheduling' (spec.mode). Review the plan and approve it, or revert the change",
			items:   map[string]itemWant{descheduler: {v1alpha1.ItemStateCompleted, "Drifted: spec.mode no longer as applied"}},
			events:  []string{"Warning Drifted"}},
		{name: "Completed --target event, managed field edited--> Drifted from the watch caches (no plan computed)", spec: dryRun, given: givenCompleted,
			event: targetEvent(map[string][]string{descheduler: {"spec.mode"}}),
			phase: v1alpha1.PhaseDrifted, reason: "DriftDetected",
			message: "Configuration has drifted from desired state: item 'enable-load-aware-descheduling' (spec.mode). Review the plan and approve it, or revert the change",
			items:   map[string]itemWant{descheduler: {v1alpha1.ItemStateCompleted, "Drifted: spec.mode no longer as applied"}},
			events:  []string{"Warning Drifted"}, check: noPlan},
		{name: "Completed --target event, caches cannot tell--> Drifted from a plan", spec: dryRun, given: givenCompleted,
			event: func(h *harness) {
				targetEvent(nil)(h)
				h.planner.result = differing(planOf("snap-3", deschedulerItem(v1alpha1.OperationUpdate, "Automatic", 5)), descheduler, "spec.mode")
			},
			phase: v1alpha1.PhaseDrifted, message: "item 'enable-load-aware-descheduling' (spec.mode)", events: []string{"Warning Drifted"},
			check: func(t *testing.T, h *harness) {
				if h.planner.computes == 0 {
					t.Error("no plan computed: the caches could not tell")
				}
			}},
		{name: "Completed --input event--> a plan, not the watch caches", spec: dryRun, given: givenCompleted,
			event: func(h *harness) {
				h.planner.fromCaches = map[string][]string{descheduler: {"spec.mode"}}
				h.c.objects.seen(configName, cluster.ObjectKey{GVK: kubevirt.HyperConvergedGVK, Namespace: kubevirt.HCONamespace, Name: kubevirt.HCOName})
			},
			phase: v1alpha1.PhaseCompleted, check: func(t *testing.T, h *harness) {
				if h.planner.computes == 0 {
					t.Error("no plan computed after an input changed")
				}
			}},
		{name: "Drifted --target event, reverted--> Completed from the watch caches (no plan computed)", spec: dryRun, given: givenDrifted,
			event: targetEvent(map[string][]string{}), phase: v1alpha1.PhaseCompleted, reason: "Completed", message: status.MessageApplied,
			events: []string{"Normal DriftResolved", "Normal Completed"}, check: noPlan},
		{name: "Completed --managed object deleted--> Drifted (the object (deleted))", spec: dryRun, given: givenCompleted,
			event: newPlan(func() *plan.Result {
				return planOf("snap-3", deschedulerItem(v1alpha1.OperationCreate, "Automatic", 5))
			}),
			phase: v1alpha1.PhaseDrifted, message: "item 'enable-load-aware-descheduling' (the object (deleted))", events: []string{"Warning Drifted"}},
		{name: "Completed --target cannot be planned--> Drifted (the item's error)", spec: dryRun, given: givenCompleted,
			event: newPlan(func() *plan.Result {
				it := deschedulerItem(v1alpha1.OperationUpdate, "Automatic", 5)
				it.Error = "server-side apply dry-run of KubeDescheduler openshift-kube-descheduler-operator/cluster was rejected: denied"
				return planOf("snap-3", it)
			}),
			phase: v1alpha1.PhaseDrifted, message: "(server-side apply dry-run of KubeDescheduler openshift-kube-descheduler-operator/cluster was rejected: denied)",
			events: []string{"Warning Drifted"}},
		{name: "Drifted --drift goes on--> Drifted (no new event)", spec: dryRun, given: givenDrifted,
			event: nothing, phase: v1alpha1.PhaseDrifted, check: noWrite},
		{name: "Drifted --revert--> Completed (DriftResolved)", spec: dryRun, given: givenDrifted,
			event: newPlan(deschedulerInSync), phase: v1alpha1.PhaseCompleted, reason: "Completed", message: status.MessageApplied,
			items:  map[string]itemWant{descheduler: {v1alpha1.ItemStateCompleted, appliedMessage}},
			events: []string{"Normal DriftResolved", "Normal Completed"}},
		{name: "Drifted --approval--> InProgress --item applied--> Completed", spec: dryRun, given: givenDrifted,
			event: func(h *harness) { h.approve("admin") }, phase: v1alpha1.PhaseCompleted, applied: []string{descheduler},
			events: []string{"Normal Completed"}},
		{name: "Drifted --Apply+bypassOptimisticLock--> InProgress (standing approval of the correction)", spec: dryRun, given: givenDrifted,
			event: specChange("alice", func(s *v1alpha1.VirtPlatformConfigSpec) {
				s.Action, s.BypassOptimisticLock = v1alpha1.PlanActionApply, true
			}),
			phase: v1alpha1.PhaseInProgress, reason: "Approved", events: []string{"Normal Approved Plan", "Normal InProgress"}},
		{name: "Completed (Apply+bypassOptimisticLock) --managed field drift--> InProgress (DriftCorrection)", spec: v1alpha1.VirtPlatformConfigSpec{Action: v1alpha1.PlanActionApply, BypassOptimisticLock: true},
			given: givenCompleted,
			event: newPlan(func() *plan.Result {
				return differing(planOf("snap-3", deschedulerItem(v1alpha1.OperationUpdate, "Automatic", 5)), descheduler, "spec.mode")
			}),
			phase: v1alpha1.PhaseInProgress, reason: "Approved",
			events: []string{"Normal DriftCorrection Correcting drift of item 'enable-load-aware-descheduling' (spec.mode)", "Normal Approved Plan", "Normal InProgress"}},
		{name: "Completed (Apply) --managed field drift--> Drifted (Apply alone does not correct)", spec: apply, given: givenCompleted,
			event: newPlan(func() *plan.Result {
				return differing(planOf("snap-3", deschedulerItem(v1alpha1.OperationUpdate, "Automatic", 5)), descheduler, "spec.mode")
			}),
			phase: v1alpha1.PhaseDrifted, events: []string{"Warning Drifted"}},

		// Input dependencies.
		{name: "Completed --HCO input change--> ReviewRequired (InputDependencyDrift)", spec: dryRun, given: givenCompleted,
			event: newPlan(func() *plan.Result {
				return planOf("snap-3", deschedulerItem(v1alpha1.OperationUpdate, "Automatic", 4))
			}),
			phase: v1alpha1.PhaseReviewRequired, reason: "InputDependencyDrift",
			message: "Input dependency changed: HCO parallelMigrationsPerCluster changed (scaled 5 -> 4)",
			items:   map[string]itemWant{descheduler: {v1alpha1.ItemStatePending, ""}},
			events:  []string{"Normal ReviewRequired"},
			check: func(t *testing.T, h *harness) {
				conditionIs(t, h, status.ConditionInputDependencyDrift, metav1.ConditionTrue, "InputChanged")
				if a := h.get().Status.AppliedItems; len(a) != 1 || !strings.Contains(string(a[0].DesiredState.Raw), `"total":5`) {
					t.Errorf("appliedItems = %+v, want what was applied (total 5)", a)
				}
			}},
		{name: "Completed (Apply) --HCO input change--> ReviewRequired (InputDependencyDrift, nothing applied)", spec: apply, given: givenCompleted,
			event: newPlan(func() *plan.Result {
				return planOf("snap-3", deschedulerItem(v1alpha1.OperationUpdate, "Automatic", 4))
			}),
			phase: v1alpha1.PhaseReviewRequired, reason: "InputDependencyDrift", events: []string{"Normal ReviewRequired"}},
		{name: "ReviewRequired (input drift, Apply) --nothing--> ReviewRequired (no write, still needs a human)", spec: apply, given: givenInputDrift,
			event: nothing, phase: v1alpha1.PhaseReviewRequired, reason: "InputDependencyDrift", check: noWrite},
		{name: "ReviewRequired (input drift) --input reverted--> Completed (InputDependencyDrift resolved)", spec: dryRun, given: givenInputDrift,
			event: newPlan(deschedulerInSync), phase: v1alpha1.PhaseCompleted, reason: "Completed",
			items:  map[string]itemWant{descheduler: {v1alpha1.ItemStateCompleted, appliedMessage}},
			events: []string{"Normal Completed"},
			check: func(t *testing.T, h *harness) {
				conditionIs(t, h, status.ConditionInputDependencyDrift, metav1.ConditionFalse, "DriftResolved")
			}},
		{name: "ReviewRequired (input drift) --input reverted, managed field drifted--> Drifted", spec: dryRun, given: givenInputDrift,
			event: newPlan(func() *plan.Result {
				return differing(planOf("snap-3", deschedulerItem(v1alpha1.OperationUpdate, "Automatic", 5)), descheduler, "spec.mode")
			}),
			phase: v1alpha1.PhaseDrifted, message: "item 'enable-load-aware-descheduling' (spec.mode)", events: []string{"Warning Drifted"}},
		{name: "ReviewRequired (input drift) --spec change--> ReviewRequired (drift acknowledged, new plan drafted)", spec: dryRun, given: givenInputDrift,
			event: specChange("alice", func(s *v1alpha1.VirtPlatformConfigSpec) { s.WaitTimeout = "1h" }),
			phase: v1alpha1.PhaseReviewRequired, reason: "ReviewRequired",
			check: func(t *testing.T, h *harness) {
				conditionIs(t, h, status.ConditionInputDependencyDrift, metav1.ConditionFalse, "Acknowledged")
			}},
		{name: "ReviewRequired (input drift) --approval--> InProgress --item applied--> Completed (appliedItems updated)", spec: dryRun, given: givenInputDrift,
			event: func(h *harness) { h.approve("admin") }, phase: v1alpha1.PhaseCompleted, applied: []string{descheduler},
			events: []string{"Normal Completed"},
			check: func(t *testing.T, h *harness) {
				conditionIs(t, h, status.ConditionInputDependencyDrift, metav1.ConditionFalse, "Acknowledged")
				if a := h.get().Status.AppliedItems; len(a) != 1 || !strings.Contains(string(a[0].DesiredState.Raw), `"total":4`) {
					t.Errorf("appliedItems = %+v, want the approved plan (total 4)", a)
				}
			}},

		// Prerequisites of an applied config.
		{name: "Completed --CRD removed--> PrerequisiteFailed", spec: dryRun, given: givenCompleted,
			event: newPlan(missingPrerequisite), phase: v1alpha1.PhasePrerequisiteFailed, reason: "PrerequisitesFailed",
			message: "Missing required dependencies", noItems: true, requeue: prerequisiteRetry, events: []string{"Warning PrerequisiteFailed"}},
		{name: "PrerequisiteFailed (was Completed) --CRD back, targets as applied--> Completed", spec: dryRun,
			given: func(h *harness, s v1alpha1.VirtPlatformConfigSpec) {
				givenCompleted(h, s)
				h.planner.result = missingPrerequisite()
				h.mustReconcile(v1alpha1.PhasePrerequisiteFailed)
			},
			event: newPlan(deschedulerInSync), phase: v1alpha1.PhaseCompleted, message: status.MessageNoop, events: []string{"Normal Completed"}},

		// Upgrades.
		{name: "Completed --newer logic--> CompletedWithUpgrade", spec: dryRun, given: givenCompleted,
			event: func(h *harness) {
				h.edit(false, "", func(cfg *v1alpha1.VirtPlatformConfig) { cfg.Status.OperatorVersion = olderVersion })
				h.planner.result = planOf("snap-3", deschedulerItem(v1alpha1.OperationUpdate, "Automatic", 5), hcoPlanItem(v1alpha1.OperationUpdate))
			},
			phase: v1alpha1.PhaseCompletedWithUpgrade, reason: "UpgradeAvailable", message: "Applied by v0.1.0; the profile logic of v0.2.0 differs for: hco-migration-limits",
			events: []string{"Normal CompletedWithUpgrade"},
			check: func(t *testing.T, h *harness) {
				conditionIs(t, h, status.ConditionUpgradeAvailable, metav1.ConditionTrue, "LogicChanged")
			}},
		{name: "CompletedWithUpgrade --upgrade approved and applied--> Completed (UpgradeAvailable resolved)", spec: dryRun, given: givenUpgrade,
			event: func(h *harness) { h.approve("admin") }, phase: v1alpha1.PhaseCompleted, applied: []string{descheduler, hcoItem},
			events: []string{"Normal Completed"},
			check: func(t *testing.T, h *harness) {
				conditionIs(t, h, status.ConditionUpgradeAvailable, metav1.ConditionFalse, "Applied")
				if v := h.get().Status.OperatorVersion; v != thisVersion {
					t.Errorf("operatorVersion = %q, want %q", v, thisVersion)
				}
			}},
		{name: "CompletedWithUpgrade --logic back to what was applied--> Completed (NoLogicChange)", spec: dryRun, given: givenUpgrade,
			event: newPlan(deschedulerInSync), phase: v1alpha1.PhaseCompleted, events: []string{"Normal Completed"},
			check: func(t *testing.T, h *harness) {
				conditionIs(t, h, status.ConditionUpgradeAvailable, metav1.ConditionFalse, "NoLogicChange")
			}},

		// Failed and Ignored.
		{name: "Failed --nothing--> Failed (no write)", spec: dryRun, given: givenFailed, event: nothing, phase: v1alpha1.PhaseFailed, check: noWrite},
		{name: "Failed --spec change--> ReviewRequired", spec: dryRun, given: givenFailed, event: setAction(v1alpha1.PlanActionDryRun),
			phase: v1alpha1.PhaseReviewRequired, reason: "ReviewRequired", events: []string{"Normal ReviewRequired"}},
		{name: "Completed --spec change--> ReviewRequired", spec: dryRun, given: givenCompleted,
			event: func(h *harness) {
				specChange("alice", func(s *v1alpha1.VirtPlatformConfigSpec) { s.WaitTimeout = "1h" })(h)
				h.planner.result = planOf("snap-3", deschedulerItem(v1alpha1.OperationUpdate, "Automatic", 9))
			},
			phase: v1alpha1.PhaseReviewRequired, reason: "ReviewRequired", events: []string{"Normal ReviewRequired"}},
		{name: "Ignored --DryRun--> ReviewRequired", spec: dryRun, given: givenIgnored, event: setAction(v1alpha1.PlanActionDryRun),
			phase: v1alpha1.PhaseReviewRequired, events: []string{"Normal ReviewRequired"}},

		// Writes that lose.
		{name: "InProgress --someone else wrote the config meanwhile (conflict)--> error, retried; nothing written, no event", spec: dryRun, given: givenApproved,
			event: func(h *harness) { h.status.conflict = true }, phase: v1alpha1.PhaseInProgress, err: true, applied: nil,
			check: func(t *testing.T, h *harness) {
				if it := h.get().Status.Items[0]; it.State != v1alpha1.ItemStatePending {
					t.Errorf("item %s, want Pending: the intent was not stored, so nothing may be written", it.State)
				}
			}},
	}
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
