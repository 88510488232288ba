// Package fakemco is a fake MachineConfig operator: the test double behind MachineConfigPool
// rollouts in `make run` and the e2e suite. It does what the MCO's render
// and node controllers report through the API (artifacts/crds, the
// "How the MachineConfig operator reports a rollout" notes):
//
//  1. render: when the MachineConfigs a pool selects change, after
//     RenderDelay it creates the rendered MachineConfig
//     rendered-<pool>-<hash> and writes the pool's spec.configuration
//     (server-side apply as machine-config-controller);
//  2. nodes: when spec.configuration differs from what the nodes run, it
//     walks status (via /status) one node per StepTime: Updating=True,
//     updatedMachineCount 0..n, and only at n copies spec.configuration
//     into status.configuration with Updated=True;
//  3. spec.paused stops the walk ("Pool is paused; will not update to …")
//     after the node in flight, if any, is done,
//     and the annotation DegradedAnnotation="true" reports a
//     degraded node and stops it too;
//  4. a pool annotated StepNodesAnnotation="true" (or every pool, with
//     Options.StepNodes) is instead rolled out over the Nodes its
//     nodeSelector selects, through the Machine Config daemon's node
//     annotations, spec.maxUnavailable at a time, its status counted off
//     the nodes (nodes.go); failures are injected per Node
//     (NotReadyAfterRebootAnnotation, DegradeAfterRebootAnnotation), not
//     with DegradedAnnotation.
//
// Everything is driven by informer events and per-pool timers (the next
// render or node step); nothing polls the API.

package fakemco

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/retry"
	"k8s.io/client-go/util/workqueue"

	"github.com/kubevirt/virt-advisor/test/names"
)

const (
	// DegradedAnnotation set to "true" on a MachineConfigPool makes
	// the fake MCO report one degraded node (degradedMachineCount 1,
	// Degraded=True, NodeDegraded=True) and stop the pool's rollout where
	// it is. Removing it (or any other value) resumes the rollout.
	DegradedAnnotation = "fake-mco.virt-advisor.io/degraded"
	// MachinesAnnotation on a MachineConfigPool sets how many
	// machines the fake MCO reports for it (default: status.machineCount,
	// else 3), so that tests can add pools of any size.
	MachinesAnnotation = "fake-mco.virt-advisor.io/machines"
	// StepTimeAnnotation on a MachineConfigPool sets how long each
	// of its nodes takes to update (a Go duration; default StepTime), so
	// that one pool can roll out slower than another.
	StepTimeAnnotation = "fake-mco.virt-advisor.io/step-time"
	// DegradedMessage is what the degraded node reports.
	DegradedMessage = "injected failure"

	// DefaultRenderDelay and DefaultStepTime are the timings of
	// `make run`; Options' zero values select them.
	DefaultRenderDelay = 5 * time.Second
	DefaultStepTime    = 2 * time.Second

	// fakeMCOInputsAnnotation on a rendered MachineConfig records the hash
	// of the MachineConfigs it was rendered from.
	fakeMCOInputsAnnotation = "fake-mco.virt-advisor.io/inputs-hash"
	// generatedByAnnotation marks rendered MachineConfigs as the MCO does.
	generatedByAnnotation = "machineconfiguration.openshift.io/generated-by-controller-version"
	generatedByValue      = "fake-mco"

	mcoAPIVersion  = "machineconfiguration.openshift.io/v1"
	renderedPrefix = "rendered-"
	mcCRDName      = "machineconfigs.machineconfiguration.openshift.io"
	mcpCRDName     = "machineconfigpools.machineconfiguration.openshift.io"

	// syncTimeout bounds how long Start waits for its caches.
	syncTimeout = 30 * time.Second
)

var (
	mcGVR   = names.MachineConfigs
	poolGVR = names.MachineConfigPools
	crdGVR  = names.CRDs
)

const mcoFieldManager = names.MCOFieldManager

// Options tunes the fake MachineConfig operator.
type Options struct {
	// RenderDelay is how long after a change of its MachineConfigs a pool's
	// spec.configuration is rewritten (default DefaultRenderDelay, 5 s).
	RenderDelay time.Duration
	// StepTime is how long each node takes to update (default
	// DefaultStepTime, 2 s): a pool of 3 rolls out in 3 steps.
	StepTime time.Duration
	// Log receives a line per render and per status step; nil discards
	// them. The environment always writes Dir/logs/fake-mco.log as well.
	Log io.Writer
	// StepNodes rolls every pool out over its Nodes (nodes.go), as
	// StepNodesAnnotation does for one pool.
	StepNodes bool

	counts *rolloutCounts
}

// Rollouts is what the fake MCO did to one pool since it started, so that
// tests can count reboots.
type Rollouts struct {
	// Renders counts the writes of a new spec.configuration.
	Renders int
	// Rollouts counts the rollouts started: nodes set moving to a rendered
	// config they do not run.
	Rollouts int
	// NodeUpdates is, per node, how many times it was updated (rebooted).
	NodeUpdates []int
}

// rolloutCounts keeps Rollouts per pool.
type rolloutCounts struct {
	mu    sync.Mutex
	pools map[string]*Rollouts
}

func (r *rolloutCounts) update(pool string, f func(*Rollouts)) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.pools == nil {
		r.pools = map[string]*Rollouts{}
	}
	if r.pools[pool] == nil {
		r.pools[pool] = &Rollouts{}
	}
	f(r.pools[pool])
}

