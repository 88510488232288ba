package plan

import (
	"encoding/json"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kubevirt/virt-advisor/pkg/apis/advisor/v1alpha1"
)

func TestSnapshotKey(t *testing.T) {
	gvk := schema.GroupVersionKind{Group: "operator.openshift.io", Version: "v1", Kind: "KubeDescheduler"}
	if got := snapshotKey(gvk, "ns", "cluster"); got != "operator.openshift.io/v1/KubeDescheduler/ns/cluster" {
		t.Errorf("namespaced key %q", got)
	}
	if got := snapshotKey(schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}, "", "x"); got != "/v1/ConfigMap/x" {
		t.Errorf("cluster-scoped key %q", got)
	}
}

func TestSnapshotValue(t *testing.T) {
	live := &unstructured.Unstructured{Object: map[string]interface{}{
		"metadata": map[string]interface{}{"resourceVersion": "7",
			"labels":      map[string]interface{}{"machineconfiguration.openshift.io/role": "worker", "other": "x"},
			"annotations": map[string]interface{}{"empty": ""}},
		"spec": map[string]interface{}{"mode": "Automatic", "profiles": []interface{}{"A"}, "logLevel": "Normal"},
	}}
	tests := []struct {
		name    string
		live    *unstructured.Unstructured
		managed []string
		bound   boundMeta
		want    string
	}{
		{"missing", nil, []string{"spec.mode"}, boundMeta{labels: []string{"a"}}, `{"__state":"NOT_FOUND"}`},
		{"managed fields only", live, []string{"spec.mode", "spec.profiles"}, boundMeta{}, `{"spec.mode":"Automatic","spec.profiles":["A"]}`},
		{"whole spec when none named", live, nil, boundMeta{}, `{"spec":{"logLevel":"Normal","mode":"Automatic","profiles":["A"]}}`},
		{"absent managed field", live, []string{"spec.evictionLimits"}, boundMeta{}, `{"spec.evictionLimits":null}`},
		{"labels and annotations the write sets", live, []string{"spec.mode"},
			boundMeta{labels: []string{"machineconfiguration.openshift.io/role", "gone"}, annotations: []string{"empty"}},
			`{"spec.mode":"Automatic","metadata.labels[machineconfiguration.openshift.io/role]":"worker","metadata.labels[gone]":null,"metadata.annotations[empty]":""}`},
		{"whole spec and a label", live, nil, boundMeta{labels: []string{"other"}},
			`{"spec":{"logLevel":"Normal","mode":"Automatic","profiles":["A"]},"metadata.labels[other]":"x"}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h1, err := hashJSON(snapshotValue(tt.live, tt.managed, tt.bound))
			if err != nil {
				t.Fatal(err)
			}
			h2, _ := hashJSON(rawJSON(tt.want))
			if h1 != h2 {
				t.Errorf("snapshot of %s differs from %s", tt.name, tt.want)
			}
		})
	}
}

func TestMaxImpact(t *testing.T) {
	tests := []struct{ a, b, want v1alpha1.Impact }{
		{"", v1alpha1.ImpactLow, v1alpha1.ImpactLow},
		{v1alpha1.ImpactHigh, v1alpha1.ImpactMedium, v1alpha1.ImpactHigh},
		{v1alpha1.ImpactLow, v1alpha1.ImpactMedium, v1alpha1.ImpactMedium},
		{"", v1alpha1.ImpactNone, v1alpha1.ImpactNone},
		{v1alpha1.ImpactNone, v1alpha1.ImpactNone, v1alpha1.ImpactNone},
		{v1alpha1.ImpactNone, v1alpha1.ImpactLow, v1alpha1.ImpactLow},
		{v1alpha1.ImpactHigh, v1alpha1.ImpactNone, v1alpha1.ImpactHigh},
	}
	for _, tt := range tests {
		if got := MaxImpact(tt.a, tt.b); got != tt.want {
			t.Errorf("MaxImpact(%s, %s) = %s, want %s", tt.a, tt.b, got, tt.want)
		}
	}
}

func rawJSON(s string) interface{} {
	var v interface{}
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		panic(err)
	}
	return v
}

// The VMs an item was reviewed to shut down or be blocked by are part of
// what its approval binds; items without any hash as they did before.
func TestItemsHashBindsReviewedVMImpact(t *testing.T) {
	item := v1alpha1.VirtPlatformConfigItem{Name: "enable-psi-metrics", Operation: v1alpha1.OperationCreate}
	before, _ := hashJSON([]interface{}{map[string]interface{}{"name": item.Name, "targetRef": item.TargetRef, "operation": item.Operation, "desiredState": nil}})
	tests := []struct {
		name string
		vms  []v1alpha1.DisruptedVM
		same bool
	}{
		{"none", nil, true},
		{"one", []v1alpha1.DisruptedVM{{Pool: "worker", Namespace: "default", Name: "gpu-0", Fate: v1alpha1.VMFateBlocksDrain}}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			it := item
			it.ReviewedVMImpact = tc.vms
			got, err := ItemsHash([]v1alpha1.VirtPlatformConfigItem{it})
			if err != nil {
				t.Fatal(err)
			}
			if (got == before) != tc.same {
				t.Errorf("hash equal to the one without VMs: %t, want %t", got == before, tc.same)
			}
		})
	}
}
