package status

import (
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubevirt/virt-advisor/pkg/apis/advisor/v1alpha1"
	"github.com/kubevirt/virt-advisor/pkg/plan"
)

// Approve records an approval in a status and hands the approved plan to
// the controller: the approved items, their snapshot, phase InProgress.
// action Apply takes the same edge with a standing approval.
func Approve(st *v1alpha1.VirtPlatformConfigStatus, res *plan.Result, record v1alpha1.ApprovalRecord) {
	now := record.ApprovedAt
	st.Approval = &record
	st.ObservedGeneration = record.Generation
	st.Items = res.StatusItems(now)
	st.SourceSnapshotHash = res.SnapshotHash
	st.ImpactSeverity = res.Status.ImpactSeverity
	// An approval, like a spec change, acknowledges a changed input.
	if c := meta.FindStatusCondition(st.Conditions, ConditionInputDependencyDrift); c != nil && c.Status == metav1.ConditionTrue {
		meta.SetStatusCondition(&st.Conditions, metav1.Condition{Type: ConditionInputDependencyDrift, Status: metav1.ConditionFalse,
			Reason: "Acknowledged", Message: "The plan with the changed input was approved by " + record.ApprovedBy, ObservedGeneration: record.Generation})
	}
	SetPhase(st, v1alpha1.PhaseInProgress, "Approved",
		fmt.Sprintf("Applying plan %s approved by %s", ShortHash(record.PlanHash), record.ApprovedBy))
}

// ShortHash abbreviates a plan hash for messages.
func ShortHash(h string) string {
	if len(h) > 12 {
		return h[:12]
	}
	return h
}
