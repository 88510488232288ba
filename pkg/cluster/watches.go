package cluster

import (
	"context"
	"sync"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/client-go/dynamic"
	"k8s.io/klog/v2"
)

// ObjectKey names one object of the main cluster.
type ObjectKey struct {
	GVK             schema.GroupVersionKind
	Namespace, Name string
}

// InputsOwner holds the watches of every input object a plan has read:
// the plan engine reads their caches, nobody is told of their events.
const InputsOwner = "\x00plan-inputs"

// Watches runs one informer per watched object, filtered by a field
// selector on its name (and namespace), so memory stays flat however many
// unrelated objects of the same kind the cluster holds. Owners (the
// controller's configs, the plan engine's inputs) declare the objects they
// depend on; an event on one is reported for every owner that depends on
// it, after the watch cache holds the new state, so that a plan computed
// on the event reads it.
type Watches struct {
	dynamic dynamic.Interface
	mapper  meta.RESTMapper

	mu       sync.Mutex
	ctx      context.Context
	onEvent  func(owner string, key ObjectKey)
	watchers map[ObjectKey]*watcher
	byConfig map[string]sets.Set[ObjectKey]
}

type watcher struct {
	stop    context.CancelFunc
	configs sets.Set[string]
	object  *objectWatch
}

// NewWatches returns watches that start informers once Start is called.
func NewWatches(dyn dynamic.Interface, mapper meta.RESTMapper) *Watches {
	return &Watches{dynamic: dyn, mapper: mapper, watchers: map[ObjectKey]*watcher{}, byConfig: map[string]sets.Set[ObjectKey]{}}
}

// Start lets watches run until ctx ends, starting those declared before.
func (w *Watches) Start(ctx context.Context) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.ctx = ctx
	for config, keys := range w.byConfig {
		w.acquireAll(config, keys)
	}
}

// OnEvent sets the function told about events; nil stops telling.
func (w *Watches) OnEvent(fn func(owner string, key ObjectKey)) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.onEvent = fn
}

// Cached returns the watched object (nil when it does not exist) while a
// watch keeps its cache current; ok is false when the object is not
// watched, not yet synced or its watch is broken, and the caller reads it
// live.
func (w *Watches) Cached(key ObjectKey) (obj *unstructured.Unstructured, ok bool) {
	key = w.resolve(key)
	w.mu.Lock()
	wt := w.watchers[key]
	w.mu.Unlock()
	if wt == nil || !wt.object.current() {
		return nil, false
	}
	return wt.object.object(), true
}

// Set makes owner depend on exactly keys: watches start for new objects
// and stop when no owner depends on them any more. Kinds the cluster does
// not serve yet are skipped; the next Set after their CRD appears adds them.
func (w *Watches) Set(config string, keys []ObjectKey) {
	w.mu.Lock()
	defer w.mu.Unlock()
	want := sets.New[ObjectKey]()
	for _, k := range keys {
		want.Insert(w.resolve(k))
	}
	if w.ctx == nil {
		// Not started: remembered, and started by Start.
		if want.Len() == 0 {
			delete(w.byConfig, config)
		} else {
			w.byConfig[config] = want
		}
		return
	}
	old := w.byConfig[config]
	for key := range old.Difference(want) {
		w.release(config, key)
	}
	w.acquireAll(config, want)
}

// acquireAll watches keys for config and records those it watches; kinds
// not served yet are left out. Called with w.mu held, after Start.
func (w *Watches) acquireAll(config string, keys sets.Set[ObjectKey]) {
	for key := range keys {
		if err := w.acquire(config, key); err != nil {
			klog.FromContext(w.ctx).V(2).Info("Not watching yet", "config", config, "kind", key.GVK.Kind, "name", key.Name, "reason", err)
			keys.Delete(key)
		}
	}
	if keys.Len() == 0 {
		delete(w.byConfig, config)
		return
	}
	w.byConfig[config] = keys
}

// Add makes owner depend on keys as well as on what it already had.
func (w *Watches) Add(owner string, keys []ObjectKey) {
	for i := range keys {
		keys[i] = w.resolve(keys[i])
	}
	w.mu.Lock()
	missing := false
	for _, k := range keys {
		if !w.byConfig[owner].Has(k) {
			missing = true
			break
		}
	}
	// The same object through another version (the preferred one changed)
	// is replaced, not watched twice.
	replaced := sets.New[ObjectKey]()
	for _, k := range keys {
		replaced.Insert(k.unversioned())
	}
	all := keys
	for k := range w.byConfig[owner] {
		if !replaced.Has(k.unversioned()) {
			all = append(all, k)
		}
	}
	w.mu.Unlock()
	if missing {
		w.Set(owner, all)
	}
}

func (k ObjectKey) unversioned() ObjectKey {
	k.GVK.Version = ""
	return k
}

// resolve gives a key without a version the version discovery prefers, so
// that a kind whose preferred version changes (an operator upgrade that
// drops one) is watched again through the new one. Unserved kinds keep
// the empty version; Set skips them.
func (w *Watches) resolve(key ObjectKey) ObjectKey {
	if key.GVK.Version != "" {
		return key
	}
	if mapping, err := w.mapper.RESTMapping(key.GVK.GroupKind()); err == nil {
		key.GVK.Version = mapping.GroupVersionKind.Version
	}
	return key
}

// Forget drops every watch of a deleted config.
func (w *Watches) Forget(config string) { w.Set(config, nil) }

func (w *Watches) acquire(config string, key ObjectKey) error {
	if wt, ok := w.watchers[key]; ok {
		wt.configs.Insert(config)
		return nil
	}
	mapping, err := w.mapper.RESTMapping(key.GVK.GroupKind(), key.GVK.Version)
	if err != nil {
		return err
	}
	ns := key.Namespace
	if mapping.Scope.Name() == meta.RESTScopeNameRoot {
		ns = metav1.NamespaceAll
	}
	wt := &watcher{configs: sets.New(config)}
	notify := func() {
		w.mu.Lock()
		configs, onEvent := sets.List(wt.configs), w.onEvent
		w.mu.Unlock()
		if onEvent == nil {
			return
		}
		for _, c := range configs {
			if c != InputsOwner { // the engine reads its cache; nobody to tell
				onEvent(c, key)
			}
		}
	}
	ctx, cancel := context.WithCancel(w.ctx)
	wt.stop = cancel
	wt.object = startObjectWatch(ctx, w.dynamic.Resource(mapping.Resource), ns, key.Name, notify)
	w.watchers[key] = wt
	return nil
}

func (w *Watches) release(config string, key ObjectKey) {
	wt, ok := w.watchers[key]
	if !ok {
		return
	}
	wt.configs.Delete(config)
	if wt.configs.Len() == 0 {
		wt.stop()
		delete(w.watchers, key)
	}
}