func (r *rolloutCounts) get(pool string) Rollouts {
	r.mu.Lock()
	defer r.mu.Unlock()
	if p := r.pools[pool]; p != nil {
		return Rollouts{Renders: p.Renders, Rollouts: p.Rollouts, NodeUpdates: slices.Clone(p.NodeUpdates)}
	}
	return Rollouts{}
}

// countWalk records a step of a pool's node walk from prev to next: a
// rollout is counted when its first node is updated (targets replaced
// while the pool is paused update no node).
func (r *rolloutCounts) countWalk(pool string, prev, next walk, machines int64) {
	from := prev.Updated
	if next.Target != prev.Target {
		if prev.Target == "" && next.Updated >= machines {
			return // adopted as it is: nothing rolled out
		}
		from = 0
	}
	if next.Target == "" || next.Updated <= from {
		return
	}
	r.update(pool, func(c *Rollouts) {
		if from == 0 {
			c.Rollouts++
		}
		for node := from; node < next.Updated; node++ {
			for int64(len(c.NodeUpdates)) <= node {
				c.NodeUpdates = append(c.NodeUpdates, 0)
			}
			c.NodeUpdates[node]++
		}
	})
}

// Operator is a running fake MachineConfig operator.
type Operator struct {
	stop   func()
	counts *rolloutCounts
}

// Stop stops it and waits for every goroutine and timer.
func (o *Operator) Stop() { o.stop() }

// Rollouts reports what it did to a pool since it started.
func (o *Operator) Rollouts(pool string) Rollouts { return o.counts.get(pool) }

func (o Options) withDefaults() Options {
	if o.RenderDelay <= 0 {
		o.RenderDelay = DefaultRenderDelay
	}
	if o.StepTime <= 0 {
		o.StepTime = DefaultStepTime
	}
	if o.Log == nil {
		o.Log = io.Discard
	}
	if o.counts == nil {
		o.counts = &rolloutCounts{}
	}
	return o
}

// Start runs the fake MachineConfig operator against cfg until ctx ends
// or Stop is called. It
// returns once its caches are synced (or once it knows the MachineConfig
// CRDs are missing: it then idles until they appear).
func Start(ctx context.Context, cfg *rest.Config, o Options) (*Operator, error) {
	o = o.withDefaults()
	watchCfg := rest.CopyConfig(cfg)
	watchCfg.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		return waitWhileRefused{next: rt, every: 100 * time.Millisecond}
	})
	watch, err := dynamic.NewForConfig(watchCfg)
	if err != nil {
		return nil, fmt.Errorf("fake MCO: dynamic client: %w", err)
	}
	// No request but a watch waits longer than requestTimeout: a write in
	// flight while a test stops etcd would otherwise hold the one worker
	// of the pools until kube-apiserver's own timeout (60 s), and no pool
	// would render meanwhile.
	bounded := rest.CopyConfig(cfg)
	bounded.Timeout = requestTimeout
	dyn, err := dynamic.NewForConfig(bounded)
	if err != nil {
		return nil, fmt.Errorf("fake MCO: dynamic client: %w", err)
	}
	ctx, cancel := context.WithCancel(ctx)
	m := &fakeMCO{dyn: dyn, watch: watch, o: o}

	// The CRDs are watched so the operator idles while they are missing
	// (a test may delete them) and starts once they are Established.
	crdFactory := dynamicinformer.NewDynamicSharedInformerFactory(watch, 0)
	crdInf := crdFactory.ForResource(crdGVR).Informer()
	kick := make(chan struct{}, 1)
	notify := func() {
		select {
		case kick <- struct{}{}:
		default:
		}
	}
	if _, err := crdInf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { notify() },
		UpdateFunc: func(any, any) { notify() },
		DeleteFunc: func(any) { notify() },
	}); err != nil {
		cancel()
		return nil, fmt.Errorf("fake MCO: %w", err)
	}
	crdFactory.Start(ctx.Done())

	var wg sync.WaitGroup
	stop := sync.OnceFunc(func() {
		cancel()
		wg.Wait()
		crdFactory.Shutdown()
	})

	syncCtx, syncCancel := context.WithTimeout(ctx, syncTimeout)
	defer syncCancel()
	if !cache.WaitForCacheSync(syncCtx.Done(), crdInf.HasSynced) {
		stop()
		return nil, fmt.Errorf("fake MCO: CustomResourceDefinitions not synced within %s", syncTimeout)
	}
	ready := make(chan struct{})
	wg.Go(func() { m.manage(ctx, crdInf.GetStore(), kick, sync.OnceFunc(func() { close(ready) })) })
	select {
	case <-ready:
		return &Operator{stop: stop, counts: o.counts}, nil
	case <-syncCtx.Done():
		stop()
		return nil, fmt.Errorf("fake MCO: MachineConfig caches not synced within %s", syncTimeout)
	}
}

// fakeMCO is the operator: it runs a poolController while both CRDs are
// Established.
// requestTimeout bounds each request of the fake MCO's but its watches.
const requestTimeout = 10 * time.Second

type fakeMCO struct {
	// dyn makes the requests (bounded by requestTimeout); watch feeds the
	// informers (a watch lasts).
	dyn, watch dynamic.Interface
	o          Options
	logMu      sync.Mutex
}

func (m *fakeMCO) logf(format string, args ...any) {
	m.logMu.Lock()
	defer m.logMu.Unlock()
	fmt.Fprintf(m.o.Log, "%s %s\n", time.Now().Format("15:04:05.000"), fmt.Sprintf(format, args...))
}

