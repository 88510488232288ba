// Package pools is the pool controller: one reconcile per
// MachineConfigPool, keyed by the pool's name, on a queue of its own. It
// owns what virt-advisor does to pools — maintenance window gating, the
// preflight before a drain (a cluster upgrade, VMs that would block it),
// the coalescing pause before a MachineConfig write (one reboot per node),
// the pause when a window closes mid-rollout, the pause of an aborted
// plan's pools, and the unpause, after the same look at the VMs as the
// preflight's (resume.go). It reads, it is not told: which approved items
// wait on, or roll out on, a pool, which windows their rollout trusts and
// which aborts hold a pool come from the configs' status in the
// informer's cache (configs.go), the pools from the cluster. The config
// controller asks it three things: may an item write to its pools now
// (Admit), pause them for its write (Hold), and how far has it rolled out
// (Rollout). Its decisions are pure (decide*, pkg/machineconfig,
// pkg/maintenance); its reconcile reads the pool, decides and applies.
package pools

import (
	"context"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/kubevirt/virt-advisor/pkg/apis/advisor/v1alpha1"
	"github.com/kubevirt/virt-advisor/pkg/cluster"
	"github.com/kubevirt/virt-advisor/pkg/gates"
	listers "github.com/kubevirt/virt-advisor/pkg/generated/listers/advisor/v1alpha1"
	"github.com/kubevirt/virt-advisor/pkg/kubevirt"
	"github.com/kubevirt/virt-advisor/pkg/maintenance"
)

// Reader reads the main cluster: pools, MachineConfigs, the ClusterVersion.
type Reader interface {
	// Get returns the object, or nil and no error when it does not exist.
	Get(ctx context.Context, gvk schema.GroupVersionKind, namespace, name string) (*unstructured.Unstructured, error)
	// List returns the objects of a kind.
	List(ctx context.Context, gvk schema.GroupVersionKind) ([]unstructured.Unstructured, error)
}

// Pauser server-side applies our fields of a MachineConfigPool, with our
// field manager: its pause and the pause's end, nothing else.
type Pauser interface {
	ApplyPool(ctx context.Context, pool *unstructured.Unstructured) error
}

// Drains assesses, live, what draining the nodes an approved MachineConfig
// item rolls does to the VMs there now (the plan engine's DrainImpact),
// and what resuming the rollout of a paused pool does (its
// PendingDrainImpact).
type Drains interface {
	DrainImpact(ctx context.Context, it *v1alpha1.VirtPlatformConfigItem) ([]v1alpha1.PoolReboot, error)
	PendingDrainImpact(ctx context.Context, pool *unstructured.Unstructured) ([]v1alpha1.PoolReboot, error)
}

// Metrics is what the pool controller records.
type Metrics interface {
	// PoolWindows reports, per pool a maintenance window selects, the
	// seconds until it may be disrupted again.
	PoolWindows(opensIn map[string]float64)
	// RolloutsHalted reports the pools whose rollout a gate halts (pool to
	// gate), all of them.
	RolloutsHalted(halted map[string]string)
}

