package cluster

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/tools/cache"
)

// watchBackoff bounds how long a broken watch of one object stays broken.
// A shared informer's reflector backs off up to 30 s, doubled by jitter:
// after a kube-apiserver restart (connection refused, then 403 until its
// authorizer has synced) an edit of a target went unseen for up to a
// minute, and the plan read the stale copy as live. Each object here has
// one watch, so retrying within 2 s costs the API server little.
var watchBackoff = wait.Backoff{Duration: 100 * time.Millisecond, Cap: 2 * time.Second, Steps: 20, Factor: 2, Jitter: 0.5}

// objectWatch keeps one object (a name, in a namespace or cluster-wide) in
// a cache with a reflector of its own and tells onChange after the cache
// holds each new state. Its cache is current only while a watch follows
// it: between a broken watch and the relist that repairs it, current is
// false and readers read live instead of trusting an old copy.
type objectWatch struct {
	store    cache.Store
	onChange func()

	// synced: a list has filled the cache once.
	synced atomic.Bool
	// following: a watch continues from the cache's resourceVersion.
	following atomic.Bool
}

// startObjectWatch watches name (in ns; "" for cluster-scoped kinds or all
// namespaces) of res until ctx ends.
func startObjectWatch(ctx context.Context, res dynamic.NamespaceableResourceInterface, ns, name string, onChange func()) *objectWatch {
	ow := &objectWatch{store: cache.NewStore(cache.MetaNamespaceKeyFunc), onChange: onChange}
	lw := &objectListWatch{res: res, ns: ns, selector: fields.OneTermEqualSelector("metadata.name", name).String(), watch: ow}
	r := cache.NewReflectorWithOptions(lw, &unstructured.Unstructured{}, ow, cache.ReflectorOptions{
		Name: "object " + name, Backoff: &watchBackoff,
	})
	go r.RunWithContext(ctx)
	return ow
}

// current is true when the cache holds the object's state as a running
// watch knows it.
func (ow *objectWatch) current() bool {
	return ow.synced.Load() && ow.following.Load()
}

// object is the cached object; nil when it does not exist.
func (ow *objectWatch) object() *unstructured.Unstructured {
	items := ow.store.List()
	if len(items) == 0 {
		return nil
	}
	u, _ := items[0].(*unstructured.Unstructured)
	return u
}

// The cache.ReflectorStore the reflector writes to: each change is
// reported once stored.

func (ow *objectWatch) Add(obj interface{}) error    { return ow.changed(ow.store.Add(obj)) }
func (ow *objectWatch) Update(obj interface{}) error { return ow.changed(ow.store.Update(obj)) }
func (ow *objectWatch) Delete(obj interface{}) error { return ow.changed(ow.store.Delete(obj)) }
func (ow *objectWatch) Resync() error                { return nil }

// Replace stores a fresh list: the cache is current again, and owners are
// told when the object changed while no watch followed it.
func (ow *objectWatch) Replace(list []interface{}, rv string) error {
	before := resourceVersionOf(ow.object())
	if err := ow.store.Replace(list, rv); err != nil {
		return err
	}
	ow.synced.Store(true)
	ow.following.Store(true)
	if resourceVersionOf(ow.object()) != before {
		ow.onChange()
	}
	return nil
}

func (ow *objectWatch) changed(err error) error {
	if err == nil {
		ow.onChange()
	}
	return err
}

func resourceVersionOf(u *unstructured.Unstructured) string {
	if u == nil {
		return ""
	}
	return u.GetResourceVersion()
}

// objectListWatch lists and watches one object by name and keeps its
// watch's following flag: set when a watch resumes from the cache's
// resourceVersion, cleared when a list or watch fails or a watch ends.
type objectListWatch struct {
	res      dynamic.NamespaceableResourceInterface
	ns       string
	selector string
	watch    *objectWatch
}

// IsWatchListSemanticsUnSupported: plain list and watch, so that a
// successful watch call always resumes from what the cache holds.
func (lw *objectListWatch) IsWatchListSemanticsUnSupported() bool { return true }

func (lw *objectListWatch) List(opts metav1.ListOptions) (runtime.Object, error) {
	return lw.ListWithContext(context.Background(), opts)
}

func (lw *objectListWatch) Watch(opts metav1.ListOptions) (watch.Interface, error) {
	return lw.WatchWithContext(context.Background(), opts)
}

func (lw *objectListWatch) ListWithContext(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
	opts.FieldSelector = lw.selector
	list, err := lw.res.Namespace(lw.ns).List(ctx, opts)
	if err != nil {
		lw.watch.following.Store(false)
	}
	return list, err
}

func (lw *objectListWatch) WatchWithContext(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
	opts.FieldSelector = lw.selector
	w, err := lw.res.Namespace(lw.ns).Watch(ctx, opts)
	if err != nil {
		lw.watch.following.Store(false)
		return nil, err
	}
	lw.watch.following.Store(lw.watch.synced.Load())
	return newEndingWatch(w, func() { lw.watch.following.Store(false) }), nil
}

// endingWatch passes a watch's events on and calls ended once when the
// watch reports an error, its stream closes or it is stopped.
type endingWatch struct {
	watch.Interface
	out     chan watch.Event
	stopped chan struct{}
	stop    sync.Once
}

func newEndingWatch(w watch.Interface, ended func()) *endingWatch {
	ew := &endingWatch{Interface: w, out: make(chan watch.Event), stopped: make(chan struct{})}
	go func() {
		defer close(ew.out)
		defer ended()
		for ev := range w.ResultChan() {
			if ev.Type == watch.Error {
				ended()
			}
			select {
			case ew.out <- ev:
			case <-ew.stopped:
				return
			}
		}
	}()
	return ew
}

func (ew *endingWatch) ResultChan() <-chan watch.Event { return ew.out }

func (ew *endingWatch) Stop() {
	ew.stop.Do(func() { close(ew.stopped) })
	ew.Interface.Stop()
}