// manage starts the pool controller when both CRDs are Established and
// stops it when one goes away. ready is called once the controller's caches
// are synced, or at once when it cannot start (CRDs missing).
func (m *fakeMCO) manage(ctx context.Context, crds cache.Store, kick <-chan struct{}, ready func()) {
	defer ready()
	var (
		ctrlCancel context.CancelFunc
		ctrlDone   chan struct{}
		idleLogged bool
	)
	stopController := func() {
		if ctrlCancel != nil {
			ctrlCancel()
			<-ctrlDone
			ctrlCancel, ctrlDone = nil, nil
		}
	}
	defer stopController()
	evaluate := func() {
		missing := missingCRDs(crds)
		switch {
		case len(missing) == 0 && ctrlCancel == nil:
			idleLogged = false
			var cctx context.Context
			cctx, ctrlCancel = context.WithCancel(ctx)
			ctrlDone = make(chan struct{})
			c := newPoolController(m)
			c.kubelet = established(crds, kcCRDName)
			done := ctrlDone
			go func() {
				defer close(done)
				c.run(cctx, ready)
			}()
		case len(missing) > 0 && ctrlCancel != nil:
			m.logf("CRD %s gone: idle until it is Established again", strings.Join(missing, ", "))
			idleLogged = true
			stopController()
			ready()
		case len(missing) > 0 && !idleLogged:
			m.logf("CRD %s not installed: idle until it is Established", strings.Join(missing, ", "))
			idleLogged = true
			ready()
		}
	}
	evaluate()
	for {
		select {
		case <-ctx.Done():
			return
		case <-kick:
			evaluate()
		}
	}
}

// missingCRDs lists which of the MachineConfig CRDs are not Established.
func missingCRDs(crds cache.Store) []string {
	var missing []string
	for _, name := range []string{mcCRDName, mcpCRDName} {
		if !established(crds, name) {
			missing = append(missing, name)
		}
	}
	return missing
}

// established is true when the CRD is Established.
func established(crds cache.Store, name string) bool {
	obj, ok, _ := crds.GetByKey(name)
	u, _ := obj.(*unstructured.Unstructured)
	return ok && u != nil && ConditionStatus(u, "Established") == "True"
}

// poolController reconciles MachineConfigPools with one worker; events and
// per-pool timers (next render, next node step) put pool names on a queue.
type poolController struct {
	m     *fakeMCO
	queue workqueue.TypedRateLimitingInterface[string]
	pools cache.GenericLister
	mcs   cache.GenericLister
	nodes cache.GenericLister

	// nodeRollouts: per pool stepping its nodes, the config whose rollout
	// was last counted.
	nodeRollouts map[string]string

	// Touched by the worker only.
	walks   map[string]walk      // rollout progress per pool
	renders map[string]time.Time // when a pending render is due
	// written: the spec.configuration.name last written per pool and the
	// pool generation it made, until the cache shows that generation (so a
	// stale cache does not schedule another render).
	written map[string]writtenSpec
	// applied: rendered MachineConfigs created (name → inputs hash), for
	// lookups before the cache shows them.
	applied map[string]string

	// kubelet: the KubeletConfig CRD was Established when the controller
	// started; KubeletConfigs are then rendered too.
	kubelet bool

	mu       sync.Mutex
	stopped  bool
	timers   map[string]*time.Timer
	timersWG sync.WaitGroup // one count per armed timer, released by Stop or by its callback
}

func newPoolController(m *fakeMCO) *poolController {
	return &poolController{
		m: m,
		queue: workqueue.NewTypedRateLimitingQueue(
			workqueue.NewTypedItemExponentialFailureRateLimiter[string](50*time.Millisecond, 5*time.Second)),
		walks:   map[string]walk{},
		renders: map[string]time.Time{},
		written: map[string]writtenSpec{},
		applied: map[string]string{},
		timers:  map[string]*time.Timer{},

		nodeRollouts: map[string]string{},
	}
}

