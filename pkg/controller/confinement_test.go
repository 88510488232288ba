package controller

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kubevirt/virt-advisor/pkg/apis/advisor/v1alpha1"
	"github.com/kubevirt/virt-advisor/pkg/machineconfig"
	"github.com/kubevirt/virt-advisor/pkg/status"
)

// bindingMissing is what the server's guard says when the MachineConfig
// policy's binding is gone (pkg/confinement).
var bindingMissing = errors.New("virt-advisor writes no machineconfigs.machineconfiguration.openshift.io while the admission policy that confines its writes there is not in force: " +
	"ValidatingAdmissionPolicyBinding virt-advisor-apiserver-writes-machineconfigs is missing")

func refuse(kind string) func(*harness) {
	return func(h *harness) { h.confinement.refuse(kind, bindingMissing) }
}

// givenWaitingForPolicy: the PSI item approved while its admission
// policy's binding is missing, waiting.
func givenWaitingForPolicy(h *harness, spec v1alpha1.VirtPlatformConfigSpec) {
	givenPSIApproved(h, spec)
	refuse("MachineConfig")(h)
	h.mustReconcile(v1alpha1.PhaseInProgress)
}

// noPause: no pool was paused or unpaused.
func noPause(t *testing.T, h *harness) {
	t.Helper()
	if len(h.cluster.pauses) != 0 {
		t.Errorf("pool pauses %v, want none", h.cluster.pauses)
	}
}

// TestConfinementHoldsWrites: an approved item whose admission policies
// are not in force is neither read, nor paused for, nor written; it waits,
// and the config says what is missing, until they are.
func TestConfinementHoldsWrites(t *testing.T) {
	waitMessage := "Item 'enable-psi-metrics' is not written: virt-advisor writes no machineconfigs.machineconfiguration.openshift.io"
	tests := []edge{
		{name: "ReviewRequired --approved, the MachineConfig policy's binding missing--> InProgress (Waiting AdmissionPolicyNotInForce; nothing written, no pool paused)",
			spec: dryRun, given: givenPSIApproved, event: refuse("MachineConfig"),
			phase: v1alpha1.PhaseInProgress, reason: "Waiting", message: waitMessage + " while the admission policy",
			items:   map[string]itemWant{psi: {v1alpha1.ItemStatePending, "Not written: virt-advisor writes no machineconfigs"}},
			events:  []string{"Normal Waiting " + waitMessage},
			requeue: confinementRetry,
			check: both(waiting(status.WaitingAdmissionPolicy, "ValidatingAdmissionPolicyBinding virt-advisor-apiserver-writes-machineconfigs is missing"), noPause,
				func(t *testing.T, h *harness) {
					if n := h.planner.checks[psi]; n != 0 {
						t.Errorf("the item's target was checked %d times, want none: nothing is read for an item that waits for its policy", n)
					}
				})},
		{name: "InProgress (waiting for the policy) --an hour later--> InProgress, still waiting, nothing written",
			spec: dryRun, given: givenWaitingForPolicy, event: func(h *harness) { h.clock.Step(time.Hour) },
			phase: v1alpha1.PhaseInProgress, reason: "Waiting", message: waitMessage,
			items: map[string]itemWant{psi: {v1alpha1.ItemStatePending, "Not written"}},
			check: both(waiting(status.WaitingAdmissionPolicy, "is missing"), noPause)},
		{name: "InProgress (waiting for the policy) --the binding restored--> InProgress (written; Waiting False)",
			spec: dryRun, given: givenWaitingForPolicy, event: func(h *harness) { h.confinement.refuse("MachineConfig", nil) },
			phase: v1alpha1.PhaseInProgress, reason: "Approved", message: "Applying plan", applied: []string{psi},
			check: waiting("", "")},
		{name: "ReviewRequired --approved, the KubeletConfig policy missing--> InProgress (Waiting; nothing written)",
			spec: dryRun,
			given: func(h *harness, s v1alpha1.VirtPlatformConfigSpec) {
				h.cluster.put(kubeletPool(false))
				h.create(s, "alice")
				h.planner.result = planOf("snap-1", kubeletConfigItem(v1alpha1.OperationCreate))
				h.mustReconcile(v1alpha1.PhaseReviewRequired)
				h.approve("admin")
			},
			event: refuse("KubeletConfig"), phase: v1alpha1.PhaseInProgress, reason: "Waiting", message: "Item 'dedicated-cpus' is not written",
			items: map[string]itemWant{kubeletItem: {v1alpha1.ItemStatePending, "Not written"}},
			check: both(waiting(status.WaitingAdmissionPolicy, "is missing"), noPause)},
		{name: "ReviewRequired --approved, only the MachineConfig policy missing--> Completed (a KubeDescheduler is confined by its own policy)",
			spec: dryRun, given: givenApproved, event: refuse("MachineConfig"),
			phase: v1alpha1.PhaseCompleted, applied: []string{descheduler}},
		{name: "ReviewRequired --approved, the policy goes during the checks--> InProgress (looked at again; nothing written)",
			spec: dryRun, given: givenPSIApproved,
			event: func(h *harness) {
				h.cluster.onRead = func(kind string) {
					if kind == "MachineConfigPool" {
						h.confinement.refuse("MachineConfig", bindingMissing)
					}
				}
			},
			phase: v1alpha1.PhaseInProgress, err: true,
			check: func(t *testing.T, h *harness) {
				if !errors.Is(h.err, errLookAgain) || !strings.Contains(h.err.Error(), "is missing") {
					t.Errorf("reconcile error %v, want a look again naming the missing binding", h.err)
				}
				h.cluster.onRead = nil
				h.reconcile()
				if len(h.planner.applied) != 0 {
					t.Errorf("applied %v after the policy went, want nothing", h.planner.applied)
				}
				waiting(status.WaitingAdmissionPolicy, "is missing")(t, h)
			}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) { runEdge(t, tc) })
	}
}

