package advisor

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
)

// PlanAction says what the controller may do with a plan.
type PlanAction string

const (
	// PlanActionDryRun drafts the plan and waits for an approval.
	PlanActionDryRun PlanAction = "DryRun"
	// PlanActionApply is a standing approval: the plan is applied as soon as it is drafted.
	PlanActionApply PlanAction = "Apply"
	// PlanActionIgnore leaves the managed resources alone.
	PlanActionIgnore PlanAction = "Ignore"
)

// FailurePolicy says what happens to the remaining items when one fails.
type FailurePolicy string

const (
	// FailurePolicyAbort stops at the first failed item.
	FailurePolicyAbort FailurePolicy = "Abort"
	// FailurePolicyContinue applies the remaining items and ends in CompletedWithErrors.
	FailurePolicyContinue FailurePolicy = "Continue"
)

// Impact is the disruption a change may cause: None < Low < Medium < High.
// None is the impact of an item with nothing to write, and of a plan of
// such items only.
type Impact string

const (
	ImpactNone   Impact = "None"
	ImpactLow    Impact = "Low"
	ImpactMedium Impact = "Medium"
	ImpactHigh   Impact = "High"
)

// ConfigPhase is the lifecycle phase of a VirtPlatformConfig.
type ConfigPhase string

const (
	PhasePending              ConfigPhase = "Pending"
	PhaseDrafting             ConfigPhase = "Drafting"
	PhasePrerequisiteFailed   ConfigPhase = "PrerequisiteFailed"
	PhaseReviewRequired       ConfigPhase = "ReviewRequired"
	PhaseInProgress           ConfigPhase = "InProgress"
	PhaseCompleted            ConfigPhase = "Completed"
	PhaseCompletedWithErrors  ConfigPhase = "CompletedWithErrors"
	PhaseCompletedWithUpgrade ConfigPhase = "CompletedWithUpgrade"
	PhaseFailed               ConfigPhase = "Failed"
	PhaseDrifted              ConfigPhase = "Drifted"
	PhaseIgnored              ConfigPhase = "Ignored"
	PhaseAborted              ConfigPhase = "Aborted"
)

// ItemState is the progress of one plan item.
type ItemState string

const (
	ItemStatePending    ItemState = "Pending"
	ItemStateInProgress ItemState = "InProgress"
	ItemStateCompleted  ItemState = "Completed"
	ItemStateFailed     ItemState = "Failed"
)

// Operation is what applying a plan item does to its target.
type Operation string

const (
	OperationCreate Operation = "Create"
	OperationUpdate Operation = "Update"
	OperationDelete Operation = "Delete"
	OperationNone   Operation = "None"
)

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// VirtPlatformConfig selects a tuning profile for the virtualization platform.
// Its name must equal spec.profile, so there is at most one per profile.
type VirtPlatformConfig struct {
	metav1.TypeMeta
	metav1.ObjectMeta

	// spec is the desired profile and how the controller may act on it.
	Spec VirtPlatformConfigSpec
	// status is written by the embedded controller and by approvals.
	Status VirtPlatformConfigStatus
}

// VirtPlatformConfigSpec is the desired state of a VirtPlatformConfig.
type VirtPlatformConfigSpec struct {
	// profile is the tuning profile, one of those the server serves.
	// It must equal metadata.name and is immutable.
	Profile string
	// action is DryRun (draft a plan and wait for approval; the default), Apply (a standing
	// approval) or Ignore (leave the managed resources alone).
	Action PlanAction
	// failurePolicy is Abort (stop at the first failed item; the default) or Continue.
	FailurePolicy FailurePolicy
	// bypassOptimisticLock applies even when the targets changed since the plan was drafted,
	// and corrects drift automatically when action is Apply.
	BypassOptimisticLock bool
	// waitTimeout bounds how long an item may take to become healthy (for example a
	// MachineConfigPool rollout), as a positive Go duration such as "30m" or "1h30m".
	// Unset waits forever.
	WaitTimeout string
	// options tune the selected profile; only the block of that profile may be set.
	Options *ProfileOptions
	// rollout tunes how approved MachineConfig changes are rolled out onto nodes.
	Rollout *RolloutSpec
	// delegatedApproval is a fleet's approval, set by the fleet's work agent.
	DelegatedApproval *DelegatedApproval
}

