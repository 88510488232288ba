package virtplatformconfig

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/registry/generic"
	genericregistry "k8s.io/apiserver/pkg/registry/generic/registry"
	"k8s.io/apiserver/pkg/registry/rest"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"

	"github.com/kubevirt/virt-advisor/pkg/apis/advisor"
	"github.com/kubevirt/virt-advisor/pkg/apis/advisor/v1alpha1"
	"github.com/kubevirt/virt-advisor/pkg/apis/advisor/validation"
	"github.com/kubevirt/virt-advisor/pkg/registry/permission"
)

// Storage holds the REST storage of the resource and its subresources.
type Storage struct {
	Config *REST
	Status *StatusREST
	Plan   *PlanREST
	// Revert serves GET .../revert, the revert plan.
	Revert  *PlanREST
	Approve *ApproveREST
	Abort   *AbortREST
	// StatusWriter is the embedded controller's own way to write status:
	// in process, never over HTTP.
	StatusWriter *StatusWriter
}

// Options is what the storage needs besides etcd.
type Options struct {
	// Planner computes plans against the main cluster (*plan.Engine).
	Planner Planner
	// Gate bounds and shares the plan computations of requests; nil
	// leaves them unbounded.
	Gate *Gate
	// Recorder emits the Approved events.
	Recorder record.EventRecorder
	// Authorizer answers whether a user may approve or read plans: action
	// Apply needs the approve permission, approving needs reading the plan.
	Authorizer authorizer.Authorizer
	// RequireDistinctApprover refuses approvals by the author of the spec.
	RequireDistinctApprover bool
	// Profiles are the profiles served (catalog.Catalog.Validation): a
	// config of another profile is invalid.
	Profiles validation.Profiles
	// Clock is the time tables are printed at (how far away a window
	// opening is); nil is the real clock.
	Clock clock.PassiveClock
}

// REST is the etcd-backed storage of virtplatformconfigs.
type REST struct {
	*genericregistry.Store
	authz authorizer.Authorizer
}

var (
	_ rest.ShortNamesProvider = &REST{}
	_ rest.Creater            = &REST{}
	_ rest.Updater            = &REST{}
)

// ShortNames lets users type `kubectl get vpc`.
func (r *REST) ShortNames() []string { return []string{"vpc"} }

// Create admits a config with action Apply only from a user who may approve it.
func (r *REST) Create(ctx context.Context, obj runtime.Object, createValidation rest.ValidateObjectFunc, options *metav1.CreateOptions) (runtime.Object, error) {
	return r.Store.Create(ctx, obj, r.admitApplyOnCreate(createValidation), options)
}

// Update admits a spec change whose result has action Apply only from a
// user who may approve it (server-side apply and patches come here too).
func (r *REST) Update(ctx context.Context, name string, objInfo rest.UpdatedObjectInfo, createValidation rest.ValidateObjectFunc, updateValidation rest.ValidateObjectUpdateFunc, forceAllowCreate bool, options *metav1.UpdateOptions) (runtime.Object, bool, error) {
	return r.Store.Update(ctx, name, objInfo, r.admitApplyOnCreate(createValidation), r.admitApplyOnUpdate(updateValidation), forceAllowCreate, options)
}

// action Apply is a standing approval (docs/design.md, "action: Apply is
// a standing approval"), so it takes the permission an approval takes.
func (r *REST) requireApprover(ctx context.Context, name string) error {
	return permission.Require(ctx, r.authz, approvePermission, "", name,
		"spec.action Apply approves every plan of this config as it is drafted; "+
			"set spec.action to DryRun and have an approver approve the plan you reviewed (POST .../virtplatformconfigs/"+name+"/approve), or ask for the virt-advisor-approver role")
}

