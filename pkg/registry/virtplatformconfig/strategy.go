// Package virtplatformconfig is the REST storage of virtplatformconfigs and
// its status, plan and approve subresources.
package virtplatformconfig

import (
	"context"
	"fmt"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/registry/generic"
	"k8s.io/apiserver/pkg/storage"
	"k8s.io/apiserver/pkg/storage/names"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"

	"github.com/kubevirt/virt-advisor/pkg/apis/advisor"
	"github.com/kubevirt/virt-advisor/pkg/apis/advisor/validation"
)

// strategy is the create/update/delete strategy of the main resource: spec
// writers cannot touch status, and every spec change bumps the generation
// and records who made it.
type strategy struct {
	runtime.ObjectTyper
	names.NameGenerator
	// profiles are the profiles served, for validation.
	profiles validation.Profiles
}

// statusStrategy lets the status subresource change status only.
type statusStrategy struct {
	strategy
}

func newStrategies(typer runtime.ObjectTyper, profiles validation.Profiles) (strategy, statusStrategy) {
	s := strategy{typer, names.SimpleNameGenerator, profiles}
	return s, statusStrategy{s}
}

func (strategy) NamespaceScoped() bool { return false }

// GetResetFields keeps status out of the main resource for server-side apply.
func (strategy) GetResetFields() map[fieldpath.APIVersion]*fieldpath.Set {
	return map[fieldpath.APIVersion]*fieldpath.Set{
		"advisor.kubevirt.io/v1alpha1": fieldpath.NewSet(fieldpath.MakePathOrDie("status")),
	}
}

func (strategy) PrepareForCreate(ctx context.Context, obj runtime.Object) {
	c := obj.(*advisor.VirtPlatformConfig)
	c.Status = advisor.VirtPlatformConfigStatus{SpecChangedBy: requestUser(ctx)}
	c.Generation = 1
}

func (strategy) PrepareForUpdate(ctx context.Context, obj, old runtime.Object) {
	c, oldC := obj.(*advisor.VirtPlatformConfig), old.(*advisor.VirtPlatformConfig)
	c.Status = oldC.Status
	if specChanged(&c.Spec, &oldC.Spec) {
		c.Generation = oldC.Generation + 1
		c.Status.SpecChangedBy = requestUser(ctx)
	}
}

// specChanged is true when a spec change changes what is planned: every
// field but spec.delegatedApproval. A delegated approval is an approval,
// not a spec change: the plan it approves was hashed at this generation,
// so setting it must not make that plan another one.
func specChanged(spec, old *advisor.VirtPlatformConfigSpec) bool {
	a, b := *spec, *old
	a.DelegatedApproval, b.DelegatedApproval = nil, nil
	return !apiequality.Semantic.DeepEqual(a, b)
}

func (s strategy) Validate(ctx context.Context, obj runtime.Object) field.ErrorList {
	return validation.ValidateVirtPlatformConfig(obj.(*advisor.VirtPlatformConfig), s.profiles)
}

func (s strategy) ValidateUpdate(ctx context.Context, obj, old runtime.Object) field.ErrorList {
	return validation.ValidateVirtPlatformConfigUpdate(obj.(*advisor.VirtPlatformConfig), old.(*advisor.VirtPlatformConfig), s.profiles)
}

func (strategy) WarningsOnCreate(ctx context.Context, obj runtime.Object) []string { return nil }
func (strategy) WarningsOnUpdate(ctx context.Context, obj, old runtime.Object) []string {
	return nil
}
func (strategy) AllowCreateOnUpdate() bool       { return false }
func (strategy) AllowUnconditionalUpdate() bool  { return true }
func (strategy) Canonicalize(obj runtime.Object) {}

// GetResetFields keeps spec and metadata out of the status subresource.
func (statusStrategy) GetResetFields() map[fieldpath.APIVersion]*fieldpath.Set {
	return map[fieldpath.APIVersion]*fieldpath.Set{
		"advisor.kubevirt.io/v1alpha1": fieldpath.NewSet(
			fieldpath.MakePathOrDie("spec"),
			fieldpath.MakePathOrDie("metadata"),
		),
	}
}

// PrepareForUpdate copies what status may not change from the old object,
// field by field: rebuilding the object from old would drop the
// managedFields the field manager just computed. Only the controller
// writes status (StatusREST refuses every request); the spec author is the
// spec's, and the approval record is written by the approve subresource or
// by the controller itself (the standing approval of action Apply).
func (statusStrategy) PrepareForUpdate(ctx context.Context, obj, old runtime.Object) {
	c, oldC := obj.(*advisor.VirtPlatformConfig), old.(*advisor.VirtPlatformConfig)
	c.Spec = oldC.Spec
	c.Labels = oldC.Labels
	c.Annotations = oldC.Annotations
	c.Finalizers = oldC.Finalizers
	c.OwnerReferences = oldC.OwnerReferences
	c.Status.SpecChangedBy = oldC.Status.SpecChangedBy
	if !isControllerWrite(ctx) {
		c.Status.Approval = oldC.Status.Approval
		c.Status.Abort = oldC.Status.Abort
	}
}

func (statusStrategy) ValidateUpdate(ctx context.Context, obj, old runtime.Object) field.ErrorList {
	return validation.ValidateVirtPlatformConfigStatusUpdate(obj.(*advisor.VirtPlatformConfig), old.(*advisor.VirtPlatformConfig))
}

func (statusStrategy) WarningsOnUpdate(ctx context.Context, obj, old runtime.Object) []string {
	return nil
}

// approvalStrategy is used by the approve subresource only: it changes the
// status (approval, approved items, phase) and nothing else.
type approvalStrategy struct {
	strategy
}

func (approvalStrategy) PrepareForUpdate(ctx context.Context, obj, old runtime.Object) {
	c, oldC := obj.(*advisor.VirtPlatformConfig), old.(*advisor.VirtPlatformConfig)
	c.ObjectMeta = oldC.ObjectMeta
	c.Spec = oldC.Spec
	c.Status.SpecChangedBy = oldC.Status.SpecChangedBy
}

func (approvalStrategy) ValidateUpdate(ctx context.Context, obj, old runtime.Object) field.ErrorList {
	return validation.ValidateVirtPlatformConfigStatusUpdate(obj.(*advisor.VirtPlatformConfig), old.(*advisor.VirtPlatformConfig))
}

func requestUser(ctx context.Context) string {
	if u, ok := request.UserFrom(ctx); ok {
		return u.GetName()
	}
	return ""
}

// GetAttrs returns the labels and fields used by list/watch selectors.
func GetAttrs(obj runtime.Object) (labels.Set, fields.Set, error) {
	c, ok := obj.(*advisor.VirtPlatformConfig)
	if !ok {
		return nil, nil, fmt.Errorf("not a VirtPlatformConfig: %T", obj)
	}
	return c.Labels, selectableFields(c), nil
}

// Match is the filter used by list and watch.
func Match(label labels.Selector, field fields.Selector) storage.SelectionPredicate {
	return storage.SelectionPredicate{Label: label, Field: field, GetAttrs: GetAttrs}
}

func selectableFields(c *advisor.VirtPlatformConfig) fields.Set {
	return generic.AddObjectMetaFieldsSet(fields.Set{
		"spec.profile": c.Spec.Profile,
		"spec.action":  string(c.Spec.Action),
		"status.phase": string(c.Status.Phase),
	}, &c.ObjectMeta, false)
}
