package plan

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kubevirt/virt-advisor/pkg/profiles"
)

func TestMadeByUs(t *testing.T) {
	object := func(labels map[string]string, managers ...string) *unstructured.Unstructured {
		u := &unstructured.Unstructured{Object: map[string]interface{}{}}
		u.SetLabels(labels)
		var entries []metav1.ManagedFieldsEntry
		for _, m := range managers {
			entries = append(entries, metav1.ManagedFieldsEntry{Manager: m, Operation: metav1.ManagedFieldsOperationApply})
		}
		u.SetManagedFields(entries)
		return u
	}
	ours := map[string]string{profiles.ManagedByLabel: "virt-higher-density"}
	tests := []struct {
		name string
		live *unstructured.Unstructured
		want bool
	}{
		{"missing", nil, false},
		{"created by this config", object(ours, FieldManager, "kubectl-edit"), true},
		{"labelled for another config", object(map[string]string{profiles.ManagedByLabel: "other"}, "admin"), false},
		{"made by the earlier operator: only our field manager", object(nil, FieldManager, FieldManager), true},
		{"an administrator's own", object(nil, "kubectl-client-side-apply"), false},
		{"ours and someone else's fields, unlabelled", object(nil, FieldManager, "kubectl-client-side-apply"), false},
		{"no managedFields at all", object(nil), false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := madeByUs(tc.live, "virt-higher-density"); got != tc.want {
				t.Fatalf("madeByUs = %v, want %v", got, tc.want)
			}
		})
	}
}