func (r *REST) admitApplyOnCreate(next rest.ValidateObjectFunc) rest.ValidateObjectFunc {
	return func(ctx context.Context, obj runtime.Object) error {
		if next != nil {
			if err := next(ctx, obj); err != nil {
				return err
			}
		}
		c := obj.(*advisor.VirtPlatformConfig)
		if err := r.requireDelegator(ctx, c.Name, c.Spec.DelegatedApproval, nil); err != nil {
			return err
		}
		if c.Spec.Action == advisor.PlanActionApply {
			return r.requireApprover(ctx, c.Name)
		}
		return nil
	}
}

func (r *REST) admitApplyOnUpdate(next rest.ValidateObjectUpdateFunc) rest.ValidateObjectUpdateFunc {
	return func(ctx context.Context, obj, old runtime.Object) error {
		if next != nil {
			if err := next(ctx, obj, old); err != nil {
				return err
			}
		}
		c, oldC := obj.(*advisor.VirtPlatformConfig), old.(*advisor.VirtPlatformConfig)
		if err := r.requireDelegator(ctx, c.Name, c.Spec.DelegatedApproval, oldC.Spec.DelegatedApproval); err != nil {
			return err
		}
		if c.Spec.Action == advisor.PlanActionApply && specChanged(&c.Spec, &oldC.Spec) {
			return r.requireApprover(ctx, c.Name)
		}
		return nil
	}
}

// NewStorage returns the storage of virtplatformconfigs and its subresources.
func NewStorage(scheme *runtime.Scheme, optsGetter generic.RESTOptionsGetter, o Options) (*Storage, error) {
	if o.Clock == nil {
		o.Clock = clock.RealClock{}
	}
	strategy, statusStrategy := newStrategies(scheme, o.Profiles)
	store := &genericregistry.Store{
		NewFunc:                   func() runtime.Object { return &advisor.VirtPlatformConfig{} },
		NewListFunc:               func() runtime.Object { return &advisor.VirtPlatformConfigList{} },
		PredicateFunc:             Match,
		DefaultQualifiedResource:  advisor.Resource("virtplatformconfigs"),
		SingularQualifiedResource: advisor.Resource("virtplatformconfig"),

		CreateStrategy:      strategy,
		UpdateStrategy:      strategy,
		DeleteStrategy:      strategy,
		ResetFieldsStrategy: strategy,

		TableConvertor: configTable{clock: o.Clock},
	}
	options := &generic.StoreOptions{RESTOptions: optsGetter, AttrFunc: GetAttrs}
	if err := store.CompleteWithOptions(options); err != nil {
		return nil, err
	}

	statusStore := *store
	statusStore.UpdateStrategy = statusStrategy
	statusStore.ResetFieldsStrategy = statusStrategy

	// Approvals write status.approval, which status writers cannot.
	approvalStore := *store
	approvalStore.UpdateStrategy = approvalStrategy{strategy}

	return &Storage{
		Config: &REST{Store: store, authz: o.Authorizer},
		Status: &StatusREST{store: &statusStore},
		Plan:   &PlanREST{configs: store, planner: o.Planner, gate: o.Gate, scheme: scheme},
		Revert: &PlanREST{configs: store, planner: o.Planner, gate: o.Gate, scheme: scheme, revert: true},
		Approve: &ApproveREST{stored: storedConfigs{getter: store, updater: &approvalStore, scheme: scheme}, planner: o.Planner, gate: o.Gate, recorder: o.Recorder, authz: o.Authorizer,
			admission: admission{requireDistinctApprover: o.RequireDistinctApprover}},
		Abort:        &AbortREST{stored: storedConfigs{getter: store, updater: &approvalStore, scheme: scheme}, recorder: o.Recorder},
		StatusWriter: &StatusWriter{store: &statusStore, scheme: scheme},
	}, nil
}

// StatusREST is the status subresource: get, update and patch of status only.
type StatusREST struct {
	store *genericregistry.Store
}

var (
	_ rest.Patcher = &StatusREST{}
	_ rest.Storage = &StatusREST{}
)

