package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// DelegatedApproval is a fleet's approval of this cluster's plan, made on
// the fleet's hub (POST .../fleetconfigs/NAME/approve) and delivered by
// Open Cluster Management's work agent. Only an identity allowed `create
// virtplatformconfigs/delegatedapproval` may set or change it (the shipped
// role grants it to the work agent's ServiceAccount only). It approves
// the live plan only when the plan hash it names for this cluster (the
// server's --cluster-name) is the live plan's, and only once.
type DelegatedApproval struct {
	// fleet is the FleetConfig on the hub that approved, as namespace/name.
	Fleet string `json:"fleet"`
	// fleetHash is the fleet plan revision the hub user approved.
	FleetHash string `json:"fleetHash"`
	// approvedBy is the hub user who approved the fleet plan.
	ApprovedBy string `json:"approvedBy"`
	// approvedAt is when the hub recorded the approval.
	ApprovedAt metav1.Time `json:"approvedAt"`
	// clusters are the plan hashes the fleet approval approved, one per
	// managed cluster.
	// +listType=map
	// +listMapKey=name
	Clusters []ClusterPlanHash `json:"clusters"`
	// abortedBy, when set, is the hub user who aborted the fleet's
	// rollout: a plan this approval approved is aborted, and one it did
	// not start yet never starts.
	// +optional
	AbortedBy string `json:"abortedBy,omitempty"`
}

// ClusterPlanHash is the plan a fleet approval approved on one cluster.
type ClusterPlanHash struct {
	// name is the managed cluster's name on the hub.
	Name string `json:"name"`
	// planHash is the plan that cluster showed the fleet's review.
	PlanHash string `json:"planHash"`
}

// DelegatedApprovalRef says which fleet approval approved a plan.
type DelegatedApprovalRef struct {
	// fleet is the FleetConfig on the hub, as namespace/name.
	Fleet string `json:"fleet"`
	// fleetHash is the fleet plan revision approved.
	FleetHash string `json:"fleetHash"`
	// approvedAt is when the hub recorded the approval.
	ApprovedAt metav1.Time `json:"approvedAt"`
}

// PlanSummary is the live plan in a few fields, for a fleet's review:
// the hub reads it through the work agent's status feedback.
type PlanSummary struct {
	// planHash is the live plan's hash: what an approval approves.
	PlanHash string `json:"planHash"`
	// specHash is the SHA-256 (lowercase hex) of the spec the plan was
	// drafted for, spec.delegatedApproval left out: the hub counts a
	// summary only for the spec it sent.
	SpecHash string `json:"specHash"`
	// items are the plan's items.
	// +optional
	// +listType=atomic
	Items []PlanSummaryItem `json:"items,omitempty"`
	// nodeReboots is how many nodes the plan drains or reboots.
	// +optional
	NodeReboots int64 `json:"nodeReboots,omitempty"`
	// liveMigrations is how many VMs live-migrate off those nodes.
	// +optional
	LiveMigrations int64 `json:"liveMigrations,omitempty"`
	// shutDownVMs is how many VMs the drains shut down.
	// +optional
	ShutDownVMs int64 `json:"shutDownVMs,omitempty"`
	// drainBlockingVMs is how many VMs would block a drain.
	// +optional
	DrainBlockingVMs int64 `json:"drainBlockingVMs,omitempty"`
	// capacity is the capacity verdict of each pool that drains, joined.
	// +optional
	Capacity string `json:"capacity,omitempty"`
}

// PlanSummaryItem is one item of a PlanSummary.
type PlanSummaryItem struct {
	// name is the item's name.
	Name string `json:"name"`
	// target is the item's target as Kind/name.
	Target string `json:"target"`
	// operation is what writing it does.
	// +optional
	Operation Operation `json:"operation,omitempty"`
}