func (c *poolController) run(ctx context.Context, synced func()) {
	factory := dynamicinformer.NewDynamicSharedInformerFactory(c.m.watch, 0)
	poolInf := factory.ForResource(poolGVR)
	mcInf := factory.ForResource(mcGVR)
	nodeInf := factory.ForResource(nodeGVR)
	c.pools, c.mcs, c.nodes = poolInf.Lister(), mcInf.Lister(), nodeInf.Lister()

	poolKey := func(obj any) {
		if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
			obj = tomb.Obj
		}
		if o, ok := obj.(metav1.Object); ok {
			c.queue.Add(o.GetName())
		}
	}
	// A MachineConfig may be selected by any pool (before or after a label
	// change): every pool re-checks its inputs.
	allPools := func(any) {
		objs, _ := c.pools.List(labels.Everything())
		for _, o := range objs {
			if p, ok := o.(metav1.Object); ok {
				c.queue.Add(p.GetName())
			}
		}
	}
	_, err1 := poolInf.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: poolKey, UpdateFunc: func(_, n any) { poolKey(n) }, DeleteFunc: poolKey,
	})
	_, err2 := mcInf.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: allPools, UpdateFunc: func(_, n any) { allPools(n) }, DeleteFunc: allPools,
	})
	err3 := c.watchNodes(nodeInf.Informer())
	if err := errors.Join(err1, err2, err3); err != nil {
		c.m.logf("event handlers: %v", err)
		return
	}
	factory.Start(ctx.Done())
	defer factory.Shutdown() // after ctx is done: waits for the informers

	var worker sync.WaitGroup
	defer func() {
		c.queue.ShutDown()
		c.stopTimers()
		worker.Wait()
	}()
	hasSynced := []cache.InformerSynced{poolInf.Informer().HasSynced, mcInf.Informer().HasSynced, nodeInf.Informer().HasSynced}
	var kubelet *kubeletController
	if c.kubelet {
		kcInf := factory.ForResource(kcGVR)
		kubelet = &kubeletController{m: c.m, kcs: kcInf.Lister(), pools: c.pools,
			queue: workqueue.NewTypedRateLimitingQueue(
				workqueue.NewTypedItemExponentialFailureRateLimiter[string](50*time.Millisecond, 5*time.Second))}
		kcKey := func(obj any) {
			if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = tomb.Obj
			}
			if o, ok := obj.(metav1.Object); ok {
				kubelet.queue.Add(o.GetName())
			}
		}
		// A pool's labels decide which KubeletConfigs it renders.
		allKCs := func(any) {
			for _, kc := range kubelet.list() {
				kubelet.queue.Add(kc.GetName())
			}
		}
		_, err1 := kcInf.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
			AddFunc: kcKey, UpdateFunc: func(_, n any) { kcKey(n) }, DeleteFunc: kcKey,
		})
		_, err2 := poolInf.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
			AddFunc: allKCs, UpdateFunc: func(o, n any) {
				if !reflect.DeepEqual(o.(metav1.Object).GetLabels(), n.(metav1.Object).GetLabels()) {
					allKCs(n)
				}
			},
		})
		if err := errors.Join(err1, err2); err != nil {
			c.m.logf("event handlers: %v", err)
			return
		}
		hasSynced = append(hasSynced, kcInf.Informer().HasSynced)
		factory.Start(ctx.Done())
		defer kubelet.queue.ShutDown()
	}
	if !cache.WaitForCacheSync(ctx.Done(), hasSynced...) {
		return
	}
	if kubelet != nil {
		worker.Go(func() { kubelet.run(ctx) })
	}
	c.m.logf("watching MachineConfigPools and MachineConfigs (render delay %s, %s per node)", c.m.o.RenderDelay, c.m.o.StepTime)
	synced()
	worker.Go(func() {
		for c.processNext(ctx) {
		}
	})
	<-ctx.Done()
}

func (c *poolController) processNext(ctx context.Context) bool {
	name, quit := c.queue.Get()
	if quit {
		return false
	}
	defer c.queue.Done(name)
	if err := c.reconcile(ctx, name); err != nil {
		if ctx.Err() != nil {
			return true
		}
		c.m.logf("%s: %v (retrying)", name, err)
		c.queue.AddRateLimited(name)
		return true
	}
	c.queue.Forget(name)
	return true
}

// schedule (re)arms the pool's timer for at; a zero at disarms it.
func (c *poolController) schedule(name string, at time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if t := c.timers[name]; t != nil {
		if t.Stop() {
			c.timersWG.Done()
		}
		delete(c.timers, name)
	}
	if c.stopped || at.IsZero() {
		return
	}
	c.timersWG.Add(1)
	c.timers[name] = time.AfterFunc(max(time.Until(at), 0), func() {
		defer c.timersWG.Done()
		c.queue.Add(name) // a no-op once the queue is shut down
	})
}

// stopTimers disarms every timer and waits for callbacks already running.
func (c *poolController) stopTimers() {
	c.mu.Lock()
	c.stopped = true
	for name, t := range c.timers {
		if t.Stop() {
			c.timersWG.Done()
		}
		delete(c.timers, name)
	}
	c.mu.Unlock()
	c.timersWG.Wait()
}

func (c *poolController) reconcile(ctx context.Context, name string) error {
	obj, err := c.pools.Get(name)
	if apierrors.IsNotFound(err) {
		delete(c.walks, name)
		delete(c.renders, name)
		delete(c.written, name)
		delete(c.nodeRollouts, name)
		c.schedule(name, time.Time{})
		return nil
	}
	if err != nil {
		return err
	}
	pool, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return fmt.Errorf("unexpected object %T", obj)
	}
	now := time.Now()
	renderAt, err := c.syncRender(ctx, pool, now)
	if err != nil {
		return err
	}
	syncNodes := c.syncNodes
	if c.stepsNodes(pool) {
		syncNodes = c.syncPoolNodes
	}
	stepAt, err := syncNodes(ctx, pool, now)
	if err != nil {
		return err
	}
	c.schedule(name, earliest(renderAt, stepAt))
	return nil
}

type writtenSpec struct {
	name       string
	generation int64
	// uid is the pool's: a pool deleted and created again under its name
	// starts afresh (its generation restarts at 1).
	uid types.UID
}

// earliest returns the earlier non-zero time.
func earliest(a, b time.Time) time.Time {
	switch {
	case a.IsZero():
		return b
	case b.IsZero() || a.Before(b):
		return a
	default:
		return b
	}
}

