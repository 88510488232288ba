package maintenancewindow

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/runtime"

	"github.com/kubevirt/virt-advisor/pkg/apis/advisor"
	"github.com/kubevirt/virt-advisor/pkg/apis/advisor/install"
	"github.com/kubevirt/virt-advisor/pkg/apis/advisor/v1alpha1"
)

// Every field the storage selects by is accepted over HTTP (it has a
// field label conversion), and an unknown one is refused naming those
// that are known.
func TestSelectableFieldsAreConverted(t *testing.T) {
	scheme := runtime.NewScheme()
	install.Install(scheme)
	gvk := v1alpha1.SchemeGroupVersion.WithKind("MaintenanceWindow")
	_, fields, err := GetAttrs(&advisor.MaintenanceWindow{})
	if err != nil {
		t.Fatal(err)
	}
	for label := range fields {
		if _, _, err := scheme.ConvertFieldLabel(gvk, label, "x"); err != nil {
			t.Errorf("field selector %s: %v", label, err)
		}
	}
	_, _, err = scheme.ConvertFieldLabel(gvk, "spec.timeZone", "UTC")
	if err == nil || !strings.Contains(err.Error(), `"spec.kind"`) {
		t.Errorf("unknown field selector: %v, want a refusal naming the known ones", err)
	}
}
