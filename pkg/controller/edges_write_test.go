package controller

import (
	"errors"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kubevirt/virt-advisor/pkg/apis/advisor/v1alpha1"
	"github.com/kubevirt/virt-advisor/pkg/machineconfig"
	"github.com/kubevirt/virt-advisor/pkg/plan"
	"github.com/kubevirt/virt-advisor/pkg/profiles"
	"github.com/kubevirt/virt-advisor/pkg/status"
)

// writeEdges are the edges of step progress that write: the governance before
// every write, retries, item failures.
func writeEdges() []edge {
	return []edge{
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
	}
}
