package advisor

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// FleetConfig selects a tuning profile for every cluster an Open Cluster
// Management Placement selects, reviewed and approved once on the hub
// and rolled out by OCM's rollout strategy. Served by a server started
// with --fleet-hub; it lives in the namespace of its Placement.
type FleetConfig struct {
	metav1.TypeMeta
	metav1.ObjectMeta

	// spec is the profile, its options, the clusters and how to roll out.
	Spec FleetConfigSpec
	// status is written by the hub's controller and by approvals.
	Status FleetConfigStatus
}

// FleetConfigSpec is the desired state of a FleetConfig.
type FleetConfigSpec struct {
	// profile is the tuning profile each cluster's VirtPlatformConfig
	// selects; immutable.
	Profile string
	// options tune the profile, as in VirtPlatformConfig.spec.options.
	Options *ProfileOptions
	// placementRef names the Placement, in this namespace, whose
	// decisions are the fleet's clusters and whose decision groups are
	// its waves.
	PlacementRef FleetPlacementRef
	// rolloutStrategy is Open Cluster Management's rollout strategy,
	// verbatim: how the approved plan reaches the clusters, wave by
	// wave. Default: All.
	RolloutStrategy RolloutStrategy
}

// FleetPlacementRef names a Placement in the FleetConfig's namespace.
type FleetPlacementRef struct {
	// name is the Placement's name.
	Name string
}

// RolloutType is how a rollout reaches the clusters.
type RolloutType string

const (
	RolloutTypeAll                 RolloutType = "All"
	RolloutTypeProgressive         RolloutType = "Progressive"
	RolloutTypeProgressivePerGroup RolloutType = "ProgressivePerGroup"
)

// RolloutStrategy is cluster.open-cluster-management.io/v1alpha1's
// RolloutStrategy, field for field.
type RolloutStrategy struct {
	// type is All, Progressive or ProgressivePerGroup.
	Type RolloutType
	// all tunes type All.
	All *RolloutAll
	// progressive tunes type Progressive.
	Progressive *RolloutProgressive
	// progressivePerGroup tunes type ProgressivePerGroup.
	ProgressivePerGroup *RolloutProgressivePerGroup
}

// RolloutConfig is what every rollout type takes.
type RolloutConfig struct {
	// minSuccessTime is how long a cluster must have succeeded before
	// the rollout goes on.
	MinSuccessTime metav1.Duration
	// progressDeadline is how long a cluster may take, e.g. "4h", or
	// "None".
	ProgressDeadline string
	// maxFailures is how many clusters may fail, a number or a
	// percentage, before the rollout stops. Default 0.
	MaxFailures intstr.IntOrString
}

// MandatoryDecisionGroup is a decision group rolled out first.
type MandatoryDecisionGroup struct {
	// groupName is the decision group's name.
	GroupName string
	// groupIndex is the decision group's index.
	GroupIndex int32
}

// MandatoryDecisionGroups are rolled out first, and must all succeed.
type MandatoryDecisionGroups struct {
	// mandatoryDecisionGroups are rolled out first, in this order.
	MandatoryDecisionGroups []MandatoryDecisionGroup
}

// RolloutAll tunes type All.
type RolloutAll struct {
	RolloutConfig
}

// RolloutProgressivePerGroup tunes type ProgressivePerGroup.
type RolloutProgressivePerGroup struct {
	RolloutConfig
	MandatoryDecisionGroups
}

// RolloutProgressive tunes type Progressive.
type RolloutProgressive struct {
	RolloutConfig
	MandatoryDecisionGroups
	// maxConcurrency is how many clusters roll out at once.
	MaxConcurrency intstr.IntOrString
}

// FleetPhase is the lifecycle phase of a FleetConfig.
type FleetPhase string

