package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// +genclient
// +genclient:method=GetPlan,verb=get,subresource=plan,result=github.com/kubevirt/virt-advisor/pkg/apis/advisor/v1alpha1.FleetPlan
// +genclient:method=Approve,verb=create,subresource=approve,input=github.com/kubevirt/virt-advisor/pkg/apis/advisor/v1alpha1.Approval,result=github.com/kubevirt/virt-advisor/pkg/apis/advisor/v1alpha1.Approval
// +genclient:method=Abort,verb=create,subresource=abort,input=github.com/kubevirt/virt-advisor/pkg/apis/advisor/v1alpha1.Abort,result=github.com/kubevirt/virt-advisor/pkg/apis/advisor/v1alpha1.Abort
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// FleetConfig selects a tuning profile for every cluster an Open Cluster
// Management Placement selects, reviewed and approved once on the hub
// and rolled out by OCM's rollout strategy. Served by a server started
// with --fleet-hub; it lives in the namespace of its Placement.
type FleetConfig struct {
	metav1.TypeMeta `json:",inline"`
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec is the profile, its options, the clusters and how to roll out.
	Spec FleetConfigSpec `json:"spec"`
	// status is written by the hub's controller and by approvals.
	// +optional
	Status FleetConfigStatus `json:"status,omitempty"`
}

// FleetConfigSpec is the desired state of a FleetConfig.
type FleetConfigSpec struct {
	// profile is the tuning profile each cluster's VirtPlatformConfig
	// selects; immutable.
	Profile string `json:"profile"`
	// options tune the profile, as in VirtPlatformConfig.spec.options.
	// +optional
	Options *ProfileOptions `json:"options,omitempty"`
	// placementRef names the Placement, in this namespace, whose
	// decisions are the fleet's clusters and whose decision groups are
	// its waves.
	PlacementRef FleetPlacementRef `json:"placementRef"`
	// rolloutStrategy is Open Cluster Management's rollout strategy,
	// verbatim: how the approved plan reaches the clusters, wave by
	// wave. Default: All.
	// +optional
	RolloutStrategy RolloutStrategy `json:"rolloutStrategy,omitempty"`
}

// FleetPlacementRef names a Placement in the FleetConfig's namespace.
type FleetPlacementRef struct {
	// name is the Placement's name.
	Name string `json:"name"`
}

// RolloutType is how a rollout reaches the clusters.
// +enum
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
	// +optional
	Type RolloutType `json:"type,omitempty"`
	// all tunes type All.
	// +optional
	All *RolloutAll `json:"all,omitempty"`
	// progressive tunes type Progressive.
	// +optional
	Progressive *RolloutProgressive `json:"progressive,omitempty"`
	// progressivePerGroup tunes type ProgressivePerGroup.
	// +optional
	ProgressivePerGroup *RolloutProgressivePerGroup `json:"progressivePerGroup,omitempty"`
}

// RolloutConfig is what every rollout type takes.
type RolloutConfig struct {
	// minSuccessTime is how long a cluster must have succeeded before
	// the rollout goes on.
	// +optional
	MinSuccessTime metav1.Duration `json:"minSuccessTime,omitempty"`
	// progressDeadline is how long a cluster may take, e.g. "4h", or
	// "None".
	// +optional
	ProgressDeadline string `json:"progressDeadline,omitempty"`
	// maxFailures is how many clusters may fail, a number or a
	// percentage, before the rollout stops. Default 0.
	// +optional
	MaxFailures intstr.IntOrString `json:"maxFailures,omitempty"`
}

// MandatoryDecisionGroup is a decision group rolled out first.
type MandatoryDecisionGroup struct {
	// groupName is the decision group's name.
	// +optional
	GroupName string `json:"groupName,omitempty"`
	// groupIndex is the decision group's index.
	// +optional
	GroupIndex int32 `json:"groupIndex,omitempty"`
}

// MandatoryDecisionGroups are rolled out first, and must all succeed.
type MandatoryDecisionGroups struct {
	// mandatoryDecisionGroups are rolled out first, in this order.
	// +optional
	// +listType=atomic
	MandatoryDecisionGroups []MandatoryDecisionGroup `json:"mandatoryDecisionGroups,omitempty"`
}

// RolloutAll tunes type All.
type RolloutAll struct {
	RolloutConfig `json:",inline"`
}

// RolloutProgressivePerGroup tunes type ProgressivePerGroup.
type RolloutProgressivePerGroup struct {
	RolloutConfig           `json:",inline"`
	MandatoryDecisionGroups `json:",inline"`
}

// RolloutProgressive tunes type Progressive.
type RolloutProgressive struct {
	RolloutConfig           `json:",inline"`
	MandatoryDecisionGroups `json:",inline"`
	// maxConcurrency is how many clusters roll out at once.
	// +optional
	MaxConcurrency intstr.IntOrString `json:"maxConcurrency,omitempty"`
}

