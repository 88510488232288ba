package fleet

import (
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubevirt/virt-advisor/pkg/apis/advisor/v1alpha1"
)

// Reasons of a delegated approval that approves nothing: the config
// stays ReviewRequired with one of them, and the fleet's conditionRules
// read them (a mismatch degrades the cluster's rollout).
const (
	ReasonMismatch     = "DelegatedApprovalMismatch"
	ReasonUsed         = "DelegatedApprovalUsed"
	ReasonFleetAborted = "FleetAborted"
	ReasonNoCluster    = "ClusterNameUnset"
)

// Verdict is what a delegated approval does to a cluster's live plan.
type Verdict struct {
	// Approve: the approval approves the live plan.
	Approve bool
	// Reason and Message say why it does not.
	Reason, Message string
}

// Decide says whether d approves the live plan livePlanHash of the
// cluster named cluster, the config's last approval being last: only
// when d names exactly that hash for that cluster, was not aborted, and
// was not used before (once used, an abort or a changed plan is never
// approved again by it).
func Decide(d *v1alpha1.DelegatedApproval, cluster, livePlanHash string, last *v1alpha1.ApprovalRecord) Verdict {
	from := fmt.Sprintf("fleet %s (fleet plan %s, approved by %s on the hub)", d.Fleet, v1alpha1.ShortHash(d.FleetHash), d.ApprovedBy)
	switch {
	case d.AbortedBy != "":
		return Verdict{Reason: ReasonFleetAborted, Message: fmt.Sprintf(
			"The rollout of %s was aborted by %s: its approval approves nothing more here. Review this plan and approve it here, or approve a new fleet plan on the hub", from, d.AbortedBy)}
	case Used(d, last):
		return Verdict{Reason: ReasonUsed, Message: fmt.Sprintf(
			"The approval of %s was used already (plan %s): it approves no other plan. Review this plan and approve it here, or approve a new fleet plan on the hub", from, v1alpha1.ShortHash(last.PlanHash))}
	case cluster == "":
		return Verdict{Reason: ReasonNoCluster, Message: fmt.Sprintf(
			"This server was started without --cluster-name, so it cannot tell which of the plan hashes approved by %s is its own: nothing is written. Restart it with --cluster-name set to this cluster's name on the hub", from)}
	}
	for _, c := range d.Clusters {
		if c.Name != cluster {
			continue
		}
		if c.PlanHash != livePlanHash {
			return Verdict{Reason: ReasonMismatch, Message: fmt.Sprintf(
				"%s approved plan %s for cluster %s, but the live plan is now %s: the targets or the spec changed since the fleet's review, so nothing is written. Review the fleet plan again on the hub and approve it",
				from, v1alpha1.ShortHash(c.PlanHash), cluster, v1alpha1.ShortHash(livePlanHash))}
		}
		return Verdict{Approve: true}
	}
	return Verdict{Reason: ReasonMismatch, Message: fmt.Sprintf(
		"%s approved no plan for cluster %s (it approved %d clusters' plans): nothing is written. Check that this server's --cluster-name is this cluster's name on the hub", from, cluster, len(d.Clusters))}
}

// Used is true when last is the approval d made.
func Used(d *v1alpha1.DelegatedApproval, last *v1alpha1.ApprovalRecord) bool {
	return last != nil && last.Delegated != nil && last.Delegated.Fleet == d.Fleet &&
		last.Delegated.FleetHash == d.FleetHash && last.Delegated.ApprovedAt.Equal(&d.ApprovedAt)
}

// Record is the approval record of the live plan planHash d approves.
func Record(d *v1alpha1.DelegatedApproval, cfg *v1alpha1.VirtPlatformConfig, planHash string, now metav1.Time) v1alpha1.ApprovalRecord {
	return v1alpha1.ApprovalRecord{PlanHash: planHash, ApprovedBy: ApprovedBy(d), ApprovedAt: now, Generation: cfg.Generation, UID: cfg.UID,
		Delegated: &v1alpha1.DelegatedApprovalRef{Fleet: d.Fleet, FleetHash: d.FleetHash, ApprovedAt: d.ApprovedAt}}
}

// ApprovedBy names the hub user of d as a cluster's records name its
// approver: never to be mistaken for a user of the cluster.
func ApprovedBy(d *v1alpha1.DelegatedApproval) string {
	return fmt.Sprintf("%s (on the hub, fleet %s)", d.ApprovedBy, d.Fleet)
}
