package controller

import (
	"context"
	"time"

	componentbaseconfig "k8s.io/component-base/config"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"

	"github.com/kubevirt/virt-advisor/pkg/apis/advisor/v1alpha1"
	"github.com/kubevirt/virt-advisor/pkg/cluster"
	"github.com/kubevirt/virt-advisor/pkg/gates"
	"github.com/kubevirt/virt-advisor/pkg/kubevirt"
	"github.com/kubevirt/virt-advisor/pkg/maintenance"
	"github.com/kubevirt/virt-advisor/pkg/plan"
	"github.com/kubevirt/virt-advisor/pkg/profiles"
)

// Config is what the controller needs. The caller builds and starts the
// informers; the controller only adds its handlers while it leads.
type Config struct {
	// Informer is the shared informer of VirtPlatformConfigs, started by
	// the caller on every replica: a standby keeps its cache warm, so a
	// replica that becomes leader works at once.
	Informer cache.SharedIndexInformer
	// CRDs, if set, is a started informer on the metadata of
	// CustomResourceDefinitions: a CRD that appears or goes away changes
	// what can be planned and watched, so every config is looked at again.
	CRDs cache.SharedInformer
	// Status writes status; the server's status subresource refuses every
	// request, so this is the storage's in-process writer.
	Status StatusWriter
	// Planner computes, snapshots and applies plans (the plan engine).
	Planner Planner
	// Cluster reads the main cluster: MachineConfigPools, MachineConfigs,
	// the ClusterVersion.
	Cluster profiles.Cluster
	// Pools pauses and unpauses MachineConfigPools (one reboot per node).
	Pools PoolPauser
	// Watches tells the controller when an object a config depends on
	// changes.
	Watches Watcher
	// Kinds tells the controller when any object of a kind a profile
	// derives from changes (inputs with no name: the Nodes of a pool);
	// nil: only named inputs are followed.
	Kinds KindWatcher
	// Profiles are the profiles this build knows (*catalog.Catalog).
	Profiles Profiles
	Recorder record.EventRecorder
	// Metrics records what the controller measures; nil records nothing.
	Metrics Metrics
	// Clock is the real clock if nil.
	Clock clock.Clock
	// LeaderElection configures the Lease in the main cluster.
	LeaderElection componentbaseconfig.LeaderElectionConfiguration
	// LeaseClient renews the Lease; a client of its own, so that other
	// traffic cannot delay a renewal past the deadline.
	LeaseClient kubernetes.Interface
	// LeaseLabels are set on the Lease in every write that takes or
	// renews it (e.g. the leader's store, see package sharedstorage).
	LeaseLabels map[string]string
	// Version is reported in status.operatorVersion.
	Version string
	// RequireDistinctApprover keeps action Apply from approving by itself.
	RequireDistinctApprover bool
	// ClusterName is this cluster's name on a fleet's hub: a delegated
	// approval approves the plan hash it names for it ("": none).
	ClusterName string
	// Nodes reads the Nodes from a cache (the gates between the steps of
	// a rollout read them every StepPoll); nil: listed live.
	Nodes func(ctx context.Context) ([]unstructured.Unstructured, error)
	// Migrations are the live migrations of a cache (ok false until it
	// synced); nil: listed live.
	Migrations func() (migrations []cluster.Migration, ok bool)
	// VMIs are the VMIs of a cache (ok false until it synced).
	VMIs func() (vmis []kubevirt.VMI, ok bool)
	// OnNodeChange calls fn after a Node changed (the Node cache).
	OnNodeChange func(fn func()) (remove func(), err error)
	// Alerts reads the alerts firing now for the alert gate between the
	// steps of a pool's rollout; nil: the server reads none.
	Alerts func(ctx context.Context) ([]gates.Alert, error)
	// CoalesceWindow is how long pools stay paused after a MachineConfig
	// write so that further approved changes roll out with it; 0 disables.
	CoalesceWindow time.Duration
	// MaintenanceWindows lists the maintenance windows; nil: none, pools
	// roll out whenever an approved change is written.
	MaintenanceWindows maintenance.Lister
	// WindowInformer, when set, tells of changed maintenance windows: the
	// configs and the pool pauses are looked at again.
	WindowInformer cache.SharedInformer
	// TransientErrorDeadline is how long a write failing transiently is
	// retried when the config sets no waitTimeout; 0 means 10 minutes.
	TransientErrorDeadline time.Duration
	// ApprovalPolicies approve plans within their bounds (approvalpolicy.go).
	ApprovalPolicies
	// Confinement says whether the admission policies that confine the
	// server's writes of a kind are in force (pkg/confinement): no item
	// of a kind they confine is written, and no pool unpaused, until they
	// are. nil: not checked (tests of other things).
	Confinement Confinement
	// AdmissionInformers tell of changed admission policies and
	// bindings: the configs waiting for them are looked at again.
	AdmissionInformers []cache.SharedInformer
}

// Confinement is asked before every write to the main cluster
// (*apiserver's guard over pkg/confinement).
type Confinement interface {
	// Writable is nil when the admission policies that confine writes of
	// objects of gvk are in force; otherwise its error names those that
	// are not and what to do.
	Writable(gvk schema.GroupVersionKind) error
}

// StatusWriter writes the status of a config, failing with a conflict when
// cfg's resourceVersion is no longer the stored one.
type StatusWriter interface {
	UpdateStatus(ctx context.Context, cfg *v1alpha1.VirtPlatformConfig) (*v1alpha1.VirtPlatformConfig, error)
	// GetStored reads a config from storage (a quorum read, not the
	// informer's cache): what an approval is checked against before a write.
	GetStored(ctx context.Context, name string) (*v1alpha1.VirtPlatformConfig, error)
}