// FleetPhase is the lifecycle phase of a FleetConfig.
// +enum
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
	// +optional
	Phase FleetPhase `json:"phase,omitempty"`
	// message says why, and what to do.
	// +optional
	Message string `json:"message,omitempty"`
	// observedGeneration is the spec generation the status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// approval is the last approval of a fleet plan.
	// +optional
	Approval *FleetApprovalRecord `json:"approval,omitempty"`
	// abort records who aborted the rollout, and when.
	// +optional
	Abort *FleetAbortRecord `json:"abort,omitempty"`
	// clusters are each cluster's progress, as its ManifestWork reports it.
	// +optional
	// +listType=map
	// +listMapKey=name
	Clusters []FleetClusterStatus `json:"clusters,omitempty"`
}

// FleetApprovalRecord is the approval of a fleet plan.
type FleetApprovalRecord struct {
	// fleetHash is the fleet plan revision approved.
	FleetHash string `json:"fleetHash"`
	// approvedBy is the hub user who approved.
	ApprovedBy string `json:"approvedBy"`
	// approvedAt is when.
	ApprovedAt metav1.Time `json:"approvedAt"`
	// generation is the spec generation approved.
	Generation int64 `json:"generation"`
	// clusters are the plan hashes approved, per cluster.
	// +listType=map
	// +listMapKey=name
	Clusters []ClusterPlanHash `json:"clusters"`
}

// FleetAbortRecord is the abort of a fleet rollout.
type FleetAbortRecord struct {
	// abortedBy is the hub user who aborted.
	AbortedBy string `json:"abortedBy"`
	// abortedAt is when.
	AbortedAt metav1.Time `json:"abortedAt"`
}

// FleetClusterStatus is one cluster's progress.
type FleetClusterStatus struct {
	// name is the managed cluster.
	Name string `json:"name"`
	// group is its decision group's name, "" for none.
	// +optional
	Group string `json:"group,omitempty"`
	// groupIndex is its decision group's index: the wave.
	GroupIndex int32 `json:"groupIndex"`
	// phase is its VirtPlatformConfig's phase, as last reported.
	// +optional
	Phase string `json:"phase,omitempty"`
	// message is that phase's message, as last reported.
	// +optional
	Message string `json:"message,omitempty"`
	// rollout is OCM's view: ToApply (not reached yet), Progressing,
	// Succeeded or Failed.
	// +optional
	Rollout string `json:"rollout,omitempty"`
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// FleetConfigList is a list of FleetConfigs.
type FleetConfigList struct {
	metav1.TypeMeta `json:",inline"`
	// +optional
	metav1.ListMeta `json:"metadata,omitempty"`

	Items []FleetConfig `json:"items"`
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// FleetPlan is the live plan of a fleet (GET .../fleetconfigs/NAME/plan):
// each cluster's plan as the cluster itself drafted it.
type FleetPlan struct {
	metav1.TypeMeta `json:",inline"`
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// status is the computed fleet plan.
	// +optional
	Status FleetPlanStatus `json:"status,omitempty"`
}

// FleetPlanStatus is a computed fleet plan.
type FleetPlanStatus struct {
	// profile is the profile.
	Profile string `json:"profile"`
	// generation is the FleetConfig generation the plan is for.
	Generation int64 `json:"generation"`
	// fleetHash binds every cluster's plan hash, its wave, and the
	// rollout strategy; approve exactly this value. Empty while a
	// cluster has not reported a plan for this spec.
	// +optional
	FleetHash string `json:"fleetHash,omitempty"`
	// rolloutStrategy is the strategy the approval rolls out by.
	RolloutStrategy RolloutStrategy `json:"rolloutStrategy"`
	// clusters are the placed clusters, by wave then name.
	// +optional
	// +listType=map
	// +listMapKey=name
	Clusters []FleetPlanCluster `json:"clusters,omitempty"`
	// pending says which clusters have no plan for this spec yet, and why.
	// +optional
	// +listType=atomic
	Pending []string `json:"pending,omitempty"`
}

// FleetPlanCluster is one cluster's plan.
type FleetPlanCluster struct {
	// name is the managed cluster.
	Name string `json:"name"`
	// group is its decision group's name, "" for none.
	// +optional
	Group string `json:"group,omitempty"`
	// groupIndex is its decision group's index: the wave.
	GroupIndex int32 `json:"groupIndex"`
	// phase is its VirtPlatformConfig's phase.
	// +optional
	Phase string `json:"phase,omitempty"`
	// message is that phase's message.
	// +optional
	Message string `json:"message,omitempty"`
	// plan is the plan the cluster drafted; absent until it reports one
	// for this spec.
	// +optional
	Plan *PlanSummary `json:"plan,omitempty"`
	// approvedPlanHash is the plan hash the fleet's approval approved for
	// it, when one did; a different plan.planHash is a mismatch: the
	// cluster writes nothing.
	// +optional
	ApprovedPlanHash string `json:"approvedPlanHash,omitempty"`
}
