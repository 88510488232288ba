package fleet

import (
	"fmt"
	"sort"
	"strings"

	"github.com/kubevirt/virt-advisor/pkg/apis/advisor/v1alpha1"
)

// Strategy is how fc's ManifestWorkReplicaSet rolls out now: All while
// the clusters draft their plans for the review, and after an abort (so
// that every cluster gets it at once); the FleetConfig's strategy once a
// fleet plan of this spec is approved. OCM rolls out every ManifestWork
// that differs from the template, so the approval goes out wave by wave.
func Strategy(fc *v1alpha1.FleetConfig) v1alpha1.RolloutStrategy {
	if IsApproved(fc) && fc.Status.Abort == nil {
		return fc.Spec.RolloutStrategy
	}
	return v1alpha1.RolloutStrategy{Type: v1alpha1.RolloutTypeAll}
}

// IsApproved is true when a fleet plan of fc's spec is approved.
func IsApproved(fc *v1alpha1.FleetConfig) bool {
	a := fc.Status.Approval
	return a != nil && a.Generation == fc.Generation
}

// Progress is fc's status as its clusters report it: its phase, what it
// says, and each cluster's progress in wave order. The phases approvals
// and aborts write (RollingOut, Aborted) stand until the clusters say
// more: Completed once every cluster applied the approved plan, Failed
// once one failed (its rollout stops there: OCM starts no later wave),
// naming it and why.
func Progress(fc *v1alpha1.FleetConfig, decisions []Decision, reports map[string]Report) (v1alpha1.FleetPhase, string, []v1alpha1.FleetClusterStatus) {
	clusters := clusterProgress(decisions, reports)
	if !IsApproved(fc) {
		return v1alpha1.FleetPhaseReviewRequired, fmt.Sprintf(
			"Each cluster drafts its plan: GET .../fleetconfigs/%s/plan, review it, and approve its fleetHash (POST .../fleetconfigs/%s/approve)", fc.Name, fc.Name), clusters
	}
	a := fc.Status.Approval
	for i := range clusters {
		// OCM's view of a cluster the approval has not reached is of the
		// review: its wave has not come yet.
		if reports[clusters[i].Name].Approved != a.FleetHash {
			clusters[i].Rollout = RolloutToApply
		}
	}
	if fc.Status.Abort != nil {
		return v1alpha1.FleetPhaseAborted, fc.Status.Message, clusters
	}
	var failed, done []string
	for _, d := range decisions {
		r, ok := reports[d.Cluster]
		switch {
		case !ok || r.Approved != a.FleetHash:
		case r.Rollout == RolloutFailed:
			failed = append(failed, describe(d.Cluster, r))
		case r.Phase == string(v1alpha1.PhaseCompleted) && r.Rollout == RolloutSucceeded:
			done = append(done, d.Cluster)
		}
	}
	switch {
	case len(failed) > 0:
		return v1alpha1.FleetPhaseFailed, fmt.Sprintf("Fleet plan %s: %d of %d clusters failed, and no later wave starts: %s",
			v1alpha1.ShortHash(a.FleetHash), len(failed), len(decisions), strings.Join(failed, "; ")), clusters
	case len(decisions) > 0 && len(done) == len(decisions):
		return v1alpha1.FleetPhaseCompleted, fmt.Sprintf("Fleet plan %s approved by %s is applied on every cluster (%d)",
			v1alpha1.ShortHash(a.FleetHash), a.ApprovedBy, len(done)), clusters
	}
	return v1alpha1.FleetPhaseRollingOut, fmt.Sprintf("Fleet plan %s approved by %s: %d of %d clusters completed",
		v1alpha1.ShortHash(a.FleetHash), a.ApprovedBy, len(done), len(decisions)), clusters
}

// clusterProgress is each cluster's progress, in wave order (decisions
// are sorted in place).
func clusterProgress(decisions []Decision, reports map[string]Report) []v1alpha1.FleetClusterStatus {
	sort.Slice(decisions, func(i, j int) bool {
		if decisions[i].GroupIndex != decisions[j].GroupIndex {
			return decisions[i].GroupIndex < decisions[j].GroupIndex
		}
		return decisions[i].Cluster < decisions[j].Cluster
	})
	clusters := make([]v1alpha1.FleetClusterStatus, 0, len(decisions))
	for _, d := range decisions {
		r := reports[d.Cluster]
		clusters = append(clusters, v1alpha1.FleetClusterStatus{Name: d.Cluster, Group: d.Group, GroupIndex: d.GroupIndex, Phase: r.Phase, Message: r.Message, Rollout: r.Rollout})
	}
	return clusters
}
