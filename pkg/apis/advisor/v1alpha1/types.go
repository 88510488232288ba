package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
)

// PlanAction says what the controller may do with a plan.
// +enum
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
// +enum
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
// +enum
type Impact string

const (
	ImpactNone   Impact = "None"
	ImpactLow    Impact = "Low"
	ImpactMedium Impact = "Medium"
	ImpactHigh   Impact = "High"
)

// ConfigPhase is the lifecycle phase of a VirtPlatformConfig.
// +enum
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
	// PhaseAborted: a person stopped an approved plan (POST .../abort);
	// nothing more of it is written and the pools it rolled stay paused
	// until a new plan is approved or the config is deleted.
	PhaseAborted ConfigPhase = "Aborted"
)

// ItemState is the progress of one plan item.
// +enum
type ItemState string

const (
	ItemStatePending    ItemState = "Pending"
	ItemStateInProgress ItemState = "InProgress"
	ItemStateCompleted  ItemState = "Completed"
	ItemStateFailed     ItemState = "Failed"
)

// Operation is what applying a plan item does to its target.
// +enum
type Operation string

const (
	OperationCreate Operation = "Create"
	OperationUpdate Operation = "Update"
	OperationDelete Operation = "Delete"
	OperationNone   Operation = "None"
)

// +genclient
// +genclient:nonNamespaced
// +genclient:method=GetPlan,verb=get,subresource=plan,result=github.com/kubevirt/virt-advisor/pkg/apis/advisor/v1alpha1.Plan
// +genclient:method=GetRevertPlan,verb=get,subresource=revert,result=github.com/kubevirt/virt-advisor/pkg/apis/advisor/v1alpha1.Plan
// +genclient:method=Approve,verb=create,subresource=approve,input=github.com/kubevirt/virt-advisor/pkg/apis/advisor/v1alpha1.Approval,result=github.com/kubevirt/virt-advisor/pkg/apis/advisor/v1alpha1.Approval
// +genclient:method=Abort,verb=create,subresource=abort,input=github.com/kubevirt/virt-advisor/pkg/apis/advisor/v1alpha1.Abort,result=github.com/kubevirt/virt-advisor/pkg/apis/advisor/v1alpha1.Abort
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// VirtPlatformConfig selects a tuning profile for the virtualization platform.
// Its name must equal spec.profile, so there is at most one per profile.
type VirtPlatformConfig struct {
	metav1.TypeMeta `json:",inline"`
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec is the desired profile and how the controller may act on it.
	Spec VirtPlatformConfigSpec `json:"spec"`
	// status is written by the embedded controller and by approvals.
	// +optional
	Status VirtPlatformConfigStatus `json:"status,omitempty"`
}

// VirtPlatformConfigSpec is the desired state of a VirtPlatformConfig.
type VirtPlatformConfigSpec struct {
	// profile is the tuning profile, one of those the server serves (a config with
	// another name is refused with their list; docs/api.md#profiles describes each).
	// It must equal metadata.name and is immutable.
	Profile string `json:"profile"`
	// action is DryRun (draft a plan and wait for approval; the default), Apply (a standing
	// approval) or Ignore (leave the managed resources alone).
	// +optional
	// +default="DryRun"
	Action PlanAction `json:"action,omitempty"`
	// failurePolicy is Abort (stop at the first failed item; the default) or Continue.
	// +optional
	// +default="Abort"
	FailurePolicy FailurePolicy `json:"failurePolicy,omitempty"`
	// bypassOptimisticLock applies even when the targets changed since the plan was drafted,
	// and corrects drift automatically when action is Apply.
	// +optional
	BypassOptimisticLock bool `json:"bypassOptimisticLock,omitempty"`
	// waitTimeout bounds how long an item may take to become healthy (for example a
	// MachineConfigPool rollout), as a positive Go duration such as "30m" or "1h30m".
	// Unset waits forever.
	// +optional
	WaitTimeout string `json:"waitTimeout,omitempty"`
	// options tune the selected profile; only the block of that profile may be set.
	// +optional
	Options *ProfileOptions `json:"options,omitempty"`
	// rollout tunes how approved MachineConfig changes are rolled out onto nodes.
	// +optional
	Rollout *RolloutSpec `json:"rollout,omitempty"`
	// delegatedApproval is a fleet's approval of this cluster's plan,
	// written by Open Cluster Management's work agent from the fleet's
	// hub (docs/fleet.md). Only an identity allowed `create
	// virtplatformconfigs/delegatedapproval` may set or change it.
	// +optional
	DelegatedApproval *DelegatedApproval `json:"delegatedApproval,omitempty"`
}

// RolloutSpec tunes how approved MachineConfig changes are rolled out onto nodes.
type RolloutSpec struct {
	// allowBlockingDrains writes an approved MachineConfig change even while a
	// node of a pool it rolls out on runs a VM that would block the node's
	// drain (eviction strategy LiveMigrate on a VM that cannot migrate, or
	// External): that node then stays cordoned, and the pool stuck, until
	// someone stops, moves or changes the VM. By default such a change waits,
	// naming the VMs, until none would block. Approving a plan approves this
	// setting too (it is part of the plan hash).
	// +optional
	AllowBlockingDrains bool `json:"allowBlockingDrains,omitempty"`
	// gates are checked between every two steps of a MachineConfigPool
	// rollout of an approved change: the pool is unpaused until the MCO
	// targets its next node(s), paused again, and the next step starts
	// only when these pass; a gate that trips halts the rollout (the pool
	// stays paused) until an approver resumes, aborts or reverts it. Unset
	// fields take the server's defaults; the plan shows the gates in force,
	// and approving a plan approves them too (they are part of the plan
	// hash).
	// +optional
	Gates *RolloutGates `json:"gates,omitempty"`
}

// RolloutGates are the checks between two steps of a pool's rollout.
type RolloutGates struct {
	// nodeReadyTimeout is how long the nodes of a step may take to come
	// back (Ready, their MCO state Done on the desired config) and the VMs
	// moved off them to run again, from the step's start, e.g. "20m".
	// Past it the rollout halts. Between 30s and 24h.
	// +optional
	NodeReadyTimeout string `json:"nodeReadyTimeout,omitempty"`
	// maxFailedMigrations is how many live migrations started by a step's
	// drains may fail before the rollout halts. Default 0.
	// +optional
	MaxFailedMigrations *int32 `json:"maxFailedMigrations,omitempty"`
	// soak is how long the nodes of a step must have been back before the
	// next step starts, e.g. "5m". At most 24h.
	// +optional
	Soak string `json:"soak,omitempty"`
	// alerts halts the rollout when an alert starts firing during it, read
	// from the alert source the server is configured with.
	// +optional
	Alerts *AlertGate `json:"alerts,omitempty"`
}

