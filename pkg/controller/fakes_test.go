package controller

import (
	"context"
	"fmt"
	"strconv"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"

	"github.com/kubevirt/virt-advisor/pkg/apis/advisor"
	"github.com/kubevirt/virt-advisor/pkg/apis/advisor/v1alpha1"
	"github.com/kubevirt/virt-advisor/pkg/cluster"
	"github.com/kubevirt/virt-advisor/pkg/maintenance"
	"github.com/kubevirt/virt-advisor/pkg/plan"
)

// The fakes of everything around the controller the harness drives.

// The fakes below stand in for everything around the controller, so that
// its state machine runs without a control plane: the informer's cache is
// filled by hand, the status writer stores into it, the planner returns
// canned plans and the cluster holds the MachineConfigPools.

const (
	configName   = advisor.ProfileLoadAwareRebalancing
	descheduler  = "enable-load-aware-descheduling"
	psi          = "enable-psi-metrics"
	hcoItem      = "hco-migration-limits"
	psiMC        = "99-worker-psi-karg"
	thisVersion  = "v0.2.0"
	olderVersion = "v0.1.0"
)

// fakeStatus is the storage's status writer over the informer's cache:
// it refuses a stale resourceVersion with a conflict, as storage does.
type fakeStatus struct {
	indexer cache.Indexer
	writes  int
	// conflict: another writer stores the config before the next write.
	conflict bool
	// ahead, when set, is what storage holds while the cache is behind.
	ahead *v1alpha1.VirtPlatformConfig
}

// GetStored answers what storage holds: ahead when set, else the cache.
func (s *fakeStatus) GetStored(_ context.Context, name string) (*v1alpha1.VirtPlatformConfig, error) {
	if s.ahead != nil {
		return s.ahead.DeepCopy(), nil
	}
	obj, ok, _ := s.indexer.GetByKey(name)
	if !ok {
		return nil, apierrors.NewNotFound(schema.GroupResource{Group: advisor.GroupName, Resource: "virtplatformconfigs"}, name)
	}
	return obj.(*v1alpha1.VirtPlatformConfig).DeepCopy(), nil
}

func (s *fakeStatus) UpdateStatus(_ context.Context, cfg *v1alpha1.VirtPlatformConfig) (*v1alpha1.VirtPlatformConfig, error) {
	gr := schema.GroupResource{Group: advisor.GroupName, Resource: "virtplatformconfigs"}
	obj, ok, _ := s.indexer.GetByKey(cfg.Name)
	if !ok {
		return nil, apierrors.NewNotFound(gr, cfg.Name)
	}
	stored := obj.(*v1alpha1.VirtPlatformConfig)
	if s.ahead != nil {
		// Storage holds a newer config than the cache.
		stored = s.ahead
	}
	if s.conflict {
		// Someone else writes first.
		s.conflict = false
		stored = stored.DeepCopy()
		bump(stored)
		if err := s.indexer.Update(stored); err != nil {
			return nil, err
		}
	}
	if stored.ResourceVersion != cfg.ResourceVersion {
		return nil, apierrors.NewConflict(gr, cfg.Name, fmt.Errorf("the object has been modified; please apply your changes to the latest version and try again"))
	}
	updated := stored.DeepCopy()
	updated.Status = *cfg.Status.DeepCopy()
	bump(updated)
	s.writes++
	return updated.DeepCopy(), s.indexer.Update(updated)
}

func bump(cfg *v1alpha1.VirtPlatformConfig) {
	rv, _ := strconv.Atoi(cfg.ResourceVersion)
	cfg.ResourceVersion = strconv.Itoa(rv + 1)
}

// fakePlanner returns the plan it was given and records what it applied.
// The edge tests call reconcile on their own goroutine; mu is for Run.
type fakePlanner struct {
	mu       sync.Mutex
	result   *plan.Result
	err      error
	snapshot string // "" answers the result's snapshot hash
	// snapshotErr is the error reading the targets for the snapshot.
	snapshotErr error
	applyErr    map[string]error
	applied     []string
	// attempts counts Apply calls, failed ones included, by item name.
	attempts map[string]int
	// stale, by item name, is the target change CheckTarget reports.
	stale map[string]string
	// checks counts the checks of a target before a write, by item name.
	checks map[string]int
	// readErr, by item name, is the error reading its target on its own
	// (CheckTarget: the checks of later items); snapshotErr is that of
	// the whole plan's read, which a first write's check makes.
	readErr map[string]error
	// drain is what DrainImpact answers (drainErr its error); drains
	// counts its calls.
	drain    []v1alpha1.PoolReboot
	drainErr error
	drains   int
	// pending is what PendingDrainImpact answers (pendingErr its error);
	// pendingDrains counts its calls.
	pending       []v1alpha1.PoolReboot
	pendingErr    error
	pendingDrains int
	// onApply is called as Apply starts (the intent is stored then).
	onApply func()
	// fromCaches, when set, is what DriftFromCaches decides (nil: it
	// cannot tell, a full plan is computed); computes counts Compute.
	fromCaches map[string][]string
	computes   int
	// targets, by item name, are the live targets the checks read (none:
	// the target does not exist); found, by item name, is our own earlier
	// write the checks find there (a retry after a crash).
	targets map[string]*unstructured.Unstructured
	found   map[string]*unstructured.Unstructured
	// cached, by item name, is the target a watch cache holds
	// (ExpectedTarget; none: no cache holds it).
	cached map[string]*unstructured.Unstructured
}

