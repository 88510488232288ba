package controller

import (
	"reflect"
	"testing"

	"k8s.io/apimachinery/pkg/runtime"

	"github.com/kubevirt/virt-advisor/pkg/apis/advisor/v1alpha1"
	"github.com/kubevirt/virt-advisor/pkg/plan"
)

func TestDriftSummaryIsSorted(t *testing.T) {
	got := driftSummary(map[string][]string{"b": {"spec.x"}, "a": {"spec.y", "spec.z"}})
	if want := "item 'a' (spec.y, spec.z); item 'b' (spec.x)"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

func TestDriftedFields(t *testing.T) {
	desired := &runtime.RawExtension{Raw: []byte(`{"spec":{"mode":"Automatic"}}`)}
	tests := []struct {
		name    string
		item    v1alpha1.PlanItem
		differs map[string][]string
		want    []string
	}{
		{"managed fields the plan found different", v1alpha1.PlanItem{Name: "a", Operation: v1alpha1.OperationUpdate, DesiredState: desired},
			map[string][]string{"a": {"spec.mode"}}, []string{"spec.mode"}},
		{"target gone", v1alpha1.PlanItem{Name: "a", Operation: v1alpha1.OperationCreate, DesiredState: desired},
			map[string][]string{}, []string{"the object (deleted)"}},
		{"managed fields as desired", v1alpha1.PlanItem{Name: "a", Operation: v1alpha1.OperationUpdate, DesiredState: desired},
			map[string][]string{"a": {}}, []string{"labels or fields outside the managed ones"}},
		{"an object to delete is back", v1alpha1.PlanItem{Name: "a", Operation: v1alpha1.OperationDelete},
			map[string][]string{}, []string{"the object"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := driftedFields(tt.item, &plan.Result{Differs: tt.differs}); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("driftedFields = %q, want %q", got, tt.want)
			}
		})
	}
}