// AlertGate says which alerts halt a rollout.
type AlertGate struct {
	// matchers are label matchers an alert must all match to halt the
	// rollout, as Prometheus writes them: severity="critical",
	// namespace!~"openshift-.*". None: every alert.
	// +optional
	// +listType=atomic
	Matchers []string `json:"matchers,omitempty"`
	// ignore are alert names that never halt a rollout. Default: Watchdog
	// and InfoInhibitor, which fire on every healthy cluster.
	// +optional
	// +listType=atomic
	Ignore []string `json:"ignore,omitempty"`
	// onError says what a step does when the alerts cannot be read: Hold
	// (the default: wait, saying why) or Ignore (go on, warned).
	// +optional
	OnError GateErrorPolicy `json:"onError,omitempty"`
}

// GateErrorPolicy is what a gate that cannot be evaluated does.
// +enum
type GateErrorPolicy string

const (
	GateErrorHold   GateErrorPolicy = "Hold"
	GateErrorIgnore GateErrorPolicy = "Ignore"
)

// ProfileOptions holds one options block per profile.
type ProfileOptions struct {
	// loadAware tunes the load-aware-rebalancing profile.
	// +optional
	LoadAware *LoadAwareConfig `json:"loadAware,omitempty"`
	// virtHigherDensity tunes the virt-higher-density profile.
	// +optional
	VirtHigherDensity *VirtHigherDensityConfig `json:"virtHigherDensity,omitempty"`
	// liveMigrationLimits tunes the live-migration-limits profile.
	// +optional
	LiveMigrationLimits *LiveMigrationLimitsConfig `json:"liveMigrationLimits,omitempty"`
	// hugepages tunes the hugepages profile.
	// +optional
	Hugepages *HugepagesConfig `json:"hugepages,omitempty"`
	// pciPassthrough tunes the pci-passthrough profile.
	// +optional
	PciPassthrough *PciPassthroughConfig `json:"pciPassthrough,omitempty"`
	// dedicatedCPUs tunes the dedicated-cpus profile.
	// +optional
	DedicatedCPUs *DedicatedCPUsConfig `json:"dedicatedCPUs,omitempty"`
	// vmEvictionStrategy tunes the vm-eviction-strategy profile.
	// +optional
	VMEvictionStrategy *VMEvictionStrategyConfig `json:"vmEvictionStrategy,omitempty"`
}

// VMEvictionStrategyConfig tunes the vm-eviction-strategy profile: the
// HyperConverged's evictionStrategy, what a node drain does to every VM
// that sets none of its own. No reboot.
type VMEvictionStrategyConfig struct {
	// strategy is the cluster-wide default: LiveMigrate (the default;
	// a VM that cannot migrate blocks the drain), LiveMigrateIfPossible
	// (it is shut down instead), None (VMs are shut down) or External
	// (an external controller handles the eviction).
	// +optional
	// +default="LiveMigrate"
	// +k8s:validation:enum=["LiveMigrate","LiveMigrateIfPossible","None","External"]
	Strategy string `json:"strategy,omitempty"`
}

// HugepagesConfig tunes the hugepages profile: kernel arguments that
// reserve huge pages at boot on the nodes of one MachineConfigPool, their
// count derived from the nodes' memory. Changing it reboots the pool's
// nodes one by one.
type HugepagesConfig struct {
	// pool is the MachineConfigPool whose nodes get huge pages (default
	// worker); the MachineConfig carries its name as its role label, and
	// its count is derived from the nodes of every pool that selects it.
	// +optional
	// +default="worker"
	Pool string `json:"pool,omitempty"`
	// pageSize is the huge page size, 1G or 2M (default 1G); it becomes the
	// default huge page size of the nodes too.
	// +optional
	// +default="1G"
	// +k8s:validation:enum=["1G","2M"]
	PageSize string `json:"pageSize,omitempty"`
	// memoryPercent is the share of each node's memory (its allocatable
	// memory plus the huge pages it already has) reserved as huge pages,
	// 1..90 (default 50).
	// +optional
	// +default=50
	// +k8s:validation:minimum=1
	// +k8s:validation:maximum=90
	MemoryPercent *int32 `json:"memoryPercent,omitempty"`
	// floorGiB is the memory, in GiB, that must stay for ordinary pods and
	// VMs beyond the kubelet's reservations, 1..1024 (default 8): a count
	// that would leave less is refused, naming the numbers.
	// +optional
	// +default=8
	// +k8s:validation:minimum=1
	// +k8s:validation:maximum=1024
	FloorGiB *int32 `json:"floorGiB,omitempty"`
}

// PciPassthroughConfig tunes the pci-passthrough profile: the IOMMU kernel
// arguments of the CPU vendor of one MachineConfigPool's nodes. Changing it
// reboots the pool's nodes one by one.
type PciPassthroughConfig struct {
	// pool is the MachineConfigPool whose nodes get the IOMMU kernel
	// arguments (default worker); its nodes must share one CPU vendor
	// (Intel or AMD, node-feature-discovery's label).
	// +optional
	// +default="worker"
	Pool string `json:"pool,omitempty"`
}

