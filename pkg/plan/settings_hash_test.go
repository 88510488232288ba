package plan

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubevirt/virt-advisor/pkg/apis/advisor/v1alpha1"
)

// The plan hash of given settings is what it was when false settings were
// left out of the Plan's JSON: status.settings now shows every boolean,
// false included, and an approval recorded before still approves the
// same plan. The hashes below were computed before that change.
func TestPlanHashOfSettingsIsUnchanged(t *testing.T) {
	cfg := &v1alpha1.VirtPlatformConfig{ObjectMeta: metav1.ObjectMeta{Name: "virt-higher-density", Generation: 3, UID: "u"},
		Spec: v1alpha1.VirtPlatformConfigSpec{Profile: "virt-higher-density"}}
	items := []interface{}{map[string]interface{}{"name": "enable-kubelet-swap"}}
	snapshot := map[string]interface{}{"k": "v"}
	tests := []struct {
		settings v1alpha1.PlanSettings
		want     string
	}{
		{v1alpha1.PlanSettings{Action: "Apply", FailurePolicy: "Abort"}, "c80623b23e9577db0264012ed1482308db3f6edb692d72a99ce555a1726caa7e"},
		{v1alpha1.PlanSettings{Action: "DryRun", FailurePolicy: "Continue", WaitTimeout: "30m"}, "6e8796b15381126f937f113a6abd6d0c0dd4eb9679976d8cb0051093aa135b3f"},
		{v1alpha1.PlanSettings{Action: "Apply", FailurePolicy: "Abort", BypassOptimisticLock: true, AllowBlockingDrains: true}, "496ee46668c94c6399335f17ae1676b77521623c345094816b11413352c435f3"},
		{v1alpha1.PlanSettings{Action: "Apply", FailurePolicy: "Abort", AllowBlockingDrains: true}, "9c0dd638eacc3b5ada619f8a89eec2d4fdd6723becca7c2157eca6fe4220a95a"},
	}
	for _, tt := range tests {
		got, err := hashPlan(cfg, tt.settings, items, snapshot, nil, false)
		if err != nil {
			t.Fatal(err)
		}
		if got != tt.want {
			t.Errorf("settings %+v hash to %s, before %s", tt.settings, got, tt.want)
		}
	}
}
