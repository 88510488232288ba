package controller

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kubevirt/virt-advisor/pkg/apis/advisor/v1alpha1"
	"github.com/kubevirt/virt-advisor/pkg/machineconfig"
)

const (
	kubeletItem = "dedicated-cpus"
	kubeletName = "virt-advisor-dedicated-cpus"
)

// kubeletConfigItem is a KubeletConfig for the worker pool, selected by
// the pool's own label.
func kubeletConfigItem(op v1alpha1.Operation) v1alpha1.PlanItem {
	return v1alpha1.PlanItem{
		Name:      kubeletItem,
		TargetRef: v1alpha1.ObjectReference{APIVersion: "machineconfiguration.openshift.io/v1", Kind: "KubeletConfig", Name: kubeletName},
		Operation: op, ImpactSeverity: v1alpha1.ImpactHigh,
		DesiredState: raw(map[string]interface{}{
			"apiVersion": "machineconfiguration.openshift.io/v1", "kind": "KubeletConfig",
			"metadata": map[string]interface{}{"name": kubeletName},
			"spec": map[string]interface{}{
				"machineConfigPoolSelector": map[string]interface{}{"matchLabels": map[string]interface{}{machineconfig.PoolLabelPrefix + "worker": ""}},
				"kubeletConfig":             map[string]interface{}{"cpuManagerPolicy": "static"},
			},
		}),
		ManagedFields: []string{"spec.kubeletConfig", "spec.machineConfigPoolSelector"},
	}
}

// kubeletPool is the worker pool with its label, before the KubeletConfig
// (rendered-a) or rolled out with the MachineConfig generated from it.
func kubeletPool(rolled bool) *unstructured.Unstructured {
	p := workerPool{}.obj()
	p.SetLabels(map[string]string{machineconfig.PoolLabelPrefix + "worker": ""})
	if rolled {
		sources := []interface{}{
			map[string]interface{}{"kind": "MachineConfig", "name": "00-worker"},
			map[string]interface{}{"kind": "MachineConfig", "name": machineconfig.GeneratedKubeletName("worker", "")},
		}
		for _, part := range []string{"spec", "status"} {
			_ = unstructured.SetNestedField(p.Object, "rendered-k", part, "configuration", "name")
			_ = unstructured.SetNestedSlice(p.Object, sources, part, "configuration", "source")
		}
	}
	return p
}

// liveKubeletConfig is the KubeletConfig as the MachineConfig operator
// leaves it: the suffix recorded and the last condition.
func liveKubeletConfig(condition, message string) *unstructured.Unstructured {
	kc := &unstructured.Unstructured{Object: map[string]interface{}{
		"apiVersion": "machineconfiguration.openshift.io/v1", "kind": "KubeletConfig",
		"metadata": map[string]interface{}{"name": kubeletName, "generation": int64(1),
			"annotations": map[string]interface{}{machineconfig.MCNameSuffixAnnotation: ""}},
		"status": map[string]interface{}{"observedGeneration": int64(1), "conditions": []interface{}{
			map[string]interface{}{"type": condition, "status": "True", "message": message}}},
	}}
	return kc
}

// A KubeletConfig item is written and then followed like a MachineConfig
// item: it is not Completed when written, but when the pool its selector
// selects has rolled out the MachineConfig generated from it; a
// KubeletConfig the MachineConfig operator refused is said so.
func TestReconcileKubeletConfigItem(t *testing.T) {
	tests := []struct {
		name   string
		event  func(h *harness)
		phase  v1alpha1.ConfigPhase
		state  v1alpha1.ItemState
		substr string
	}{
		{name: "InProgress --written--> InProgress (waiting for the pool)", event: nothing,
			phase: v1alpha1.PhaseInProgress, state: v1alpha1.ItemStateInProgress, substr: "MachineConfigPool 'worker'"},
		{name: "InProgress --rendered and rolled out--> Completed", event: func(h *harness) {
			h.cluster.put(liveKubeletConfig(machineconfig.KubeletConfigSuccess, "Success"))
			h.cluster.put(kubeletPool(true))
		}, phase: v1alpha1.PhaseCompleted, state: v1alpha1.ItemStateCompleted, substr: "MachineConfigPool 'worker' is ready"},
		{name: "InProgress --refused by the MachineConfig operator--> InProgress (the refusal in the item message)", event: func(h *harness) {
			h.cluster.put(liveKubeletConfig(machineconfig.KubeletConfigFailure, "Error: KubeletConfiguration: cgroupDriver is not allowed to be set, but contains: cgroupfs"))
		}, phase: v1alpha1.PhaseInProgress, state: v1alpha1.ItemStateInProgress,
			substr: "the MachineConfig operator refused KubeletConfig 'virt-advisor-dedicated-cpus': Error: KubeletConfiguration: cgroupDriver is not allowed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, "v1", false)
			h.cluster.put(kubeletPool(false))
			h.create(dryRun, "alice")
			h.planner.result = planOf("snap-1", kubeletConfigItem(v1alpha1.OperationCreate))
			h.mustReconcile(v1alpha1.PhaseReviewRequired)
			h.approve("admin")
			h.mustReconcile(v1alpha1.PhaseInProgress)
			h.planner.result = planOf("snap-2", kubeletConfigItem(v1alpha1.OperationNone))
			if len(h.planner.applied) != 1 {
				t.Fatalf("applied %v, want the KubeletConfig", h.planner.applied)
			}
			it := h.get().Status.Items[0]
			if len(it.PoolConfigsBefore) != 1 || it.PoolConfigsBefore[0] != (v1alpha1.PoolConfiguration{Pool: "worker", Configuration: "rendered-a"}) {
				t.Errorf("poolConfigsBefore = %+v, want worker on rendered-a", it.PoolConfigsBefore)
			}
			tt.event(h)
			h.mustReconcile(tt.phase)
			it = h.get().Status.Items[0]
			if it.State != tt.state || !strings.Contains(it.Message, tt.substr) {
				t.Errorf("item %s %q, want %s with %q", it.State, it.Message, tt.state, tt.substr)
			}
		})
	}
}
