// Package controller is the embedded controller of virt-advisor: it drafts
// plans into status, applies approved plans with the plan engine, follows
// MachineConfigPool rollouts and reacts to changes of the objects it
// manages through watches. It runs in the API server process, on the
// replica that holds the leader Lease.
package controller

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/kubevirt/virt-advisor/pkg/cluster"
	"github.com/kubevirt/virt-advisor/pkg/maintenance"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apiserver/pkg/storage"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"
	componentbaseconfig "k8s.io/component-base/config"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/kubevirt/virt-advisor/pkg/apis/advisor/v1alpha1"
	"github.com/kubevirt/virt-advisor/pkg/controller/pools"
	listers "github.com/kubevirt/virt-advisor/pkg/generated/listers/advisor/v1alpha1"
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
}

// noMetrics records nothing.
type noMetrics struct{}

func (noMetrics) Approved()                           {}
func (noMetrics) PlanDuration(string, time.Duration)  {}
func (noMetrics) ApplyDuration(string, time.Duration) {}
func (noMetrics) DriftDetected(string)                {}
func (noMetrics) DriftLatency(time.Duration)          {}
func (noMetrics) PoolWindows(map[string]float64)      {}

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

// Controller reconciles VirtPlatformConfigs.
type Controller struct {
	Config
	// queue (configs) lives for one term of leadership.
	queue  workqueue.TypedRateLimitingInterface[string]
	lister listers.VirtPlatformConfigLister
	clock  clock.Clock
	// events records when a watch event was seen per config, for the
	// drift detection latency metric.
	events *eventTimes
	// objects records which objects' watch events came per config (drift
	// from the watch).
	objects *objectEvents
	// pools is the pool controller: it answers whether an item may write
	// to its pools now and how far it rolled out, and owns every pause.
	pools *pools.Controller
	// seen are, per config, the pools its items were evaluated on
	// (watched).
	seen *seenPools
	// ownWrites is, per config, the resourceVersion of the controller's
	// last status write that needs no further reconcile: its watch event
	// is dropped instead of planning again for nothing, unless a
	// reconcile read the cache before it held the write (see cached).
	ownWrites sync.Map
	// writing is, per config, the status write in flight that will need
	// no further reconcile (a pendingWrite): its watch event can come
	// before the write's answer, and before ownWrites holds its
	// resourceVersion.
	writing sync.Map
	// retryAt is when each item retrying a write may be tried again, so
	// that no event (the status write that says it retries, a pool's)
	// brings the attempt forward. Kept in memory: a new leader tries at once.
	retryAt sync.Map // retryKey -> time.Time
	// jitter spreads retries (a number in [0, 1)); tests fix it.
	jitter func() float64
	// leading is true while a term of leadership runs, its cache synced.
	leading atomic.Bool
}

// Leading is true while the controller leads and its cache of configs is
// synced: /metrics reports the configs from that cache then.
func (c *Controller) Leading() bool {
	return c.leading.Load()
}

// retryKey names an item of a config in retryAt.
type retryKey struct{ config, item string }

// New returns a controller reading configs from cfg.Informer's cache.
func New(cfg Config) *Controller {
	clk := cfg.Clock
	if clk == nil {
		clk = clock.RealClock{}
	}
	if cfg.Metrics == nil {
		cfg.Metrics = noMetrics{}
	}
	c := &Controller{
		Config:  cfg,
		lister:  listers.NewVirtPlatformConfigLister(cfg.Informer.GetIndexer()),
		clock:   clk,
		events:  newEventTimes(),
		objects: newObjectEvents(),
		seen:    newSeenPools(),
		jitter:  rand.Float64,
	}
	var pauser pools.Pauser = cfg.Pools
	if cfg.Confinement != nil {
		pauser = confinedPauser{pauser: cfg.Pools, confinement: cfg.Confinement}
	}
	// The pools are looked at again when the windows change, and when the
	// admission policies an unpause may wait for do.
	var resyncOn []cache.SharedInformer
	if cfg.WindowInformer != nil {
		resyncOn = append(resyncOn, cfg.WindowInformer)
	}
	resyncOn = append(resyncOn, cfg.AdmissionInformers...)
	c.pools = pools.New(pools.Config{
		Cluster: cfg.Cluster, Pauser: pauser, Drains: cfg.Planner, Windows: cfg.MaintenanceWindows, TrustedWindows: c.trustedWindows,
		Configs: c.lister, ConfigInformer: cfg.Informer, ResyncOn: resyncOn,
		CoalesceWindow: cfg.CoalesceWindow, Recorder: cfg.Recorder, Metrics: cfg.Metrics, Clock: clk,
		Wake: c.wake,
	})
	return c
}

