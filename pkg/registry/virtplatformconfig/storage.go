package virtplatformconfig

import (
	"context"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/registry/generic"
	genericregistry "k8s.io/apiserver/pkg/registry/generic/registry"
	"k8s.io/apiserver/pkg/registry/rest"
	"k8s.io/client-go/tools/record"
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
// engine computes plans against the main cluster, recorder emits the
// Approved events.
func NewStorage(scheme *runtime.Scheme, optsGetter generic.RESTOptionsGetter, engine *plan.Engine, recorder record.EventRecorder) (*Storage, error) {
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

	// Approvals write status.approval, which status writers cannot.
	approvalStore := *store
	approvalStore.UpdateStrategy = approvalStrategy{strategy}

	return &Storage{
		Config:  &REST{store},
		Status:  &StatusREST{store: &statusStore},
		Plan:    &PlanREST{configs: store, engine: engine, scheme: scheme},
		Approve: &ApproveREST{configs: store, approvals: &approvalStore, engine: engine, scheme: scheme, recorder: recorder},
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
