package controller

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"
	clocktesting "k8s.io/utils/clock/testing"

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