func (r *StatusREST) New() runtime.Object { return &advisor.VirtPlatformConfig{} }

// Destroy does nothing: the main store owns the shared resources.
func (r *StatusREST) Destroy() {}

func (r *StatusREST) Get(ctx context.Context, name string, options *metav1.GetOptions) (runtime.Object, error) {
	return r.store.Get(ctx, name, options)
}

// Update refuses every request, a cluster admin's too: status holds the
// approved items the controller writes to the cluster, so a status write
// would be a write nobody approved. Only the controller writes status, in
// process, through StatusWriter.
func (r *StatusREST) Update(ctx context.Context, name string, objInfo rest.UpdatedObjectInfo, createValidation rest.ValidateObjectFunc, updateValidation rest.ValidateObjectUpdateFunc, forceAllowCreate bool, options *metav1.UpdateOptions) (runtime.Object, bool, error) {
	return nil, false, apierrors.NewForbidden(advisor.Resource("virtplatformconfigs/status"), name, fmt.Errorf(
		"status is written only by the embedded controller of virt-advisor, for every user: change the spec, or approve a plan with POST .../virtplatformconfigs/%s/approve", name))
}

func (r *StatusREST) GetResetFields() map[fieldpath.APIVersion]*fieldpath.Set {
	return r.store.GetResetFields()
}

func (r *StatusREST) ConvertToTable(ctx context.Context, object runtime.Object, tableOptions runtime.Object) (*metav1.Table, error) {
	return r.store.ConvertToTable(ctx, object, tableOptions)
}

// StatusWriter writes the status of configs for the embedded controller,
// in process: the context it writes with marks the write as the
// controller's, and no HTTP request can carry that mark.
type StatusWriter struct {
	store  *genericregistry.Store
	scheme *runtime.Scheme
}

type controllerWriteKey struct{}

// ControllerUser is the user a controller status write is made as (for
// audit and the strategies); the mark, not the name, admits the write.
const ControllerUser = "system:virt-advisor:controller"

func isControllerWrite(ctx context.Context) bool {
	v, _ := ctx.Value(controllerWriteKey{}).(bool)
	return v
}

// GetStored reads a config from etcd: with no resourceVersion the store
// answers with a quorum read, not from its watch cache.
func (w *StatusWriter) GetStored(ctx context.Context, name string) (*v1alpha1.VirtPlatformConfig, error) {
	ctx = request.WithNamespace(ctx, metav1.NamespaceNone)
	obj, err := w.store.Get(ctx, name, &metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	out := &v1alpha1.VirtPlatformConfig{}
	if err := w.scheme.Convert(obj, out, nil); err != nil {
		return nil, err
	}
	return out, nil
}

// UpdateStatus writes cfg's status if cfg's resourceVersion is still the
// stored one (a conflict otherwise) and returns the stored object.
func (w *StatusWriter) UpdateStatus(ctx context.Context, cfg *v1alpha1.VirtPlatformConfig) (*v1alpha1.VirtPlatformConfig, error) {
	internal := &advisor.VirtPlatformConfig{}
	if err := w.scheme.Convert(cfg, internal, nil); err != nil {
		return nil, err
	}
	ctx = context.WithValue(ctx, controllerWriteKey{}, true)
	ctx = request.WithNamespace(request.WithUser(ctx, &user.DefaultInfo{Name: ControllerUser}), metav1.NamespaceNone)
	obj, _, err := w.store.Update(ctx, cfg.Name, rest.DefaultUpdatedObjectInfo(internal),
		rest.ValidateAllObjectFunc, rest.ValidateAllObjectUpdateFunc, false, &metav1.UpdateOptions{})
	if err != nil {
		return nil, err
	}
	out := &v1alpha1.VirtPlatformConfig{}
	if err := w.scheme.Convert(obj, out, nil); err != nil {
		return nil, err
	}
	return out, nil
}
