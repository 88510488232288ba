package table

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"

	"github.com/kubevirt/virt-advisor/pkg/apis/advisor"
)

func window(name string) advisor.MaintenanceWindow {
	return advisor.MaintenanceWindow{ObjectMeta: metav1.ObjectMeta{Name: name, ResourceVersion: "7"}}
}

func TestOf(t *testing.T) {
	columns := []metav1.TableColumnDefinition{{Name: "Name", Type: "string", Format: "name"}}
	one := window("a")
	for _, tc := range []struct {
		name      string
		obj       runtime.Object
		wantRows  []string
		wantMeta  metav1.ListMeta
		wantError string
	}{
		{name: "one object: its resourceVersion", obj: &one, wantRows: []string{"a"}, wantMeta: metav1.ListMeta{ResourceVersion: "7"}},
		{name: "a list: its metadata, a row per item in order",
			obj: &advisor.MaintenanceWindowList{
				ListMeta: metav1.ListMeta{ResourceVersion: "42", Continue: "next", RemainingItemCount: ptr.To[int64](3)},
				Items:    []advisor.MaintenanceWindow{window("b"), window("a")},
			},
			wantRows: []string{"b", "a"}, wantMeta: metav1.ListMeta{ResourceVersion: "42", Continue: "next", RemainingItemCount: ptr.To[int64](3)}},
		{name: "an empty list", obj: &advisor.MaintenanceWindowList{ListMeta: metav1.ListMeta{ResourceVersion: "9"}}, wantMeta: metav1.ListMeta{ResourceVersion: "9"}},
		{name: "another kind", obj: &advisor.FleetConfig{}, wantError: "cannot print *advisor.FleetConfig as a table"},
		{name: "a list of another kind", obj: &advisor.FleetConfigList{Items: []advisor.FleetConfig{{}}}, wantError: "it holds a *advisor.FleetConfig"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Of(tc.obj, columns, func(w *advisor.MaintenanceWindow) []interface{} { return []interface{}{w.Name} })
			if tc.wantError != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantError) {
					t.Fatalf("error %v, want one saying %q", err, tc.wantError)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got.ResourceVersion != tc.wantMeta.ResourceVersion || got.Continue != tc.wantMeta.Continue ||
				!ptr.Equal(got.RemainingItemCount, tc.wantMeta.RemainingItemCount) {
				t.Errorf("table metadata %+v, want %+v", got.ListMeta, tc.wantMeta)
			}
			if len(got.ColumnDefinitions) != 1 {
				t.Errorf("columns %v", got.ColumnDefinitions)
			}
			var rows []string
			for _, r := range got.Rows {
				w, ok := r.Object.Object.(*advisor.MaintenanceWindow)
				if !ok || w.Name != r.Cells[0] {
					t.Errorf("row %v holds %T, not the object it shows", r.Cells, r.Object.Object)
				}
				rows = append(rows, r.Cells[0].(string))
			}
			if strings.Join(rows, ",") != strings.Join(tc.wantRows, ",") {
				t.Errorf("rows %v, want %v", rows, tc.wantRows)
			}
		})
	}
}
