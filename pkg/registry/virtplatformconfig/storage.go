package virtplatformconfig

import (
	"context"
	"net/http"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/registry/generic"
	genericregistry "k8s.io/apiserver/pkg/registry/generic/registry"
	"k8s.io/apiserver/pkg/registry/rest"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"

	"github.com/kubevirt/virt-advisor/pkg/apis/advisor"
	"github.com/kubevirt/virt-advisor/pkg/plan"
)

// Storage holds the REST storage of the resource and its subresources.
type Storage struct {
	Config  *REST
	Status  *StatusREST
	Plan    *PlanREST
	Approve *ApproveREST
}

// REST is the etcd-backed storage of virtplatformconfigs.
type REST struct {
	*genericregistry.Store
}

var _ rest.ShortNamesProvider = &REST{}

// ShortNames lets users type `kubectl get vpc`.
func (r *REST) ShortNames() []string { return []string{"vpc"} }

// NewStorage returns the storage of virtplatformconfigs and its subresources;
// engine computes plans against the main cluster.
func NewStorage(scheme *runtime.Scheme, optsGetter generic.RESTOptionsGetter, engine *plan.Engine) (*Storage, error) {
	strategy, statusStrategy := newStrategies(scheme)
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

		TableConvertor: configTable{},
	}
	options := &generic.StoreOptions{RESTOptions: optsGetter, AttrFunc: GetAttrs}
	if err := store.CompleteWithOptions(options); err != nil {
		return nil, err
	}

	statusStore := *store
	statusStore.UpdateStrategy = statusStrategy
	statusStore.ResetFieldsStrategy = statusStrategy

	return &Storage{
		Config:  &REST{store},
		Status:  &StatusREST{store: &statusStore},
		Plan:    &PlanREST{configs: store, engine: engine, scheme: scheme},
		Approve: &ApproveREST{},
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

func (r *StatusREST) Update(ctx context.Context, name string, objInfo rest.UpdatedObjectInfo, createValidation rest.ValidateObjectFunc, updateValidation rest.ValidateObjectUpdateFunc, forceAllowCreate bool, options *metav1.UpdateOptions) (runtime.Object, bool, error) {
	// Status is never created through the subresource.
	return r.store.Update(ctx, name, objInfo, createValidation, updateValidation, false, options)
}

func (r *StatusREST) GetResetFields() map[fieldpath.APIVersion]*fieldpath.Set {
	return r.store.GetResetFields()
}

func (r *StatusREST) ConvertToTable(ctx context.Context, object runtime.Object, tableOptions runtime.Object) (*metav1.Table, error) {
	return r.store.ConvertToTable(ctx, object, tableOptions)
}

// ApproveREST serves POST .../approve. Approvals arrive with the
// controller; until then the subresource is discoverable and says so.
type ApproveREST struct{}

var _ rest.NamedCreater = &ApproveREST{}

func (r *ApproveREST) New() runtime.Object { return &advisor.Approval{} }
func (r *ApproveREST) Destroy()            {}

func (r *ApproveREST) Create(ctx context.Context, name string, obj runtime.Object, createValidation rest.ValidateObjectFunc, options *metav1.CreateOptions) (runtime.Object, error) {
	return nil, notImplemented("approve")
}

func notImplemented(sub string) error {
	return apierrors.NewGenericServerResponse(http.StatusNotImplemented, "get", advisor.Resource("virtplatformconfigs/"+sub), "", "the "+sub+" subresource is not implemented in this build", 0, false)
}
