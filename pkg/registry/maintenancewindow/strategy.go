// Package maintenancewindow is the REST storage of maintenancewindows: the
// spec in etcd, the status computed from it and the clock on every read.
package maintenancewindow

import (
	"context"
	"fmt"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/registry/generic"
	"k8s.io/apiserver/pkg/storage"
	"k8s.io/apiserver/pkg/storage/names"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"

	"github.com/kubevirt/virt-advisor/pkg/apis/advisor"
	"github.com/kubevirt/virt-advisor/pkg/apis/advisor/validation"
)

// strategy stores the spec only: status is computed on read, so whatever
// status a client sends is dropped; spec changes bump the generation.
type strategy struct {
	runtime.ObjectTyper
	names.NameGenerator
}

func (strategy) NamespaceScoped() bool { return false }

// GetResetFields keeps status out of server-side apply's managed fields.
func (strategy) GetResetFields() map[fieldpath.APIVersion]*fieldpath.Set {
	return map[fieldpath.APIVersion]*fieldpath.Set{
		"advisor.kubevirt.io/v1alpha1": fieldpath.NewSet(fieldpath.MakePathOrDie("status")),
	}
}

func (strategy) PrepareForCreate(ctx context.Context, obj runtime.Object) {
	w := obj.(*advisor.MaintenanceWindow)
	w.Status = advisor.MaintenanceWindowStatus{}
	w.Generation = 1
}

func (strategy) PrepareForUpdate(ctx context.Context, obj, old runtime.Object) {
	w, oldW := obj.(*advisor.MaintenanceWindow), old.(*advisor.MaintenanceWindow)
	w.Status = advisor.MaintenanceWindowStatus{}
	w.Generation = oldW.Generation
	if !apiequality.Semantic.DeepEqual(w.Spec, oldW.Spec) {
		w.Generation = oldW.Generation + 1
	}
}

func (strategy) Validate(ctx context.Context, obj runtime.Object) field.ErrorList {
	return validation.ValidateMaintenanceWindow(obj.(*advisor.MaintenanceWindow))
}

func (strategy) ValidateUpdate(ctx context.Context, obj, old runtime.Object) field.ErrorList {
	return validation.ValidateMaintenanceWindowUpdate(obj.(*advisor.MaintenanceWindow), old.(*advisor.MaintenanceWindow))
}

func (strategy) WarningsOnCreate(ctx context.Context, obj runtime.Object) []string { return nil }
func (strategy) WarningsOnUpdate(ctx context.Context, obj, old runtime.Object) []string {
	return nil
}
func (strategy) AllowCreateOnUpdate() bool       { return false }
func (strategy) AllowUnconditionalUpdate() bool  { return true }
func (strategy) Canonicalize(obj runtime.Object) {}

// GetAttrs returns the labels and fields used by list/watch selectors.
func GetAttrs(obj runtime.Object) (labels.Set, fields.Set, error) {
	w, ok := obj.(*advisor.MaintenanceWindow)
	if !ok {
		return nil, nil, fmt.Errorf("not a MaintenanceWindow: %T", obj)
	}
	return w.Labels, generic.AddObjectMetaFieldsSet(fields.Set{"spec.kind": string(w.Spec.Kind)}, &w.ObjectMeta, false), nil
}

// Match is the filter used by list and watch.
func Match(label labels.Selector, field fields.Selector) storage.SelectionPredicate {
	return storage.SelectionPredicate{Label: label, Field: field, GetAttrs: GetAttrs}
}
