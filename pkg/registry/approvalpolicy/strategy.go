// Package approvalpolicy is the REST storage of approvalpolicies: the spec
// and its author in etcd, admitted only from a user who may approve every
// config the policy covers; the rest of the status computed from the
// configs on every read.
package approvalpolicy

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

// strategy stores the spec and status.author only: the author is the
// user of the request that set the spec, whatever a client sends; the
// rest of the status is computed on read. Spec changes bump the generation.
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
	p := obj.(*advisor.ApprovalPolicy)
	p.Status = authorOf(ctx)
	p.Generation = 1
}

func (strategy) PrepareForUpdate(ctx context.Context, obj, old runtime.Object) {
	p, oldP := obj.(*advisor.ApprovalPolicy), old.(*advisor.ApprovalPolicy)
	p.Status = advisor.ApprovalPolicyStatus{Author: oldP.Status.Author, AuthorGroups: oldP.Status.AuthorGroups, AuthorExtra: oldP.Status.AuthorExtra}
	p.Generation = oldP.Generation
	if !apiequality.Semantic.DeepEqual(p.Spec, oldP.Spec) {
		// Whoever sets the bounds now approves in their name (admitted
		// only if they may approve every config covered).
		p.Status = authorOf(ctx)
		p.Generation = oldP.Generation + 1
	}
}

func (strategy) Validate(ctx context.Context, obj runtime.Object) field.ErrorList {
	return validation.ValidateApprovalPolicy(obj.(*advisor.ApprovalPolicy))
}

func (strategy) ValidateUpdate(ctx context.Context, obj, old runtime.Object) field.ErrorList {
	return validation.ValidateApprovalPolicyUpdate(obj.(*advisor.ApprovalPolicy), old.(*advisor.ApprovalPolicy))
}

func (strategy) WarningsOnCreate(ctx context.Context, obj runtime.Object) []string { return nil }
func (strategy) WarningsOnUpdate(ctx context.Context, obj, old runtime.Object) []string {
	return nil
}
func (strategy) AllowCreateOnUpdate() bool       { return false }
func (strategy) AllowUnconditionalUpdate() bool  { return true }
func (strategy) Canonicalize(obj runtime.Object) {}

// authorOf is the status of a policy whose spec the request sets: its
// user, groups and extra, as the controller reviews them before every
// approval the policy makes.
func authorOf(ctx context.Context) advisor.ApprovalPolicyStatus {
	u, ok := request.UserFrom(ctx)
	if !ok {
		return advisor.ApprovalPolicyStatus{}
	}
	st := advisor.ApprovalPolicyStatus{Author: u.GetName(), AuthorGroups: u.GetGroups()}
	if extra := u.GetExtra(); len(extra) > 0 {
		st.AuthorExtra = extra
	}
	return st
}

func requestUser(ctx context.Context) string {
	if u, ok := request.UserFrom(ctx); ok {
		return u.GetName()
	}
	return ""
}

// GetAttrs returns the labels and fields used by list/watch selectors.
func GetAttrs(obj runtime.Object) (labels.Set, fields.Set, error) {
	p, ok := obj.(*advisor.ApprovalPolicy)
	if !ok {
		return nil, nil, fmt.Errorf("not an ApprovalPolicy: %T", obj)
	}
	return p.Labels, generic.ObjectMetaFieldsSet(&p.ObjectMeta, false), nil
}

// Match is the filter used by list and watch.
func Match(label labels.Selector, field fields.Selector) storage.SelectionPredicate {
	return storage.SelectionPredicate{Label: label, Field: field, GetAttrs: GetAttrs}
}