// PoolPauser server-side applies our fields of a MachineConfigPool, with
// our field manager: its pause and the pause's end, nothing else.
type PoolPauser interface {
	ApplyPool(ctx context.Context, pool *unstructured.Unstructured) error
}

// Planner is what the controller uses of the plan engine (*plan.Engine):
// the plan it reviews is computed and applied by the same code.
type Planner interface {
	// Compute returns the live plan of a config.
	Compute(ctx context.Context, cfg *v1alpha1.VirtPlatformConfig) (*plan.Result, error)
	// ReadTargets reads the live targets of the items, by item index, and
	// hashes their managed fields as Compute does.
	ReadTargets(ctx context.Context, items []v1alpha1.VirtPlatformConfigItem) (string, []plan.Target, error)
	// CheckTarget reads an approved item's live target and checks it
	// (CheckReadTarget); it returns the read, the write's precondition.
	CheckTarget(ctx context.Context, cfg *v1alpha1.VirtPlatformConfig, it *v1alpha1.VirtPlatformConfigItem, check plan.TargetCheck) (plan.Target, *unstructured.Unstructured, error)
	// CheckReadTarget returns a *plan.StaleTargetError when an approved
	// item's live target, as read, is no longer the one its plan was
	// computed against; on a check.Retry it returns the live target when
	// our earlier write made it.
	CheckReadTarget(cfg *v1alpha1.VirtPlatformConfig, it *v1alpha1.VirtPlatformConfigItem, live *unstructured.Unstructured, check plan.TargetCheck) (*unstructured.Unstructured, error)
	// ExpectedTarget is what the checks before an approved item's first
	// write will most likely read of its target, from a watch cache and
	// without a request; ok is false when nothing is expected.
	ExpectedTarget(cfg *v1alpha1.VirtPlatformConfig, it *v1alpha1.VirtPlatformConfigItem) (obj *unstructured.Unstructured, ok bool)
	// Apply writes one item to the main cluster, conditional on the read
	// its checks judged (at), and returns what it wrote.
	Apply(ctx context.Context, cfg *v1alpha1.VirtPlatformConfig, it v1alpha1.VirtPlatformConfigItem, at plan.Target) (*unstructured.Unstructured, error)
	// DrainImpact assesses an approved MachineConfig item from the live
	// cluster: per pool it rolls out on, the disruption and what draining
	// the nodes does to the VMs there now.
	DrainImpact(ctx context.Context, it *v1alpha1.VirtPlatformConfigItem) ([]v1alpha1.PoolReboot, error)
	// PendingDrainImpact assesses from the live cluster what resuming the
	// rollout of a paused MachineConfigPool does: the disruption of the
	// rendered config it rolls out and what draining its nodes does to the
	// VMs there now.
	PendingDrainImpact(ctx context.Context, pool *unstructured.Unstructured) ([]v1alpha1.PoolReboot, error)
	// DriftFromCaches compares applied items with their targets in the
	// watch caches, without dry-runs (watchdrift.go); decided is false
	// when only a full plan can tell.
	DriftFromCaches(ctx context.Context, cfg *v1alpha1.VirtPlatformConfig, applied []v1alpha1.VirtPlatformConfigItem) (drifted map[string][]string, decided bool, err error)
}

// Profiles is what the controller uses of the catalogue of profiles
// (*catalog.Catalog).
type Profiles interface {
	// Get returns the profile of that name.
	Get(name string) (profiles.Profile, bool)
	// ResolveOptions returns the options a config runs with, every
	// default applied.
	ResolveOptions(spec v1alpha1.VirtPlatformConfigSpec) v1alpha1.ProfileOptions
}

// Metrics is what the controller records (*metrics.Recorder).
type Metrics interface {
	// Approved counts an approval (action Apply).
	Approved()
	// PlanDuration records how long a plan computation of profile took.
	PlanDuration(profile string, d time.Duration)
	// ApplyDuration records the time from an approval to the last write
	// of its items.
	ApplyDuration(profile string, d time.Duration)
	// DriftDetected counts a transition into Drifted.
	DriftDetected(profile string)
	// DriftLatency records the time from the watch event of a changed
	// target to the Drifted status.
	DriftLatency(d time.Duration)
	// PoolWindows reports, per pool a maintenance window selects, the
	// seconds until it may be disrupted again; pools left out lose theirs.
	PoolWindows(opensIn map[string]float64)
	// RolloutsHalted reports the pools whose rollout a gate halts (pool to
	// gate), all of them.
	RolloutsHalted(halted map[string]string)
}

// noMetrics records nothing.
type noMetrics struct{}

func (noMetrics) Approved()                           {}
func (noMetrics) PlanDuration(string, time.Duration)  {}
func (noMetrics) ApplyDuration(string, time.Duration) {}
func (noMetrics) DriftDetected(string)                {}
func (noMetrics) DriftLatency(time.Duration)          {}
func (noMetrics) PoolWindows(map[string]float64)      {}
func (noMetrics) RolloutsHalted(map[string]string)    {}

// Watcher is what the controller uses of the watches on the main cluster
// (*cluster.Watches).
type Watcher interface {
	// Set declares the objects a config depends on.
	Set(config string, keys []cluster.ObjectKey)
	// Forget drops every watch of a config.
	Forget(config string)
	// OnEvent calls fn with the config whose object changed; nil stops.
	OnEvent(fn func(config string, key cluster.ObjectKey))
}

// KindWatcher is what the controller uses of the watches of whole kinds
// (*cluster.KindChanges).
type KindWatcher interface {
	// Watch starts watching a kind (again at the next call while it is
	// not served).
	Watch(gk schema.GroupKind)
	// OnChange calls fn with the kind of an object that changed; nil stops.
	OnChange(fn func(gk schema.GroupKind))
}