// RolloutSpec tunes how approved MachineConfig changes are rolled out onto nodes.
type RolloutSpec struct {
	// allowBlockingDrains writes an approved MachineConfig change even while a
	// node it rolls out on runs a VM that would block the node's drain.
	AllowBlockingDrains bool
	// gates are checked between every two steps of a pool's rollout.
	Gates *RolloutGates
}

// RolloutGates are the checks between two steps of a pool's rollout.
type RolloutGates struct {
	NodeReadyTimeout    string
	MaxFailedMigrations *int32
	Soak                string
	Alerts              *AlertGate
}

// AlertGate says which alerts halt a rollout.
type AlertGate struct {
	Matchers []string
	Ignore   []string
	OnError  GateErrorPolicy
}

// GateErrorPolicy is what a gate that cannot be evaluated does.
type GateErrorPolicy string

const (
	GateErrorHold   GateErrorPolicy = "Hold"
	GateErrorIgnore GateErrorPolicy = "Ignore"
)

// ProfileOptions and the option structs it holds are generated from
// v1alpha1's (zz_generated.options.go, by hack/optionsgen).

// VirtPlatformConfigStatus is the observed state of a VirtPlatformConfig.
type VirtPlatformConfigStatus struct {
	// phase is the lifecycle phase.
	Phase ConfigPhase
	// impactSeverity is the highest impact of the plan items.
	ImpactSeverity Impact
	// observedGeneration is the spec generation the status describes.
	ObservedGeneration int64
	// sourceSnapshotHash is the SHA-256 (lowercase hex) of the live managed fields the plan was drafted from.
	SourceSnapshotHash string
	// operatorVersion is the version of the server that drafted or applied the plan.
	OperatorVersion string
	// appliedOptions are the profile options, defaults resolved, of the last applied plan.
	AppliedOptions *ProfileOptions
	// conditions hold one condition per phase plus UpgradeAvailable and InputDependencyDrift.
	Conditions []metav1.Condition
	// items are the drafted plan and the progress of each item.
	Items []VirtPlatformConfigItem
	// appliedItems are the desired states of the last applied plan: what
	// drift is measured against while items show a newer draft.
	AppliedItems []AppliedItem
	// approval is the last approval of a plan revision.
	Approval *ApprovalRecord
	// abort records who aborted the approved plan, and when.
	Abort *AbortRecord
	// specChangedBy is the user who made the last spec change; it is the approver when action is Apply.
	SpecChangedBy string
	// writtenObjects are the objects virt-advisor wrote for this config, by
	// UID, and whether it created them. Only the server writes status, so
	// this, not a label anyone may set, says what is ours to delete.
	WrittenObjects []WrittenObject
	// replaced is what virt-advisor's writes replaced, per target: the
	// values its first write overwrote, or that it created the object;
	// the revert plan (GET .../revert) restores them.
	Replaced []ReplacedObject
	// plan summarizes the live plan for a fleet's review.
	Plan *PlanSummary
	// delegatedFleetHash is the fleet hash of the delegated approval this
	// status answers.
	DelegatedFleetHash string
}

// ReplacedObject is what virt-advisor's writes of one target replaced.
type ReplacedObject struct {
	// targetRef is the object.
	TargetRef ObjectReference
	// uid is the object's UID when it was first written.
	UID types.UID
	// created is true when virt-advisor's write created the object: the
	// revert deletes it (by this UID, only while it is recorded as ours).
	Created bool
	// fields are, for an object written over, the managed fields the
	// writes changed, each with its value before the first write.
	Fields []ReplacedField
}

// ReplacedField is a field virt-advisor's writes changed.
type ReplacedField struct {
	// path is the field's dot path, e.g. spec.higherWorkloadDensity.memoryOvercommitPercentage.
	Path string
	// absent is true when the field did not exist before the first write.
	Absent bool
	// previous is the value before the first write (unset when absent).
	Previous *runtime.RawExtension
	// written is the value the last write set; unset when that write
	// removed the field. A live value other than it was changed by
	// someone else since: the revert leaves it alone.
	Written *runtime.RawExtension
	// pending is true from the record made before a write until that
	// write is known to be made.
	Pending bool
}

// WrittenObject is an object virt-advisor wrote.
type WrittenObject struct {
	// targetRef is the object.
	TargetRef ObjectReference
	// uid is the object's UID when it was written.
	UID types.UID
	// created is true when virt-advisor created the object (or adopted it
	// from the earlier operator): only such objects are ever deleted.
	Created bool
}