// DedicatedCPUsConfig tunes the dedicated-cpus profile: a KubeletConfig for
// one MachineConfigPool with the static CPU manager, a topology manager
// policy and CPUs and memory reserved for the system in every NUMA zone,
// derived from the pool's nodes. Changing it reboots the pool's nodes.
type DedicatedCPUsConfig struct {
	// enabled: false deletes the KubeletConfig the profile made (its nodes
	// reboot back to the shared CPU pool); default true.
	// +optional
	// +default=true
	Enabled *bool `json:"enabled,omitempty"`
	// pool is the MachineConfigPool whose nodes run VMs with
	// dedicatedCpuPlacement (required when enabled). Its nodes must be alike in CPUs and
	// NUMA zones.
	// +optional
	Pool string `json:"pool,omitempty"`
	// allowAllWorkers admits pool worker: pinning CPUs on every worker is
	// rarely meant (default false).
	// +optional
	// +default=false
	AllowAllWorkers *bool `json:"allowAllWorkers,omitempty"`
	// topologyManagerPolicy is the kubelet's topology manager policy:
	// single-numa-node (the default), restricted or best-effort.
	// +optional
	// +default="single-numa-node"
	// +k8s:validation:enum=["single-numa-node","restricted","best-effort"]
	TopologyManagerPolicy string `json:"topologyManagerPolicy,omitempty"`
	// reservedCoresPerZone is how many physical cores (with their SMT
	// siblings) of each NUMA zone are kept for the system and never pinned,
	// 1..8 (default 1).
	// +optional
	// +default=1
	// +k8s:validation:minimum=1
	// +k8s:validation:maximum=8
	ReservedCoresPerZone *int32 `json:"reservedCoresPerZone,omitempty"`
}

// LiveMigrationLimitsConfig tunes the live-migration-limits profile: the
// HyperConverged liveMigrationConfig it writes is derived from these, the
// number of schedulable nodes and the pool that drains the most nodes at once.
type LiveMigrationLimitsConfig struct {
	// migrationNetworkGbps is the speed of each node's migration network
	// link, in Gbit/s, 1..800 (default 10).
	// +optional
	// +default=10
	// +k8s:validation:minimum=1
	// +k8s:validation:maximum=800
	MigrationNetworkGbps *int32 `json:"migrationNetworkGbps,omitempty"`
	// networkSharePercent is the share of that link live migrations may use,
	// 10..100 (default 50); the rest stays with the VMs' own traffic.
	// +optional
	// +default=50
	// +k8s:validation:minimum=10
	// +k8s:validation:maximum=100
	NetworkSharePercent *int32 `json:"networkSharePercent,omitempty"`
	// parallelOutboundMigrationsPerNode is how many VMs a draining node sends
	// at once, 1..10; each gets its share of the link as bandwidthPerMigration.
	// Unset: the installed HyperConverged's default (2 in v1beta1, 1 in v1).
	// +optional
	// +k8s:validation:minimum=1
	// +k8s:validation:maximum=10
	ParallelOutboundMigrationsPerNode *int32 `json:"parallelOutboundMigrationsPerNode,omitempty"`
	// completionTimeoutPerGiB cancels a migration that has not completed in
	// this many seconds per GiB of guest memory, 10..3600. Unset: the
	// installed HyperConverged's default (150 in v1beta1, 20 in v1).
	// +optional
	// +k8s:validation:minimum=10
	// +k8s:validation:maximum=3600
	CompletionTimeoutPerGiB *int64 `json:"completionTimeoutPerGiB,omitempty"`
	// progressTimeout cancels a migration whose memory copy made no progress
	// for this many seconds, 30..3600 (default 150, the HyperConverged's).
	// +optional
	// +default=150
	// +k8s:validation:minimum=30
	// +k8s:validation:maximum=3600
	ProgressTimeout *int64 `json:"progressTimeout,omitempty"`
}

// LoadAwareConfig tunes the load-aware-rebalancing profile.
type LoadAwareConfig struct {
	// deschedulingIntervalSeconds is how often the descheduler runs, 60..86400 (default 60).
	// +optional
	// +default=60
	// +k8s:validation:minimum=60
	// +k8s:validation:maximum=86400
	DeschedulingIntervalSeconds *int32 `json:"deschedulingIntervalSeconds,omitempty"`
	// mode is the descheduler mode: Automatic (evicts; the default) or Predictive (only reports).
	// +optional
	// +default="Automatic"
	// +k8s:validation:enum=["Automatic","Predictive"]
	Mode string `json:"mode,omitempty"`
	// enablePSIMetrics adds the psi=1 kernel argument to worker nodes (default true).
	// Changing it reboots the worker nodes one by one.
	// +optional
	// +default=true
	EnablePSIMetrics *bool `json:"enablePSIMetrics,omitempty"`
	// devDeviationThresholds is the load deviation threshold: Low, Medium, High,
	// AsymmetricLow (the default), AsymmetricMedium or AsymmetricHigh.
	// +optional
	// +default="AsymmetricLow"
	// +k8s:validation:enum=["Low","Medium","High","AsymmetricLow","AsymmetricMedium","AsymmetricHigh"]
	DevDeviationThresholds string `json:"devDeviationThresholds,omitempty"`
	// evictionLimitTotal caps concurrent evictions in the cluster, 1..1000.
	// Unset derives it from the HyperConverged parallelMigrationsPerCluster.
	// +optional
	// +k8s:validation:minimum=1
	// +k8s:validation:maximum=1000
	EvictionLimitTotal *int32 `json:"evictionLimitTotal,omitempty"`
	// evictionLimitNode caps concurrent evictions per node, 1..100.
	// Unset derives it from the HyperConverged parallelOutboundMigrationsPerNode.
	// +optional
	// +k8s:validation:minimum=1
	// +k8s:validation:maximum=100
	EvictionLimitNode *int32 `json:"evictionLimitNode,omitempty"`
	// devMigrationCooldown is how long the descheduler leaves a VM alone
	// after it migrated, a Go duration between 1m and 24h (for example
	// "30m"). Unset: the descheduler's default (15m). Sent only to a
	// descheduler operator that has the field (5.4.0 and later); an older
	// one drops it and the plan says so.
	// +optional
	DevMigrationCooldown string `json:"devMigrationCooldown,omitempty"`
	// devMaxMigrationCooldown caps the cooldown of a VM that migrates again
	// and again, between 1m and 168h, and at least devMigrationCooldown.
	// Unset: the descheduler's default (6h).
	// +optional
	DevMaxMigrationCooldown string `json:"devMaxMigrationCooldown,omitempty"`
	// devMigrationHistoryWindow is how far back the descheduler counts a
	// VM's migrations, between 1h and 720h, and at least 6 times
	// devMaxMigrationCooldown. Unset: the descheduler's default (48h).
	// +optional
	DevMigrationHistoryWindow string `json:"devMigrationHistoryWindow,omitempty"`
}