// TestConfinedPauser: a pause (the brake) is applied whatever the
// admission policies; the end of one waits for the pools' policy.
func TestConfinedPauser(t *testing.T) {
	for _, tc := range []struct {
		name    string
		paused  bool
		refused bool
		applied []bool
	}{
		{name: "pause, policies in force", paused: true, applied: []bool{true}},
		{name: "pause, the pools' policy missing: the brake holds", paused: true, refused: true, applied: []bool{true}},
		{name: "unpause, policies in force", applied: []bool{false}},
		{name: "unpause, the pools' policy missing: refused, the pool stays paused", refused: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cl := &fakeCluster{objects: map[string]*unstructured.Unstructured{}}
			cl.put(workerPool{paused: true}.obj())
			conf := &fakeConfinement{refused: map[string]error{}}
			if tc.refused {
				conf.refuse("MachineConfigPool", bindingMissing)
			}
			obj := &unstructured.Unstructured{Object: map[string]interface{}{"metadata": map[string]interface{}{"name": machineconfig.WorkerPool}}}
			obj.SetGroupVersionKind(machineconfig.MachineConfigPoolGVK)
			if tc.paused {
				obj.Object["spec"] = map[string]interface{}{"paused": true}
			}
			err := confinedPauser{pauser: cl, confinement: conf}.ApplyPool(context.Background(), obj)
			if refusedUnpause := tc.refused && !tc.paused; (err != nil) != refusedUnpause {
				t.Fatalf("ApplyPool: %v, want refused: %t", err, refusedUnpause)
			}
			if len(cl.pauses) != len(tc.applied) || (len(tc.applied) > 0 && cl.pauses[0] != tc.applied[0]) {
				t.Errorf("applied %v, want %v", cl.pauses, tc.applied)
			}
		})
	}
}