// wake looks at a config again (while leading).
func (c *Controller) wake(config string) {
	if c.queue != nil {
		c.queue.Add(config)
	}
}

// Run runs the controller with that many workers until ctx ends: under
// leader election when enabled, re-entering the election after losing it,
// so a replica that lost its Lease keeps serving the API and stands by.
func (c *Controller) Run(ctx context.Context, workers int) {
	defer utilruntime.HandleCrash()
	le := c.LeaderElection
	if !le.LeaderElect {
		c.runLeader(ctx, workers)
		return
	}
	if c.LeaseClient == nil {
		klog.ErrorS(nil, "Leader election is enabled but there is no client for the Lease; the controller does not run")
		return
	}
	host, _ := os.Hostname()
	identity := host + "_" + string(uuid.NewUUID())
	lock, err := resourcelock.New(resourcelock.LeasesResourceLock, le.ResourceNamespace, le.ResourceName,
		c.LeaseClient.CoreV1(), c.LeaseClient.CoordinationV1(), resourcelock.ResourceLockConfig{Identity: identity, EventRecorder: c.Recorder})
	if err != nil {
		klog.ErrorS(err, "Cannot create the leader election lock; the controller does not run")
		return
	}
	if ll, ok := lock.(*resourcelock.LeaseLock); ok {
		ll.Labels = c.LeaseLabels
	}
	for ctx.Err() == nil {
		leaderelection.RunOrDie(ctx, leaderelection.LeaderElectionConfig{
			Lock:            lock,
			LeaseDuration:   le.LeaseDuration.Duration,
			RenewDeadline:   le.RenewDeadline.Duration,
			RetryPeriod:     le.RetryPeriod.Duration,
			ReleaseOnCancel: true,
			Name:            "virt-advisor-controller",
			Callbacks: leaderelection.LeaderCallbacks{
				OnStartedLeading: func(ctx context.Context) {
					klog.InfoS("Became leader, starting the controller", "identity", identity)
					c.runLeader(ctx, workers)
				},
				OnStoppedLeading: func() { klog.InfoS("Lost leadership, the controller stops", "identity", identity) },
				OnNewLeader: func(current string) {
					if current != identity {
						klog.InfoS("Not the leader: standing by", "leader", current, "identity", identity)
					}
				},
			},
		})
		// Lost the Lease: wait a little, then run for it again.
		select {
		case <-ctx.Done():
		case <-time.After(le.RetryPeriod.Duration):
		}
	}
}

// runLeader runs one term of leadership: a new queue, the controller's
// handlers on the shared informers and its watch hook, and the workers,
// until ctx ends; then the handlers and the hook are removed again.
func (c *Controller) runLeader(ctx context.Context, workers int) {
	c.queue = workqueue.NewTypedRateLimitingQueueWithConfig(
		workqueue.DefaultTypedControllerRateLimiter[string](),
		workqueue.TypedRateLimitingQueueConfig[string]{Name: "virtplatformconfigs"})
	defer c.queue.ShutDown()

	// The caller waited already; this only guards a caller that did not.
	if !cache.WaitForCacheSync(ctx.Done(), c.Informer.HasSynced) {
		return
	}
	remove, err := c.addHandlers()
	defer remove()
	if err != nil {
		klog.ErrorS(err, "Cannot watch what the controller reconciles")
		return
	}
	c.Watches.OnEvent(func(config string, key cluster.ObjectKey) {
		c.events.seen(config, c.clock.Now())
		c.objects.seen(config, key)
		c.queue.Add(config)
	})
	if c.Kinds != nil {
		c.Kinds.OnChange(c.enqueueDependents)
	}
	defer c.stopWatching()

	// /metrics reports the configs from this cache while we lead.
	c.leading.Store(true)
	defer c.leading.Store(false)
	klog.InfoS("Controller started")
	// The pool controller: pool pauses a previous leader left behind are
	// ended there, from what the configs' status says.
	c.pools.Start(ctx)
	for i := 0; i < workers; i++ {
		go wait.UntilWithContext(ctx, c.worker, time.Second)
	}
	<-ctx.Done()
	klog.InfoS("Controller stopped")
}

