package disruption

import (
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kubevirt/virt-advisor/pkg/apis/advisor/v1alpha1"
)

// The table of crds/README.md "What a node drain does to the VMs on it".
func TestFate(t *testing.T) {
	migratable := func(s string) VMI { return VMI{Strategy: s, Condition: true, Migratable: true, Reason: "Migratable"} }
	stuck := func(s, reason string) VMI { return VMI{Strategy: s, Condition: true, Reason: reason} }
	liveMigrate := Default{Strategy: StrategyLiveMigrate}
	none := Default{Strategy: StrategyNone}
	tests := []struct {
		name       string
		vmi        VMI
		def        Default
		fate       v1alpha1.VMFate
		wantReason string
	}{
		{"LiveMigrate, migratable: migrates", migratable(StrategyLiveMigrate), none, v1alpha1.VMFateLiveMigrate, ""},
		{"LiveMigrate, not migratable: blocks with the condition's reason", stuck(StrategyLiveMigrate, "HostDeviceNotLiveMigratable"), none, v1alpha1.VMFateBlocksDrain, "HostDeviceNotLiveMigratable"},
		{"LiveMigrate, no condition: blocks, saying the condition is missing", VMI{Strategy: StrategyLiveMigrate}, none, v1alpha1.VMFateBlocksDrain, ReasonConditionMissing},
		{"LiveMigrate, False without reason", VMI{Strategy: StrategyLiveMigrate, Condition: true}, none, v1alpha1.VMFateBlocksDrain, ReasonNotMigratable},
		{"LiveMigrateIfPossible, migratable: migrates", migratable(StrategyLiveMigrateIfPossible), none, v1alpha1.VMFateLiveMigrate, ""},
		{"LiveMigrateIfPossible, not migratable: shuts down", stuck(StrategyLiveMigrateIfPossible, "DisksNotLiveMigratable"), none, v1alpha1.VMFateShutDown, "DisksNotLiveMigratable"},
		{"LiveMigrateIfPossible, no condition: shuts down", VMI{Strategy: StrategyLiveMigrateIfPossible}, none, v1alpha1.VMFateShutDown, ReasonConditionMissing},
		{"External, migratable: blocks", migratable(StrategyExternal), none, v1alpha1.VMFateBlocksDrain, ReasonExternal},
		{"External, not migratable: blocks", stuck(StrategyExternal, "SEVNotLiveMigratable"), none, v1alpha1.VMFateBlocksDrain, ReasonExternal},
		{"None, migratable: shuts down", migratable(StrategyNone), liveMigrate, v1alpha1.VMFateShutDown, ReasonStrategyNone},
		{"None, not migratable: shuts down", stuck(StrategyNone, "InterfaceNotLiveMigratable"), liveMigrate, v1alpha1.VMFateShutDown, ReasonStrategyNone},
		{"unset with default LiveMigrate, migratable: migrates", migratable(""), liveMigrate, v1alpha1.VMFateLiveMigrate, ""},
		{"unset with default LiveMigrate, not migratable: blocks", stuck("", "CPUModeLiveMigratable"), liveMigrate, v1alpha1.VMFateBlocksDrain, "CPUModeLiveMigratable (cluster default LiveMigrate)"},
		{"unset with default None: shuts down", migratable(""), none, v1alpha1.VMFateShutDown, ReasonStrategyNone + " (cluster default None)"},
		{"a strategy KubeVirt does not act on: shut down", migratable("Later"), liveMigrate, v1alpha1.VMFateShutDown, "EvictionStrategyLater"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			fate, reason := Fate(tc.vmi, tc.def)
			if fate != tc.fate || reason != tc.wantReason {
				t.Errorf("Fate = %s (%q), want %s (%q)", fate, reason, tc.fate, tc.wantReason)
			}
		})
	}
}

