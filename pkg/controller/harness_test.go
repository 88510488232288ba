package controller

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/kubevirt/virt-advisor/pkg/apis/advisor"
	"github.com/kubevirt/virt-advisor/pkg/apis/advisor/v1alpha1"
	"github.com/kubevirt/virt-advisor/pkg/approval"
	"github.com/kubevirt/virt-advisor/pkg/cluster"
	"github.com/kubevirt/virt-advisor/pkg/generated/clientset/versioned/fake"
	"github.com/kubevirt/virt-advisor/pkg/generated/informers/externalversions"
	"github.com/kubevirt/virt-advisor/pkg/machineconfig"
	"github.com/kubevirt/virt-advisor/pkg/maintenance"
	"github.com/kubevirt/virt-advisor/pkg/plan"
	"github.com/kubevirt/virt-advisor/pkg/profiles/catalog"
	"github.com/kubevirt/virt-advisor/pkg/status"
)

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

func (w fakeWindows) Windows() ([]*maintenance.Window, error) { return w, nil }

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

// harness is one controller over the fakes.
type harness struct {
	t        *testing.T
	c        *Controller
	planner  *fakePlanner
	cluster  *fakeCluster
	watches  *fakeWatches
	status   *fakeStatus
	recorder *record.FakeRecorder
	clock    *clocktesting.FakeClock
	indexer  cache.Indexer
	requeue  time.Duration
	err      error
	// poolQueue is the pool controller's queue.
	poolQueue workqueue.TypedRateLimitingInterface[string]
	// confinement says which kinds' admission policies are not in force.
	confinement *fakeConfinement
	// windows are the maintenance windows the pool controller reads.
	windows *harnessWindows
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

func newHarness(t *testing.T, version string, distinctApprover bool) *harness {
	informer := externalversions.NewSharedInformerFactory(fake.NewClientset(), 0).Advisor().V1alpha1().VirtPlatformConfigs().Informer()
	h := &harness{
		t:           t,
		planner:     &fakePlanner{applyErr: map[string]error{}},
		cluster:     &fakeCluster{objects: map[string]*unstructured.Unstructured{}},
		watches:     &fakeWatches{keys: map[string][]cluster.ObjectKey{}},
		status:      &fakeStatus{indexer: informer.GetIndexer()},
		recorder:    record.NewFakeRecorder(100),
		clock:       clocktesting.NewFakeClock(time.Date(2026, 11, 20, 10, 0, 0, 0, time.UTC)),
		indexer:     informer.GetIndexer(),
		confinement: &fakeConfinement{refused: map[string]error{}},
		windows:     &harnessWindows{},
	}
	h.c = New(Config{
		Informer: informer, Status: h.status, Planner: h.planner, Cluster: h.cluster, Pools: h.cluster, Watches: h.watches,
		Profiles: catalog.Default(), Recorder: h.recorder, Clock: h.clock, Version: version, MaintenanceWindows: h.windows,
		RequireDistinctApprover: distinctApprover, Confinement: h.confinement,
	})
	// setWindows sets the pool controller's windows only: the approval
	// policies' are set apart (h.c.approvals.windows).
	h.c.approvals.windows = nil
	h.c.retries.jitter = func() float64 { return 0.5 }
	h.poolQueue = workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[string]())
	h.c.pools.UseQueue(h.poolQueue)
	t.Cleanup(h.poolQueue.ShutDown)
	return h
}

// setWindows sets the maintenance windows the pool controller reads.
func (h *harness) setWindows(w maintenance.Lister) { h.windows.set(w) }

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

func (w *harnessWindows) Windows() ([]*maintenance.Window, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.lister == nil {
		return nil, nil
	}
	return w.lister.Windows()
}

// syncPools runs the pool controller's reconciles queued so far (the
// pools it was asked to look at), as its worker would, and then those of
// every pool.
func (h *harness) syncPools() {
	h.t.Helper()
	ctx := context.Background()
	if _, err := h.c.pools.ReconcileAll(ctx); err != nil {
		h.t.Fatalf("pool controller: %v", err)
	}
	pools, _ := h.cluster.List(ctx, machineconfig.MachineConfigPoolGVK)
	for _, p := range pools {
		if _, err := h.c.pools.Reconcile(ctx, p.GetName()); err != nil {
			h.t.Fatalf("pool controller, pool %s: %v", p.GetName(), err)
		}
	}
}

// create stores a new config, as the API would.
func (h *harness) create(spec v1alpha1.VirtPlatformConfigSpec, author string) {
	spec.Profile = configName
	cfg := &v1alpha1.VirtPlatformConfig{
		ObjectMeta: metav1.ObjectMeta{Name: configName, Generation: 1, ResourceVersion: "1", UID: "uid-1"},
		Spec:       spec,
		Status:     v1alpha1.VirtPlatformConfigStatus{SpecChangedBy: author},
	}
	if err := h.indexer.Add(cfg); err != nil {
		h.t.Fatal(err)
	}
}