// VirtHigherDensityConfig tunes the virt-higher-density profile.
type VirtHigherDensityConfig struct {
	// enableSwap configures kubelet swap on worker nodes (default true).
	// Changing it reboots the worker nodes one by one.
	// +optional
	// +default=true
	EnableSwap *bool `json:"enableSwap,omitempty"`
	// ksmConfiguration configures kernel samepage merging.
	// +optional
	KSMConfiguration *KSMConfiguration `json:"ksmConfiguration,omitempty"`
	// memoryToRequestRatio is the HyperConverged memoryOvercommitPercentage,
	// 100..300. Values above 120 require enableSwap=true. Default: 150 with
	// swap, 100 without.
	// +optional
	// +k8s:validation:minimum=100
	// +k8s:validation:maximum=300
	MemoryToRequestRatio *int32 `json:"memoryToRequestRatio,omitempty"`
	// thpMadvise boots the worker nodes with transparent_hugepage=madvise:
	// only memory that asks for huge pages (as QEMU does for guest RAM)
	// gets them (default false: the nodes' own setting). Changing it
	// reboots the worker nodes one by one.
	// +optional
	THPMadvise *bool `json:"thpMadvise,omitempty"`
}

// KSMConfiguration configures kernel samepage merging.
type KSMConfiguration struct {
	// enabled turns KSM on (default true).
	// +optional
	// +default=true
	Enabled *bool `json:"enabled,omitempty"`
	// nodeLabelSelector selects the nodes KSM runs on; empty selects all nodes.
	// +optional
	NodeLabelSelector *metav1.LabelSelector `json:"nodeLabelSelector,omitempty"`
	// useZeroPages makes KSM merge pages that hold only zeroes with the
	// kernel's zero page (default false). It needs enabled: true. Changing
	// it reboots the worker nodes one by one.
	// +optional
	UseZeroPages *bool `json:"useZeroPages,omitempty"`
}

// VirtPlatformConfigStatus is the observed state of a VirtPlatformConfig.
type VirtPlatformConfigStatus struct {
	// phase is the lifecycle phase.
	// +optional
	Phase ConfigPhase `json:"phase,omitempty"`
	// impactSeverity is the highest impact of the plan items.
	// +optional
	ImpactSeverity Impact `json:"impactSeverity,omitempty"`
	// observedGeneration is the spec generation the status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// sourceSnapshotHash is the SHA-256 (lowercase hex) of the live managed fields the plan was drafted from.
	// +optional
	SourceSnapshotHash string `json:"sourceSnapshotHash,omitempty"`
	// operatorVersion is the version of the server that drafted or applied the plan.
	// +optional
	OperatorVersion string `json:"operatorVersion,omitempty"`
	// appliedOptions are the profile options, defaults resolved, of the last applied plan.
	// +optional
	AppliedOptions *ProfileOptions `json:"appliedOptions,omitempty"`
	// conditions hold one condition per phase plus UpgradeAvailable and InputDependencyDrift.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
	// items are the drafted plan and the progress of each item.
	// +optional
	// +listType=map
	// +listMapKey=name
	Items []VirtPlatformConfigItem `json:"items,omitempty"`
	// appliedItems are the desired states of the last applied plan: what
	// drift is measured against while items show a newer draft.
	// +optional
	// +listType=map
	// +listMapKey=name
	AppliedItems []AppliedItem `json:"appliedItems,omitempty"`
	// approval is the last approval of a plan revision.
	// +optional
	Approval *ApprovalRecord `json:"approval,omitempty"`
	// abort records who aborted the approved plan, and when. While it is
	// set, the pools the plan had started rolling stay paused; the next
	// approval clears it.
	// +optional
	Abort *AbortRecord `json:"abort,omitempty"`
	// specChangedBy is the user who made the last spec change; it is the approver when action is Apply.
	// +optional
	SpecChangedBy string `json:"specChangedBy,omitempty"`
	// writtenObjects are the objects virt-advisor wrote for this config, by
	// UID, and whether it created them. Only the server writes status, so
	// this, not a label anyone may set, says what is ours to delete.
	// +optional
	// +listType=map
	// +listMapKey=uid
	WrittenObjects []WrittenObject `json:"writtenObjects,omitempty"`
	// replaced is what virt-advisor's writes replaced, per target: the
	// values its first write overwrote, or that it created the object;
	// the revert plan (GET .../revert) restores them.
	// +optional
	// +listType=atomic
	Replaced []ReplacedObject `json:"replaced,omitempty"`
	// plan summarizes the live plan (its hash, items and what it does to
	// nodes and VMs) for a fleet's review on its hub.
	// +optional
	Plan *PlanSummary `json:"plan,omitempty"`
	// delegatedFleetHash is the fleet hash of the spec.delegatedApproval
	// this status answers: the fleet's condition rules read the phase as
	// that approval's outcome only when it names it, never a status
	// written before the approval arrived.
	// +optional
	DelegatedFleetHash string `json:"delegatedFleetHash,omitempty"`
}

// ReplacedObject is what virt-advisor's writes of one target replaced.
type ReplacedObject struct {
	// targetRef is the object.
	TargetRef ObjectReference `json:"targetRef"`
	// uid is the object's UID when it was first written.
	UID types.UID `json:"uid"`
	// created is true when virt-advisor's write created the object: the
	// revert deletes it (by this UID, only while it is recorded as ours).
	// +optional
	Created bool `json:"created,omitempty"`
	// fields are, for an object written over, the managed fields the
	// writes changed, each with its value before the first write.
	// +optional
	// +listType=atomic
	Fields []ReplacedField `json:"fields,omitempty"`
}

// ReplacedField is a field virt-advisor's writes changed.
type ReplacedField struct {
	// path is the field's dot path, e.g. spec.higherWorkloadDensity.memoryOvercommitPercentage.
	Path string `json:"path"`
	// absent is true when the field did not exist before the first write.
	// +optional
	Absent bool `json:"absent,omitempty"`
	// previous is the value before the first write (unset when absent).
	// +optional
	// +kubebuilder:pruning:PreserveUnknownFields
	Previous *runtime.RawExtension `json:"previous,omitempty"`
	// written is the value the last write set; unset when that write
	// removed the field. A live value other than it was changed by
	// someone else since: the revert leaves it alone.
	// +optional
	// +kubebuilder:pruning:PreserveUnknownFields
	Written *runtime.RawExtension `json:"written,omitempty"`
	// pending is true from the record made before a write until that
	// write is known to be made: it may have been refused, or have
	// failed. The next attempt reads the field again; the revert restores
	// it only if the field holds what the write would have set.
	// +optional
	Pending bool `json:"pending,omitempty"`
}

