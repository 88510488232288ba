// Package controller is the embedded controller of virt-advisor: it drafts
// plans into status, applies approved plans with the plan engine, follows
// MachineConfigPool rollouts and reacts to changes of the objects it
// manages through watches. It runs in the API server process, on the
// replica that holds the leader Lease.
package controller

import (
	"context"
	"os"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/metadata/metadatainformer"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"
	componentbaseconfig "k8s.io/component-base/config"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/kubevirt/virt-advisor/pkg/apis/advisor/v1alpha1"
	"github.com/kubevirt/virt-advisor/pkg/generated/clientset/versioned"
	"github.com/kubevirt/virt-advisor/pkg/generated/informers/externalversions"
	listers "github.com/kubevirt/virt-advisor/pkg/generated/listers/advisor/v1alpha1"
	"github.com/kubevirt/virt-advisor/pkg/metrics"
	"github.com/kubevirt/virt-advisor/pkg/plan"
	"github.com/kubevirt/virt-advisor/pkg/profiles/registry"
)

// Config is what the controller needs.
type Config struct {
	// Client reads our own API (the loopback client).
	Client versioned.Interface
	// Status writes status; the server's status subresource refuses every
	// request, so this is the storage's in-process writer.
	Status StatusWriter
	// Kube, Dynamic and Metadata reach the main cluster.
	Kube     kubernetes.Interface
	Dynamic  dynamic.Interface
	Metadata metadata.Interface
	Engine   *plan.Engine
	Profiles *registry.Registry
	Recorder record.EventRecorder
	// LeaderElection configures the Lease in the main cluster.
	LeaderElection componentbaseconfig.LeaderElectionConfiguration
	// LeaderElectionKube renews the Lease; a client of its own, so that
	// other traffic cannot delay a renewal past the deadline (Kube if nil).
	LeaderElectionKube kubernetes.Interface
	// Version is reported in status.operatorVersion.
	Version string
	// RequireDistinctApprover keeps action Apply from approving by itself.
	RequireDistinctApprover bool
	// CoalesceWindow is how long pools stay paused after a MachineConfig
	// write so that further approved changes roll out with it; 0 disables.
	CoalesceWindow time.Duration
}

// StatusWriter writes the status of a config, failing with a conflict when
// cfg's resourceVersion is no longer the stored one.
type StatusWriter interface {
	UpdateStatus(ctx context.Context, cfg *v1alpha1.VirtPlatformConfig) (*v1alpha1.VirtPlatformConfig, error)
}

// Controller reconciles VirtPlatformConfigs.
type Controller struct {
	Config
	// queue lives for one term of leadership.
	queue   workqueue.TypedRateLimitingInterface[string]
	lister  listers.VirtPlatformConfigLister
	watches *plan.Watches
	clock   clock.Clock
	// events records when a watch event was seen per config, for the
	// drift detection latency metric.
	events *eventTimes
	// pools are the MachineConfigPools each config's items roll out on.
	pools *rolloutPools
}

// New returns a controller.
func New(cfg Config) *Controller {
	return &Controller{Config: cfg, clock: clock.RealClock{}, events: newEventTimes(), pools: &rolloutPools{}}
}