const (
	// FleetPhaseReviewRequired: each cluster drafts its plan; the fleet
	// plan waits for an approval.
	FleetPhaseReviewRequired FleetPhase = "ReviewRequired"
	// FleetPhaseRollingOut: the approved fleet plan goes out wave by wave.
	FleetPhaseRollingOut FleetPhase = "RollingOut"
	// FleetPhaseCompleted: every cluster applied its approved plan.
	FleetPhaseCompleted FleetPhase = "Completed"
	// FleetPhaseFailed: a cluster failed, and the rollout stopped.
	FleetPhaseFailed FleetPhase = "Failed"
	// FleetPhaseAborted: a person stopped the rollout.
	FleetPhaseAborted FleetPhase = "Aborted"
)

// FleetConfigStatus is the observed state of a FleetConfig.
type FleetConfigStatus struct {
	// phase is the lifecycle phase.
	Phase FleetPhase
	// message says why, and what to do.
	Message string
	// observedGeneration is the spec generation the status describes.
	ObservedGeneration int64
	// approval is the last approval of a fleet plan.
	Approval *FleetApprovalRecord
	// abort records who aborted the rollout, and when.
	Abort *FleetAbortRecord
	// clusters are each cluster's progress, as its ManifestWork reports it.
	Clusters []FleetClusterStatus
}

// FleetApprovalRecord is the approval of a fleet plan.
type FleetApprovalRecord struct {
	// fleetHash is the fleet plan revision approved.
	FleetHash string
	// approvedBy is the hub user who approved.
	ApprovedBy string
	// approvedAt is when.
	ApprovedAt metav1.Time
	// generation is the spec generation approved.
	Generation int64
	// clusters are the plan hashes approved, per cluster.
	Clusters []ClusterPlanHash
}

// FleetAbortRecord is the abort of a fleet rollout.
type FleetAbortRecord struct {
	// abortedBy is the hub user who aborted.
	AbortedBy string
	// abortedAt is when.
	AbortedAt metav1.Time
}

// FleetClusterStatus is one cluster's progress.
type FleetClusterStatus struct {
	// name is the managed cluster.
	Name string
	// group is its decision group (wave).
	Group string
	// groupIndex is its decision group's index: the wave.
	GroupIndex int32
	// phase is its VirtPlatformConfig's phase, as last reported.
	Phase string
	// message is that phase's message, as last reported.
	Message string
	// rollout is OCM's view: ToApply (not reached yet), Progressing,
	// Succeeded or Failed.
	Rollout string
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// FleetConfigList is a list of FleetConfigs.
type FleetConfigList struct {
	metav1.TypeMeta
	metav1.ListMeta

	Items []FleetConfig
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// FleetPlan is the live plan of a fleet (GET .../fleetconfigs/NAME/plan):
// each cluster's plan as the cluster itself drafted it.
type FleetPlan struct {
	metav1.TypeMeta
	metav1.ObjectMeta

	// status is the computed fleet plan.
	Status FleetPlanStatus
}

// FleetPlanStatus is a computed fleet plan.
type FleetPlanStatus struct {
	// profile is the profile.
	Profile string
	// generation is the FleetConfig generation the plan is for.
	Generation int64
	// fleetHash binds every cluster's plan hash, its wave, and the
	// rollout strategy; approve exactly this value. Empty while a
	// cluster has not reported a plan for this spec.
	FleetHash string
	// rolloutStrategy is the strategy the approval rolls out by.
	RolloutStrategy RolloutStrategy
	// clusters are the placed clusters, by wave then name.
	Clusters []FleetPlanCluster
	// pending says which clusters have no plan for this spec yet, and why.
	Pending []string
}

// FleetPlanCluster is one cluster's plan.
type FleetPlanCluster struct {
	// name is the managed cluster.
	Name string
	// group is its decision group's name, "" for none.
	Group string
	// groupIndex is its decision group's index: the wave.
	GroupIndex int32
	// phase is its VirtPlatformConfig's phase.
	Phase string
	// message is that phase's message.
	Message string
	// plan is the plan the cluster drafted; absent until it reports one
	// for this spec.
	Plan *PlanSummary
	// approvedPlanHash is the plan hash the fleet's approval approved for
	// it, when one did; a different plan.planHash is a mismatch: the
	// cluster writes nothing.
	ApprovedPlanHash string
}