func (h *harness) get() *v1alpha1.VirtPlatformConfig {
	obj, ok, _ := h.indexer.GetByKey(configName)
	if !ok {
		h.t.Fatalf("config %s is not stored", configName)
	}
	return obj.(*v1alpha1.VirtPlatformConfig).DeepCopy()
}

// edit changes the stored config as a client would; a spec change bumps
// the generation and records its author, as the registry does.
func (h *harness) edit(specChange bool, author string, fn func(*v1alpha1.VirtPlatformConfig)) {
	cfg := h.get()
	fn(cfg)
	if specChange {
		cfg.Generation++
		cfg.Status.SpecChangedBy = author
	}
	bump(cfg)
	if err := h.indexer.Update(cfg); err != nil {
		h.t.Fatal(err)
	}
}

// approve does what POST .../approve does with the live plan.
func (h *harness) approve(user string) {
	h.edit(false, "", func(cfg *v1alpha1.VirtPlatformConfig) {
		rec := v1alpha1.ApprovalRecord{PlanHash: h.planner.result.Status.PlanHash, ApprovedBy: user,
			ApprovedAt: metav1.NewTime(h.clock.Now()), Generation: cfg.Generation, UID: cfg.UID}
		if err := approval.Record(&cfg.Status, h.planner.result, rec); err != nil {
			h.t.Fatal(err)
		}
	})
}

func (h *harness) reconcile() {
	h.requeue, h.err = h.c.reconcile(context.Background(), configName)
}

// mustReconcile reconciles and expects the config in phase.
func (h *harness) mustReconcile(phase v1alpha1.ConfigPhase) {
	h.t.Helper()
	h.reconcile()
	if h.err != nil {
		h.t.Fatalf("setting up: reconcile: %v", h.err)
	}
	if got := h.get().Status.Phase; got != phase {
		h.t.Fatalf("setting up: phase %s, want %s (%s)", got, phase, status.PhaseMessage(&h.get().Status))
	}
}

// forget drops what the setup left behind: events, applied items, writes.
func (h *harness) forget() {
	for {
		select {
		case <-h.recorder.Events:
			continue
		default:
		}
		break
	}
	h.planner.applied, h.status.writes = nil, 0
}

func (h *harness) events() []string {
	var out []string
	for {
		select {
		case e := <-h.recorder.Events:
			out = append(out, e)
		default:
			return out
		}
	}
}

// Plans.

func raw(v interface{}) *runtime.RawExtension {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return &runtime.RawExtension{Raw: b}
}

// deschedulerItem is the KubeDescheduler item with an eviction limit the
// HCO's migration limits scale.
func deschedulerItem(op v1alpha1.Operation, mode string, total int) v1alpha1.PlanItem {
	return v1alpha1.PlanItem{
		Name:      descheduler,
		TargetRef: v1alpha1.ObjectReference{APIVersion: "operator.openshift.io/v1", Kind: "KubeDescheduler", Namespace: "openshift-kube-descheduler-operator", Name: "cluster"},
		Operation: op, ImpactSeverity: v1alpha1.ImpactLow,
		DesiredState: raw(map[string]interface{}{
			"apiVersion": "operator.openshift.io/v1", "kind": "KubeDescheduler",
			"metadata": map[string]interface{}{"name": "cluster", "namespace": "openshift-kube-descheduler-operator"},
			"spec":     map[string]interface{}{"mode": mode, "evictionLimits": map[string]interface{}{"total": total, "node": 2}},
		}),
		ManagedFields: []string{"spec.mode", "spec.evictionLimits"},
		Message:       "KubeDescheduler 'cluster' will be configured with profile 'KubeVirtRelieveAndMigrate'",
	}
}

func hcoPlanItem(op v1alpha1.Operation) v1alpha1.PlanItem {
	return v1alpha1.PlanItem{
		Name:      hcoItem,
		TargetRef: v1alpha1.ObjectReference{APIVersion: "hco.kubevirt.io/v1", Kind: "HyperConverged", Namespace: "openshift-cnv", Name: "kubevirt-hyperconverged"},
		Operation: op, ImpactSeverity: v1alpha1.ImpactLow,
		DesiredState: raw(map[string]interface{}{
			"apiVersion": "hco.kubevirt.io/v1", "kind": "HyperConverged",
			"metadata": map[string]interface{}{"name": "kubevirt-hyperconverged", "namespace": "openshift-cnv"},
			"spec":     map[string]interface{}{"liveMigrationConfig": map[string]interface{}{"parallelMigrationsPerCluster": 5}},
		}),
		ManagedFields: []string{"spec.liveMigrationConfig"},
	}
}

