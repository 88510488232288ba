// Package controller is the embedded controller of virt-advisor: it drafts
// plans into status, applies approved plans with the plan engine, follows
// MachineConfigPool rollouts and reacts to changes of the objects it
// manages through watches. It runs in the API server process, on the
// replica that holds the leader Lease.
package controller

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"sync/atomic"
	"time"

	"github.com/kubevirt/virt-advisor/pkg/cluster"
	"github.com/kubevirt/virt-advisor/pkg/maintenance"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/kubevirt/virt-advisor/pkg/apis/advisor/v1alpha1"
	"github.com/kubevirt/virt-advisor/pkg/controller/pools"
	listers "github.com/kubevirt/virt-advisor/pkg/generated/listers/advisor/v1alpha1"
)

// Controller reconciles VirtPlatformConfigs. It keeps the queue, the
// lister and leader election, and dispatches each config to the step of
// the phase table its phase asks for: draft, progress (write and follow),
// check (drift), or the rollouts of a terminal phase (track). Each step
// is a type of its own holding only what it uses.
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
	// writes writes status and knows which events are of our own writes.
	writes *statusWrites
	// The steps of the phase table.
	drafter   *drafter
	progress  *progresser
	drift     *driftChecker
	follow    *follower
	approvals *approvals
	retries   *retries
	// leading is true while a term of leadership runs, its cache synced.
	leading atomic.Bool
}

// Leading is true while the controller leads and its cache of configs is
// synced: /metrics reports the configs from that cache then.
func (c *Controller) Leading() bool {
	return c.leading.Load()
}

// retryKey names an item of a config in retries.
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
	}
	c.writes = &statusWrites{status: cfg.Status, recorder: cfg.Recorder, metrics: cfg.Metrics, lister: c.lister}
	c.approvals = &approvals{ApprovalPolicies: cfg.ApprovalPolicies, windows: cfg.MaintenanceWindows, cluster: cfg.Cluster,
		clock: clk, distinct: cfg.RequireDistinctApprover, clusterName: cfg.ClusterName}
	c.pools = newPools(cfg, c.lister, clk, c.approvals.trustedWindows, c.wake)
	c.newSteps(clk)
	return c
}

// newSteps makes the steps of the phase table, each with what it uses.
func (c *Controller) newSteps(clk clock.Clock) {
	cfg := c.Config
	out := outcomes{clock: clk, profiles: cfg.Profiles, version: cfg.Version}
	c.retries = &retries{jitter: rand.Float64, deadline: cfg.TransientErrorDeadline, out: out}
	c.follow = &follower{pools: c.pools, seen: c.seen, out: out}
	c.drafter = &drafter{planner: cfg.Planner, metrics: cfg.Metrics, version: cfg.Version, approvals: c.approvals, follow: c.follow, out: out}
	c.drift = &driftChecker{planner: cfg.Planner, recorder: cfg.Recorder, metrics: cfg.Metrics, version: cfg.Version, approvals: c.approvals, out: out}
	w := &writer{planner: cfg.Planner, retries: c.retries, approvals: c.approvals, writes: c.writes, out: out,
		checks: &preWriteChecks{planner: cfg.Planner, stored: cfg.Status, writes: c.writes, out: out},
		gate:   &gate{pools: c.pools, seen: c.seen, confinement: cfg.Confinement, out: out}}
	c.progress = &progresser{write: w, follow: c.follow, approvals: c.approvals, metrics: cfg.Metrics, profiles: cfg.Profiles, out: out}
}