// WrittenObject is an object virt-advisor wrote.
type WrittenObject struct {
	// targetRef is the object.
	TargetRef ObjectReference `json:"targetRef"`
	// uid is the object's UID when it was written.
	UID types.UID `json:"uid"`
	// created is true when virt-advisor created the object (or adopted it
	// from the earlier operator): only such objects are ever deleted.
	// +optional
	Created bool `json:"created,omitempty"`
}

// ReviewedTarget is an item's target as the approved plan saw it; it is
// compared with the live target just before the item is written.
type ReviewedTarget struct {
	// uid of the target; empty when it did not exist.
	// +optional
	UID types.UID `json:"uid,omitempty"`
	// snapshotHash is the SHA-256 (lowercase hex) of its managed fields.
	// +optional
	SnapshotHash string `json:"snapshotHash,omitempty"`
	// fieldHashes are, by managed field, the first 16 hex digits of the
	// SHA-256 of its value: a stale plan names the fields that changed.
	// +optional
	FieldHashes map[string]string `json:"fieldHashes,omitempty"`
}

// NodeDisruption is what a node goes through when a MachineConfig change
// rolls out on it.
// +enum
type NodeDisruption string

const (
	// NodeDisruptionReboot: the node is drained and rebooted.
	NodeDisruptionReboot NodeDisruption = "Reboot"
	// NodeDisruptionDrain: the node is drained, then updated without a reboot.
	NodeDisruptionDrain NodeDisruption = "Drain"
	// NodeDisruptionRestart: a service is restarted in place; no drain.
	NodeDisruptionRestart NodeDisruption = "Restart"
	// NodeDisruptionReload: a service is reloaded in place; no drain.
	NodeDisruptionReload NodeDisruption = "Reload"
	// NodeDisruptionDaemonReload: systemd reloads its units; no drain.
	NodeDisruptionDaemonReload NodeDisruption = "DaemonReload"
	// NodeDisruptionNone: the files are written, nothing else happens.
	NodeDisruptionNone NodeDisruption = "None"
)

// VMFate is what draining a node does to a VirtualMachineInstance on it.
// +enum
type VMFate string

const (
	// VMFateLiveMigrate: the VM is live-migrated to another node.
	VMFateLiveMigrate VMFate = "LiveMigrate"
	// VMFateShutDown: the VM is shut down (its VirtualMachine's run
	// strategy decides whether it starts again elsewhere).
	VMFateShutDown VMFate = "ShutDown"
	// VMFateBlocksDrain: the eviction is refused; the drain waits until the
	// VM is stopped, moved or changed, and the node stays cordoned.
	VMFateBlocksDrain VMFate = "BlocksDrain"
)

// PoolReboot is what writing a MachineConfig item does to one pool.
type PoolReboot struct {
	// pool is the MachineConfigPool name.
	Pool string `json:"pool"`
	// nodes is the pool's machine count.
	Nodes int64 `json:"nodes"`
	// paused is true when the pool is paused: it rolls out when unpaused.
	// +optional
	Paused bool `json:"paused,omitempty"`
	// disruption is what each node of the pool goes through for this change:
	// Reboot, Drain (drained, not rebooted), Restart, Reload or DaemonReload
	// (a service restarted or reloaded in place, no drain) or None. It comes
	// from the change itself (kernel arguments, extensions, the kernel type,
	// FIPS and the OS image always reboot) and the cluster's node disruption
	// policies for the files and units it changes.
	// +optional
	Disruption NodeDisruption `json:"disruption,omitempty"`
	// disruptionReason says what of the change decided the disruption.
	// +optional
	DisruptionReason string `json:"disruptionReason,omitempty"`
	// drains is true when each node is drained (cordoned, its pods and VMs
	// evicted) before it is updated.
	// +optional
	Drains bool `json:"drains,omitempty"`
	// vmImpacts are the VirtualMachineInstances running on the pool's nodes
	// that the drain shuts down or is blocked by, every one, and the first
	// 20 (by node, namespace and name) of those that live-migrate; empty
	// when the nodes are not drained. liveMigrations counts the latter: a
	// pool of thousands of VMs does not make a plan of megabytes.
	// +optional
	// +listType=atomic
	VMImpacts []VMImpact `json:"vmImpacts,omitempty"`
	// liveMigrations is how many VMs running on the pool's nodes
	// live-migrate when their node drains.
	// +optional
	LiveMigrations int64 `json:"liveMigrations,omitempty"`
	// vmSummary says in words what the pool's VMs go through.
	// +optional
	VMSummary string `json:"vmSummary,omitempty"`
	// vmImpactUnknown, when set, says why the VMs could not be assessed (for
	// example: the cluster does not serve kubevirt.io/v1 VirtualMachineInstance).
	// +optional
	VMImpactUnknown string `json:"vmImpactUnknown,omitempty"`
	// capacity says whether the VMs that live-migrate when the pool's nodes
	// drain find room on the nodes that stay schedulable, the drains taken
	// as the pool rolls out (maxUnavailable nodes at a time, in name order),
	// e.g. "fits: worst node n2 moves 96 GiB, 140 GiB free elsewhere" or
	// "does not fit: default/db-0 (64 GiB, …)", or why it is unknown. A VM
	// that does not fit is among vmImpacts with fate BlocksDrain and a
	// reason starting InsufficientCapacity (docs/disruption.md). Empty when
	// no VM live-migrates.
	// +optional
	Capacity string `json:"capacity,omitempty"`
}

// VMImpact is what draining its node does to one VirtualMachineInstance.
type VMImpact struct {
	// node is the node the VM runs on.
	Node string `json:"node"`
	// namespace of the VirtualMachineInstance.
	Namespace string `json:"namespace"`
	// name of the VirtualMachineInstance.
	Name string `json:"name"`
	// fate is LiveMigrate, ShutDown or BlocksDrain.
	Fate VMFate `json:"fate"`
	// reason says why: the eviction strategy, or why the VM cannot migrate
	// (its LiveMigratable condition's reason).
	// +optional
	Reason string `json:"reason,omitempty"`
}

