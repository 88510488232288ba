package pools

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/record"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/kubevirt/virt-advisor/pkg/apis/advisor/v1alpha1"
	"github.com/kubevirt/virt-advisor/pkg/cluster"
	"github.com/kubevirt/virt-advisor/pkg/machineconfig"
	"github.com/kubevirt/virt-advisor/pkg/machineconfig/machineconfigtest"
	"github.com/kubevirt/virt-advisor/pkg/maintenance"
	"github.com/kubevirt/virt-advisor/pkg/status"
)

// The pool controller's fakes: the pools of the cluster, the applies of
// our pauses, and the live look at what draining a pool's nodes does.

type fakeReader struct {
	pools map[string]*unstructured.Unstructured
}

func (r *fakeReader) Get(_ context.Context, gvk schema.GroupVersionKind, _, name string) (*unstructured.Unstructured, error) {
	if p := r.pools[name]; p != nil && gvk.Kind == machineconfig.MachineConfigPoolGVK.Kind {
		return p.DeepCopy(), nil
	}
	return nil, nil
}

func (r *fakeReader) List(_ context.Context, gvk schema.GroupVersionKind) ([]unstructured.Unstructured, error) {
	var out []unstructured.Unstructured
	for _, p := range r.pools {
		if gvk.Kind == machineconfig.MachineConfigPoolGVK.Kind {
			out = append(out, *p.DeepCopy())
		}
	}
	return out, nil
}

// fakePauser records the applies; applied pauses land on the reader's
// pools as spec.paused and its annotations, an unpause drops both.
type fakePauser struct {
	reader  *fakeReader
	applies []bool
}

func (p *fakePauser) ApplyPool(_ context.Context, applied *unstructured.Unstructured) error {
	paused, _, _ := unstructured.NestedBool(applied.Object, "spec", "paused")
	pool := p.reader.pools[applied.GetName()]
	_ = unstructured.SetNestedField(pool.Object, paused, "spec", "paused")
	pool.SetAnnotations(applied.GetAnnotations())
	if !paused {
		pool.SetManagedFields(nil)
	}
	p.applies = append(p.applies, paused)
	return nil
}

type fakeDrains struct {
	pending []v1alpha1.PoolReboot
	err     error
	looks   int
}

func (d *fakeDrains) DrainImpact(context.Context, *v1alpha1.VirtPlatformConfigItem) ([]v1alpha1.PoolReboot, error) {
	return nil, nil
}

func (d *fakeDrains) PendingDrainImpact(context.Context, *unstructured.Unstructured) ([]v1alpha1.PoolReboot, error) {
	d.looks++
	return d.pending, d.err
}

type fakeLister []*maintenance.Window

func (l fakeLister) Windows(context.Context) ([]*maintenance.Window, error) { return l, nil }

// pausedWorker is the worker pool of three nodes, one updated to
// rendered-b, paused by us until until (for window, "" for coalescing).
func pausedWorker(until time.Time, window string) *unstructured.Unstructured {
	p := machineconfigtest.Pool(machineconfig.WorkerPool, machineconfigtest.RoleSelector(machineconfig.WorkerPool), 3, 1, true)
	_ = unstructured.SetNestedField(p.Object, "rendered-b", "spec", "configuration", "name")
	_ = unstructured.SetNestedField(p.Object, "rendered-a", "status", "configuration", "name")
	annotations := map[string]string{machineconfig.PausedUntilAnnotation: until.UTC().Format(time.RFC3339)}
	if window != "" {
		annotations[machineconfig.PausedForAnnotation] = window
	}
	p.SetAnnotations(annotations)
	p.SetManagedFields([]metav1.ManagedFieldsEntry{{Manager: cluster.FieldManager, Operation: metav1.ManagedFieldsOperationApply,
		FieldsV1: &metav1.FieldsV1{Raw: []byte(`{"f:spec":{"f:paused":{}}}`)}}})
	return p
}

// drainOf is the live look at the worker pool's drain with these VMs on
// its nodes.
func drainOf(vms ...v1alpha1.VMImpact) []v1alpha1.PoolReboot {
	return []v1alpha1.PoolReboot{{Pool: machineconfig.WorkerPool, Nodes: 3, Disruption: v1alpha1.NodeDisruptionReboot, Drains: true, VMImpacts: vms}}
}