// syncRender is the render controller: it returns when a pending render is
// due (zero: none pending).
func (c *poolController) syncRender(ctx context.Context, pool *unstructured.Unstructured, now time.Time) (time.Time, error) {
	name := pool.GetName()
	sel, err := poolSelector(pool)
	if err != nil {
		return time.Time{}, fmt.Errorf("machineConfigSelector: %w", err)
	}
	objs, err := c.mcs.List(labels.Everything())
	if err != nil {
		return time.Time{}, err
	}
	mcs := make([]*unstructured.Unstructured, 0, len(objs))
	for _, o := range objs {
		if u, ok := o.(*unstructured.Unstructured); ok {
			mcs = append(mcs, u)
		}
	}
	selected := selectConfigs(sel, mcs)
	specConfig, _, _ := unstructured.NestedMap(pool.Object, "spec", "configuration")
	plan, err := planRender(name, specConfig, selected, c.renderedHash)
	if err != nil {
		return time.Time{}, err
	}
	if w, ok := c.written[name]; ok {
		switch {
		case pool.GetUID() != w.uid, pool.GetGeneration() >= w.generation: // another pool of that name, or the cache caught up with our write
			delete(c.written, name)
		case plan.Name == w.name: // it has not yet: nothing new to render
			return time.Time{}, nil
		}
	}
	switch plan.Action {
	case renderNothing:
		delete(c.renders, name)
		return time.Time{}, nil
	case renderCreateObject:
		delete(c.renders, name)
		if err := c.applyRendered(ctx, pool, plan); err != nil {
			return time.Time{}, err
		}
		c.m.logf("%s: created the rendered MachineConfig %s of spec.configuration (from %s; no rollout)", name, plan.Name, strings.Join(sourceNames(plan.Configuration), ", "))
		return time.Time{}, nil
	}
	due, pending := c.renders[name]
	if !pending {
		due = now.Add(c.m.o.RenderDelay)
		c.renders[name] = due
		c.m.logf("%s: MachineConfigs changed (%s): rendering %s in %s", name, strings.Join(sourceNames(plan.Configuration), ", "), plan.Name, c.m.o.RenderDelay)
	}
	if now.Before(due) {
		return due, nil
	}
	if err := c.applyRendered(ctx, pool, plan); err != nil {
		return time.Time{}, err
	}
	apply := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": mcoAPIVersion,
		"kind":       "MachineConfigPool",
		"metadata":   map[string]any{"name": name},
		"spec":       map[string]any{"configuration": plan.Configuration},
	}}
	applied, err := c.m.dyn.Resource(poolGVR).Apply(ctx, name, apply, metav1.ApplyOptions{FieldManager: mcoFieldManager, Force: true})
	if err != nil {
		if apierrors.IsNotFound(err) {
			return time.Time{}, nil
		}
		return time.Time{}, fmt.Errorf("writing spec.configuration: %w", err)
	}
	delete(c.renders, name)
	c.written[name] = writtenSpec{name: plan.Name, generation: applied.GetGeneration(), uid: applied.GetUID()}
	c.m.o.counts.update(name, func(r *Rollouts) { r.Renders++ })
	c.m.logf("%s: spec.configuration = %s (source %s)", name, plan.Name, strings.Join(sourceNames(plan.Configuration), ", "))
	return time.Time{}, nil
}

// renderedHash reports the inputs hash recorded on a rendered MachineConfig.
func (c *poolController) renderedHash(name string) (string, bool) {
	obj, err := c.mcs.Get(name)
	if err != nil {
		h, ok := c.applied[name]
		return h, ok
	}
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return "", false
	}
	return u.GetAnnotations()[fakeMCOInputsAnnotation], true
}

// applyRendered creates (or re-applies) the rendered MachineConfig.
func (c *poolController) applyRendered(ctx context.Context, pool *unstructured.Unstructured, plan renderPlan) error {
	mc := renderedMachineConfig(pool, plan)
	if _, err := c.m.dyn.Resource(mcGVR).Apply(ctx, plan.Name, mc, metav1.ApplyOptions{FieldManager: mcoFieldManager, Force: true}); err != nil {
		return fmt.Errorf("writing MachineConfig %s: %w", plan.Name, err)
	}
	c.applied[plan.Name] = plan.Hash
	return nil
}

// syncNodes is the node controller: it writes the pool status for the
// current step of the rollout and returns when the next step is due.
// Conflicts re-read the pool and redo the step on the fresh object.
func (c *poolController) syncNodes(ctx context.Context, pool *unstructured.Unstructured, now time.Time) (time.Time, error) {
	name := pool.GetName()
	prev := c.walks[name]
	var (
		next     walk
		wake     time.Time
		written  bool
		line     string
		retried  bool
		machines int64
	)
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if retried { // after a conflict: redo the step on the current object
			c.m.logf("%s: status conflict: re-reading the pool and redoing the step", name)
			fresh, err := c.m.dyn.Resource(poolGVR).Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return err
			}
			pool = fresh
		}
		retried = true
		p := newPoolView(pool)
		machines = p.Machines
		if p.specName() == "" { // not rendered yet
			next, wake, written = prev, time.Time{}, false
			return nil
		}
		step := c.m.o.StepTime
		if p.StepTime > 0 {
			step = p.StepTime
		}
		next, wake = advance(p, prev, now, step)
		status := computeStatus(p, next.Updated, now)
		if !statusChanged(pool, status) {
			written = false
			return nil
		}
		obj := pool.DeepCopy()
		mergeStatus(obj, status)
		if _, err := c.m.dyn.Resource(poolGVR).UpdateStatus(ctx, obj, metav1.UpdateOptions{FieldManager: mcoFieldManager}); err != nil {
			return err
		}
		written, line = true, rolloutLine(p, next)
		return nil
	})
	if apierrors.IsNotFound(err) {
		delete(c.walks, name)
		return time.Time{}, nil
	}
	if err != nil {
		return time.Time{}, fmt.Errorf("writing status: %w", err)
	}
	c.m.o.counts.countWalk(name, prev, next, machines)
	c.walks[name] = next
	if written {
		c.m.logf("%s", line)
	}
	return wake, nil
}

// ---- pure parts (unit-tested) ----

