// Package approval records approvals and checks, before every write, that
// an approval still covers what is about to be written (docs/design.md,
// the governance invariant).
package approval

import (
	"fmt"

	"github.com/kubevirt/virt-advisor/pkg/apis/advisor/v1alpha1"
	"github.com/kubevirt/virt-advisor/pkg/plan"
	"github.com/kubevirt/virt-advisor/pkg/status"
)

// Record records an approval in a status and hands the approved plan to
// the controller: the approved items, their snapshot, phase InProgress.
// action Apply takes the same edge with a standing approval.
// The record binds the approved items by their hash (CheckApproval).
func Record(st *v1alpha1.VirtPlatformConfigStatus, res *plan.Result, record v1alpha1.ApprovalRecord) error {
	now := record.ApprovedAt
	items := res.StatusItems(now)
	itemsHash, err := plan.ItemsHash(items)
	if err != nil {
		return err
	}
	record.ItemsHash = itemsHash
	record.Sequence = nextSequence(st)
	// The gates the plan showed are those its rollouts step by.
	record.Gates = res.Status.Settings.Gates
	st.Approval = &record
	// The new approval ends an abort's pause of the pools (the new plan
	// starts from what is live).
	st.Abort = nil
	st.ObservedGeneration = record.Generation
	st.Items = items
	st.SourceSnapshotHash = res.SnapshotHash
	st.ImpactSeverity = res.Status.ImpactSeverity
	// An approval, like a spec change, acknowledges a changed input.
	status.ClearInputDrift(st, record.Generation, "Acknowledged", "The plan with the changed input was approved by "+record.ApprovedBy)
	status.ClearWaiting(st, record.Generation)
	status.SetPhase(st, v1alpha1.PhaseInProgress, "Approved", status.ApplyingMessage(&record))
	return nil
}

// nextSequence numbers an approval made now: one more than the approval
// before it and than the one an abort still recorded aborted, so that an
// approval in the abort's second still orders after it.
func nextSequence(st *v1alpha1.VirtPlatformConfigStatus) int64 {
	var n int64
	if st.Approval != nil {
		n = st.Approval.Sequence
	}
	if st.Abort != nil {
		n = max(n, st.Abort.ApprovalSequence)
	}
	return n + 1
}

// Check says why the items of cfg may not be written, if they may
// not: there is no approval, the spec changed since it was given, or the
// items are not the ones it approved. The controller asks before every
// write, so nothing reaches a target that nobody approved.
func Check(cfg *v1alpha1.VirtPlatformConfig) error {
	a := cfg.Status.Approval
	if a == nil || a.ItemsHash == "" {
		return fmt.Errorf("no approval of these items is recorded")
	}
	if a.UID != "" && a.UID != cfg.UID {
		return fmt.Errorf("plan %s was approved by %s for another object of this name (UID %s; this one is %s): it was deleted and created again since",
			v1alpha1.ShortHash(a.PlanHash), a.ApprovedBy, a.UID, cfg.UID)
	}
	if a.Generation != cfg.Generation {
		return fmt.Errorf("the spec changed after plan %s was approved by %s (generation %d was approved, it is now %d)",
			v1alpha1.ShortHash(a.PlanHash), a.ApprovedBy, a.Generation, cfg.Generation)
	}
	if err := checkDelegated(a, cfg.Spec.DelegatedApproval); err != nil {
		return err
	}
	got, err := plan.ItemsHash(cfg.Status.Items)
	if err != nil {
		return fmt.Errorf("the items cannot be read: %v", err)
	}
	if got != a.ItemsHash {
		return fmt.Errorf("status.items are not the items of plan %s approved by %s (their hash is %s, the approval is for %s)",
			v1alpha1.ShortHash(a.PlanHash), a.ApprovedBy, v1alpha1.ShortHash(got), v1alpha1.ShortHash(a.ItemsHash))
	}
	return nil
}

// checkDelegated says why a fleet's approval a no longer holds, if it
// does not: spec.delegatedApproval, which made it, was withdrawn,
// replaced or aborted since.
func checkDelegated(a *v1alpha1.ApprovalRecord, d *v1alpha1.DelegatedApproval) error {
	if a.Delegated == nil {
		return nil
	}
	switch {
	case d == nil || d.Fleet != a.Delegated.Fleet || d.FleetHash != a.Delegated.FleetHash || !d.ApprovedAt.Equal(&a.Delegated.ApprovedAt):
		return fmt.Errorf("plan %s was approved by fleet %s, whose approval spec.delegatedApproval no longer holds: the hub withdrew or replaced it",
			v1alpha1.ShortHash(a.PlanHash), a.Delegated.Fleet)
	case d.AbortedBy != "":
		return fmt.Errorf("the rollout of fleet %s was aborted by %s on the hub", a.Delegated.Fleet, d.AbortedBy)
	}
	return nil
}