var (
	gpuVM       = v1alpha1.VMImpact{Node: "worker-2", Namespace: "default", Name: "vm-gpu", Fate: v1alpha1.VMFateBlocksDrain, Reason: "HostDeviceNotLiveMigratable"}
	bigVM       = v1alpha1.VMImpact{Node: "worker-1", Namespace: "default", Name: "db-0", Fate: v1alpha1.VMFateBlocksDrain, Reason: "InsufficientCapacity: needs 64 GiB, 16 GiB free elsewhere"}
	migratingVM = v1alpha1.VMImpact{Node: "worker-0", Namespace: "default", Name: "vm-web", Fate: v1alpha1.VMFateLiveMigrate}
	noneVM      = v1alpha1.VMImpact{Node: "worker-0", Namespace: "default", Name: "vm-batch", Fate: v1alpha1.VMFateShutDown, Reason: "EvictionStrategyNone"}
)

// resumeCase is a pool of ours at the end of its pause (or not), the items
// rolling out on it, and what the live look finds there.
type resumeCase struct {
	name   string
	pool   *unstructured.Unstructured
	window *maintenance.Window
	// rolling: the configs whose items roll out on the pool, with their
	// spec.rollout.allowBlockingDrains.
	rolling map[string]bool
	drain   []v1alpha1.PoolReboot
	err     error

	wantUnpaused bool
	wantLooks    int
	wantAfter    time.Duration
	// wantHeld is in the rollout's message and the Waiting condition of
	// the items ("" when the pool is not held).
	wantHeld string
}

// Before our pause of a pool ends, the drains it starts are looked at
// again, live, as before a write: a VM that blocks a drain or finds no
// room keeps the pool paused; anything else ends the pause as before.
func TestResumeLooksAtTheDrainsFirst(t *testing.T) {
	now := time.Date(2026, 11, 20, 22, 0, 1, 0, time.UTC)
	over, running := now.Add(-time.Minute), now.Add(time.Minute)
	night, err := maintenance.New("night", maintenance.Spec{PoolNames: []string{machineconfig.WorkerPool}, Schedule: "0 22 * * *", Duration: time.Hour, Kind: maintenance.Allow})
	if err != nil {
		t.Fatal(err)
	}
	psiOnly := map[string]bool{"load-aware-rebalancing": false}
	const blockedGPU = "MachineConfigPool 'worker' is paused by virt-advisor: resuming its rollout would drain nodes that run a VM that would block the drain: " +
		"default/vm-gpu (HostDeviceNotLiveMigratable, pool worker); migrate, stop, or change its eviction strategy " +
		"(or set spec.rollout.allowBlockingDrains: true to resume it anyway); MachineConfigPool 'worker' stays paused until no VM blocks"
	for _, tc := range []resumeCase{
		{name: "coalescing pause over, only VMs that migrate: unpaused", pool: pausedWorker(over, ""), rolling: psiOnly,
			drain: drainOf(migratingVM), wantUnpaused: true, wantLooks: 1},
		{name: "coalescing pause over, a VM that shuts down (reviewed or not): unpaused", pool: pausedWorker(over, ""), rolling: psiOnly,
			drain: drainOf(noneVM), wantUnpaused: true, wantLooks: 1},
		{name: "coalescing pause over, nothing left to roll out: unpaused", pool: pausedWorker(over, ""), rolling: psiOnly,
			wantUnpaused: true, wantLooks: 1},
		{name: "coalescing pause over, a VM came that blocks the drain: held, looked at again", pool: pausedWorker(over, ""), rolling: psiOnly,
			drain: drainOf(migratingVM, gpuVM), wantLooks: 1, wantAfter: PreflightRetry, wantHeld: blockedGPU},
		{name: "window pause, the window opened, a VM came that finds no room: held", pool: pausedWorker(now.Add(-time.Second), "night"), window: night, rolling: psiOnly,
			drain: drainOf(bigVM), wantLooks: 1, wantAfter: PreflightRetry,
			wantHeld: "resuming its rollout would drain nodes that run a VM that would block the drain: default/db-0 (InsufficientCapacity: needs 64 GiB, 16 GiB free elsewhere, pool worker)"},
		{name: "two VMs block: both named", pool: pausedWorker(over, ""), rolling: psiOnly,
			drain: drainOf(bigVM, gpuVM), wantLooks: 1, wantAfter: PreflightRetry,
			wantHeld: "run 2 VMs that would block the drain: default/db-0 (InsufficientCapacity: needs 64 GiB, 16 GiB free elsewhere, pool worker), default/vm-gpu (HostDeviceNotLiveMigratable, pool worker); migrate, stop, or change their eviction strategy"},
		{name: "a VM blocks, the config allows blocking drains: unpaused", pool: pausedWorker(over, ""), rolling: map[string]bool{"load-aware-rebalancing": true},
			drain: drainOf(gpuVM), wantUnpaused: true, wantLooks: 1},
		{name: "a VM blocks, one of two configs rolling out allows blocking drains: held", pool: pausedWorker(over, ""),
			rolling: map[string]bool{"load-aware-rebalancing": true, "virt-higher-density": false},
			drain:   drainOf(gpuVM), wantLooks: 1, wantAfter: PreflightRetry, wantHeld: blockedGPU},
		{name: "the VMs cannot be read: held, nothing drained on a guess", pool: pausedWorker(over, ""), rolling: psiOnly,
			err: errors.New(`listing VirtualMachineInstances: virtualmachineinstances.kubevirt.io is forbidden`), wantLooks: 1, wantAfter: PreflightRetry,
			wantHeld: "MachineConfigPool 'worker' is paused by virt-advisor: what resuming its rollout does to the VMs on its nodes cannot be read (listing VirtualMachineInstances: virtualmachineinstances.kubevirt.io is forbidden); MachineConfigPool 'worker' stays paused until it can"},
		{name: "coalescing pause running: no look, not unpaused", pool: pausedWorker(running, ""), rolling: psiOnly,
			drain: drainOf(gpuVM), wantAfter: time.Minute},
	} {
		t.Run(tc.name, func(t *testing.T) { runResume(t, tc, now) })
	}
}

