package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// RebootBound says which node reboots a plan approved by a policy may cause.
// +enum
type RebootBound string

const (
	// RebootBoundNone: no pool is drained or rebooted.
	RebootBoundNone RebootBound = "None"
	// RebootBoundInWindow: every pool the plan drains or reboots is governed
	// by an Allow maintenance window, so its writes wait for that window.
	RebootBoundInWindow RebootBound = "InWindow"
)

// +genclient
// +genclient:nonNamespaced
// +genclient:noStatus
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// ApprovalPolicy is a standing approval by a person, bounded: a plan of a
// config it covers that stays within its bounds is approved by the policy,
// in the name of the user who last set its spec (status.author), and
// passes every check a human approval passes. A plan beyond the bounds
// waits in ReviewRequired for a person. Creating or changing a policy
// needs the approve permission on every config it covers.
type ApprovalPolicy struct {
	metav1.TypeMeta `json:",inline"`
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec says which configs the policy covers and which plans it approves.
	Spec ApprovalPolicySpec `json:"spec"`
	// status: author is set by the server from the request that last
	// changed the spec; the rest is computed on every read.
	// +optional
	Status ApprovalPolicyStatus `json:"status,omitempty"`
}

// ApprovalPolicySpec is what a policy covers and what it approves.
type ApprovalPolicySpec struct {
	// configs are the VirtPlatformConfigs the policy covers.
	Configs PolicyConfigs `json:"configs"`
	// bounds are what a plan may do to be approved by the policy.
	// +optional
	Bounds PolicyBounds `json:"bounds"`
	// trustedWindows are the MaintenanceWindows the policy trusts, by name
	// and/or label: with bounds.reboots InWindow (where it is required), a
	// pool is within the bound only when a trusted Allow window selects
	// it. Other windows neither widen nor narrow what the policy approves:
	// whoever may edit a trusted window decides when its pools reboot.
	// +optional
	TrustedWindows *PolicyWindows `json:"trustedWindows,omitempty"`
	// windows are names of MaintenanceWindows: the policy approves only
	// while one of them is open. Unset: at any time.
	// +optional
	// +listType=set
	Windows []string `json:"windows,omitempty"`
	// description says what the policy is for, for people.
	// +optional
	Description string `json:"description,omitempty"`
}

// PolicyConfigs selects the VirtPlatformConfigs a policy covers: those
// named and those the selector selects. At least one is required.
type PolicyConfigs struct {
	// names of VirtPlatformConfigs, e.g. [load-aware-rebalancing].
	// +optional
	// +listType=set
	Names []string `json:"names,omitempty"`
	// selector selects VirtPlatformConfigs by label. A policy with a
	// selector covers configs that do not exist yet: setting it needs the
	// approve permission on every config (no resourceNames).
	// +optional
	Selector *metav1.LabelSelector `json:"selector,omitempty"`
}

// PolicyWindows selects the MaintenanceWindows a policy trusts: those
// named and those the selector selects.
type PolicyWindows struct {
	// names of MaintenanceWindows, e.g. [nightly].
	// +optional
	// +listType=set
	Names []string `json:"names,omitempty"`
	// selector selects MaintenanceWindows by label: whoever may label a
	// window so is trusted too.
	// +optional
	Selector *metav1.LabelSelector `json:"selector,omitempty"`
}

// PolicyBounds are what a plan may do to be approved by a policy.
type PolicyBounds struct {
	// maxImpact is the highest impact the plan may have: Low (the
	// default), Medium or High.
	// +optional
	// +default="Low"
	MaxImpact Impact `json:"maxImpact,omitempty"`
	// reboots is None (the default: no pool drained or rebooted) or
	// InWindow (every pool drained or rebooted is governed by an Allow
	// MaintenanceWindow; its writes wait for the window).
	// +optional
	// +default="None"
	Reboots RebootBound `json:"reboots,omitempty"`
	// vmFates are what a drain may do to a VM: LiveMigrate (the default:
	// live migration only, which also means it fits elsewhere), ShutDown,
	// BlocksDrain. A VM the plan could not assess is never within bounds.
	// +optional
	// +listType=set
	VMFates []VMFate `json:"vmFates,omitempty"`
	// items are the plan items the policy may approve, by target kind
	// and/or item name; unset: any item. Unchanged items do not count.
	// +optional
	// +listType=atomic
	Items []PolicyItem `json:"items,omitempty"`
	// gates are the least the gates between the steps of a plan's pool
	// rollouts must hold for the policy to approve it (the plan's
	// status.settings.gates); unset: any gates. A plan that rolls no pool
	// has none to check.
	// +optional
	Gates *PolicyGates `json:"gates,omitempty"`
}