// Config is what the pool controller needs; the caller shares its readers,
// its informers and its clock with the config controller.
type Config struct {
	Cluster Reader
	Pauser  Pauser
	Drains  Drains
	// Configs reads the VirtPlatformConfigs from the informer's cache:
	// their status says which items wait on, or roll out on, which pool,
	// and which aborts hold pools paused.
	Configs listers.VirtPlatformConfigLister
	// ConfigInformer, when set, tells of changed configs: a pool an abort
	// holds, or held, is looked at again.
	ConfigInformer cache.SharedInformer
	// ResyncOn are informers after whose changes every pool is looked at
	// again (the maintenance windows, the admission policies an unpause
	// waits for).
	ResyncOn []cache.SharedInformer
	// Windows lists the maintenance windows; nil: none.
	Windows maintenance.Lister
	// TrustedWindows, when set, says which Allow windows may let an item
	// of cfg be written: an approval policy's approval counts only the
	// windows the policy trusts. A nil filter: every window. Deny windows
	// always count.
	TrustedWindows func(cfg *v1alpha1.VirtPlatformConfig) func(*maintenance.Window) bool
	// CoalesceWindow is how long pools stay paused after a MachineConfig
	// write; 0 disables the coalescing pause.
	CoalesceWindow time.Duration
	Recorder       record.EventRecorder
	Metrics        Metrics
	Clock          clock.Clock
	// Nodes reads the Nodes (a cache); nil: Cluster lists them live.
	Nodes func(ctx context.Context) ([]unstructured.Unstructured, error)
	// Migrations are the live migrations of a cache, ok false until it
	// synced (they are listed live then); nil: always listed live.
	Migrations func() (migrations []cluster.Migration, ok bool)
	// VMIs are the VMIs of a cache (ok false until it synced); nil: the
	// VMs on a step's nodes are not read, and no VM it moves must be
	// Ready again.
	VMIs func() (vmis []kubevirt.VMI, ok bool)
	// OnNodeChange, when set, calls fn after a Node changed (the cache's
	// view): a stepped pool is re-paused as soon as the MCO targets a
	// node, not at its next StepPoll.
	OnNodeChange func(fn func()) (remove func(), err error)
	// Alerts reads the alerts firing now (the server's alert source); nil:
	// the server reads none, and an alert gate holds every step.
	Alerts func(ctx context.Context) ([]gates.Alert, error)
	// Wake asks the config controller to look at a config again: one of
	// its items waits on, or rolls out on, a pool whose state changed.
	Wake func(config string)
}

// Controller reconciles MachineConfigPools. It keeps the queue of a term,
// reads and decides; the windows, the pauses and the look before an
// unpause are types of their own.
type Controller struct {
	Config
	term    *term
	windows *windows
	pauses  *pauses
	resumer *resumer
	// What the caches do not hold: the aborts stored but not cached yet,
	// the window pauses made since a status said how many (pauses), and
	// why a pause of ours outlasts its end (resumer).
	aborting *aborting
	counts   *pauseCounts
	// stepper steps the rollouts of ours (step.go).
	stepper *stepper
}

// term is the queue of a term of leadership: pool names, and allPools
// (nil outside a term: nothing is queued). Informers' handlers queue
// pools (resync) while a term starts: mu guards it.
type term struct {
	mu    sync.Mutex
	queue workqueue.TypedRateLimitingInterface[string]
}

// allPools is the queue key that looks at every pool: at the start of a
// term (pauses a previous leader left behind), when the windows change,
// and to keep the next-opening gauges fresh. No pool has an empty name.
const allPools = ""

// windowReport is how often the pools' next openings are reported while
// maintenance windows select any pool.
const windowReport = 30 * time.Second

// New returns a pool controller; Start or UseQueue gives it its queue.
func New(cfg Config) *Controller {
	if cfg.Clock == nil {
		cfg.Clock = clock.RealClock{}
	}
	if cfg.Metrics == nil {
		cfg.Metrics = noMetrics{}
	}
	if cfg.Wake == nil {
		cfg.Wake = func(string) {}
	}
	c := &Controller{Config: cfg, term: &term{}, aborting: newAborting(), counts: newPauseCounts()}
	c.windows = &windows{lister: cfg.Windows, trusted: cfg.TrustedWindows, clock: cfg.Clock, metrics: cfg.Metrics}
	c.pauses = &pauses{pauser: cfg.Pauser, recorder: cfg.Recorder, clock: cfg.Clock, counts: c.counts, wake: cfg.Wake}
	c.resumer = &resumer{drains: cfg.Drains, pauses: c.pauses, recorder: cfg.Recorder, wake: cfg.Wake, reasons: map[string]string{}, busy: map[string]bool{}}
	c.stepper = &stepper{cluster: cfg.Cluster, pauses: c.pauses, resumer: c.resumer, recorder: cfg.Recorder, clock: cfg.Clock,
		nodes: cfg.Nodes, migrations: cfg.Migrations, vmis: cfg.VMIs, alerts: cfg.Alerts, wake: cfg.Wake,
		notes: &gateNotes{notes: map[string]string{}}, halts: &haltGauge{metrics: cfg.Metrics, halted: map[string]string{}}}
	return c
}