// poolSelector is the pool's spec.machineConfigSelector; a pool without
// one selects nothing.
func poolSelector(pool *unstructured.Unstructured) (labels.Selector, error) {
	m, found, err := unstructured.NestedMap(pool.Object, "spec", "machineConfigSelector")
	if err != nil {
		return nil, err
	}
	if !found {
		return labels.Nothing(), nil
	}
	var ls metav1.LabelSelector
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(m, &ls); err != nil {
		return nil, err
	}
	return metav1.LabelSelectorAsSelector(&ls)
}

// selectConfigs returns the MachineConfigs sel selects, rendered ones
// excluded, sorted by name (the MCO's merge order).
func selectConfigs(sel labels.Selector, mcs []*unstructured.Unstructured) []*unstructured.Unstructured {
	var out []*unstructured.Unstructured
	for _, mc := range mcs {
		if strings.HasPrefix(mc.GetName(), renderedPrefix) || !sel.Matches(labels.Set(mc.GetLabels())) {
			continue
		}
		out = append(out, mc)
	}
	slices.SortFunc(out, func(a, b *unstructured.Unstructured) int { return strings.Compare(a.GetName(), b.GetName()) })
	return out
}

// inputsHash is the first 32 hex digits of the sha256 of the canonical
// JSON (encoding/json sorts map keys) of the selected MachineConfigs'
// specs, in name order.
func inputsHash(selected []*unstructured.Unstructured) (string, error) {
	specs := make([]any, len(selected))
	for i, mc := range selected {
		specs[i] = mc.Object["spec"]
	}
	b, err := json.Marshal(specs)
	if err != nil {
		return "", fmt.Errorf("hashing MachineConfigs: %w", err)
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])[:32], nil
}

// renderedName is rendered-<pool>-<hash>.
func renderedName(pool, hash string) string { return renderedPrefix + pool + "-" + hash }

// configurationFor is a pool's spec.configuration for rendered name.
func configurationFor(name string, selected []*unstructured.Unstructured) map[string]any {
	source := make([]any, 0, len(selected))
	for _, mc := range selected {
		source = append(source, map[string]any{"apiVersion": mcoAPIVersion, "kind": "MachineConfig", "name": mc.GetName()})
	}
	return map[string]any{"name": name, "source": source}
}

// sourceNames lists configuration.source[].name.
func sourceNames(configuration map[string]any) []string {
	src, _ := configuration["source"].([]any)
	names := make([]string, 0, len(src))
	for _, s := range src {
		if m, ok := s.(map[string]any); ok {
			n, _ := m["name"].(string)
			names = append(names, n)
		}
	}
	return names
}

// mergeSpecs is the rendered content: kernelArguments and extensions
// concatenated in name order; config, osImageURL, kernelType and
// baseOSExtensionsContainerImage of the last MachineConfig setting them;
// fips if any sets it.
func mergeSpecs(selected []*unstructured.Unstructured) map[string]any {
	out := map[string]any{}
	var kargs, exts []any
	for _, mc := range selected {
		spec, _ := mc.Object["spec"].(map[string]any)
		if l, ok := spec["kernelArguments"].([]any); ok {
			kargs = append(kargs, runtime.DeepCopyJSONValue(l).([]any)...)
		}
		if l, ok := spec["extensions"].([]any); ok {
			exts = append(exts, runtime.DeepCopyJSONValue(l).([]any)...)
		}
		if cfg, ok := spec["config"].(map[string]any); ok && len(cfg) > 0 {
			out["config"] = runtime.DeepCopyJSONValue(cfg)
		}
		for _, k := range []string{"osImageURL", "kernelType", "baseOSExtensionsContainerImage"} {
			if s, ok := spec[k].(string); ok && s != "" {
				out[k] = s
			}
		}
		if fips, ok := spec["fips"].(bool); ok && fips {
			out["fips"] = true
		}
	}
	if len(kargs) > 0 {
		out["kernelArguments"] = kargs
	}
	if len(exts) > 0 {
		out["extensions"] = exts
	}
	return out
}

type renderAction int

const (
	// renderNothing: spec.configuration matches the inputs.
	renderNothing renderAction = iota
	// renderCreateObject: spec.configuration matches the inputs but its
	// rendered MachineConfig is missing (the baseline's placeholder name,
	// or it was deleted): create it, no spec change, no rollout.
	renderCreateObject
	// renderWriteSpec: the inputs changed; after RenderDelay create the
	// rendered MachineConfig and write spec.configuration.
	renderWriteSpec
)

type renderPlan struct {
	Action        renderAction
	Name          string         // the rendered MachineConfig to create / spec.configuration.name to write
	Hash          string         // inputsHash of the selected MachineConfigs
	Configuration map[string]any // spec.configuration to write
	Spec          map[string]any // the rendered MachineConfig's spec
}

// planRender decides what the render controller does for a pool whose
// spec.configuration is specConfig and whose selector picks selected.
// renderedHash looks up an existing rendered MachineConfig's recorded inputs
// hash. No selected MachineConfigs: nothing (the MCO refuses to render an
// empty pool).
func planRender(pool string, specConfig map[string]any, selected []*unstructured.Unstructured, renderedHash func(name string) (string, bool)) (renderPlan, error) {
	if len(selected) == 0 {
		return renderPlan{Action: renderNothing}, nil
	}
	hash, err := inputsHash(selected)
	if err != nil {
		return renderPlan{}, err
	}
	name := renderedName(pool, hash)
	plan := renderPlan{Action: renderWriteSpec, Name: name, Hash: hash, Configuration: configurationFor(name, selected), Spec: mergeSpecs(selected)}
	current, _ := specConfig["name"].(string)
	switch {
	case current == name:
		plan.Action = renderNothing
		if _, ok := renderedHash(name); !ok {
			plan.Action = renderCreateObject
		}
	case current != "":
		h, ok := renderedHash(current)
		switch {
		case ok && h == hash:
			// Rendered (or adopted) from the same content under another name.
			plan.Action = renderNothing
		case !ok && slices.Equal(sourceNames(specConfig), sourceNames(plan.Configuration)):
			// A name this operator did not render (the baseline's
			// placeholder) over exactly the selected MachineConfigs: adopt
			// it as what the nodes run instead of rolling out on start.
			plan.Action = renderCreateObject
			plan.Name = current
			plan.Configuration = runtime.DeepCopyJSON(specConfig)
		}
	}
	return plan, nil
}