// PolicyGates are the least gates a policy's approval requires.
type PolicyGates struct {
	// maxNodeReadyTimeout: the plan's nodeReadyTimeout is at most this,
	// e.g. "20m".
	// +optional
	MaxNodeReadyTimeout string `json:"maxNodeReadyTimeout,omitempty"`
	// minSoak: the plan's soak is at least this, e.g. "5m".
	// +optional
	MinSoak string `json:"minSoak,omitempty"`
	// maxFailedMigrations: the plan halts after at most this many failed
	// migrations of a step.
	// +optional
	MaxFailedMigrations *int32 `json:"maxFailedMigrations,omitempty"`
	// requireAlerts: the plan has an alert gate the server can read, that
	// holds (onError: Hold) when the alerts cannot be read.
	// +optional
	RequireAlerts bool `json:"requireAlerts,omitempty"`
}

// PolicyItem matches plan items: by target kind, item name, or both.
type PolicyItem struct {
	// kind of the item's target, e.g. KubeDescheduler.
	// +optional
	Kind string `json:"kind,omitempty"`
	// name of the item, e.g. descheduler-profile.
	// +optional
	Name string `json:"name,omitempty"`
}

// ApprovalPolicyStatus is who set a policy and what it did.
type ApprovalPolicyStatus struct {
	// author is the user who last changed the spec (from the request, never
	// from the body): the policy approves in their name.
	// +optional
	Author string `json:"author,omitempty"`
	// authorGroups are the author's groups, from the same request. Before
	// every approval the policy makes, the server reviews (a
	// SubjectAccessReview of author, authorGroups and authorExtra) that the
	// author may still approve the config.
	// +optional
	// +listType=atomic
	AuthorGroups []string `json:"authorGroups,omitempty"`
	// authorExtra is the extra information the authenticator gave of the
	// author, from the same request.
	// +optional
	AuthorExtra map[string][]string `json:"authorExtra,omitempty"`
	// configs are the names of the configs the policy covers now.
	// +optional
	// +listType=set
	Configs []string `json:"configs,omitempty"`
	// lastApproved is the last plan the policy approved that a config
	// still records.
	// +optional
	LastApproved *PolicyDecision `json:"lastApproved,omitempty"`
	// lastRefused is the last plan the policy refused that still waits
	// for a review, and why.
	// +optional
	LastRefused *PolicyDecision `json:"lastRefused,omitempty"`
}

// PolicyDecision is one plan a policy approved or refused.
type PolicyDecision struct {
	// config is the VirtPlatformConfig.
	Config string `json:"config"`
	// planHash is the plan approved, or refused.
	// +optional
	PlanHash string `json:"planHash,omitempty"`
	// at is when.
	// +optional
	At *metav1.Time `json:"at,omitempty"`
	// message says why it was refused.
	// +optional
	Message string `json:"message,omitempty"`
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// ApprovalPolicyList is a list of ApprovalPolicies.
type ApprovalPolicyList struct {
	metav1.TypeMeta `json:",inline"`
	// +optional
	metav1.ListMeta `json:"metadata,omitempty"`

	Items []ApprovalPolicy `json:"items"`
}

// SetDefaults_PolicyBounds allows live migration only when vmFates is unset.
func SetDefaults_PolicyBounds(obj *PolicyBounds) {
	if len(obj.VMFates) == 0 {
		obj.VMFates = []VMFate{VMFateLiveMigrate}
	}
}
