package controller

import (
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubevirt/virt-advisor/pkg/apis/advisor/v1alpha1"
	"github.com/kubevirt/virt-advisor/pkg/approval"
	"github.com/kubevirt/virt-advisor/pkg/fleet"
	"github.com/kubevirt/virt-advisor/pkg/plan"
	"github.com/kubevirt/virt-advisor/pkg/status"
)

// delegated decides what spec.delegatedApproval, a fleet's approval,
// does to the plan res of cfg, which has changes: it approves res when
// it names res's hash for this cluster and was neither used nor aborted;
// otherwise the config waits for a review, saying why (fleet.Decide).
func (ap *approvals) delegated(cfg *v1alpha1.VirtPlatformConfig, res *plan.Result, now metav1.Time) error {
	st := &cfg.Status
	d := cfg.Spec.DelegatedApproval
	v := fleet.Decide(d, ap.clusterName, res.Status.PlanHash, st.Approval)
	if v.Approve {
		return approval.Record(st, res, fleet.Record(d, cfg, res.Status.PlanHash, now))
	}
	st.Items = keepTransitionTimes(st.Items, res.StatusItems(now))
	status.SetPhase(st, v1alpha1.PhaseReviewRequired, v.Reason, withHoldNote(cfg, v.Message))
	return nil
}

// abortedByFleet aborts, as the abort subresource does, the approved
// plan of cfg being applied when the fleet approval that approved it was
// aborted on the hub; it returns whether it did. The controller pauses
// the pools of the aborted plan once it sees the abort, as it does after
// POST .../abort.
func abortedByFleet(cfg *v1alpha1.VirtPlatformConfig, now metav1.Time) bool {
	d, st := cfg.Spec.DelegatedApproval, &cfg.Status
	if d == nil || d.AbortedBy == "" || st.Phase != v1alpha1.PhaseInProgress || !fleet.Used(d, st.Approval) {
		return false
	}
	_, err := approval.Abort(cfg, "", fmt.Sprintf("%s (on the hub, fleet %s)", d.AbortedBy, d.Fleet), now)
	return err == nil
}
