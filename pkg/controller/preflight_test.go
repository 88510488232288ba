package controller

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kubevirt/virt-advisor/pkg/apis/advisor/v1alpha1"
	"github.com/kubevirt/virt-advisor/pkg/controller/pools"
	"github.com/kubevirt/virt-advisor/pkg/disruption"
	"github.com/kubevirt/virt-advisor/pkg/plan"
	"github.com/kubevirt/virt-advisor/pkg/status"
)

// The VMs of the worker pool as the e2e spec has them.
var (
	gpu0      = v1alpha1.VMImpact{Node: "worker-2", Namespace: "default", Name: "gpu-0", Fate: v1alpha1.VMFateBlocksDrain, Reason: "HostDeviceNotLiveMigratable"}
	vmNone    = v1alpha1.VMImpact{Node: "worker-1", Namespace: "default", Name: "vm-none", Fate: v1alpha1.VMFateShutDown, Reason: disruption.ReasonStrategyNone}
	migrating = v1alpha1.VMImpact{Node: "worker-0", Namespace: "default", Name: "migratable", Fate: v1alpha1.VMFateLiveMigrate}
	db0       = v1alpha1.VMImpact{Node: "worker-0", Namespace: "default", Name: "db-0", Fate: v1alpha1.VMFateBlocksDrain, Reason: "DisksNotLiveMigratable"}
)

// drainOf is the worker pool rebooted and drained, with these VMs.
func drainOf(vms ...v1alpha1.VMImpact) []v1alpha1.PoolReboot {
	return []v1alpha1.PoolReboot{{Pool: "worker", Nodes: 3, Disruption: v1alpha1.NodeDisruptionReboot, Drains: true, VMImpacts: vms}}
}

// givenApprovedPSI: the PSI MachineConfig item approved after a review
// that showed these VMs; the drain is what the cluster says now.
func givenApprovedPSI(reviewed ...v1alpha1.VMImpact) func(*harness, v1alpha1.VirtPlatformConfigSpec) {
	return func(h *harness, spec v1alpha1.VirtPlatformConfigSpec) {
		h.cluster.put(workerPool{}.obj())
		h.create(spec, "alice")
		res := planOf("snap-1", psiItem(v1alpha1.OperationCreate))
		if d := disruption.Disrupted(drainOf(reviewed...)); len(d) > 0 {
			res.Disrupted = map[string][]v1alpha1.DisruptedVM{psi: d}
		}
		h.planner.result = res
		h.mustReconcile(v1alpha1.PhaseReviewRequired)
		h.approve("admin")
		h.planner.drain = drainOf(reviewed...)
	}
}

func drainNow(vms ...v1alpha1.VMImpact) func(*harness) {
	return func(h *harness) { h.planner.drain = drainOf(vms...) }
}

func clusterVersion(progressing, message string) func(*harness) {
	return func(h *harness) {
		h.cluster.put(&unstructured.Unstructured{Object: map[string]interface{}{
			"apiVersion": "config.openshift.io/v1", "kind": "ClusterVersion",
			"metadata": map[string]interface{}{"name": "version"},
			"status": map[string]interface{}{"conditions": []interface{}{
				map[string]interface{}{"type": "Progressing", "status": progressing, "message": message}}},
		}})
	}
}

// waitingOn is a given that leaves the item waiting on a blocking VM.
func waitingOn(spec v1alpha1.VirtPlatformConfigSpec) func(*harness, v1alpha1.VirtPlatformConfigSpec) {
	return func(h *harness, _ v1alpha1.VirtPlatformConfigSpec) {
		givenApprovedPSI(migrating, vmNone, gpu0)(h, spec)
		h.mustReconcile(v1alpha1.PhaseInProgress)
		if len(h.planner.applied) > 0 {
			h.t.Fatalf("setting up: written while a VM blocks")
		}
	}
}

