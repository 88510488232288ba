// Package table builds the tables `kubectl get` prints for the resources
// this server stores (the TableConvertor of a registry): the list's
// metadata, and a row per object whose cells the registry says.
package table

import (
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// Of is the table of obj, one *T or a list of them, with columns and a
// row per object made by cells: a list's resourceVersion, continue token
// and remaining item count (so that kubectl can page and watch from it),
// or the object's resourceVersion.
func Of[T any, PT interface {
	*T
	runtime.Object
}](obj runtime.Object, columns []metav1.TableColumnDefinition, cells func(PT) []interface{}) (*metav1.Table, error) {
	table := &metav1.Table{ColumnDefinitions: columns}
	var items []runtime.Object
	if one, ok := obj.(PT); ok {
		if m, err := meta.CommonAccessor(one); err == nil {
			table.ResourceVersion = m.GetResourceVersion()
		}
		items = []runtime.Object{one}
	} else if m, err := meta.ListAccessor(obj); err == nil && meta.IsListType(obj) {
		table.ResourceVersion = m.GetResourceVersion()
		table.Continue = m.GetContinue()
		table.RemainingItemCount = m.GetRemainingItemCount()
		if items, err = meta.ExtractList(obj); err != nil {
			return nil, fmt.Errorf("cannot print %T as a table: %w", obj, err)
		}
	} else {
		return nil, fmt.Errorf("cannot print %T as a table", obj)
	}
	for _, item := range items {
		o, ok := item.(PT)
		if !ok {
			return nil, fmt.Errorf("cannot print %T as a table: it holds a %T", obj, item)
		}
		table.Rows = append(table.Rows, metav1.TableRow{Object: runtime.RawExtension{Object: o}, Cells: cells(o)})
	}
	return table, nil
}
