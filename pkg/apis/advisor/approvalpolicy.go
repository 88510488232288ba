package advisor

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// RebootBound says which node reboots a plan approved by a policy may cause.
type RebootBound string

const (
	// RebootBoundNone: no pool is drained or rebooted.
	RebootBoundNone RebootBound = "None"
	// RebootBoundInWindow: every pool drained or rebooted is governed by an
	// Allow maintenance window, so its writes wait for that window.
	RebootBoundInWindow RebootBound = "InWindow"
)

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// ApprovalPolicy is a standing approval by a person, bounded: the plans of
// the configs it covers that stay within its bounds are approved without
// a review.
type ApprovalPolicy struct {
	metav1.TypeMeta
	metav1.ObjectMeta

	Spec ApprovalPolicySpec
	// Status: Author is stored (the user who last changed the spec); the
	// rest is computed on every read.
	Status ApprovalPolicyStatus
}

// ApprovalPolicySpec is what a policy covers and what it approves.
type ApprovalPolicySpec struct {
	Configs PolicyConfigs
	Bounds  PolicyBounds
	// TrustedWindows are the MaintenanceWindows whose Allow windows count
	// for reboots: InWindow; no other window widens or narrows the policy.
	TrustedWindows *PolicyWindows
	// Windows are MaintenanceWindow names: the policy approves only while
	// one of them is open; none: at any time.
	Windows []string
	// Description is for people.
	Description string
}

// PolicyConfigs selects the VirtPlatformConfigs a policy covers.
type PolicyConfigs struct {
	Names    []string
	Selector *metav1.LabelSelector
}

// PolicyWindows selects the MaintenanceWindows a policy trusts.
type PolicyWindows struct {
	Names    []string
	Selector *metav1.LabelSelector
}

// PolicyBounds are what a plan may do to be approved by a policy.
type PolicyBounds struct {
	MaxImpact Impact
	Reboots   RebootBound
	VMFates   []VMFate
	Items     []PolicyItem
	Gates     *PolicyGates
}

// PolicyGates are the least gates a policy's approval requires.
type PolicyGates struct {
	MaxNodeReadyTimeout string
	MinSoak             string
	MaxFailedMigrations *int32
	RequireAlerts       bool
}

// PolicyItem matches plan items by target kind and/or item name.
type PolicyItem struct {
	Kind string
	Name string
}

// ApprovalPolicyStatus is who set a policy and what it did.
type ApprovalPolicyStatus struct {
	Author string
	// AuthorGroups and AuthorExtra are the author's, from the same
	// request: the policy's approvals are reviewed as that user.
	AuthorGroups []string
	AuthorExtra  map[string][]string
	Configs      []string
	LastApproved *PolicyDecision
	LastRefused  *PolicyDecision
}

// PolicyDecision is one plan a policy approved or refused.
type PolicyDecision struct {
	Config   string
	PlanHash string
	At       *metav1.Time
	Message  string
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// ApprovalPolicyList is a list of ApprovalPolicies.
type ApprovalPolicyList struct {
	metav1.TypeMeta
	metav1.ListMeta

	Items []ApprovalPolicy
}