// renderedMachineConfig is the rendered MachineConfig object of plan,
// owned by the pool as the MCO does it.
func renderedMachineConfig(pool *unstructured.Unstructured, plan renderPlan) *unstructured.Unstructured {
	owner := map[string]any{"apiVersion": mcoAPIVersion, "kind": "MachineConfigPool", "name": pool.GetName(), "controller": true}
	if uid := string(pool.GetUID()); uid != "" {
		owner["uid"] = uid
	}
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": mcoAPIVersion,
		"kind":       "MachineConfig",
		"metadata": map[string]any{
			"name":            plan.Name,
			"annotations":     map[string]any{generatedByAnnotation: generatedByValue, fakeMCOInputsAnnotation: plan.Hash},
			"ownerReferences": []any{owner},
		},
		"spec": runtime.DeepCopyJSON(plan.Spec),
	}}
}

// poolView is what the node controller reads of a MachineConfigPool.
type poolView struct {
	Name         string
	Generation   int64
	SpecConfig   map[string]any // spec.configuration
	StatusConfig map[string]any // status.configuration
	Paused       bool           // spec.paused
	Degraded     bool           // DegradedAnnotation == "true"
	Machines     int64          // MachinesAnnotation, else status.machineCount, else names.BaselinePoolMachines
	StepTime     time.Duration  // StepTimeAnnotation; zero: the operator's StepTime
	Updated      int64          // status.updatedMachineCount
	Conditions   []any          // status.conditions (for lastTransitionTime)
}

func newPoolView(pool *unstructured.Unstructured) poolView {
	p := poolView{Name: pool.GetName(), Generation: pool.GetGeneration(), Machines: names.BaselinePoolMachines}
	p.SpecConfig, _, _ = unstructured.NestedMap(pool.Object, "spec", "configuration")
	p.StatusConfig, _, _ = unstructured.NestedMap(pool.Object, "status", "configuration")
	p.Paused, _, _ = unstructured.NestedBool(pool.Object, "spec", "paused")
	p.Degraded = pool.GetAnnotations()[DegradedAnnotation] == "true"
	if n, ok, _ := unstructured.NestedInt64(pool.Object, "status", "machineCount"); ok {
		p.Machines = max(n, 0)
	}
	if n, err := strconv.ParseInt(pool.GetAnnotations()[MachinesAnnotation], 10, 64); err == nil {
		p.Machines = max(n, 0)
	}
	if d, err := time.ParseDuration(pool.GetAnnotations()[StepTimeAnnotation]); err == nil && d > 0 {
		p.StepTime = d
	}
	p.Updated, _, _ = unstructured.NestedInt64(pool.Object, "status", "updatedMachineCount")
	p.Conditions, _, _ = unstructured.NestedSlice(pool.Object, "status", "conditions")
	return p
}

func (p poolView) specName() string   { s, _ := p.SpecConfig["name"].(string); return s }
func (p poolView) statusName() string { s, _ := p.StatusConfig["name"].(string); return s }

// walk is a pool's rollout as the node controller remembers it.
type walk struct {
	Target  string    // the rendered config the nodes move to
	Updated int64     // nodes running Target
	Next    time.Time // when the node in flight is done; zero when none is (idle, paused, degraded)
}

// advance moves w forward to now: a new target restarts from 0 nodes (a
// pool first seen fully updated to its spec is adopted as done); each
// StepTime one more node is updated, unless a node is degraded; a paused
// pool starts no node (the one in flight finishes). It returns the new walk and when the next step is due (zero:
// nothing to wait for).
func advance(p poolView, w walk, now time.Time, step time.Duration) (walk, time.Time) {
	n := p.Machines
	target := p.specName()
	if w.Target != target {
		if w.Target == "" && target == p.statusName() && p.Updated >= n {
			return walk{Target: target, Updated: n}, time.Time{}
		}
		w = walk{Target: target}
	}
	switch {
	case w.Updated >= n:
		return walk{Target: target, Updated: n}, time.Time{}
	case p.Degraded, p.Paused && w.Next.IsZero():
		w.Next = time.Time{}
		return w, time.Time{}
	case w.Next.IsZero(): // a node starts now
		w.Next = now.Add(step)
		return w, w.Next
	case now.Before(w.Next):
		// A pause stops no node in flight (the MCO cannot stop a node
		// mid-update): it finishes, and no other starts.
		return w, w.Next
	}
	w.Updated++
	if w.Updated >= n {
		return walk{Target: target, Updated: n}, time.Time{}
	}
	if p.Paused {
		w.Next = time.Time{}
		return w, time.Time{}
	}
	w.Next = now.Add(step)
	return w, w.Next
}

