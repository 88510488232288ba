package approvalpolicy

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metainternalversion "k8s.io/apimachinery/pkg/apis/meta/internalversion"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/apiserver/pkg/registry/generic"
	genericregistry "k8s.io/apiserver/pkg/registry/generic/registry"
	"k8s.io/apiserver/pkg/registry/rest"
	"k8s.io/apiserver/pkg/storage/names"
	"k8s.io/klog/v2"

	"github.com/kubevirt/virt-advisor/pkg/apis/advisor"
	"github.com/kubevirt/virt-advisor/pkg/apis/advisor/v1alpha1"
	policies "github.com/kubevirt/virt-advisor/pkg/approvalpolicy"
	"github.com/kubevirt/virt-advisor/pkg/registry/virtplatformconfig"
)

// Options is what the storage needs besides etcd.
type Options struct {
	// Authorizer answers whether the user setting a policy may approve
	// the configs it covers.
	Authorizer authorizer.Authorizer
	// Configs lists the VirtPlatformConfigs, for the status.
	Configs rest.Lister
}

// REST is the storage of approvalpolicies.
type REST struct {
	*genericregistry.Store
	authz   authorizer.Authorizer
	configs rest.Lister
	scheme  *runtime.Scheme
}

var resource = advisor.Resource("approvalpolicies")

// NewREST returns the storage of approvalpolicies. Every policy it
// returns from get, list, create and update carries the status computed
// from the configs at that moment.
func NewREST(scheme *runtime.Scheme, optsGetter generic.RESTOptionsGetter, o Options) (*REST, error) {
	s := strategy{scheme, names.SimpleNameGenerator}
	store := &genericregistry.Store{
		NewFunc:                   func() runtime.Object { return &advisor.ApprovalPolicy{} },
		NewListFunc:               func() runtime.Object { return &advisor.ApprovalPolicyList{} },
		PredicateFunc:             Match,
		DefaultQualifiedResource:  resource,
		SingularQualifiedResource: advisor.Resource("approvalpolicy"),

		CreateStrategy:      s,
		UpdateStrategy:      s,
		DeleteStrategy:      s,
		ResetFieldsStrategy: s,

		TableConvertor: policyTable{},
	}
	options := &generic.StoreOptions{RESTOptions: uncached{optsGetter}, AttrFunc: GetAttrs}
	if err := store.CompleteWithOptions(options); err != nil {
		return nil, err
	}
	return &REST{Store: store, authz: o.Authorizer, configs: o.Configs, scheme: scheme}, nil
}

// ShortNames lets users type `kubectl get ap`.
func (r *REST) ShortNames() []string { return []string{"ap"} }

// Get implements rest.Getter, with the status computed.
func (r *REST) Get(ctx context.Context, name string, options *metav1.GetOptions) (runtime.Object, error) {
	return r.withStatus(ctx)(r.Store.Get(ctx, name, options))
}

// List implements rest.Lister, with the status computed.
func (r *REST) List(ctx context.Context, options *metainternalversion.ListOptions) (runtime.Object, error) {
	return r.withStatus(ctx)(r.Store.List(ctx, options))
}

// Create admits a policy only from a user who may approve every config
// it covers, and returns it with its status.
func (r *REST) Create(ctx context.Context, obj runtime.Object, createValidation rest.ValidateObjectFunc, options *metav1.CreateOptions) (runtime.Object, error) {
	return r.withStatus(ctx)(r.Store.Create(ctx, obj, r.admitOnCreate(createValidation), options))
}

// Update admits a spec change only from a user who may approve every
// config the changed policy covers (server-side apply and patches come
// here too); a change of labels or annotations only needs RBAC.
func (r *REST) Update(ctx context.Context, name string, objInfo rest.UpdatedObjectInfo, createValidation rest.ValidateObjectFunc, updateValidation rest.ValidateObjectUpdateFunc, forceAllowCreate bool, options *metav1.UpdateOptions) (runtime.Object, bool, error) {
	obj, created, err := r.Store.Update(ctx, name, objInfo, r.admitOnCreate(createValidation), r.admitOnUpdate(updateValidation), forceAllowCreate, options)
	obj, err = r.withStatus(ctx)(obj, err)
	return obj, created, err
}

func (r *REST) admitOnCreate(next rest.ValidateObjectFunc) rest.ValidateObjectFunc {
	return func(ctx context.Context, obj runtime.Object) error {
		if next != nil {
			if err := next(ctx, obj); err != nil {
				return err
			}
		}
		return r.requireApprover(ctx, obj.(*advisor.ApprovalPolicy))
	}
}

func (r *REST) admitOnUpdate(next rest.ValidateObjectUpdateFunc) rest.ValidateObjectUpdateFunc {
	return func(ctx context.Context, obj, old runtime.Object) error {
		if next != nil {
			if err := next(ctx, obj, old); err != nil {
				return err
			}
		}
		p, oldP := obj.(*advisor.ApprovalPolicy), old.(*advisor.ApprovalPolicy)
		if p.Generation == oldP.Generation {
			return nil // the spec is unchanged (PrepareForUpdate)
		}
		return r.requireApprover(ctx, p)
	}
}