// UseQueue sets the queue of a term of leadership (Start does it).
func (c *Controller) UseQueue(q workqueue.TypedRateLimitingInterface[string]) { c.term.use(q) }

func (t *term) use(q workqueue.TypedRateLimitingInterface[string]) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.queue = q
}

// current is the queue of the current term (nil outside one).
func (t *term) current() workqueue.TypedRateLimitingInterface[string] {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.queue
}

// Start starts one term of leadership: a new queue, the handlers on the
// informers, and one worker until ctx ends. It looks at every pool first.
func (c *Controller) Start(ctx context.Context) {
	q := workqueue.NewTypedRateLimitingQueueWithConfig(
		workqueue.DefaultTypedControllerRateLimiter[string](),
		workqueue.TypedRateLimitingQueueConfig[string]{Name: "machineconfigpools"})
	c.UseQueue(q)
	q.Add(allPools)
	remove := c.addHandlers(ctx)
	go func() {
		for c.processNext(ctx, q) {
		}
	}()
	go func() {
		<-ctx.Done()
		remove()
		q.ShutDown()
		c.stepper.halts.replace(nil) // another replica leads and reports them
	}()
}

// addHandlers resyncs the pools after a change of the informers that
// bear on them: an abort's hold that changed, the windows, the admission
// policies. remove removes them.
func (c *Controller) addHandlers(ctx context.Context) (remove func()) {
	var added []func()
	add := func(informer cache.SharedInformer, h cache.ResourceEventHandler) {
		reg, err := informer.AddEventHandler(h)
		if err != nil {
			klog.FromContext(ctx).Error(err, "Cannot watch what the pool controller reads; the pools are looked at on their timers only")
			return
		}
		added = append(added, func() { _ = informer.RemoveEventHandler(reg) })
	}
	if c.ConfigInformer != nil {
		add(c.ConfigInformer, cache.ResourceEventHandlerFuncs{
			AddFunc:    func(obj interface{}) { c.term.resyncIfHeld(nil, obj) },
			UpdateFunc: c.term.resyncIfHeld,
			DeleteFunc: func(obj interface{}) { c.term.resyncIfHeld(obj, nil) },
		})
	}
	if c.OnNodeChange != nil {
		if r, err := c.OnNodeChange(c.term.resyncStepping); err != nil {
			klog.FromContext(ctx).Error(err, "Cannot watch the Nodes; stepped pools are looked at every StepPoll only")
		} else {
			added = append(added, r)
		}
	}
	for _, informer := range c.ResyncOn {
		add(informer, cache.ResourceEventHandlerFuncs{
			AddFunc:    func(interface{}) { c.term.resync() },
			UpdateFunc: func(interface{}, interface{}) { c.term.resync() },
			DeleteFunc: func(interface{}) { c.term.resync() },
		})
	}
	return func() {
		for _, r := range added {
			r()
		}
	}
}

// resync looks at every pool again.
func (t *term) resync() { t.enqueue(allPools, 0) }

// resyncStepping looks at every pool again after a Node changed (the
// queue dedups a burst of changes; ReconcileAll queues only the pools of
// ours).
func (t *term) resyncStepping() { t.resync() }

func (t *term) enqueue(pool string, after time.Duration) {
	q := t.current()
	if q == nil {
		return
	}
	if after > 0 {
		q.AddAfter(pool, after)
		return
	}
	q.Add(pool)
}

func (c *Controller) processNext(ctx context.Context, q workqueue.TypedRateLimitingInterface[string]) bool {
	key, quit := q.Get()
	if quit {
		return false
	}
	defer q.Done(key)
	var after time.Duration
	var err error
	if key == allPools {
		after, err = c.ReconcileAll(ctx)
	} else {
		after, err = c.Reconcile(ctx, key)
	}
	if err != nil {
		klog.FromContext(ctx).Error(err, "Reconciling a MachineConfigPool failed, will retry", "pool", key)
		q.AddRateLimited(key)
		return true
	}
	q.Forget(key)
	if after > 0 {
		q.AddAfter(key, after)
	}
	return true
}

type noMetrics struct{}

func (noMetrics) PoolWindows(map[string]float64) {}

func (noMetrics) RolloutsHalted(map[string]string) {}