// computeStatus is the status the node controller reports for pool p with
// updated of its nodes on spec.configuration: the fields it owns, to merge
// into the existing status.
func computeStatus(p poolView, updated int64, now time.Time) map[string]any {
	n := p.Machines
	updated = min(max(updated, 0), n)
	c := machineCounts{Machines: n, Updated: updated, Ready: updated}
	if updated < n && !p.Paused {
		c.Unavailable = 1 // the node in flight
	}
	if p.Degraded {
		node := 0 // the node in flight, or the first one
		if updated < n {
			node = int(updated)
		}
		c.Degraded = 1
		c.DegradedMessage = fmt.Sprintf("Node %s-%d is reporting: %q", p.Name, node, DegradedMessage)
	}
	return statusOf(p, c, now)
}

// machineCounts are the counts of a pool's status, and what its degraded
// nodes report.
type machineCounts struct {
	Machines, Updated, Ready, Unavailable, Degraded int64
	DegradedMessage                                 string
}

// statusOf is the status the node controller reports for pool p with
// counts c, as the MCO computes it: Updated only when every node is
// updated, ready and available, and only then status.configuration =
// spec.configuration.
func statusOf(p poolView, c machineCounts, now time.Time) map[string]any {
	done := c.Updated == c.Machines && c.Ready == c.Machines && c.Unavailable == 0
	target := "MachineConfig " + p.specName()
	cond := func(typ, status, reason, message string) any {
		return condition(p.Conditions, typ, status, reason, message, now)
	}
	var updatedC, updatingC any
	switch {
	case done:
		updatedC = cond("Updated", "True", "", "All nodes are updated with "+target)
		updatingC = cond("Updating", "False", "", "")
	case p.Paused:
		updatedC = cond("Updated", "False", "", "")
		updatingC = cond("Updating", "False", "", "Pool is paused; will not update to "+target)
	default:
		updatedC = cond("Updated", "False", "", "")
		updatingC = cond("Updating", "True", "", "All nodes are updating to "+target)
	}
	degradedC := cond("Degraded", "False", "", "")
	nodeDegradedC := cond("NodeDegraded", "False", "", "")
	if c.Degraded > 0 {
		degradedC = cond("Degraded", "True", "", c.DegradedMessage)
		nodeDegradedC = cond("NodeDegraded", "True", fmt.Sprintf("%d nodes are reporting degraded status on sync", c.Degraded), c.DegradedMessage)
	}
	status := map[string]any{
		"observedGeneration":      p.Generation,
		"machineCount":            c.Machines,
		"updatedMachineCount":     c.Updated,
		"readyMachineCount":       c.Ready,
		"unavailableMachineCount": c.Unavailable,
		"degradedMachineCount":    c.Degraded,
		"conditions": []any{
			updatedC, updatingC, degradedC, nodeDegradedC,
			cond("RenderDegraded", "False", "", ""),
		},
	}
	cfg := p.StatusConfig
	if done {
		cfg = p.SpecConfig
	}
	if cfg != nil {
		status["configuration"] = runtime.DeepCopyJSON(cfg)
	}
	return status
}

// condition builds a pool condition, keeping the previous
// lastTransitionTime when the status did not change.
func condition(old []any, typ, status, reason, message string, now time.Time) map[string]any {
	ltt := now.UTC().Format(time.RFC3339)
	for _, c := range old {
		m, ok := c.(map[string]any)
		if !ok || m["type"] != typ {
			continue
		}
		if prev, _ := m["lastTransitionTime"].(string); m["status"] == status && prev != "" {
			ltt = prev
		}
	}
	return map[string]any{"type": typ, "status": status, "lastTransitionTime": ltt, "reason": reason, "message": message}
}

// statusChanged reports whether writing status would change the pool.
func statusChanged(pool *unstructured.Unstructured, status map[string]any) bool {
	cur, _, _ := unstructured.NestedMap(pool.Object, "status")
	for k, v := range status {
		if !reflect.DeepEqual(cur[k], v) {
			return true
		}
	}
	return false
}

// mergeStatus sets the fields of status in obj's status, keeping the rest
// (e.g. certExpirys).
func mergeStatus(obj *unstructured.Unstructured, status map[string]any) {
	cur, _, _ := unstructured.NestedMap(obj.Object, "status")
	if cur == nil {
		cur = map[string]any{}
	}
	for k, v := range status {
		cur[k] = v
	}
	obj.Object["status"] = cur
}

// rolloutLine is the log line of a status write on pool p (as it was
// before the write).
func rolloutLine(p poolView, w walk) string {
	var notes []string
	done := w.Updated >= p.Machines
	if done && p.statusName() != w.Target {
		notes = append(notes, "status.configuration = spec.configuration, Updated=True")
	}
	if p.Paused && !done {
		notes = append(notes, "paused")
	}
	if p.Degraded {
		notes = append(notes, "degraded: "+DegradedMessage)
	}
	if len(notes) == 0 && done {
		notes = append(notes, fmt.Sprintf("observedGeneration %d", p.Generation))
	}
	s := fmt.Sprintf("%s: %s %d/%d updated", p.Name, w.Target, w.Updated, p.Machines)
	if len(notes) > 0 {
		s += " (" + strings.Join(notes, "; ") + ")"
	}
	return s
}

// ConditionStatus returns status.conditions[type=typ].status, or "".
func ConditionStatus(obj *unstructured.Unstructured, typ string) string {
	conds, _, _ := unstructured.NestedSlice(obj.Object, "status", "conditions")
	for _, c := range conds {
		if m, ok := c.(map[string]any); ok && m["type"] == typ {
			s, _ := m["status"].(string)
			return s
		}
	}
	return ""
}
