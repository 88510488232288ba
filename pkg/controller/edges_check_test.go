package controller

import (
	"reflect"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubevirt/virt-advisor/pkg/apis/advisor/v1alpha1"
	"github.com/kubevirt/virt-advisor/pkg/cluster"
	"github.com/kubevirt/virt-advisor/pkg/kubevirt"
	"github.com/kubevirt/virt-advisor/pkg/plan"
	"github.com/kubevirt/virt-advisor/pkg/status"
)

// rolloutAndCheckEdges are the edges of the rollouts followed, of step check
// (drift, input dependencies, prerequisites, upgrades), Failed and Ignored.
func rolloutAndCheckEdges() []edge {
	return []edge{
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
}