// newPools makes the pool controller over the same readers, informers
// and clock.
func newPools(cfg Config, lister listers.VirtPlatformConfigLister, clk clock.Clock,
	trusted func(*v1alpha1.VirtPlatformConfig) func(*maintenance.Window) bool, wake func(string)) *pools.Controller {
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
	return pools.New(pools.Config{
		Cluster: cfg.Cluster, Pauser: pauser, Drains: cfg.Planner, Windows: cfg.MaintenanceWindows, TrustedWindows: trusted,
		Configs: lister, ConfigInformer: cfg.Informer, ResyncOn: resyncOn,
		CoalesceWindow: cfg.CoalesceWindow, Recorder: cfg.Recorder, Metrics: cfg.Metrics, Clock: clk,
		Nodes: cfg.Nodes, Migrations: cfg.Migrations, VMIs: cfg.VMIs, OnNodeChange: cfg.OnNodeChange, Alerts: cfg.Alerts, Wake: wake,
	})
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
	log := klog.FromContext(ctx)
	le := c.LeaderElection
	if !le.LeaderElect {
		c.runLeader(ctx, workers)
		return
	}
	if c.LeaseClient == nil {
		log.Error(nil, "Leader election is enabled but there is no client for the Lease; the controller does not run")
		return
	}
	host, _ := os.Hostname()
	identity := host + "_" + string(uuid.NewUUID())
	lock, err := resourcelock.New(resourcelock.LeasesResourceLock, le.ResourceNamespace, le.ResourceName,
		c.LeaseClient.CoreV1(), c.LeaseClient.CoordinationV1(), resourcelock.ResourceLockConfig{Identity: identity, EventRecorder: c.Recorder})
	if err != nil {
		log.Error(err, "Cannot create the leader election lock; the controller does not run")
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
					log.Info("Became leader, starting the controller", "identity", identity)
					c.runLeader(ctx, workers)
				},
				OnStoppedLeading: func() { log.Info("Lost leadership, the controller stops", "identity", identity) },
				OnNewLeader: func(current string) {
					if current != identity {
						log.Info("Not the leader: standing by", "leader", current, "identity", identity)
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
	log := klog.FromContext(ctx)
	remove, err := c.addHandlers(log)
	defer remove()
	if err != nil {
		log.Error(err, "Cannot watch what the controller reconciles")
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
	log.Info("Controller started")
	// The pool controller: pool pauses a previous leader left behind are
	// ended there, from what the configs' status says.
	c.pools.Start(ctx)
	for i := 0; i < workers; i++ {
		go wait.UntilWithContext(ctx, c.worker, time.Second)
	}
	<-ctx.Done()
	log.Info("Controller stopped")
}

// addHandlers adds the controller's handlers to the shared informers: the
// configs, and the maintenance windows, CRDs and approval policies, after
// whose changes every config (and every pool, for the windows) is looked
// at again. remove removes those added, also after an error.
func (c *Controller) addHandlers(log klog.Logger) (remove func(), err error) {
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
		added = append(added, func() { removeHandler(log, informer, reg) })
		return nil
	}
	// A handler added to a synced informer is told of every config.
	if err := add(c.Informer, cache.ResourceEventHandlerFuncs{
		AddFunc: c.enqueue,
		UpdateFunc: func(_, obj interface{}) {
			if !c.writes.ownWrite(obj) {
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
	// kube-apiserver writes a policy's status (its type checking) a while
	// after the policy: that changes nothing of what it confines.
	for _, informer := range c.AdmissionInformers {
		if err := add(informer, specChanged(c.enqueueAll), "admission policies"); err != nil {
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

// specChanged calls fn on an object added or deleted, and on an update
// that changed its spec (its generation): not on one of its status only.
func specChanged(fn func()) cache.ResourceEventHandler {
	return cache.ResourceEventHandlerFuncs{
		AddFunc: func(interface{}) { fn() },
		UpdateFunc: func(old, obj interface{}) {
			o, okOld := old.(metav1.Object)
			n, okNew := obj.(metav1.Object)
			if !okOld || !okNew || o.GetGeneration() != n.GetGeneration() || o.GetGeneration() == 0 {
				fn()
			}
		},
		DeleteFunc: func(interface{}) { fn() },
	}
}

func removeHandler(log klog.Logger, informer cache.SharedInformer, reg cache.ResourceEventHandlerRegistration) {
	if err := informer.RemoveEventHandler(reg); err != nil {
		log.Error(err, "Cannot remove an event handler")
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
	log := klog.FromContext(ctx)
	start := c.clock.Now()
	requeueAfter, err := c.reconcile(ctx, name)
	if took := c.clock.Since(start); took > 200*time.Millisecond {
		log.Info("Slow reconcile", "config", name, "duration", took, "err", err)
	}
	switch {
	case apierrors.IsNotFound(err):
		c.queue.Forget(name) // deleted meanwhile
	case err != nil:
		switch {
		case errors.Is(err, errLookAgain):
			// No failure: this replica looks again with newer news.
			log.V(2).Info("Looking again", "config", name, "reason", err)
		case !apierrors.IsConflict(err):
			log.Error(err, "Reconciling failed, will retry", "config", name)
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