func runResume(t *testing.T, tc resumeCase, now time.Time) {
	reader := &fakeReader{pools: map[string]*unstructured.Unstructured{machineconfig.WorkerPool: tc.pool}}
	pauser, drains := &fakePauser{reader: reader}, &fakeDrains{pending: tc.drain, err: tc.err}
	recorder := record.NewFakeRecorder(10)
	var woken []string
	cfg := Config{Cluster: reader, Pauser: pauser, Drains: drains, Recorder: recorder, Clock: clocktesting.NewFakeClock(now),
		CoalesceWindow: time.Minute, Wake: func(config string) { woken = append(woken, config) }}
	if tc.window != nil {
		cfg.Windows = fakeLister{tc.window}
	}
	var configs []*v1alpha1.VirtPlatformConfig
	for config, allow := range tc.rolling {
		configs = append(configs, rollingConfig(t, config, allow))
	}
	cfg.Configs = listerOf(t, configs...)
	c := New(cfg)
	after, err := c.Reconcile(context.Background(), machineconfig.WorkerPool)
	if err != nil {
		t.Fatalf("reconcile: %v", err)
	}
	if unpaused := slices.Equal(pauser.applies, []bool{false}); unpaused != tc.wantUnpaused || len(pauser.applies) > 1 {
		t.Errorf("applies %v, want unpaused %v", pauser.applies, tc.wantUnpaused)
	}
	if drains.looks != tc.wantLooks || after != tc.wantAfter {
		t.Errorf("looks %d, after %v; want %d, %v", drains.looks, after, tc.wantLooks, tc.wantAfter)
	}
	events := strings.Join(drainEvents(recorder), "\n")
	worker := reader.pools[machineconfig.WorkerPool]
	held := c.resumer.heldMessage(worker, false)
	if tc.wantHeld == "" {
		if held != "" || strings.Contains(events, "ResumeHeld") {
			t.Errorf("held %q, events %q; want no hold", held, events)
		}
		return
	}
	if !strings.Contains(held, tc.wantHeld) || !strings.Contains(events, "Warning ResumeHeldByVirtAdvisor Kept paused by virt-advisor: ") {
		t.Errorf("held %q, events %q; want a hold saying %q", held, events, tc.wantHeld)
	}
	if len(woken) != len(tc.rolling) {
		t.Errorf("woken %v, want the configs rolling out on the pool (%d) told", woken, len(tc.rolling))
	}
	if w := heldWait("enable-psi-metrics", held, false); w.Reason != status.WaitingDrainBlocked {
		t.Errorf("waiting reason %s, want %s", w.Reason, status.WaitingDrainBlocked)
	}
}

