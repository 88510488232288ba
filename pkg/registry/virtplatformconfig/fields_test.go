package virtplatformconfig

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/kubevirt/virt-advisor/pkg/apis/advisor"
	"github.com/kubevirt/virt-advisor/pkg/apis/advisor/install"
	"github.com/kubevirt/virt-advisor/pkg/apis/advisor/v1alpha1"
	"github.com/kubevirt/virt-advisor/pkg/registry/maintenancewindow"
)

// Every field the storage of a kind selects by is accepted over HTTP (it
// has a field label conversion), and an unknown one is refused naming
// those that are known.
func TestSelectableFieldsAreConverted(t *testing.T) {
	scheme := runtime.NewScheme()
	install.Install(scheme)
	for _, tc := range []struct {
		kind     string
		attrs    func(runtime.Object) (labels.Set, fields.Set, error)
		obj      runtime.Object
		unknown  string
		oneKnown string
	}{
		{"VirtPlatformConfig", GetAttrs, &advisor.VirtPlatformConfig{}, "spec.failurePolicy", `"status.phase"`},
		{"MaintenanceWindow", maintenancewindow.GetAttrs, &advisor.MaintenanceWindow{}, "spec.timeZone", `"spec.kind"`},
	} {
		t.Run(tc.kind, func(t *testing.T) {
			gvk := v1alpha1.SchemeGroupVersion.WithKind(tc.kind)
			_, selectable, err := tc.attrs(tc.obj)
			if err != nil {
				t.Fatal(err)
			}
			for label := range selectable {
				if _, _, err := scheme.ConvertFieldLabel(gvk, label, "x"); err != nil {
					t.Errorf("field selector %s: %v", label, err)
				}
			}
			_, _, err = scheme.ConvertFieldLabel(gvk, tc.unknown, "x")
			if err == nil || !strings.Contains(err.Error(), tc.oneKnown) {
				t.Errorf("unknown field selector %s: %v, want a refusal naming the known ones", tc.unknown, err)
			}
		})
	}
}