// ReviewedTarget is an item's target as the approved plan saw it; it is
// compared with the live target just before the item is written.
type ReviewedTarget struct {
	// uid of the target; empty when it did not exist.
	UID types.UID
	// snapshotHash is the SHA-256 (lowercase hex) of its managed fields.
	SnapshotHash string
	// fieldHashes are, by managed field, the first 16 hex digits of the
	// SHA-256 of its value: a stale plan names the fields that changed.
	FieldHashes map[string]string
}

// PoolReboot is what writing a MachineConfig item does to one pool.
type PoolReboot struct {
	// pool is the MachineConfigPool name.
	Pool string
	// nodes is the pool's machine count.
	Nodes int64
	// paused is true when the pool is paused: it rolls out when unpaused.
	Paused bool
	// disruption is what each node of the pool goes through for this change.
	Disruption NodeDisruption
	// disruptionReason says what of the change decided the disruption.
	DisruptionReason string
	// drains is true when each node is drained before it is updated.
	Drains bool
	// vmImpacts are the VirtualMachineInstances on the pool's nodes that the
	// drain shuts down or is blocked by, and at most MaxListedMigrations of
	// those that live-migrate.
	VMImpacts []VMImpact
	// liveMigrations is how many VMs on the pool's nodes live-migrate.
	LiveMigrations int64
	// vmSummary says in words what the pool's VMs go through.
	VMSummary string
	// vmImpactUnknown says why the VMs could not be assessed.
	VMImpactUnknown string
	// capacity says whether the VMs that live-migrate find room.
	Capacity string
}

// NodeDisruption is what a node goes through when a MachineConfig change
// rolls out on it: Reboot, Drain, Restart, Reload, DaemonReload or None.
type NodeDisruption string

// VMFate is what draining a node does to a VirtualMachineInstance on it:
// LiveMigrate, ShutDown or BlocksDrain.
type VMFate string

// VMImpact is what draining its node does to one VirtualMachineInstance.
type VMImpact struct {
	Node      string
	Namespace string
	Name      string
	Fate      VMFate
	Reason    string
}

// DisruptedVM is a VM an approved plan said would be shut down or block
// the drain of a pool's node.
type DisruptedVM struct {
	Pool      string
	Namespace string
	Name      string
	Fate      VMFate
	Reason    string
}

// ObjectReference points at a target object in the main cluster.
type ObjectReference struct {
	APIVersion string
	Kind       string
	Name       string
	Namespace  string
}

// VirtPlatformConfigItem is one change of a drafted plan and its progress.
type VirtPlatformConfigItem struct {
	// name identifies the item within the profile, e.g. enable-psi-metrics.
	Name string
	// targetRef is the object the item changes.
	TargetRef ObjectReference
	// impactSeverity is the disruption applying this item may cause.
	ImpactSeverity Impact
	// operation is what applying the item does: Create, Update, Delete or None.
	Operation Operation
	// diff is a unified diff of the live object against the server-side apply dry-run result.
	Diff string
	// desiredState is the object applied with server-side apply.
	DesiredState *runtime.RawExtension
	// state is the progress of the item.
	State ItemState
	// message says what the item does or how it is going.
	Message string
	// lastTransitionTime is when state last changed.
	LastTransitionTime *metav1.Time
	// managedFields are the dot paths of the fields this item owns, e.g. spec.kernelArguments.
	ManagedFields []string
	// poolConfigBefore is the MachineConfigPool's spec.configuration.name
	// when this MachineConfig item was applied: a changed MachineConfig has
	// rolled out only once the pool has rolled out another rendered config.
	PoolConfigBefore string
	// poolConfigsBefore are, for every MachineConfigPool that selects this
	// MachineConfig, its spec.configuration.name when the item was applied.
	PoolConfigsBefore []PoolConfiguration
	// reviewedTarget is the target as the approved plan saw it.
	ReviewedTarget *ReviewedTarget
	// retry is the transient error the write of this item is retried after.
	Retry *ItemRetry
	// reviewedVMImpact are the VMs the approved plan said draining the
	// item's pools would shut down or be blocked by.
	ReviewedVMImpact []DisruptedVM
	// maintenanceWindow is set while the item waits for a maintenance
	// window of a pool it rolls.
	MaintenanceWindow *WindowWait
	// windowPauses counts how many times a closing maintenance window
	// paused this item's rollout.
	WindowPauses int32
}