func (p *fakePlanner) DriftFromCaches(context.Context, *v1alpha1.VirtPlatformConfig, []v1alpha1.VirtPlatformConfigItem) (map[string][]string, bool, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.fromCaches, p.fromCaches != nil, nil
}

func (p *fakePlanner) DrainImpact(context.Context, *v1alpha1.VirtPlatformConfigItem) ([]v1alpha1.PoolReboot, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.drains++
	return p.drain, p.drainErr
}

func (p *fakePlanner) PendingDrainImpact(context.Context, *unstructured.Unstructured) ([]v1alpha1.PoolReboot, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.pendingDrains++
	return p.pending, p.pendingErr
}

func (p *fakePlanner) CheckTarget(_ context.Context, cfg *v1alpha1.VirtPlatformConfig, it *v1alpha1.VirtPlatformConfigItem, check plan.TargetCheck) (plan.Target, *unstructured.Unstructured, error) {
	p.mu.Lock()
	err := p.readErr[it.Name]
	p.mu.Unlock()
	if err != nil {
		return plan.Target{}, nil, err
	}
	ours, err := p.CheckReadTarget(cfg, it, nil, check)
	return p.readOf(it.Name), ours, err
}

// readAt is what the fake reads of an item's target: a resourceVersion
// named after it, which the write must carry.
func readAt(item string) plan.Target { return plan.Target{ReadAt: "rv-" + item, Read: true} }

// readOf is readAt with the live target, if any.
func (p *fakePlanner) readOf(item string) plan.Target {
	t := readAt(item)
	t.Object = p.targets[item]
	return t
}

func (p *fakePlanner) ExpectedTarget(_ *v1alpha1.VirtPlatformConfig, it *v1alpha1.VirtPlatformConfigItem) (*unstructured.Unstructured, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	obj, ok := p.cached[it.Name]
	if _, stale := p.stale[it.Name]; stale {
		return nil, false
	}
	return obj, ok
}

func (p *fakePlanner) CheckReadTarget(_ *v1alpha1.VirtPlatformConfig, it *v1alpha1.VirtPlatformConfigItem, _ *unstructured.Unstructured, _ plan.TargetCheck) (*unstructured.Unstructured, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.checks == nil {
		p.checks = map[string]int{}
	}
	p.checks[it.Name]++
	if what, ok := p.stale[it.Name]; ok {
		return nil, &plan.StaleTargetError{Item: it.Name, Target: it.TargetRef.Kind + " '" + it.TargetRef.Name + "'", What: what}
	}
	return p.found[it.Name], nil
}

func (p *fakePlanner) set(res *plan.Result) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.result = res
}

func (p *fakePlanner) Compute(_ context.Context, _ *v1alpha1.VirtPlatformConfig) (*plan.Result, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.computes++
	if p.err != nil {
		return nil, p.err
	}
	return p.result, nil
}

func (p *fakePlanner) ReadTargets(_ context.Context, items []v1alpha1.VirtPlatformConfigItem) (string, []plan.Target, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.snapshotErr != nil {
		return "", nil, p.snapshotErr
	}
	targets := make([]plan.Target, len(items))
	for i := range items {
		targets[i] = p.readOf(items[i].Name)
	}
	if p.snapshot != "" {
		return p.snapshot, targets, nil
	}
	return p.result.SnapshotHash, targets, nil
}

func (p *fakePlanner) Apply(_ context.Context, _ *v1alpha1.VirtPlatformConfig, it v1alpha1.VirtPlatformConfigItem, at plan.Target) (*unstructured.Unstructured, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.attempts == nil {
		p.attempts = map[string]int{}
	}
	p.attempts[it.Name]++
	if at != p.readOf(it.Name) {
		return nil, fmt.Errorf("item %s written with precondition %+v, not the read its checks judged (%+v)", it.Name, at, readAt(it.Name))
	}
	if p.onApply != nil {
		p.onApply()
	}
	if err := p.applyErr[it.Name]; err != nil {
		return nil, err
	}
	p.applied = append(p.applied, it.Name)
	written := &unstructured.Unstructured{}
	if it.DesiredState != nil {
		_ = written.UnmarshalJSON(it.DesiredState.Raw)
	}
	// A write over an object keeps its UID; a create gives one.
	written.SetUID(types.UID("uid-" + it.TargetRef.Name))
	if at.Object != nil && at.Object.GetUID() != "" {
		written.SetUID(at.Object.GetUID())
	}
	return written, nil
}

