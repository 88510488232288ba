package controller

import (
	"errors"
	"strings"
	"testing"

	"github.com/kubevirt/virt-advisor/pkg/apis/advisor/v1alpha1"
	"github.com/kubevirt/virt-advisor/pkg/plan"
	"github.com/kubevirt/virt-advisor/pkg/status"
)

// draftEdges are the edges of step draft: drafting and approvals.
func draftEdges() []edge {
	return []edge{
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
	}
}