// addHandlers adds the controller's handlers to the shared informers: the
// configs, and the maintenance windows, CRDs and approval policies, after
// whose changes every config (and every pool, for the windows) is looked
// at again. remove removes those added, also after an error.
func (c *Controller) addHandlers() (remove func(), err error) {
	var added []func()
	remove = func() {
		for _, r := range added {
			r()
		}
	}
	add := func(informer cache.SharedInformer, h cache.ResourceEventHandler, what string) error {
		reg, err := informer.AddEventHandler(h)
		if err != nil {
			return fmt.Errorf("watching %s: %w", what, err)
		}
		added = append(added, func() { removeHandler(informer, reg) })
		return nil
	}
	// A handler added to a synced informer is told of every config.
	if err := add(c.Informer, cache.ResourceEventHandlerFuncs{
		AddFunc: c.enqueue,
		UpdateFunc: func(_, obj interface{}) {
			if !c.ownWrite(obj) {
				c.enqueue(obj)
			}
		},
		DeleteFunc: c.enqueue,
	}, "VirtPlatformConfigs"); err != nil {
		return remove, err
	}
	if c.WindowInformer != nil {
		if err := add(c.WindowInformer, anyChange(c.enqueueAll), "MaintenanceWindows"); err != nil {
			return remove, err
		}
	}
	if c.CRDs != nil {
		if err := add(c.CRDs, anyChange(c.enqueueAll), "CustomResourceDefinitions"); err != nil {
			return remove, err
		}
	}
	// A policy that changes may approve, or stop approving, any plan.
	if c.PolicyInformer != nil {
		if err := add(c.PolicyInformer, anyChange(c.enqueueAll), "ApprovalPolicies"); err != nil {
			return remove, err
		}
	}
	// An admission policy restored lets the writes waiting for it go on.
	for _, informer := range c.AdmissionInformers {
		if err := add(informer, anyChange(c.enqueueAll), "admission policies"); err != nil {
			return remove, err
		}
	}
	return remove, nil
}

// anyChange calls fn on every event.
func anyChange(fn func()) cache.ResourceEventHandler {
	return cache.ResourceEventHandlerFuncs{
		AddFunc:    func(interface{}) { fn() },
		UpdateFunc: func(interface{}, interface{}) { fn() },
		DeleteFunc: func(interface{}) { fn() },
	}
}

func removeHandler(informer cache.SharedInformer, reg cache.ResourceEventHandlerRegistration) {
	if err := informer.RemoveEventHandler(reg); err != nil {
		klog.ErrorS(err, "Cannot remove an event handler")
	}
}

// stopWatching drops the controller's watches when it stops leading; the
// plan engine's input watches stay.
func (c *Controller) stopWatching() {
	c.Watches.OnEvent(nil)
	if c.Kinds != nil {
		c.Kinds.OnChange(nil)
	}
	if configs, err := c.lister.List(everything); err == nil {
		for _, cfg := range configs {
			c.Watches.Forget(cfg.Name)
		}
	}
}

// ownWrite is true for the event of a status write of ours after which
// there was nothing left to do (see writeStatus).
func (c *Controller) ownWrite(obj interface{}) bool {
	cfg, ok := obj.(*v1alpha1.VirtPlatformConfig)
	if !ok {
		return false
	}
	if rv, ok := c.ownWrites.Load(cfg.Name); ok && rv == cfg.ResourceVersion {
		return true
	}
	w, ok := c.writing.Load(cfg.Name)
	return ok && w.(pendingWrite).is(cfg)
}

// pendingWrite is a status write in flight: the status written on the
// config of that generation and resourceVersion.
type pendingWrite struct {
	generation      int64
	resourceVersion string
	// stored is the status as storage will hold it (times in seconds, as
	// serialized); made only when an event comes during the write, which
	// is rare, rather than before every write (nil: it cannot be).
	stored func() *v1alpha1.VirtPlatformConfigStatus
}

// newPendingWrite is the write of cfg's status.
func newPendingWrite(cfg *v1alpha1.VirtPlatformConfig) pendingWrite {
	written := cfg.Status.DeepCopy()
	return pendingWrite{generation: cfg.Generation, resourceVersion: cfg.ResourceVersion,
		stored: sync.OnceValue(func() *v1alpha1.VirtPlatformConfigStatus {
			raw, err := json.Marshal(written)
			if err != nil {
				return nil
			}
			st := &v1alpha1.VirtPlatformConfigStatus{}
			if err := json.Unmarshal(raw, st); err != nil {
				return nil
			}
			return st
		})}
}

// is true for the config that write leads to: the next version of the
// same spec with exactly that status.
func (w pendingWrite) is(cfg *v1alpha1.VirtPlatformConfig) bool {
	if cfg.Generation != w.generation || cfg.ResourceVersion == w.resourceVersion {
		return false
	}
	st := w.stored()
	return st != nil && apiequality.Semantic.DeepEqual(&cfg.Status, st)
}

