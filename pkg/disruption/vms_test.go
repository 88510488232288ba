package disruption

import (
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kubevirt/virt-advisor/pkg/apis/advisor/v1alpha1"
	"github.com/kubevirt/virt-advisor/pkg/kubevirt"
)

// The table of crds/README.md "What a node drain does to the VMs on it".
func TestFate(t *testing.T) {
	migratable := func(s string) kubevirt.VMI {
		return kubevirt.VMI{Strategy: s, Condition: true, Migratable: true, Reason: "Migratable"}
	}
	stuck := func(s, reason string) kubevirt.VMI { return kubevirt.VMI{Strategy: s, Condition: true, Reason: reason} }
	liveMigrate := Default{Strategy: StrategyLiveMigrate}
	none := Default{Strategy: StrategyNone}
	tests := []struct {
		name       string
		vmi        kubevirt.VMI
		def        Default
		fate       v1alpha1.VMFate
		wantReason string
	}{
		{"LiveMigrate, migratable: migrates", migratable(StrategyLiveMigrate), none, v1alpha1.VMFateLiveMigrate, ""},
		{"LiveMigrate, not migratable: blocks with the condition's reason", stuck(StrategyLiveMigrate, "HostDeviceNotLiveMigratable"), none, v1alpha1.VMFateBlocksDrain, "HostDeviceNotLiveMigratable"},
		{"LiveMigrate, no condition: blocks, saying the condition is missing", kubevirt.VMI{Strategy: StrategyLiveMigrate}, none, v1alpha1.VMFateBlocksDrain, ReasonConditionMissing},
		{"LiveMigrate, False without reason", kubevirt.VMI{Strategy: StrategyLiveMigrate, Condition: true}, none, v1alpha1.VMFateBlocksDrain, ReasonNotMigratable},
		{"LiveMigrateIfPossible, migratable: migrates", migratable(StrategyLiveMigrateIfPossible), none, v1alpha1.VMFateLiveMigrate, ""},
		{"LiveMigrateIfPossible, not migratable: shuts down", stuck(StrategyLiveMigrateIfPossible, "DisksNotLiveMigratable"), none, v1alpha1.VMFateShutDown, "DisksNotLiveMigratable"},
		{"LiveMigrateIfPossible, no condition: shuts down", kubevirt.VMI{Strategy: StrategyLiveMigrateIfPossible}, none, v1alpha1.VMFateShutDown, ReasonConditionMissing},
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