// WindowWait is the maintenance window an item waits for.
type WindowWait struct {
	// name is the MaintenanceWindow that decides.
	Name string
	// opensAt is when the pool may be disrupted again.
	OpensAt *metav1.Time
	// rolloutPaused: written, rollout paused until opensAt.
	RolloutPaused bool
}

// ItemRetry is the transient error an item's write is retried after.
type ItemRetry struct {
	// attempts is how many attempts failed so far.
	Attempts int32
	// since is when the first attempt failed; retrying stops at the
	// deadline counted from it.
	Since metav1.Time
	// lastError is the last transient error.
	LastError string
}

// PoolConfiguration is the rendered config a MachineConfigPool was on.
type PoolConfiguration struct {
	// pool is the MachineConfigPool name.
	Pool string
	// configuration is its spec.configuration.name.
	Configuration string
}

// AppliedItem is an item of the last applied plan, as applied.
type AppliedItem struct {
	// name identifies the item within the profile.
	Name string
	// targetRef is the object the item changed.
	TargetRef ObjectReference
	// operation is what applying the item did.
	Operation Operation
	// state is how applying the item ended.
	State ItemState
	// desiredState is the object applied with server-side apply.
	DesiredState *runtime.RawExtension
	// managedFields are the dot paths of the fields the item owns.
	ManagedFields []string
}

// ApprovalRecord is the last approval of a plan revision.
type ApprovalRecord struct {
	// planHash is the plan revision approved.
	PlanHash string
	// approvedBy is the user who approved.
	ApprovedBy string
	// approvedAt is when the approval was made.
	ApprovedAt metav1.Time
	// generation is the spec generation the approved plan was computed from.
	Generation int64
	// itemsHash is the SHA-256 (lowercase hex) of the approved items: their
	// names, targets, operations and desired states. The controller writes
	// an item only while status.items still hash to it.
	ItemsHash string
	// uid is the VirtPlatformConfig the approved plan was computed for.
	UID types.UID
	// policy is the ApprovalPolicy that approved the plan, when one did:
	// an item not yet written is written only while that policy, unchanged
	// (same UID and generation), still covers the config.
	Policy *ApprovalPolicyRef
	// revert is true when the approved plan is the revert plan: once
	// written, nothing is managed and the config is Ignored until its spec
	// changes.
	Revert bool
	// sequence counts the approvals of this config: each is one more than
	// the approval or abort before it.
	Sequence int64
	// gates are the gates in force for the approved plan's rollouts.
	Gates *PlanGates
	// delegated is the fleet approval that approved the plan, when one did.
	Delegated *DelegatedApprovalRef
}

// AbortRecord is the abort of an approved plan.
type AbortRecord struct {
	PlanHash   string
	AbortedBy  string
	AbortedAt  metav1.Time
	Written    []string
	InFlight   []string
	NotWritten []string
	// approvalSequence is the sequence of the approval aborted.
	ApprovalSequence int64
	// held are the MachineConfigs and KubeletConfigs of the aborted plan
	// that were written or being written.
	Held []HeldConfig
}

// HeldConfig is a MachineConfig or KubeletConfig of an aborted plan, and
// what the pools that render it are found by.
type HeldConfig struct {
	Kind                      string
	Name                      string
	Labels                    map[string]string
	MachineConfigPoolSelector *metav1.LabelSelector
}