// cached reads a config from the informer's cache for a reconcile. A
// cache that does not hold the controller's last status write yet (its
// event still on the way, behind a target's) is behind storage: the read
// returns errCacheBehind, and that write's event, no longer dropped as our
// own, brings the config back. (Deciding from the older object would
// check and write on old news, be refused by storage and take the watch
// events meant for the next reconcile.) The mark is dropped before the
// read: an event the handler dropped before that was in the cache already
// (an informer updates its cache before it tells its handlers), so the
// read sees the write.
func (c *Controller) cached(name string) (*v1alpha1.VirtPlatformConfig, error) {
	own, marked := c.ownWrites.LoadAndDelete(name)
	cfg, err := c.lister.Get(name)
	if !marked || err != nil {
		return cfg, err
	}
	switch {
	case cfg.ResourceVersion == own:
		// The cache holds the write: its event still needs no reconcile.
		c.ownWrites.LoadOrStore(name, own)
	case olderThan(cfg.ResourceVersion, own.(string)):
		return nil, errCacheBehind
	}
	return cfg, nil
}

// errCacheBehind: the informer's cache does not hold the controller's last
// status write of the config yet.
var errCacheBehind = errors.New("the cache is behind the controller's last status write")

// olderThan is true when resourceVersion rv comes before own. Both are
// revisions of the server's own storage, which the server may compare
// (clients may not: to them a resourceVersion is opaque).
func olderThan(rv, own string) bool {
	if rv == "" || own == "" {
		return false // the versioner reads "" as 0
	}
	var versioner storage.APIObjectVersioner
	a, errA := versioner.ParseResourceVersion(rv)
	b, errB := versioner.ParseResourceVersion(own)
	return errA == nil && errB == nil && a < b
}

func (c *Controller) enqueue(obj interface{}) {
	if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = d.Obj
	}
	if cfg, ok := obj.(*v1alpha1.VirtPlatformConfig); ok {
		c.queue.Add(cfg.Name)
	}
}

// enqueueDependents enqueues the configs whose profile derives from every
// object of the kind: one changed (a node joined a pool). Their plan is
// computed again; it asks for a review only when what is derived changed.
func (c *Controller) enqueueDependents(gk schema.GroupKind) {
	configs, err := c.lister.List(everything)
	if err != nil {
		return
	}
	for _, cfg := range configs {
		profile, ok := c.Profiles.Get(cfg.Spec.Profile)
		if !ok || cfg.Spec.Action == v1alpha1.PlanActionIgnore {
			continue
		}
		for _, in := range profile.InputObjects(c.Profiles.ResolveOptions(cfg.Spec)) {
			if in.Name == "" && in.GVK.GroupKind() == gk {
				c.queue.Add(cfg.Name)
				break
			}
		}
	}
}

func (c *Controller) enqueueAll() {
	configs, err := c.lister.List(everything)
	if err != nil {
		return
	}
	for _, cfg := range configs {
		c.queue.Add(cfg.Name)
		// The engine's own CRD watch (discovery, CRD cache) may see the
		// event after this one, and the server's discovery lag behind it:
		// look again once both have.
		c.queue.AddAfter(cfg.Name, cluster.DiscoverySettle)
	}
}

func (c *Controller) worker(ctx context.Context) {
	for c.processNext(ctx) {
	}
}

func (c *Controller) processNext(ctx context.Context) bool {
	name, quit := c.queue.Get()
	if quit {
		return false
	}
	defer c.queue.Done(name)
	start := c.clock.Now()
	requeueAfter, err := c.reconcile(ctx, name)
	if took := c.clock.Since(start); took > 200*time.Millisecond {
		klog.InfoS("Slow reconcile", "config", name, "duration", took, "err", err)
	}
	switch {
	case apierrors.IsNotFound(err):
		c.queue.Forget(name) // deleted meanwhile
	case err != nil:
		switch {
		case errors.Is(err, errLookAgain):
			// No failure: this replica looks again with newer news.
			klog.V(2).InfoS("Looking again", "config", name, "reason", err)
		case !apierrors.IsConflict(err):
			klog.ErrorS(err, "Reconciling failed, will retry", "config", name)
		}
		c.queue.AddRateLimited(name)
	default:
		c.queue.Forget(name)
		if requeueAfter > 0 {
			c.queue.AddAfter(name, requeueAfter)
		}
	}
	return true
}

// PauseAborted is the abort's (pkg/registry) way to the pool controller:
// it pauses, before an abort is answered, the pools the aborted plan of
// cfg (as stored) was rolling out on; the pool controller holds them
// paused while cfg's status.abort says so.
func (c *Controller) PauseAborted(ctx context.Context, cfg *v1alpha1.VirtPlatformConfig) error {
	return c.pools.PauseAborted(ctx, cfg)
}
