// Package fleetconfig is the REST storage of fleetconfigs and their plan,
// approve and abort subresources, served by a fleet's hub (--fleet-hub).
package fleetconfig

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

// strategy stores what clients write: the spec. Status is kept as stored
// (the controller and the approve and abort subresources write it, in
// process); a spec change bumps the generation, which the fleet hash
// binds.
type strategy struct {
	runtime.ObjectTyper
	names.NameGenerator
	profiles validation.Profiles
}

func (strategy) NamespaceScoped() bool { return true }

// GetResetFields keeps status out of server-side apply's managed fields.
func (strategy) GetResetFields() map[fieldpath.APIVersion]*fieldpath.Set {
	return map[fieldpath.APIVersion]*fieldpath.Set{
		"advisor.kubevirt.io/v1alpha1": fieldpath.NewSet(fieldpath.MakePathOrDie("status")),
	}
}

func (strategy) PrepareForCreate(ctx context.Context, obj runtime.Object) {
	c := obj.(*advisor.FleetConfig)
	c.Status = advisor.FleetConfigStatus{}
	c.Generation = 1
}

func (strategy) PrepareForUpdate(ctx context.Context, obj, old runtime.Object) {
	c, oldC := obj.(*advisor.FleetConfig), old.(*advisor.FleetConfig)
	c.Status = oldC.Status
	c.Generation = oldC.Generation
	if !apiequality.Semantic.DeepEqual(c.Spec, oldC.Spec) {
		c.Generation = oldC.Generation + 1
	}
}

func (s strategy) Validate(ctx context.Context, obj runtime.Object) field.ErrorList {
	return validation.ValidateFleetConfig(obj.(*advisor.FleetConfig), s.profiles)
}

func (s strategy) ValidateUpdate(ctx context.Context, obj, old runtime.Object) field.ErrorList {
	return validation.ValidateFleetConfigUpdate(obj.(*advisor.FleetConfig), old.(*advisor.FleetConfig), s.profiles)
}

func (strategy) WarningsOnCreate(ctx context.Context, obj runtime.Object) []string { return nil }
func (strategy) WarningsOnUpdate(ctx context.Context, obj, old runtime.Object) []string {
	return nil
}
func (strategy) AllowCreateOnUpdate() bool       { return false }
func (strategy) AllowUnconditionalUpdate() bool  { return true }
func (strategy) Canonicalize(obj runtime.Object) {}

// statusStrategy writes status only: the spec, labels and annotations
// stay as stored.
type statusStrategy struct{ strategy }

func (statusStrategy) PrepareForUpdate(ctx context.Context, obj, old runtime.Object) {
	c, oldC := obj.(*advisor.FleetConfig), old.(*advisor.FleetConfig)
	c.Spec = oldC.Spec
	c.Labels = oldC.Labels
	c.Annotations = oldC.Annotations
	c.Generation = oldC.Generation
}

func (statusStrategy) ValidateUpdate(ctx context.Context, obj, old runtime.Object) field.ErrorList {
	return nil
}

// GetAttrs returns the labels and fields used by list/watch selectors.
func GetAttrs(obj runtime.Object) (labels.Set, fields.Set, error) {
	c, ok := obj.(*advisor.FleetConfig)
	if !ok {
		return nil, nil, fmt.Errorf("not a FleetConfig: %T", obj)
	}
	return c.Labels, generic.AddObjectMetaFieldsSet(fields.Set{}, &c.ObjectMeta, true), nil
}

// Match is the filter used by list and watch.
func Match(label labels.Selector, field fields.Selector) storage.SelectionPredicate {
	return storage.SelectionPredicate{Label: label, Field: field, GetAttrs: GetAttrs}
}
