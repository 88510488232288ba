package maintenancewindow

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/registry/generic"
	genericregistry "k8s.io/apiserver/pkg/registry/generic/registry"
	"k8s.io/apiserver/pkg/registry/rest"
	"k8s.io/apiserver/pkg/storage/names"
	"k8s.io/utils/clock"

	"github.com/kubevirt/virt-advisor/pkg/apis/advisor"
	"github.com/kubevirt/virt-advisor/pkg/maintenance"
)

// Options is what the storage needs besides etcd.
type Options struct {
	// Clock is the time status is computed for; nil is the real clock.
	Clock clock.PassiveClock
}

// REST is the storage of maintenancewindows.
type REST struct {
	*genericregistry.Store
}

var _ rest.ShortNamesProvider = &REST{}

// ShortNames lets users type `kubectl get mw`.
func (r *REST) ShortNames() []string { return []string{"mw"} }

// NewREST returns the storage of maintenancewindows. Every object it
// returns — get, list, watch events, and the results of create, update and
// delete — carries the status computed for the clock's now.
func NewREST(scheme *runtime.Scheme, optsGetter generic.RESTOptionsGetter, o Options) (*REST, error) {
	if o.Clock == nil {
		o.Clock = clock.RealClock{}
	}
	s := strategy{scheme, names.SimpleNameGenerator}
	store := &genericregistry.Store{
		NewFunc:                   func() runtime.Object { return &advisor.MaintenanceWindow{} },
		NewListFunc:               func() runtime.Object { return &advisor.MaintenanceWindowList{} },
		PredicateFunc:             Match,
		DefaultQualifiedResource:  advisor.Resource("maintenancewindows"),
		SingularQualifiedResource: advisor.Resource("maintenancewindow"),

		CreateStrategy:      s,
		UpdateStrategy:      s,
		DeleteStrategy:      s,
		ResetFieldsStrategy: s,

		Decorator:      func(obj runtime.Object) { computeStatus(obj, o.Clock.Now()) },
		TableConvertor: windowTable{clock: o.Clock},
	}
	options := &generic.StoreOptions{RESTOptions: uncached{optsGetter}, AttrFunc: GetAttrs}
	if err := store.CompleteWithOptions(options); err != nil {
		return nil, err
	}
	return &REST{Store: store}, nil
}

// uncached reads maintenancewindows from etcd, not through the watch
// cache: the status is written into every object read, and the watch
// cache shares its objects between readers. There are a handful of windows.
type uncached struct {
	generic.RESTOptionsGetter
}

func (u uncached) GetRESTOptions(resource schema.GroupResource, example runtime.Object) (generic.RESTOptions, error) {
	opts, err := u.RESTOptionsGetter.GetRESTOptions(resource, example)
	opts.Decorator = generic.UndecoratedStorage
	return opts, err
}

// computeStatus fills in the status of a window or a list of windows for now.
func computeStatus(obj runtime.Object, now time.Time) {
	switch o := obj.(type) {
	case *advisor.MaintenanceWindow:
		o.Status = status(o, now)
	case *advisor.MaintenanceWindowList:
		for i := range o.Items {
			o.Items[i].Status = status(&o.Items[i], now)
		}
	}
}

// status is where the window stands at now. A window that does not parse
// (none is stored: validation parses it the same way; a watch bookmark is
// no window) has an empty status.
func status(w *advisor.MaintenanceWindow, now time.Time) advisor.MaintenanceWindowStatus {
	parsed, err := parse(w)
	if err != nil {
		return advisor.MaintenanceWindowStatus{}
	}
	st := parsed.State(now)
	return advisor.MaintenanceWindowStatus{Open: st.Open, OpensAt: timeOrNil(st.OpensAt), ClosesAt: timeOrNil(st.ClosesAt)}
}

// parse parses a stored window for the arithmetic of package maintenance.
func parse(w *advisor.MaintenanceWindow) (*maintenance.Window, error) {
	return maintenance.New(w.Name, maintenance.Spec{
		Pools:     w.Spec.Pools,
		PoolNames: w.Spec.PoolNames,
		Schedule:  w.Spec.Schedule,
		Duration:  w.Spec.Duration.Duration,
		TimeZone:  w.Spec.TimeZone,
		Kind:      maintenance.Kind(w.Spec.Kind),
	})
}

func timeOrNil(t time.Time) *metav1.Time {
	if t.IsZero() {
		return nil
	}
	return &metav1.Time{Time: t}
}