// requireApprover is the policy's admission: a policy is a standing
// approval in the name of who sets it, so they must be allowed to approve
// every config it covers, as the approve subresource asks its caller. A
// selector also covers configs created later: it takes the permission on
// every config.
func (r *REST) requireApprover(ctx context.Context, p *advisor.ApprovalPolicy) error {
	targets := append([]string(nil), p.Spec.Configs.Names...)
	if p.Spec.Configs.Selector != nil {
		targets = append(targets, "")
	}
	for _, name := range targets {
		ok, err := virtplatformconfig.MayApprove(ctx, r.authz, name)
		if err != nil {
			return apierrors.NewInternalError(fmt.Errorf("checking create virtplatformconfigs/approve: %w", err))
		}
		if ok {
			continue
		}
		what := fmt.Sprintf("on VirtPlatformConfig %q", name)
		if name == "" {
			what = "on every VirtPlatformConfig (spec.configs.selector covers configs created later)"
		}
		return apierrors.NewForbidden(resource, p.Name, fmt.Errorf(
			"user %q may not create virtplatformconfigs/approve %s: an approval policy approves plans in the name of who sets it, so setting one takes the approve permission on every config it covers; ask for the virt-advisor-approver role, or leave the config out of spec.configs",
			requestUser(ctx), what))
	}
	return nil
}

// withStatus computes the status of what a method of the store returned.
func (r *REST) withStatus(ctx context.Context) func(runtime.Object, error) (runtime.Object, error) {
	return func(obj runtime.Object, err error) (runtime.Object, error) {
		if err != nil {
			return obj, err
		}
		var items []*advisor.ApprovalPolicy
		switch o := obj.(type) {
		case *advisor.ApprovalPolicy:
			items = []*advisor.ApprovalPolicy{o}
		case *advisor.ApprovalPolicyList:
			for i := range o.Items {
				items = append(items, &o.Items[i])
			}
		default:
			return obj, nil
		}
		configs, cerr := r.listConfigs(ctx)
		if cerr != nil {
			// The stored status (the author) is still true; the rest is
			// left out rather than failing the read.
			klog.FromContext(ctx).Error(cerr, "ApprovalPolicy status not computed: the configs cannot be listed")
			return obj, nil
		}
		for _, p := range items {
			computeStatus(r.scheme, p, configs)
		}
		return obj, nil
	}
}

func (r *REST) listConfigs(ctx context.Context) ([]v1alpha1.VirtPlatformConfig, error) {
	if r.configs == nil {
		return nil, nil
	}
	obj, err := r.configs.List(ctx, &metainternalversion.ListOptions{})
	if err != nil {
		return nil, err
	}
	out := &v1alpha1.VirtPlatformConfigList{}
	if err := r.scheme.Convert(obj, out, nil); err != nil {
		return nil, err
	}
	return out.Items, nil
}

// computeStatus fills in which configs p covers, the last plan it
// approved that a config still records, and the last refusal a config
// still waits on.
func computeStatus(scheme *runtime.Scheme, p *advisor.ApprovalPolicy, configs []v1alpha1.VirtPlatformConfig) {
	versioned := &v1alpha1.ApprovalPolicy{}
	if err := scheme.Convert(p, versioned, nil); err != nil {
		return
	}
	st := advisor.ApprovalPolicyStatus{Author: p.Status.Author, AuthorGroups: p.Status.AuthorGroups, AuthorExtra: p.Status.AuthorExtra}
	covered := sets.New[string]()
	for i := range configs {
		cfg := &configs[i]
		if policies.Covers(versioned, cfg.Name, cfg.Labels) {
			covered.Insert(cfg.Name)
		}
		if a := cfg.Status.Approval; a != nil {
			if name, ok := policies.PolicyOf(a.ApprovedBy); ok && name == p.Name && (st.LastApproved == nil || st.LastApproved.At.Before(&a.ApprovedAt)) {
				at := a.ApprovedAt
				st.LastApproved = &advisor.PolicyDecision{Config: cfg.Name, PlanHash: a.PlanHash, At: &at}
			}
		}
		if cfg.Status.Phase != v1alpha1.PhaseReviewRequired {
			continue
		}
		c := meta.FindStatusCondition(cfg.Status.Conditions, string(v1alpha1.PhaseReviewRequired))
		if c == nil || c.Reason != policies.RefusedReason || !policies.Named(c.Message, p.Name) {
			continue
		}
		if st.LastRefused == nil || st.LastRefused.At.Before(&c.LastTransitionTime) {
			at := c.LastTransitionTime
			st.LastRefused = &advisor.PolicyDecision{Config: cfg.Name, At: &at, Message: c.Message}
		}
	}
	st.Configs = sets.List(covered)
	p.Status = st
}

// uncached reads approvalpolicies from etcd, not through the watch cache:
// the status is written into every object read, and the watch cache
// shares its objects between readers. There are a handful of policies.
type uncached struct {
	generic.RESTOptionsGetter
}

func (u uncached) GetRESTOptions(resource schema.GroupResource, example runtime.Object) (generic.RESTOptions, error) {
	opts, err := u.RESTOptionsGetter.GetRESTOptions(resource, example)
	opts.Decorator = generic.UndecoratedStorage
	return opts, err
}
