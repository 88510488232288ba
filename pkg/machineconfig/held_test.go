package machineconfig

import (
	"slices"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kubevirt/virt-advisor/pkg/apis/advisor/v1alpha1"
)

// A change recorded with an abort (Held) and read back (HeldChange) is
// rendered by the same pools.
func TestHeldRendersOnTheSamePools(t *testing.T) {
	pools := []unstructured.Unstructured{
		labeledPool("worker-cnv", map[string]interface{}{PoolLabelPrefix + "worker-cnv": ""},
			map[string]interface{}{"matchLabels": map[string]interface{}{RoleLabel: "worker-cnv"}}),
		labeledPool("worker", map[string]interface{}{PoolLabelPrefix + "worker": "", "custom-kubelet": "large"},
			map[string]interface{}{"matchLabels": map[string]interface{}{RoleLabel: "worker"}}),
	}
	tests := []struct {
		name     string
		ref      v1alpha1.ObjectReference
		obj      map[string]interface{}
		wantKind string
		want     []string
	}{
		{name: "MachineConfig by its role", ref: mcRef, wantKind: "MachineConfig", want: []string{"worker-cnv"},
			obj: map[string]interface{}{"metadata": map[string]interface{}{"labels": map[string]interface{}{RoleLabel: "worker-cnv"}}}},
		{name: "MachineConfig deleted (no desired state): the worker pool", ref: mcRef, wantKind: "MachineConfig", want: []string{"worker"}},
		{name: "KubeletConfig by a pool label", ref: kcRef, wantKind: "KubeletConfig", want: []string{"worker"},
			obj: kubeletConfig(map[string]interface{}{"matchLabels": map[string]interface{}{"custom-kubelet": "large"}})},
		{name: "KubeletConfig by an expression", ref: kcRef, wantKind: "KubeletConfig", want: []string{"worker", "worker-cnv"},
			obj: kubeletConfig(map[string]interface{}{"matchExpressions": []interface{}{map[string]interface{}{
				"key": PoolLabelPrefix + "master", "operator": "DoesNotExist"}}})},
		{name: "KubeletConfig without a selector: no pool", ref: kcRef, wantKind: "KubeletConfig", obj: kubeletConfig(nil)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := Held(ChangeOf(tt.ref, tt.obj))
			if h.Kind != tt.wantKind || h.Name != tt.ref.Name {
				t.Fatalf("held %s %s, want %s %s", h.Kind, h.Name, tt.wantKind, tt.ref.Name)
			}
			rolled, err := RolledPools(pools, HeldChange(h))
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, p := range rolled {
				got = append(got, p.GetName())
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("rendered by %v, want %v", got, tt.want)
			}
		})
	}
}