// DisruptedVM is a VM an approved plan said would be shut down or block
// the drain of a pool's node.
type DisruptedVM struct {
	// pool is the MachineConfigPool whose node the VM runs on.
	Pool string `json:"pool"`
	// namespace of the VirtualMachineInstance.
	Namespace string `json:"namespace"`
	// name of the VirtualMachineInstance.
	Name string `json:"name"`
	// fate is ShutDown or BlocksDrain.
	Fate VMFate `json:"fate"`
	// reason as the plan said it.
	// +optional
	Reason string `json:"reason,omitempty"`
}

// ObjectReference points at a target object in the main cluster.
type ObjectReference struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Name       string `json:"name"`
	// +optional
	Namespace string `json:"namespace,omitempty"`
}

// VirtPlatformConfigItem is one change of a drafted plan and its progress.
type VirtPlatformConfigItem struct {
	// name identifies the item within the profile, e.g. enable-psi-metrics.
	Name string `json:"name"`
	// targetRef is the object the item changes.
	TargetRef ObjectReference `json:"targetRef"`
	// impactSeverity is the disruption applying this item may cause.
	// +optional
	ImpactSeverity Impact `json:"impactSeverity,omitempty"`
	// operation is what applying the item does: Create, Update, Delete or None.
	// +optional
	Operation Operation `json:"operation,omitempty"`
	// diff is a unified diff of the live object against the server-side apply dry-run result.
	// +optional
	Diff string `json:"diff,omitempty"`
	// desiredState is the object applied with server-side apply.
	// +optional
	// +kubebuilder:pruning:PreserveUnknownFields
	DesiredState *runtime.RawExtension `json:"desiredState,omitempty"`
	// state is the progress of the item.
	// +optional
	State ItemState `json:"state,omitempty"`
	// message says what the item does or how it is going.
	// +optional
	Message string `json:"message,omitempty"`
	// lastTransitionTime is when state last changed.
	// +optional
	LastTransitionTime *metav1.Time `json:"lastTransitionTime,omitempty"`
	// managedFields are the dot paths of the fields this item owns, e.g. spec.kernelArguments.
	// +optional
	// +listType=atomic
	ManagedFields []string `json:"managedFields,omitempty"`
	// poolConfigBefore is the MachineConfigPool's spec.configuration.name
	// when this MachineConfig item was applied: a changed MachineConfig has
	// rolled out only once the pool has rolled out another rendered config.
	// +optional
	PoolConfigBefore string `json:"poolConfigBefore,omitempty"`
	// poolConfigsBefore are, for every MachineConfigPool that selects this
	// MachineConfig, its spec.configuration.name when the item was applied.
	// +optional
	// +listType=map
	// +listMapKey=pool
	PoolConfigsBefore []PoolConfiguration `json:"poolConfigsBefore,omitempty"`
	// reviewedTarget is the target as the approved plan saw it.
	// +optional
	ReviewedTarget *ReviewedTarget `json:"reviewedTarget,omitempty"`
	// retry is the transient error the write of this item is retried after.
	// +optional
	Retry *ItemRetry `json:"retry,omitempty"`
	// reviewedVMImpact are the VMs the approved plan said draining the
	// item's pools would shut down or be blocked by. Just before the item is
	// written, a VM that now would and is not among them makes the plan stale.
	// +optional
	// +listType=atomic
	ReviewedVMImpact []DisruptedVM `json:"reviewedVMImpact,omitempty"`
	// maintenanceWindow is set while the item waits for a maintenance
	// window of a pool it rolls: before its write, or with its rollout
	// paused because a window closed.
	// +optional
	MaintenanceWindow *WindowWait `json:"maintenanceWindow,omitempty"`
	// windowPauses counts how many times a closing maintenance window
	// paused this item's rollout.
	// +optional
	WindowPauses int32 `json:"windowPauses,omitempty"`
}

// WindowWait is the maintenance window an item waits for.
type WindowWait struct {
	// name is the MaintenanceWindow that decides, "" when none opens in
	// sight.
	// +optional
	Name string `json:"name,omitempty"`
	// opensAt is when the pool may be disrupted again.
	// +optional
	OpensAt *metav1.Time `json:"opensAt,omitempty"`
	// rolloutPaused: the item was written and its rollout is paused until
	// opensAt; otherwise it is not written yet.
	// +optional
	RolloutPaused bool `json:"rolloutPaused,omitempty"`
}

// ItemRetry is the transient error an item's write is retried after.
type ItemRetry struct {
	// attempts is how many attempts failed so far.
	Attempts int32 `json:"attempts"`
	// since is when the first attempt failed; retrying stops at the
	// deadline counted from it.
	Since metav1.Time `json:"since"`
	// lastError is the last transient error.
	// +optional
	LastError string `json:"lastError,omitempty"`
}

// PoolConfiguration is the rendered config a MachineConfigPool was on.
type PoolConfiguration struct {
	// pool is the MachineConfigPool name.
	Pool string `json:"pool"`
	// configuration is its spec.configuration.name.
	// +optional
	Configuration string `json:"configuration,omitempty"`
}

// AppliedItem is an item of the last applied plan, as applied.
type AppliedItem struct {
	// name identifies the item within the profile.
	Name string `json:"name"`
	// targetRef is the object the item changed.
	TargetRef ObjectReference `json:"targetRef"`
	// operation is what applying the item did.
	// +optional
	Operation Operation `json:"operation,omitempty"`
	// state is how applying the item ended.
	// +optional
	State ItemState `json:"state,omitempty"`
	// desiredState is the object applied with server-side apply.
	// +optional
	// +kubebuilder:pruning:PreserveUnknownFields
	DesiredState *runtime.RawExtension `json:"desiredState,omitempty"`
	// managedFields are the dot paths of the fields the item owns.
	// +optional
	// +listType=atomic
	ManagedFields []string `json:"managedFields,omitempty"`
}

