package fleet

import (
	"fmt"
	"sort"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubevirt/virt-advisor/pkg/apis/advisor/v1alpha1"
)

// Decision is a cluster the fleet's Placement selected, in its decision
// group: the wave it rolls out in.
type Decision struct {
	Cluster    string
	Group      string
	GroupIndex int32
}

// Report is what a cluster's ManifestWork says of its VirtPlatformConfig.
type Report struct {
	// Phase and Message are its config's phase and what it says.
	Phase, Message string
	// Plan is its config's status.plan, nil when not reported.
	Plan *v1alpha1.PlanSummary
	// Rollout is OCM's view of the cluster: ToApply, Progressing,
	// Succeeded or Failed (see RolloutOf).
	Rollout string
	// Approved is the fleet hash of the approval its ManifestWork
	// carries, "" for none.
	Approved string
}

// Compute is the fleet plan of fc: each placed cluster's plan as the
// cluster drafted it for specHash (the hash of the spec the hub sends,
// SpecHash), in waves, and the fleet hash that binds them. A cluster
// whose plan is not in yet, or is of another spec, is pending, and a
// fleet plan with a pending cluster has no hash: it cannot be approved.
func Compute(fc *v1alpha1.FleetConfig, specHash string, decisions []Decision, reports map[string]Report) (v1alpha1.FleetPlanStatus, error) {
	out := v1alpha1.FleetPlanStatus{Profile: fc.Spec.Profile, Generation: fc.Generation, RolloutStrategy: fc.Spec.RolloutStrategy}
	approved := map[string]string{}
	if a := fc.Status.Approval; a != nil {
		for _, c := range a.Clusters {
			approved[c.Name] = c.PlanHash
		}
	}
	sorted := append([]Decision(nil), decisions...)
	sort.Slice(sorted, func(i, j int) bool {
		if sorted[i].GroupIndex != sorted[j].GroupIndex {
			return sorted[i].GroupIndex < sorted[j].GroupIndex
		}
		return sorted[i].Cluster < sorted[j].Cluster
	})
	if len(sorted) == 0 {
		out.Pending = append(out.Pending, fmt.Sprintf("Placement %s/%s selects no cluster yet", fc.Namespace, fc.Spec.PlacementRef.Name))
	}
	for _, d := range sorted {
		c := v1alpha1.FleetPlanCluster{Name: d.Cluster, Group: d.Group, GroupIndex: d.GroupIndex, ApprovedPlanHash: approved[d.Cluster]}
		r, ok := reports[d.Cluster]
		switch {
		case !ok:
			out.Pending = append(out.Pending, fmt.Sprintf("%s: its ManifestWork is not created yet", d.Cluster))
		case r.Plan == nil:
			c.Phase, c.Message = r.Phase, r.Message
			out.Pending = append(out.Pending, fmt.Sprintf("%s: no plan reported yet (phase %q)", d.Cluster, r.Phase))
		case r.Plan.SpecHash != specHash:
			c.Phase, c.Message = r.Phase, r.Message
			out.Pending = append(out.Pending, fmt.Sprintf("%s: its plan is of an earlier spec; waiting for the plan of this one", d.Cluster))
		default:
			c.Phase, c.Message, c.Plan = r.Phase, r.Message, r.Plan
		}
		out.Clusters = append(out.Clusters, c)
	}
	if len(out.Pending) > 0 {
		return out, nil
	}
	h, err := Hash(fc.UID, fc.Generation, fc.Spec.RolloutStrategy, out.Clusters)
	out.FleetHash = h
	return out, err
}

// Hash is the fleet hash: what approving a fleet plan approves. It binds
// the FleetConfig (its UID and generation: the spec the clusters planned
// for), the rollout strategy, and every cluster with its wave and its
// own plan hash; a cluster added, moved to another wave or whose plan
// changed makes another fleet plan.
func Hash(uid types.UID, generation int64, strategy v1alpha1.RolloutStrategy, clusters []v1alpha1.FleetPlanCluster) (string, error) {
	type hashed struct {
		Name, Group string
		GroupIndex  int32
		PlanHash    string
	}
	var cs []hashed
	for _, c := range clusters {
		h := hashed{Name: c.Name, Group: c.Group, GroupIndex: c.GroupIndex}
		if c.Plan != nil {
			h.PlanHash = c.Plan.PlanHash
		}
		cs = append(cs, h)
	}
	return hashJSON(map[string]any{"uid": uid, "generation": generation, "strategy": strategy, "clusters": cs})
}

// Approved are the (cluster, plan hash) pairs a fleet plan's approval
// approves.
func Approved(p *v1alpha1.FleetPlanStatus) []v1alpha1.ClusterPlanHash {
	out := make([]v1alpha1.ClusterPlanHash, 0, len(p.Clusters))
	for _, c := range p.Clusters {
		if c.Plan != nil {
			out = append(out, v1alpha1.ClusterPlanHash{Name: c.Name, PlanHash: c.Plan.PlanHash})
		}
	}
	return out
}

// SpokeConfig is the VirtPlatformConfig the hub sends every cluster of
// fc: the profile and its options, and, once approved, the delegated
// approval. defaults fills in the defaults as the cluster's server will,
// so that what the hub hashes is what the cluster stores.
func SpokeConfig(fc *v1alpha1.FleetConfig, defaults func(*v1alpha1.VirtPlatformConfig)) *v1alpha1.VirtPlatformConfig {
	cfg := &v1alpha1.VirtPlatformConfig{
		TypeMeta:   metav1.TypeMeta{APIVersion: v1alpha1.SchemeGroupVersion.String(), Kind: "VirtPlatformConfig"},
		ObjectMeta: metav1.ObjectMeta{Name: fc.Spec.Profile},
		Spec:       v1alpha1.VirtPlatformConfigSpec{Profile: fc.Spec.Profile, Action: v1alpha1.PlanActionDryRun, Options: fc.Spec.Options.DeepCopy()},
	}
	if defaults != nil {
		defaults(cfg)
	}
	if a := fc.Status.Approval; IsApproved(fc) {
		d := &v1alpha1.DelegatedApproval{Fleet: fc.Namespace + "/" + fc.Name, FleetHash: a.FleetHash, ApprovedBy: a.ApprovedBy,
			ApprovedAt: a.ApprovedAt, Clusters: a.Clusters}
		if ab := fc.Status.Abort; ab != nil {
			d.AbortedBy = ab.AbortedBy
		}
		cfg.Spec.DelegatedApproval = d
	}
	return cfg
}