const blockedMessage = "Waiting: writing MachineConfig '99-worker-psi-karg' would drain nodes that run a VM that would block the drain: default/gpu-0 (HostDeviceNotLiveMigratable, pool worker); " +
	"migrate, stop, or change its eviction strategy (or set spec.rollout.allowBlockingDrains: true to write it anyway); the change is written when no VM blocks"

// TestPreflight walks the edges of the preflight before a MachineConfig
// item's drain: a VM that would block it, a VM the review did not show,
// a cluster upgrade. Each wait leaves the pools unpaused and nothing
// written; each is looked at again after pools.PreflightRetry.
func TestPreflight(t *testing.T) {
	allow := v1alpha1.VirtPlatformConfigSpec{Action: v1alpha1.PlanActionDryRun, Rollout: &v1alpha1.RolloutSpec{AllowBlockingDrains: true}}
	timeout := v1alpha1.VirtPlatformConfigSpec{Action: v1alpha1.PlanActionDryRun, WaitTimeout: "30m"}
	bypass := v1alpha1.VirtPlatformConfigSpec{Action: v1alpha1.PlanActionDryRun, BypassOptimisticLock: true}
	tests := []edge{
		{name: "InProgress --approved, every VM migrates or was reviewed to shut down--> written", spec: dryRun, given: givenApprovedPSI(migrating, vmNone), event: nothing,
			phase: v1alpha1.PhaseInProgress, applied: []string{psi}, items: map[string]itemWant{psi: {v1alpha1.ItemStateInProgress, "MachineConfigPool 'worker' is processing changes"}}},
		{name: "InProgress --approved, a reviewed VM blocks the drain--> InProgress, waiting, the VM named", spec: dryRun, given: givenApprovedPSI(migrating, vmNone, gpu0), event: nothing,
			phase: v1alpha1.PhaseInProgress, requeue: pools.PreflightRetry, items: map[string]itemWant{psi: {v1alpha1.ItemStatePending, blockedMessage}},
			check: func(t *testing.T, h *harness) {
				if paused, _, _ := unstructured.NestedBool(h.cluster.objects[clusterKey("MachineConfigPool", "", "worker")].Object, "spec", "paused"); paused {
					t.Error("the pool was paused for an item that waits")
				}
			}},
		{name: "InProgress (waiting on a VM) --the VM is gone--> written", spec: dryRun, given: waitingOn(dryRun), event: drainNow(migrating, vmNone),
			phase: v1alpha1.PhaseInProgress, applied: []string{psi}},
		{name: "InProgress (waiting on a VM) --the VM became migratable--> written", spec: dryRun, given: waitingOn(dryRun),
			event: drainNow(migrating, vmNone, v1alpha1.VMImpact{Node: "worker-2", Namespace: "default", Name: "gpu-0", Fate: v1alpha1.VMFateLiveMigrate}),
			phase: v1alpha1.PhaseInProgress, applied: []string{psi}},
		{name: "InProgress (waiting on a VM) --still blocked--> InProgress, nothing written", spec: dryRun, given: waitingOn(dryRun), event: nothing,
			phase: v1alpha1.PhaseInProgress, requeue: pools.PreflightRetry, items: map[string]itemWant{psi: {v1alpha1.ItemStatePending, blockedMessage}}},
		{name: "InProgress --approved with allowBlockingDrains, a VM blocks--> written at once", spec: allow, given: givenApprovedPSI(migrating, gpu0), event: nothing,
			phase: v1alpha1.PhaseInProgress, applied: []string{psi}},
		{name: "InProgress (waiting on a VM, waitTimeout 30m) --10m later--> InProgress, looked at again after the retry", spec: timeout, given: waitingOn(timeout),
			event: func(h *harness) { h.clock.Step(10 * time.Minute) },
			phase: v1alpha1.PhaseInProgress, requeue: pools.PreflightRetry, items: map[string]itemWant{psi: {v1alpha1.ItemStatePending, "would block the drain"}}},
		{name: "InProgress (waiting on a VM, waitTimeout 30m) --29m55s later--> InProgress, looked at again when the timeout ends", spec: timeout, given: waitingOn(timeout),
			event: func(h *harness) { h.clock.Step(29*time.Minute + 55*time.Second) },
			phase: v1alpha1.PhaseInProgress, requeue: 5 * time.Second},
		{name: "InProgress (waiting on a VM, waitTimeout 30m) --31m later--> Failed, nothing written", spec: timeout, given: waitingOn(timeout),
			event: func(h *harness) { h.clock.Step(31 * time.Minute) },
			phase: v1alpha1.PhaseFailed, reason: "ItemFailed", message: "Timeout waiting for resource to become healthy (waited 31m0s, timeout 30m0s): writing MachineConfig '99-worker-psi-karg' would drain nodes that run a VM that would block the drain",
			events: []string{"Warning Failed"}},
		{name: "InProgress --a VM that became non-migratable after the review--> Failed StalePlan, nothing written", spec: dryRun, given: givenApprovedPSI(migrating, vmNone),
			event: drainNow(migrating, vmNone, db0),
			phase: v1alpha1.PhaseFailed, reason: "StalePlan",
			message: "MachineConfig '99-worker-psi-karg' would now drain nodes whose VMs the reviewed plan did not show with that fate: default/db-0 (blocks the drain, DisksNotLiveMigratable, pool worker)",
			items:   map[string]itemWant{psi: {v1alpha1.ItemStateFailed, "Not written: item 'enable-psi-metrics'"}}, events: []string{"Warning Failed"}},
		{name: "InProgress --a new VM with strategy None after the review--> Failed StalePlan", spec: dryRun, given: givenApprovedPSI(migrating),
			event: drainNow(migrating, vmNone), phase: v1alpha1.PhaseFailed, reason: "StalePlan", message: "default/vm-none (shuts down, EvictionStrategyNone, pool worker)",
			events: []string{"Warning Failed"}},
		{name: "InProgress --a reviewed blocker now only shuts down (another fate)--> Failed StalePlan", spec: allow, given: givenApprovedPSI(gpu0),
			event: drainNow(v1alpha1.VMImpact{Node: "worker-2", Namespace: "default", Name: "gpu-0", Fate: v1alpha1.VMFateShutDown, Reason: "HostDeviceNotLiveMigratable"}),
			phase: v1alpha1.PhaseFailed, reason: "StalePlan", events: []string{"Warning Failed"}},
		{name: "InProgress --fewer VMs shut down than reviewed--> written", spec: dryRun, given: givenApprovedPSI(migrating, vmNone),
			event: drainNow(migrating), phase: v1alpha1.PhaseInProgress, applied: []string{psi}},
		{name: "InProgress --a new VM with strategy None, bypassOptimisticLock--> written", spec: bypass, given: givenApprovedPSI(migrating),
			event: drainNow(migrating, vmNone), phase: v1alpha1.PhaseInProgress, applied: []string{psi}},
		{name: "InProgress --the VMs cannot be read--> InProgress, not written, retried", spec: dryRun, given: givenApprovedPSI(migrating),
			event: func(h *harness) { h.planner.drainErr = connectionRefused },
			phase: v1alpha1.PhaseInProgress, requeue: time.Second,
			items: map[string]itemWant{psi: {v1alpha1.ItemStatePending, "Retrying in 1s (attempt 1): assessing what draining the nodes of MachineConfig '99-worker-psi-karg' does to the VMs there"}}},
		{name: "InProgress --cluster upgrade in progress--> InProgress, waiting", spec: dryRun, given: givenApprovedPSI(migrating),
			event: clusterVersion("True", "Working towards 4.20.2: 512 of 903 done (56% complete)"),
			phase: v1alpha1.PhaseInProgress, requeue: pools.PreflightRetry,
			items: map[string]itemWant{psi: {v1alpha1.ItemStatePending, "Waiting: cluster upgrade in progress (ClusterVersion version Progressing: Working towards 4.20.2: 512 of 903 done (56% complete)); the change is written when it is done"}}},
		{name: "InProgress --cluster upgrade done (Progressing False)--> written", spec: dryRun, given: givenApprovedPSI(migrating),
			event: clusterVersion("False", "Cluster version is 4.20.2"), phase: v1alpha1.PhaseInProgress, applied: []string{psi}},
		{name: "InProgress --cluster upgrade and a blocking VM--> both said", spec: dryRun, given: givenApprovedPSI(gpu0),
			event: clusterVersion("True", "Working towards 4.20.2"), phase: v1alpha1.PhaseInProgress, requeue: pools.PreflightRetry,
			items: map[string]itemWant{psi: {v1alpha1.ItemStatePending, "Waiting: cluster upgrade in progress (ClusterVersion version Progressing: Working towards 4.20.2); the change is written when it is done; writing MachineConfig '99-worker-psi-karg' would drain"}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) { runEdge(t, tc) })
	}
}

