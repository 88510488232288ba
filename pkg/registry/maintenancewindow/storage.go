package maintenancewindow

import (
	"context"
	"fmt"
	"time"

	metainternalversion "k8s.io/apimachinery/pkg/apis/meta/internalversion"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/apiserver/pkg/warning"
	"k8s.io/klog/v2"

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
	clock clock.PassiveClock
}

var _ rest.ShortNamesProvider = &REST{}

// ShortNames lets users type `kubectl get mw`.
func (r *REST) ShortNames() []string { return []string{"mw"} }

// NewREST returns the storage of maintenancewindows. Every window it
// returns — get, list, watch events, and the results of create and update
// — carries the status computed for the clock's now, within the request's
// context. A delete returns a Status, as Kubernetes' stores do (the
// window, with its status, only while finalizers hold it).
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

		// No Decorator: it has no context; the methods below compute
		// the status with the request's.
		TableConvertor: windowTable{clock: o.Clock},
	}
	options := &generic.StoreOptions{RESTOptions: uncached{optsGetter}, AttrFunc: GetAttrs}
	if err := store.CompleteWithOptions(options); err != nil {
		return nil, err
	}
	return &REST{Store: store, clock: o.Clock}, nil
}

// Get implements rest.Getter, with the status computed.
func (r *REST) Get(ctx context.Context, name string, options *metav1.GetOptions) (runtime.Object, error) {
	return r.withStatus(ctx)(r.Store.Get(ctx, name, options))
}

// List implements rest.Lister, with the status computed.
func (r *REST) List(ctx context.Context, options *metainternalversion.ListOptions) (runtime.Object, error) {
	return r.withStatus(ctx)(r.Store.List(ctx, options))
}

// Create implements rest.Creater, with the status computed.
func (r *REST) Create(ctx context.Context, obj runtime.Object, createValidation rest.ValidateObjectFunc, options *metav1.CreateOptions) (runtime.Object, error) {
	return r.withStatus(ctx)(r.Store.Create(ctx, obj, createValidation, options))
}

// Update implements rest.Updater, with the status computed.
func (r *REST) Update(ctx context.Context, name string, objInfo rest.UpdatedObjectInfo, createValidation rest.ValidateObjectFunc, updateValidation rest.ValidateObjectUpdateFunc, forceAllowCreate bool, options *metav1.UpdateOptions) (runtime.Object, bool, error) {
	obj, created, err := r.Store.Update(ctx, name, objInfo, createValidation, updateValidation, forceAllowCreate, options)
	obj, err = r.withStatus(ctx)(obj, err)
	return obj, created, err
}

// Delete implements rest.GracefulDeleter: a Status, or the window with its
// status while finalizers hold it.
func (r *REST) Delete(ctx context.Context, name string, deleteValidation rest.ValidateObjectFunc, options *metav1.DeleteOptions) (runtime.Object, bool, error) {
	obj, immediately, err := r.Store.Delete(ctx, name, deleteValidation, options)
	obj, err = r.withStatus(ctx)(obj, err)
	return obj, immediately, err
}

// Watch implements rest.Watcher: the status of every event's window is
// computed when the event is sent.
func (r *REST) Watch(ctx context.Context, options *metainternalversion.ListOptions) (watch.Interface, error) {
	w, err := r.Store.Watch(ctx, options)
	if err != nil {
		return nil, err
	}
	// No warning: the response's headers went out with the first event,
	// and the filter runs on after the request ends.
	return watch.Filter(w, func(e watch.Event) (watch.Event, bool) {
		computeStatus(ctx, e.Object, r.clock.Now(), false)
		return e, true
	}), nil
}

// withStatus computes the status of what a method of the store returned.
func (r *REST) withStatus(ctx context.Context) func(runtime.Object, error) (runtime.Object, error) {
	return func(obj runtime.Object, err error) (runtime.Object, error) {
		if err == nil {
			computeStatus(ctx, obj, r.clock.Now(), true)
		}
		return obj, err
	}
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

// computeStatus fills in the status of a window or a list of windows for
// now; warn: the response may still carry warnings.
func computeStatus(ctx context.Context, obj runtime.Object, now time.Time, warn bool) {
	switch o := obj.(type) {
	case *advisor.MaintenanceWindow:
		o.Status = status(ctx, o, now, warn)
	case *advisor.MaintenanceWindowList:
		for i := range o.Items {
			o.Items[i].Status = status(ctx, &o.Items[i], now, warn)
		}
	}
}

// status is where the window stands at now. A window that does not parse
// (none is stored: validation parses it the same way; a watch bookmark is
// no window) has an empty status. So has one whose state cannot be
// computed within the bound of an evaluation (validation refuses those)
// or before ctx ends: the response then carries a warning that says so
// (kubectl prints "Warning: …"; not on watch events), and the window
// reads as not open.
func status(ctx context.Context, w *advisor.MaintenanceWindow, now time.Time, warn bool) advisor.MaintenanceWindowStatus {
	parsed, err := parse(w)
	if err != nil {
		return advisor.MaintenanceWindowStatus{}
	}
	st, err := parsed.State(ctx, now)
	if err != nil {
		if ctx.Err() != nil {
			return advisor.MaintenanceWindowStatus{} // the request is over: nobody reads it
		}
		if warn {
			warning.AddWarning(ctx, "", fmt.Sprintf("MaintenanceWindow %q: status not computed, it reads as not open: %v", w.Name, err))
		}
		klog.FromContext(ctx).Error(err, "MaintenanceWindow status not computed", "window", w.Name)
		return advisor.MaintenanceWindowStatus{}
	}
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