// ApprovalRecord is the last approval of a plan revision.
type ApprovalRecord struct {
	// planHash is the plan revision approved.
	PlanHash string `json:"planHash"`
	// approvedBy is the user who approved.
	ApprovedBy string `json:"approvedBy"`
	// approvedAt is when the approval was made.
	ApprovedAt metav1.Time `json:"approvedAt"`
	// generation is the spec generation the approved plan was computed from.
	Generation int64 `json:"generation"`
	// itemsHash is the SHA-256 (lowercase hex) of the approved items: their
	// names, targets, operations and desired states. The controller writes
	// an item only while status.items still hash to it.
	// +optional
	ItemsHash string `json:"itemsHash,omitempty"`
	// uid is the VirtPlatformConfig the approved plan was computed for.
	// +optional
	UID types.UID `json:"uid,omitempty"`
	// policy is the ApprovalPolicy that approved the plan, when one did:
	// an item not yet written is written only while that policy, unchanged
	// (same UID and generation), still covers the config.
	// +optional
	Policy *ApprovalPolicyRef `json:"policy,omitempty"`
	// revert is true when the approved plan is the revert plan: once
	// written, nothing is managed and the config is Ignored until its spec
	// changes.
	// +optional
	Revert bool `json:"revert,omitempty"`
	// sequence counts the approvals of this config: each is one more than
	// the approval or abort before it. An abort ends only with an approval
	// of a higher sequence than the one it aborted, however close in time.
	// +optional
	Sequence int64 `json:"sequence,omitempty"`
	// gates are the gates in force between the steps of the approved
	// plan's MachineConfigPool rollouts, as its plan showed them: a
	// later spec change does not change them.
	// +optional
	Gates *PlanGates `json:"gates,omitempty"`
	// delegated is the fleet approval (spec.delegatedApproval) that
	// approved the plan, when one did: each is used at most once.
	// +optional
	Delegated *DelegatedApprovalRef `json:"delegated,omitempty"`
}

// AbortRecord is the abort of an approved plan.
type AbortRecord struct {
	// planHash is the approved plan revision that was aborted.
	PlanHash string `json:"planHash"`
	// abortedBy is the user who aborted it.
	AbortedBy string `json:"abortedBy"`
	// abortedAt is when it was aborted.
	AbortedAt metav1.Time `json:"abortedAt"`
	// written are the items written before the abort.
	// +optional
	// +listType=atomic
	Written []string `json:"written,omitempty"`
	// inFlight are the items whose write had started when the abort
	// landed: each may have been written.
	// +optional
	// +listType=atomic
	InFlight []string `json:"inFlight,omitempty"`
	// notWritten are the items the abort kept from being written.
	// +optional
	// +listType=atomic
	NotWritten []string `json:"notWritten,omitempty"`
	// approvalSequence is the sequence of the approval aborted: an
	// approval of a higher one ends the abort.
	// +optional
	ApprovalSequence int64 `json:"approvalSequence,omitempty"`
	// held are the MachineConfigs and KubeletConfigs of the aborted plan
	// that were written or being written: the MachineConfigPools that
	// render them stay paused until a plan is approved again or the config
	// is deleted, whatever its spec and items become meanwhile.
	// +optional
	// +listType=atomic
	Held []HeldConfig `json:"held,omitempty"`
}

// HeldConfig is a MachineConfig or KubeletConfig of an aborted plan, and
// what the pools that render it are found by.
type HeldConfig struct {
	// kind is MachineConfig or KubeletConfig.
	Kind string `json:"kind"`
	// name of the MachineConfig or KubeletConfig.
	Name string `json:"name"`
	// labels of a MachineConfig: the pools whose machineConfigSelector
	// selects them render it.
	// +optional
	Labels map[string]string `json:"labels,omitempty"`
	// machineConfigPoolSelector of a KubeletConfig: the pools it selects
	// render it.
	// +optional
	MachineConfigPoolSelector *metav1.LabelSelector `json:"machineConfigPoolSelector,omitempty"`
}

