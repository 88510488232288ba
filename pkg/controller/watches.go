package controller

import (
	"context"
	"sync"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
)

// objectKey names one object of the main cluster.
type objectKey struct {
	GVK             schema.GroupVersionKind
	Namespace, Name string
}

// objectWatches runs one informer per watched object, filtered by a field
// selector on its name (and namespace), so memory stays flat however many
// unrelated objects of the same kind the cluster holds. Each config
// declares the objects it depends on; an event on one enqueues every
// config that depends on it.
type objectWatches struct {
	dynamic dynamic.Interface
	mapper  meta.RESTMapper
	onEvent func(config string, key objectKey)

	mu       sync.Mutex
	ctx      context.Context
	watchers map[objectKey]*watcher
	byConfig map[string]sets.Set[objectKey]
}

type watcher struct {
	stop    context.CancelFunc
	configs sets.Set[string]
	synced  cache.InformerSynced
}

func newObjectWatches(ctx context.Context, dyn dynamic.Interface, mapper meta.RESTMapper, onEvent func(string, objectKey)) *objectWatches {
	return &objectWatches{
		dynamic: dyn, mapper: mapper, onEvent: onEvent, ctx: ctx,
		watchers: map[objectKey]*watcher{}, byConfig: map[string]sets.Set[objectKey]{},
	}
}

// Set makes config depend on exactly keys: watches start for new objects
// and stop when no config depends on them any more. Kinds the cluster does
// not serve yet are skipped; the next Set after their CRD appears adds them.
func (w *objectWatches) Set(config string, keys []objectKey) {
	w.mu.Lock()
	defer w.mu.Unlock()
	want := sets.New(keys...)
	old := w.byConfig[config]
	for key := range old.Difference(want) {
		w.release(config, key)
	}
	for key := range want {
		if err := w.acquire(config, key); err != nil {
			klog.V(2).InfoS("Not watching yet", "config", config, "kind", key.GVK.Kind, "name", key.Name, "reason", err)
			want.Delete(key)
		}
	}
	if want.Len() == 0 {
		delete(w.byConfig, config)
		return
	}
	w.byConfig[config] = want
}

// Forget drops every watch of a deleted config.
func (w *objectWatches) Forget(config string) { w.Set(config, nil) }

// Count is the number of running watches.
func (w *objectWatches) Count() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.watchers)
}

func (w *objectWatches) acquire(config string, key objectKey) error {
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
	selector := fields.OneTermEqualSelector("metadata.name", key.Name).String()
	informer := dynamicinformer.NewFilteredDynamicInformer(w.dynamic, mapping.Resource, ns, 0, cache.Indexers{},
		func(o *metav1.ListOptions) { o.FieldSelector = selector }).Informer()
	wt := &watcher{configs: sets.New(config), synced: informer.HasSynced}
	notify := func() {
		w.mu.Lock()
		configs := sets.List(wt.configs)
		w.mu.Unlock()
		for _, c := range configs {
			w.onEvent(c, key)
		}
	}
	if _, err := informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(interface{}) { notify() },
		UpdateFunc: func(interface{}, interface{}) { notify() },
		DeleteFunc: func(interface{}) { notify() },
	}); err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(w.ctx)
	wt.stop = cancel
	w.watchers[key] = wt
	go informer.RunWithContext(ctx)
	return nil
}

func (w *objectWatches) release(config string, key objectKey) {
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