// Run runs the controller until ctx ends: under leader election when
// enabled, re-entering the election after losing it, so a replica that lost
// its Lease keeps serving the API and stands by.
func (c *Controller) Run(ctx context.Context) {
	defer utilruntime.HandleCrash()
	le := c.LeaderElection
	if !le.LeaderElect {
		c.runLeader(ctx)
		return
	}
	host, _ := os.Hostname()
	identity := host + "_" + string(uuid.NewUUID())
	leaseClient := c.LeaderElectionKube
	if leaseClient == nil {
		leaseClient = c.Kube
	}
	lock, err := resourcelock.New(resourcelock.LeasesResourceLock, le.ResourceNamespace, le.ResourceName,
		leaseClient.CoreV1(), leaseClient.CoordinationV1(), resourcelock.ResourceLockConfig{Identity: identity, EventRecorder: c.Recorder})
	if err != nil {
		klog.ErrorS(err, "Cannot create the leader election lock; the controller does not run")
		return
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
					c.runLeader(ctx)
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

// runLeader starts the informers and workers and blocks until ctx ends.
func (c *Controller) runLeader(ctx context.Context) {
	c.queue = workqueue.NewTypedRateLimitingQueueWithConfig(
		workqueue.DefaultTypedControllerRateLimiter[string](),
		workqueue.TypedRateLimitingQueueConfig[string]{Name: "virtplatformconfigs"})
	defer c.queue.ShutDown()

	factory := externalversions.NewSharedInformerFactory(c.Client, 10*time.Minute)
	informer := factory.Advisor().V1alpha1().VirtPlatformConfigs()
	c.lister = informer.Lister()
	if _, err := informer.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    c.enqueue,
		UpdateFunc: func(_, obj interface{}) { c.enqueue(obj) },
		DeleteFunc: c.enqueue,
	}); err != nil {
		klog.ErrorS(err, "Cannot watch VirtPlatformConfigs")
		return
	}
	c.watches = c.Engine.Cluster.Watches
	c.watches.OnEvent(func(config string, _ plan.ObjectKey) {
		c.events.seen(config, c.clock.Now())
		c.queue.Add(config)
	})
	defer c.stopWatching()

	// A CRD that appears or goes away changes what can be planned and
	// watched: look at every config again.
	crds := metadatainformer.NewSharedInformerFactory(c.Metadata, 0)
	if _, err := crds.ForResource(crdGVR).Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(interface{}) { c.enqueueAll() },
		UpdateFunc: func(interface{}, interface{}) { c.enqueueAll() },
		DeleteFunc: func(interface{}) { c.enqueueAll() },
	}); err != nil {
		klog.ErrorS(err, "Cannot watch CustomResourceDefinitions")
		return
	}

	factory.Start(ctx.Done())
	crds.Start(ctx.Done())
	if !cache.WaitForCacheSync(ctx.Done(), informer.Informer().HasSynced) {
		return
	}
	// /metrics reports the configs from this cache while we lead.
	metrics.SetConfigLister(c.lister)
	defer metrics.SetConfigLister(nil)
	klog.InfoS("Controller started")
	// Pool pauses a previous leader left behind are ended here.
	c.queue.Add(windowsKey)
	for i := 0; i < 2; i++ {
		go wait.UntilWithContext(ctx, c.worker, time.Second)
	}
	<-ctx.Done()
	klog.InfoS("Controller stopped")
}

// stopWatching drops the controller's watches when it stops leading; the
// plan engine's input watches stay.
func (c *Controller) stopWatching() {
	c.watches.OnEvent(nil)
	if configs, err := c.lister.List(everything); err == nil {
		for _, cfg := range configs {
			c.watches.Forget(cfg.Name)
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

func (c *Controller) enqueueAll() {
	configs, err := c.lister.List(everything)
	if err != nil {
		return
	}
	for _, cfg := range configs {
		c.queue.Add(cfg.Name)
		// The engine's own CRD watch (discovery, CRD cache) may see the
		// event after this one: look again once it has.
		c.queue.AddAfter(cfg.Name, crdSettle)
	}
}

// crdSettle is how long after a CRD event configs are looked at again.
const crdSettle = time.Second

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
	var requeueAfter time.Duration
	var err error
	if name == windowsKey {
		requeueAfter, err = c.finishWindows(ctx)
	} else {
		requeueAfter, err = c.reconcile(ctx, name)
	}
	if took := c.clock.Since(start); took > 200*time.Millisecond {
		klog.InfoS("Slow reconcile", "config", name, "duration", took, "err", err)
	}
	switch {
	case apierrors.IsNotFound(err):
		c.queue.Forget(name) // deleted meanwhile
	case err != nil:
		if !apierrors.IsConflict(err) {
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
