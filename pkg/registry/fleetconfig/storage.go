package fleetconfig

import (
	"context"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/registry/generic"
	genericregistry "k8s.io/apiserver/pkg/registry/generic/registry"
	"k8s.io/apiserver/pkg/registry/rest"
	"k8s.io/apiserver/pkg/storage/names"
	"k8s.io/utils/clock"

	"github.com/kubevirt/virt-advisor/pkg/apis/advisor"
	"github.com/kubevirt/virt-advisor/pkg/apis/advisor/v1alpha1"
	"github.com/kubevirt/virt-advisor/pkg/apis/advisor/validation"
	"github.com/kubevirt/virt-advisor/pkg/registry/permission"
)

// Planner computes the live fleet plan of a FleetConfig (fleet.Reader).
type Planner interface {
	Plan(ctx context.Context, fc *v1alpha1.FleetConfig) (v1alpha1.FleetPlanStatus, error)
}

// Options is what the storage needs besides etcd.
type Options struct {
	Profiles   validation.Profiles
	Planner    Planner
	Authorizer authorizer.Authorizer
	Clock      clock.PassiveClock
}

// Storage is the storage of fleetconfigs and their subresources.
type Storage struct {
	Fleet   *genericregistry.Store
	Plan    *PlanREST
	Approve *ApproveREST
	Abort   *AbortREST
	// Stored writes status for the hub's controller, in process.
	Stored *Stored
}

var resource = advisor.Resource("fleetconfigs")

// NewStorage returns the storage of fleetconfigs.
func NewStorage(scheme *runtime.Scheme, optsGetter generic.RESTOptionsGetter, o Options) (*Storage, error) {
	if o.Clock == nil {
		o.Clock = clock.RealClock{}
	}
	s := strategy{ObjectTyper: scheme, NameGenerator: names.SimpleNameGenerator, profiles: o.Profiles}
	store := &genericregistry.Store{
		NewFunc:                   func() runtime.Object { return &advisor.FleetConfig{} },
		NewListFunc:               func() runtime.Object { return &advisor.FleetConfigList{} },
		PredicateFunc:             Match,
		DefaultQualifiedResource:  resource,
		SingularQualifiedResource: advisor.Resource("fleetconfig"),

		CreateStrategy:      s,
		UpdateStrategy:      s,
		DeleteStrategy:      s,
		ResetFieldsStrategy: s,

		TableConvertor: fleetTable{},
	}
	if err := store.CompleteWithOptions(&generic.StoreOptions{RESTOptions: optsGetter, AttrFunc: GetAttrs}); err != nil {
		return nil, err
	}
	statusStore := *store
	statusStore.UpdateStrategy = statusStrategy{s}
	stored := &Stored{getter: store, updater: &statusStore, scheme: scheme}
	return &Storage{
		Fleet:   store,
		Plan:    &PlanREST{stored: stored, planner: o.Planner},
		Approve: &ApproveREST{stored: stored, planner: o.Planner, authz: o.Authorizer, clock: o.Clock},
		Abort:   &AbortREST{stored: stored, clock: o.Clock},
		Stored:  stored,
	}, nil
}

// Stored reads a stored FleetConfig and changes its status inside its
// own write, in the versioned type the fleet logic works on.
type Stored struct {
	getter  rest.Getter
	updater rest.Updater
	scheme  *runtime.Scheme
}

// Get reads the stored FleetConfig.
func (s *Stored) Get(ctx context.Context, namespace, name string) (*v1alpha1.FleetConfig, error) {
	obj, err := s.getter.Get(request.WithNamespace(ctx, namespace), name, &metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	out := &v1alpha1.FleetConfig{}
	if err := s.scheme.Convert(obj, out, nil); err != nil {
		return nil, apierrors.NewInternalError(err)
	}
	return out, nil
}

// Change writes the status change makes of the stored FleetConfig; an
// error from change is the answer and nothing is written.
func (s *Stored) Change(ctx context.Context, namespace, name string, change func(latest *v1alpha1.FleetConfig) error) (*v1alpha1.FleetConfig, error) {
	var out *v1alpha1.FleetConfig
	update := rest.DefaultUpdatedObjectInfo(nil, func(ctx context.Context, _, oldObj runtime.Object) (runtime.Object, error) {
		latest := &v1alpha1.FleetConfig{}
		if err := s.scheme.Convert(oldObj, latest, nil); err != nil {
			return nil, err
		}
		if err := change(latest); err != nil {
			return nil, err
		}
		out = latest
		updated := &advisor.FleetConfig{}
		return updated, s.scheme.Convert(latest, updated, nil)
	})
	_, _, err := s.updater.Update(request.WithNamespace(ctx, namespace), name, update, rest.ValidateAllObjectFunc, rest.ValidateAllObjectUpdateFunc, false, &metav1.UpdateOptions{})
	return out, err
}

// requestUser is the name of the user making the request.
func requestUser(ctx context.Context) string {
	if u, ok := request.UserFrom(ctx); ok {
		return u.GetName()
	}
	return ""
}

// readFleetPlanPermission: approving a fleet plan takes reviewing it.
var readFleetPlanPermission = permission.Permission{Verb: "get", Resource: "fleetconfigs", Subresource: "plan"}