func vmiObject(ns, name, node, phase, strategy string, conds ...map[string]interface{}) unstructured.Unstructured {
	u := unstructured.Unstructured{Object: map[string]interface{}{
		"apiVersion": "kubevirt.io/v1", "kind": "VirtualMachineInstance",
		"metadata": map[string]interface{}{"namespace": ns, "name": name},
		"spec":     map[string]interface{}{},
		"status":   map[string]interface{}{"phase": phase},
	}}
	if node != "" {
		u.Object["status"].(map[string]interface{})["nodeName"] = node
	}
	if strategy != "" {
		u.Object["spec"].(map[string]interface{})["evictionStrategy"] = strategy
	}
	var list []interface{}
	for _, c := range conds {
		list = append(list, c)
	}
	if list != nil {
		u.Object["status"].(map[string]interface{})["conditions"] = list
	}
	return u
}

func TestReadVMI(t *testing.T) {
	cond := map[string]interface{}{"type": "LiveMigratable", "status": "False", "reason": "HostDeviceNotLiveMigratable"}
	other := map[string]interface{}{"type": "Ready", "status": "True"}
	tests := []struct {
		name    string
		obj     unstructured.Unstructured
		want    VMI
		running bool
	}{
		{"running with the condition", vmiObject("default", "gpu-0", "worker-1", "Running", "LiveMigrate", other, cond),
			VMI{Namespace: "default", Name: "gpu-0", Node: "worker-1", Phase: "Running", Strategy: "LiveMigrate", Condition: true, Reason: "HostDeviceNotLiveMigratable"}, true},
		{"scheduled, no condition yet", vmiObject("default", "a", "worker-1", "Scheduled", ""),
			VMI{Namespace: "default", Name: "a", Node: "worker-1", Phase: "Scheduled"}, true},
		{"ended", vmiObject("default", "a", "worker-1", "Succeeded", ""),
			VMI{Namespace: "default", Name: "a", Node: "worker-1", Phase: "Succeeded"}, false},
		{"failed", vmiObject("default", "a", "worker-1", "Failed", ""),
			VMI{Namespace: "default", Name: "a", Node: "worker-1", Phase: "Failed"}, false},
		{"pending, no node", vmiObject("default", "a", "", "Pending", ""),
			VMI{Namespace: "default", Name: "a", Phase: "Pending"}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := ReadVMI(&tc.obj)
			if got != tc.want || got.Running() != tc.running {
				t.Errorf("ReadVMI = %+v (running %t), want %+v (running %t)", got, got.Running(), tc.want, tc.running)
			}
		})
	}
	labelled := vmiObject("default", "a", "", "Running", "")
	labelled.SetLabels(map[string]string{NodeNameLabel: "worker-2"})
	if got := ReadVMI(&labelled); got.Node != "worker-2" {
		t.Errorf("node from the %s label: %q", NodeNameLabel, got.Node)
	}
}

func TestClusterDefault(t *testing.T) {
	hco := func(version string, spec map[string]interface{}) *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: map[string]interface{}{"apiVersion": "hco.kubevirt.io/" + version, "kind": "HyperConverged", "spec": spec}}
	}
	tests := []struct {
		name    string
		hco     *unstructured.Unstructured
		workers int
		want    string
	}{
		{"v1beta1 spec.evictionStrategy", hco("v1beta1", map[string]interface{}{"evictionStrategy": "None"}), 3, StrategyNone},
		{"v1 spec.virtualization.evictionStrategy", hco("v1", map[string]interface{}{"virtualization": map[string]interface{}{"evictionStrategy": "LiveMigrateIfPossible"}}), 3, StrategyLiveMigrateIfPossible},
		{"v1 ignores a v1beta1 path", hco("v1", map[string]interface{}{"evictionStrategy": "None"}), 3, StrategyLiveMigrate},
		{"unset, 3 workers", hco("v1beta1", map[string]interface{}{}), 3, StrategyLiveMigrate},
		{"unset, 2 workers", nil, 2, StrategyLiveMigrate},
		{"unset, 1 worker", nil, 1, StrategyNone},
		{"unset, no worker", nil, 0, StrategyNone},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := ClusterDefault(tc.hco, tc.workers); got.Strategy != tc.want {
				t.Errorf("ClusterDefault = %+v, want %s", got, tc.want)
			}
		})
	}
}