func drainEvents(r *record.FakeRecorder) []string {
	var out []string
	for {
		select {
		case e := <-r.Events:
			out = append(out, e)
		default:
			return out
		}
	}
}

// A revert deletes the MachineConfig a halted rollout was rolling out:
// until the MachineConfig operator renders the deletion, the pool's spec
// still names the configuration with it, and an unpause would update more
// nodes to what the revert takes back. The pool stays paused, saying why,
// without a look at the drains, and ends its pause once the render is made.
func TestResumeWaitsForTheRender(t *testing.T) {
	now := time.Date(2026, 11, 20, 22, 0, 1, 0, time.UTC)
	worker := pausedWorker(now.Add(-time.Minute), "")
	source := []interface{}{map[string]interface{}{"kind": "MachineConfig", "name": "00-worker"}, map[string]interface{}{"kind": "MachineConfig", "name": "99-worker-psi"}}
	_ = unstructured.SetNestedSlice(worker.Object, source, "spec", "configuration", "source")
	cfg := rollingConfig(t, "load-aware-rebalancing", false)
	cfg.Status.Items[0].Operation = v1alpha1.OperationDelete
	cfg.Status.Items[0].PoolConfigsBefore = []v1alpha1.PoolConfiguration{{Pool: machineconfig.WorkerPool, Configuration: "rendered-b"}}
	reader := &fakeReader{pools: map[string]*unstructured.Unstructured{machineconfig.WorkerPool: worker}}
	pauser, drains := &fakePauser{reader: reader}, &fakeDrains{}
	recorder := record.NewFakeRecorder(10)
	c := New(Config{Cluster: reader, Pauser: pauser, Drains: drains, Recorder: recorder, Clock: clocktesting.NewFakeClock(now),
		CoalesceWindow: time.Minute, Wake: func(string) {}, Configs: listerOf(t, cfg)})

	after, err := c.Reconcile(context.Background(), machineconfig.WorkerPool)
	if err != nil {
		t.Fatal(err)
	}
	held := c.resumer.heldMessage(worker, false)
	if len(pauser.applies) != 0 || drains.looks != 0 || after != StepPoll {
		t.Errorf("applies %v, looks %d, after %v; want the pool left paused, no look, looked at again in %v", pauser.applies, drains.looks, after, StepPoll)
	}
	if !strings.Contains(held, "has not rendered item 'enable-psi-metrics' of VirtPlatformConfig 'load-aware-rebalancing' (delete MachineConfig '99-worker-psi')") {
		t.Errorf("held %q", held)
	}
	if w := heldWait("enable-psi-metrics", held, c.resumer.isBusy(machineconfig.WorkerPool)); w.Reason != status.WaitingPoolBusy {
		t.Errorf("waiting reason %s, want %s", w.Reason, status.WaitingPoolBusy)
	}

	// Rendered: the spec names the configuration without it.
	_ = unstructured.SetNestedSlice(worker.Object, source[:1], "spec", "configuration", "source")
	_ = unstructured.SetNestedField(worker.Object, "rendered-a", "spec", "configuration", "name")
	_ = unstructured.SetNestedField(worker.Object, "rendered-b", "status", "configuration", "name")
	if _, err := c.Reconcile(context.Background(), machineconfig.WorkerPool); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(pauser.applies, []bool{false}) || drains.looks != 1 {
		t.Errorf("applies %v, looks %d; want unpaused after one look at the drains", pauser.applies, drains.looks)
	}
}