// runEdge runs one edge the way TestReconcileEdges does.
func runEdge(t *testing.T, tc edge) {
	t.Helper()
	h := newHarness(t, thisVersion, tc.distinct)
	tc.given(h, tc.spec)
	h.forget()
	tc.event(h)
	h.reconcile()
	cfg := h.get()
	if (h.err != nil) != tc.err {
		t.Fatalf("reconcile error %v, want error %t", h.err, tc.err)
	}
	if cfg.Status.Phase != tc.phase {
		t.Fatalf("phase %s, want %s (%s)", cfg.Status.Phase, tc.phase, status.PhaseMessage(&cfg.Status))
	}
	if tc.reason != "" || tc.message != "" {
		c := meta.FindStatusCondition(cfg.Status.Conditions, string(tc.phase))
		if c == nil {
			t.Fatalf("no condition %s", tc.phase)
		}
		if tc.reason != "" && c.Reason != tc.reason {
			t.Errorf("reason %q, want %q", c.Reason, tc.reason)
		}
		if !strings.Contains(c.Message, tc.message) {
			t.Errorf("phase message %q does not contain %q", c.Message, tc.message)
		}
	}
	for name, want := range tc.items {
		var got *v1alpha1.VirtPlatformConfigItem
		for i := range cfg.Status.Items {
			if cfg.Status.Items[i].Name == name {
				got = &cfg.Status.Items[i]
			}
		}
		if got == nil {
			t.Fatalf("no item %s", name)
		}
		if got.State != want.state || !strings.Contains(got.Message, want.message) {
			t.Errorf("item %s: %s %q, want %s containing %q", name, got.State, got.Message, want.state, want.message)
		}
	}
	if !reflect.DeepEqual(h.planner.applied, tc.applied) {
		t.Errorf("applied %v, want %v", h.planner.applied, tc.applied)
	}
	if tc.requeue != 0 && h.requeue != tc.requeue {
		t.Errorf("requeue %v, want %v", h.requeue, tc.requeue)
	}
	events := h.events()
	for i, want := range tc.events {
		if i >= len(events) || !strings.HasPrefix(events[i], want) {
			t.Errorf("events %q, want prefixes %q", events, tc.events)
			break
		}
	}
	if tc.check != nil {
		tc.check(t, h)
	}
}

// The item records the VMs its review accepted, and the approval binds
// them.
func TestApprovalRecordsReviewedVMs(t *testing.T) {
	h := newHarness(t, thisVersion, false)
	givenApprovedPSI(migrating, vmNone, gpu0)(h, dryRun)
	got := h.get().Status.Items[0].ReviewedVMImpact
	want := disruption.Disrupted(drainOf(gpu0, vmNone))
	if !reflect.DeepEqual(got, want) {
		t.Errorf("reviewedVMImpact %+v, want %+v", got, want)
	}
	cfg := h.get()
	before, _ := plan.ItemsHash(cfg.Status.Items)
	cfg.Status.Items[0].ReviewedVMImpact = nil
	after, _ := plan.ItemsHash(cfg.Status.Items)
	if before == after {
		t.Error("the items hash does not bind the reviewed VMs")
	}
}
