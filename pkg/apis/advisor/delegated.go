package advisor

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// DelegatedApproval is a fleet's approval of this cluster's plan, made on
// the fleet's hub and delivered by Open Cluster Management's work agent.
type DelegatedApproval struct {
	Fleet      string
	FleetHash  string
	ApprovedBy string
	ApprovedAt metav1.Time
	Clusters   []ClusterPlanHash
	AbortedBy  string
}

// ClusterPlanHash is the plan a fleet approval approved on one cluster.
type ClusterPlanHash struct {
	Name     string
	PlanHash string
}

// DelegatedApprovalRef says which fleet approval approved a plan.
type DelegatedApprovalRef struct {
	Fleet      string
	FleetHash  string
	ApprovedAt metav1.Time
}

// PlanSummary is the live plan in a few fields, for a fleet's review.
type PlanSummary struct {
	PlanHash         string
	SpecHash         string
	Items            []PlanSummaryItem
	NodeReboots      int64
	LiveMigrations   int64
	ShutDownVMs      int64
	DrainBlockingVMs int64
	Capacity         string
}

// PlanSummaryItem is one item of a PlanSummary.
type PlanSummaryItem struct {
	Name      string
	Target    string
	Operation Operation
}