// fakeCluster holds objects of the main cluster by kind, namespace, name.
type fakeCluster struct {
	objects map[string]*unstructured.Unstructured
	// pauses are the pool pauses applied (true) and ended (false).
	pauses []bool
	// onRead, when set, is called on every read of a kind (before the
	// answer): a change made there lands in the middle of the checks.
	onRead func(kind string)
}

func clusterKey(kind, namespace, name string) string { return kind + "/" + namespace + "/" + name }

func (c *fakeCluster) put(obj *unstructured.Unstructured) {
	c.objects[clusterKey(obj.GetKind(), obj.GetNamespace(), obj.GetName())] = obj
}

func (c *fakeCluster) Get(_ context.Context, gvk schema.GroupVersionKind, namespace, name string) (*unstructured.Unstructured, error) {
	if c.onRead != nil {
		c.onRead(gvk.Kind)
	}
	return c.objects[clusterKey(gvk.Kind, namespace, name)], nil
}

func (c *fakeCluster) List(_ context.Context, gvk schema.GroupVersionKind) ([]unstructured.Unstructured, error) {
	if c.onRead != nil {
		c.onRead(gvk.Kind)
	}
	var out []unstructured.Unstructured
	for _, obj := range c.objects {
		if obj.GetKind() == gvk.Kind {
			out = append(out, *obj)
		}
	}
	return out, nil
}

func (c *fakeCluster) PreferredVersion(gk schema.GroupKind) (string, error) { return "v1", nil }

// ApplyPool applies our pause (spec.paused with its end) or its end, as
// server-side apply with our field manager would.
func (c *fakeCluster) ApplyPool(_ context.Context, applied *unstructured.Unstructured) error {
	pool := c.objects[clusterKey("MachineConfigPool", "", applied.GetName())]
	if pool == nil {
		return fmt.Errorf("MachineConfigPool %s not found", applied.GetName())
	}
	pool = pool.DeepCopy()
	paused, _, _ := unstructured.NestedBool(applied.Object, "spec", "paused")
	_ = unstructured.SetNestedField(pool.Object, paused, "spec", "paused")
	pool.SetAnnotations(applied.GetAnnotations())
	pool.SetManagedFields(nil)
	if paused {
		pool.SetManagedFields([]metav1.ManagedFieldsEntry{{Manager: cluster.FieldManager, Operation: metav1.ManagedFieldsOperationApply,
			FieldsV1: &metav1.FieldsV1{Raw: []byte(`{"f:spec":{"f:paused":{}}}`)}}})
	}
	c.put(pool)
	c.pauses = append(c.pauses, paused)
	return nil
}

// fakeWindows are the maintenance windows.
type fakeWindows []*maintenance.Window

func (w fakeWindows) Windows(context.Context) ([]*maintenance.Window, error) { return w, nil }

// fakeWatches records what each config watches.
type fakeWatches struct {
	mu      sync.Mutex
	keys    map[string][]cluster.ObjectKey
	onEvent func(string, cluster.ObjectKey)
}

func (w *fakeWatches) Set(config string, keys []cluster.ObjectKey) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(keys) == 0 {
		delete(w.keys, config)
		return
	}
	w.keys[config] = keys
}
func (w *fakeWatches) Forget(config string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	delete(w.keys, config)
}

func (w *fakeWatches) OnEvent(fn func(config string, key cluster.ObjectKey)) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.onEvent = fn
}

// event calls the controller's hook, as a watch event would; false when
// none is set.
func (w *fakeWatches) event(config string, key cluster.ObjectKey) bool {
	w.mu.Lock()
	fn := w.onEvent
	w.mu.Unlock()
	if fn == nil {
		return false
	}
	fn(config, key)
	return true
}

func (w *fakeWatches) watching(config string) []cluster.ObjectKey {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.keys[config]
}

// fakeConfinement refuses writes of the kinds it holds, with their error.
type fakeConfinement struct {
	mu      sync.Mutex
	refused map[string]error // by kind
}

func (f *fakeConfinement) Writable(gvk schema.GroupVersionKind) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.refused[gvk.Kind]
}

// refuse makes writes of kind wait for its admission policy (nil: no longer).
func (f *fakeConfinement) refuse(kind string, err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err == nil {
		delete(f.refused, kind)
		return
	}
	f.refused[kind] = err
}

// harnessWindows are the maintenance windows a test sets (none until it
// does).
type harnessWindows struct {
	mu     sync.Mutex
	lister maintenance.Lister
}

func (w *harnessWindows) set(l maintenance.Lister) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.lister = l
}

func (w *harnessWindows) Windows(ctx context.Context) ([]*maintenance.Window, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.lister == nil {
		return nil, nil
	}
	return w.lister.Windows(ctx)
}