// psiItem is the MachineConfig of the worker pool.
func psiItem(op v1alpha1.Operation) v1alpha1.PlanItem {
	return v1alpha1.PlanItem{
		Name:      psi,
		TargetRef: v1alpha1.ObjectReference{APIVersion: "machineconfiguration.openshift.io/v1", Kind: "MachineConfig", Name: psiMC},
		Operation: op, ImpactSeverity: v1alpha1.ImpactHigh,
		DesiredState: raw(map[string]interface{}{
			"apiVersion": "machineconfiguration.openshift.io/v1", "kind": "MachineConfig",
			"metadata": map[string]interface{}{"name": psiMC, "labels": map[string]interface{}{machineconfig.RoleLabel: machineconfig.WorkerPool}},
			"spec":     map[string]interface{}{"kernelArguments": []interface{}{"psi=1"}},
		}),
		ManagedFields: []string{"spec.kernelArguments"},
	}
}

// planOf is a computed plan of these items; every different plan hashes
// differently.
func planOf(snapshot string, items ...v1alpha1.PlanItem) *plan.Result {
	res := &plan.Result{
		Status:       v1alpha1.PlanStatus{Profile: configName, Items: items},
		SnapshotHash: snapshot,
		Differs:      map[string][]string{},
	}
	var parts []string
	for _, it := range items {
		parts = append(parts, it.Name+"="+string(it.Operation)+string(it.DesiredState.Raw))
		res.Status.ImpactSeverity = plan.MaxImpact(res.Status.ImpactSeverity, it.ImpactSeverity)
		if it.Operation != v1alpha1.OperationCreate {
			res.Differs[it.Name] = []string{}
		}
	}
	res.Status.PlanHash = fmt.Sprintf("%x", sha256.Sum256([]byte(strings.Join(parts, ";")+snapshot)))
	res.Status.Prerequisites = []v1alpha1.Prerequisite{{Kind: "KubeDescheduler", APIVersion: "operator.openshift.io/v1", Satisfied: true}}
	return res
}

// differing marks managed fields of an item as no longer as desired.
func differing(res *plan.Result, item string, fields ...string) *plan.Result {
	res.Differs[item] = fields
	return res
}

// missingPrerequisite is the plan of a cluster without the descheduler.
func missingPrerequisite() *plan.Result {
	return &plan.Result{Status: v1alpha1.PlanStatus{Profile: configName, Prerequisites: []v1alpha1.Prerequisite{
		{Kind: "KubeDescheduler", APIVersion: "operator.openshift.io/v1", Description: "Please install the Descheduler Operator via OLM", Satisfied: false},
	}}}
}

// Pools.

// workerPool is the worker MachineConfigPool of three nodes: on rendered-a
// without the PSI MachineConfig (rolled is false), or rolled out to
// rendered-b with it; updating and degraded are how far between.
type workerPool struct {
	rolled, updating, paused bool
	updated, degraded        int64
}

func (p workerPool) obj() *unstructured.Unstructured {
	sources := []interface{}{map[string]interface{}{"kind": "MachineConfig", "name": "00-worker"}}
	specName, statusName, statusSources := "rendered-a", "rendered-a", sources
	updatedCond, updatingCond := "True", "False"
	if p.rolled || p.updating {
		specName = "rendered-b"
		sources = append(sources, map[string]interface{}{"kind": "MachineConfig", "name": psiMC})
	}
	if p.rolled {
		statusName, statusSources = specName, sources
	}
	if p.updating {
		updatedCond, updatingCond = "False", "True"
	}
	updated := p.updated
	if !p.updating {
		updated = 3
	}
	return &unstructured.Unstructured{Object: map[string]interface{}{
		"apiVersion": "machineconfiguration.openshift.io/v1", "kind": "MachineConfigPool",
		"metadata": map[string]interface{}{"name": machineconfig.WorkerPool, "generation": int64(2)},
		"spec": map[string]interface{}{
			"paused":                p.paused,
			"machineConfigSelector": map[string]interface{}{"matchLabels": map[string]interface{}{machineconfig.RoleLabel: machineconfig.WorkerPool}},
			"configuration":         map[string]interface{}{"name": specName, "source": sources},
		},
		"status": map[string]interface{}{
			"observedGeneration": int64(2),
			"configuration":      map[string]interface{}{"name": statusName, "source": statusSources},
			"machineCount":       int64(3), "updatedMachineCount": updated, "readyMachineCount": updated, "degradedMachineCount": p.degraded,
			"conditions": []interface{}{
				map[string]interface{}{"type": "Updated", "status": updatedCond},
				map[string]interface{}{"type": "Updating", "status": updatingCond},
			},
		},
	}}
}