// ApprovalPolicyRef is an ApprovalPolicy as it was when it approved a plan.
type ApprovalPolicyRef struct {
	// name of the policy.
	Name string
	// uid of the policy: one deleted and created again is another.
	UID types.UID
	// generation of the policy's spec that approved the plan.
	Generation int64
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// VirtPlatformConfigList is a list of VirtPlatformConfigs.
type VirtPlatformConfigList struct {
	metav1.TypeMeta
	metav1.ListMeta

	Items []VirtPlatformConfig
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// Plan is the live plan of a VirtPlatformConfig, computed at request time by
// GET .../virtplatformconfigs/{name}/plan. It is never stored.
type Plan struct {
	metav1.TypeMeta
	metav1.ObjectMeta

	// status is the computed plan.
	Status PlanStatus
}

// PlanStatus is a computed plan.
type PlanStatus struct {
	// profile is the profile the plan was computed for.
	Profile string
	// generation is the VirtPlatformConfig generation the plan was computed from.
	Generation int64
	// planHash identifies this plan revision; approve exactly this value.
	PlanHash string
	// impactSeverity is the highest impact of the items.
	ImpactSeverity Impact
	// prerequisites are the APIs the profile needs; with any unsatisfied the plan has no items.
	Prerequisites []Prerequisite
	// items are the changes, in the order they are applied.
	Items []PlanItem
	// warnings are findings that do not block the plan but deserve a look
	// before approving it (for example swap too small for the overcommit).
	Warnings []string
	// settings are the spec settings planHash binds besides the items.
	Settings PlanSettings
	// readFrom says as of which resourceVersions the plan read the Nodes
	// and VirtualMachineInstances (nil: read live, or not read).
	ReadFrom *PlanReadFrom
}

// PlanReadFrom are the resourceVersions of the server's caches a plan read
// the Nodes and VirtualMachineInstances from.
type PlanReadFrom struct {
	NodesResourceVersion                   string
	VirtualMachineInstancesResourceVersion string
}

// PlanSettings are the spec settings an approval of the plan approves.
type PlanSettings struct {
	Action               PlanAction
	FailurePolicy        FailurePolicy
	BypassOptimisticLock bool
	WaitTimeout          string
	AllowBlockingDrains  bool
	Gates                *PlanGates
}

// PlanGates are the gates in force for a plan's rollouts.
type PlanGates struct {
	NodeReadyTimeout    string
	MaxFailedMigrations int32
	Soak                string
	Alerts              *PlanAlertGate
}

// PlanAlertGate is the alert gate in force for a plan's rollouts.
type PlanAlertGate struct {
	Source   string
	Matchers []string
	Ignore   []string
	OnError  GateErrorPolicy
}

// Prerequisite is an API a profile needs.
type Prerequisite struct {
	Kind       string
	APIVersion string
	// description says how to install it.
	Description string
	// satisfied is true when the API is served by the cluster.
	Satisfied bool
}

// PlanItem is one change of a plan.
type PlanItem struct {
	// name identifies the item within the profile.
	Name string
	// targetRef is the object the item changes.
	TargetRef ObjectReference
	// operation is what applying the item does: Create, Update, Delete or None.
	Operation Operation
	// impactSeverity is the disruption applying this item may cause.
	ImpactSeverity Impact
	// message says what the item does.
	Message string
	// managedFields are the dot paths of the fields this item owns.
	ManagedFields []string
	// desiredState is the object that would be applied with server-side apply.
	DesiredState *runtime.RawExtension
	// diff is a unified diff of the live object against the server-side apply dry-run result.
	Diff string
	// error says why the item could not be planned (for example the dry-run was rejected).
	Error string
	// reboots are the MachineConfigPools writing this MachineConfig item
	// rolls out, each node of each once.
	Reboots []PoolReboot
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// Approval approves exactly one plan revision of a VirtPlatformConfig
// (POST .../virtplatformconfigs/{name}/approve). It is never stored.
type Approval struct {
	metav1.TypeMeta
	metav1.ObjectMeta

	// spec names the plan revision being approved.
	Spec ApprovalSpec
	// status is filled in by the server.
	Status ApprovalStatus
}

// ApprovalSpec names the plan revision being approved.
type ApprovalSpec struct {
	// planHash is status.planHash of the plan the caller reviewed.
	PlanHash string
}

// ApprovalStatus records who approved what and when.
type ApprovalStatus struct {
	ApprovedBy string
	ApprovedAt *metav1.Time
	PlanHash   string
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// Abort stops an approved plan of a VirtPlatformConfig (POST
// .../virtplatformconfigs/{name}/abort). It is never stored.
type Abort struct {
	metav1.TypeMeta
	metav1.ObjectMeta

	// spec names the approved plan being aborted.
	Spec AbortSpec
	// status is filled in by the server.
	Status AbortStatus
}

// AbortSpec names the approved plan being aborted.
type AbortSpec struct {
	// planHash, when set, must be the approved plan's hash.
	PlanHash string
}

// AbortStatus records who aborted what and when, and what was written.
type AbortStatus struct {
	AbortedBy  string
	AbortedAt  *metav1.Time
	PlanHash   string
	Written    []string
	InFlight   []string
	NotWritten []string
}