// ApprovalPolicyRef is an ApprovalPolicy as it was when it approved a plan.
type ApprovalPolicyRef struct {
	// name of the policy.
	Name string `json:"name"`
	// uid of the policy: one deleted and created again is another.
	UID types.UID `json:"uid"`
	// generation of the policy's spec that approved the plan.
	Generation int64 `json:"generation"`
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// VirtPlatformConfigList is a list of VirtPlatformConfigs.
type VirtPlatformConfigList struct {
	metav1.TypeMeta `json:",inline"`
	// +optional
	metav1.ListMeta `json:"metadata,omitempty"`

	Items []VirtPlatformConfig `json:"items"`
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// Plan is the live plan of a VirtPlatformConfig, computed at request time by
// GET .../virtplatformconfigs/{name}/plan. It is never stored.
type Plan struct {
	metav1.TypeMeta `json:",inline"`
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// status is the computed plan.
	// +optional
	Status PlanStatus `json:"status,omitempty"`
}

// PlanStatus is a computed plan.
type PlanStatus struct {
	// profile is the profile the plan was computed for.
	Profile string `json:"profile"`
	// generation is the VirtPlatformConfig generation the plan was computed from.
	Generation int64 `json:"generation"`
	// planHash identifies this plan revision; approve exactly this value.
	// +optional
	PlanHash string `json:"planHash,omitempty"`
	// impactSeverity is the highest impact of the items.
	// +optional
	ImpactSeverity Impact `json:"impactSeverity,omitempty"`
	// prerequisites are the APIs the profile needs; with any unsatisfied the plan has no items.
	// +optional
	// +listType=atomic
	Prerequisites []Prerequisite `json:"prerequisites,omitempty"`
	// items are the changes, in the order they are applied.
	// +optional
	// +listType=map
	// +listMapKey=name
	Items []PlanItem `json:"items,omitempty"`
	// warnings are findings that do not block the plan but deserve a look
	// before approving it (for example swap too small for the overcommit).
	// +optional
	// +listType=atomic
	Warnings []string `json:"warnings,omitempty"`
	// settings are the spec settings planHash binds besides the items.
	// +optional
	Settings PlanSettings `json:"settings,omitempty"`
	// readFrom says as of which resourceVersions the plan read the Nodes
	// and VirtualMachineInstances: the server serves plans from caches of
	// them (a VM as the server's watch last saw it); absent when they were
	// read live or not read. The check right before a drain reads them
	// live.
	// +optional
	ReadFrom *PlanReadFrom `json:"readFrom,omitempty"`
}

// PlanReadFrom are the resourceVersions of the server's caches a plan read
// the Nodes and VirtualMachineInstances from ("" for one read live).
type PlanReadFrom struct {
	// nodesResourceVersion is the resourceVersion of the Node cache.
	// +optional
	NodesResourceVersion string `json:"nodesResourceVersion,omitempty"`
	// virtualMachineInstancesResourceVersion is the resourceVersion of the
	// VirtualMachineInstance cache.
	// +optional
	VirtualMachineInstancesResourceVersion string `json:"virtualMachineInstancesResourceVersion,omitempty"`
}

// PlanSettings are the spec settings an approval of the plan approves.
type PlanSettings struct {
	// action is spec.action.
	// +optional
	Action PlanAction `json:"action,omitempty"`
	// failurePolicy is spec.failurePolicy, defaults resolved.
	// +optional
	FailurePolicy FailurePolicy `json:"failurePolicy,omitempty"`
	// bypassOptimisticLock is spec.bypassOptimisticLock; always present,
	// false included, so that a reader can tell false from not bound.
	BypassOptimisticLock bool `json:"bypassOptimisticLock"`
	// waitTimeout is spec.waitTimeout; empty waits without limit.
	// +optional
	WaitTimeout string `json:"waitTimeout,omitempty"`
	// allowBlockingDrains is spec.rollout.allowBlockingDrains; always
	// present, false included.
	AllowBlockingDrains bool `json:"allowBlockingDrains"`
	// gates are the gates in force between the steps of the plan's
	// MachineConfigPool rollouts, the server's defaults resolved; absent
	// when the plan rolls no pool.
	// +optional
	Gates *PlanGates `json:"gates,omitempty"`
}

// PlanGates are the gates in force for a plan's rollouts.
type PlanGates struct {
	NodeReadyTimeout    string `json:"nodeReadyTimeout"`
	MaxFailedMigrations int32  `json:"maxFailedMigrations"`
	Soak                string `json:"soak"`
	// alerts is the alert gate; absent when none is in force.
	// +optional
	Alerts *PlanAlertGate `json:"alerts,omitempty"`
}

// PlanAlertGate is the alert gate in force for a plan's rollouts.
type PlanAlertGate struct {
	// source is where the alerts are read: the API and its URL, or why
	// there is none.
	Source string `json:"source"`
	// +optional
	// +listType=atomic
	Matchers []string `json:"matchers,omitempty"`
	// +listType=atomic
	Ignore  []string        `json:"ignore"`
	OnError GateErrorPolicy `json:"onError"`
}

// Prerequisite is an API a profile needs.
type Prerequisite struct {
	Kind       string `json:"kind"`
	APIVersion string `json:"apiVersion"`
	// description says how to install it.
	// +optional
	Description string `json:"description,omitempty"`
	// satisfied is true when the API is served by the cluster.
	Satisfied bool `json:"satisfied"`
}

// PlanItem is one change of a plan.
type PlanItem struct {
	// name identifies the item within the profile.
	Name string `json:"name"`
	// targetRef is the object the item changes.
	TargetRef ObjectReference `json:"targetRef"`
	// operation is what applying the item does: Create, Update, Delete or None.
	// +optional
	Operation Operation `json:"operation,omitempty"`
	// impactSeverity is the disruption applying this item may cause.
	// +optional
	ImpactSeverity Impact `json:"impactSeverity,omitempty"`
	// message says what the item does.
	// +optional
	Message string `json:"message,omitempty"`
	// managedFields are the dot paths of the fields this item owns.
	// +optional
	// +listType=atomic
	ManagedFields []string `json:"managedFields,omitempty"`
	// desiredState is the object that would be applied with server-side apply.
	// +optional
	DesiredState *runtime.RawExtension `json:"desiredState,omitempty"`
	// diff is a unified diff of the live object against the server-side apply dry-run result.
	// +optional
	Diff string `json:"diff,omitempty"`
	// error says why the item could not be planned (for example the dry-run was rejected).
	// +optional
	Error string `json:"error,omitempty"`
	// reboots are the MachineConfigPools writing this MachineConfig item
	// rolls out, each node of each once.
	// +optional
	// +listType=atomic
	Reboots []PoolReboot `json:"reboots,omitempty"`
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// Approval approves exactly one plan revision of a VirtPlatformConfig
// (POST .../virtplatformconfigs/{name}/approve). It is never stored.
type Approval struct {
	metav1.TypeMeta `json:",inline"`
	// metadata.name, if set, must equal the VirtPlatformConfig name.
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec names the plan revision being approved.
	Spec ApprovalSpec `json:"spec"`
	// status is filled in by the server.
	// +optional
	Status ApprovalStatus `json:"status,omitempty"`
}

// ApprovalSpec names the plan revision being approved.
type ApprovalSpec struct {
	// planHash is status.planHash of the plan the caller reviewed.
	PlanHash string `json:"planHash"`
}

// ApprovalStatus records who approved what and when.
type ApprovalStatus struct {
	// +optional
	ApprovedBy string `json:"approvedBy,omitempty"`
	// +optional
	ApprovedAt *metav1.Time `json:"approvedAt,omitempty"`
	// +optional
	PlanHash string `json:"planHash,omitempty"`
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// Abort stops an approved plan of a VirtPlatformConfig (POST
// .../virtplatformconfigs/{name}/abort). It is never stored.
type Abort struct {
	metav1.TypeMeta `json:",inline"`
	// metadata.name, if set, must equal the VirtPlatformConfig name.
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec names the approved plan being aborted.
	// +optional
	Spec AbortSpec `json:"spec,omitempty"`
	// status is filled in by the server.
	// +optional
	Status AbortStatus `json:"status,omitempty"`
}

// AbortSpec names the approved plan being aborted.
type AbortSpec struct {
	// planHash, when set, must be the approved plan's hash
	// (status.approval.planHash): an abort meant for one plan never stops
	// another approved meanwhile.
	// +optional
	PlanHash string `json:"planHash,omitempty"`
}

// AbortStatus records who aborted what and when, and what was written.
type AbortStatus struct {
	// +optional
	AbortedBy string `json:"abortedBy,omitempty"`
	// +optional
	AbortedAt *metav1.Time `json:"abortedAt,omitempty"`
	// +optional
	PlanHash string `json:"planHash,omitempty"`
	// +optional
	// +listType=atomic
	Written []string `json:"written,omitempty"`
	// +optional
	// +listType=atomic
	InFlight []string `json:"inFlight,omitempty"`
	// +optional
	// +listType=atomic
	NotWritten []string `json:"notWritten,omitempty"`
}
