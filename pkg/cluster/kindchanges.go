package cluster

import (
	"context"
	"reflect"
	"sync"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
)

// NodeResourceTopologyGVK is the NUMA topology of a node
// (pkg/hardware.NodeResourceTopologyGVK; this package decides nothing).
var NodeResourceTopologyGVK = schema.GroupVersionKind{Group: "topology.node.k8s.io", Version: "v1alpha2", Kind: "NodeResourceTopology"}

// KindChanges tells when any object of a kind changes in what a profile
// derives from it: a node that joins a pool has no name the profile could
// declare beforehand (profiles.ObjectRef with no name). Each kind is
// watched by an informer whose transform keeps only those parts (a Node's
// labels, capacity and architecture; a NodeResourceTopology's NUMA zones
// and their capacity), so the heartbeats and the available resources that
// change all the time neither cost memory nor wake anyone: only an object
// added, deleted, or changed in a kept part is told.
type KindChanges struct {
	dynamic dynamic.Interface
	mapper  meta.RESTMapper

	mu       sync.Mutex
	ctx      context.Context
	onChange func(schema.GroupKind)
	watched  map[schema.GroupKind]bool
}

// kindTransforms are the kinds KindChanges watches and what it keeps of
// their objects.
var kindTransforms = map[schema.GroupKind]cache.TransformFunc{
	{Kind: "Node"}:                      slimNodeHardware,
	NodeResourceTopologyGVK.GroupKind(): slimTopology,
}

// NewKindChanges returns a KindChanges whose informers start at Watch
// once Start was called.
func NewKindChanges(dyn dynamic.Interface, mapper meta.RESTMapper) *KindChanges {
	return &KindChanges{dynamic: dyn, mapper: mapper, watched: map[schema.GroupKind]bool{}}
}

// Start lets the watches run until ctx ends.
func (k *KindChanges) Start(ctx context.Context) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.ctx = ctx
}

// OnChange sets the function told of changes, by kind; nil stops telling.
func (k *KindChanges) OnChange(fn func(schema.GroupKind)) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.onChange = fn
}

// Watch starts watching the kind, unless it is watched already, is not
// one KindChanges knows, or is not served yet (the next Watch tries again).
func (k *KindChanges) Watch(gk schema.GroupKind) {
	k.mu.Lock()
	defer k.mu.Unlock()
	transform, known := kindTransforms[gk]
	if k.ctx == nil || !known || k.watched[gk] {
		return
	}
	mapping, err := k.mapper.RESTMapping(gk)
	if err != nil {
		klog.FromContext(k.ctx).V(2).Info("Not watching the kind yet", "kind", gk.String(), "reason", err)
		return
	}
	k.watched[gk] = true
	ri := k.dynamic.Resource(mapping.Resource)
	lw := &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) { return ri.List(ctx, o) },
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			return ri.Watch(ctx, o)
		},
	}
	informer := cache.NewSharedIndexInformer(lw, &unstructured.Unstructured{}, 0, cache.Indexers{})
	if err := informer.SetTransform(transform); err != nil {
		klog.FromContext(k.ctx).Error(err, "Cannot cut down the watched objects", "kind", gk.String())
	}
	tell := func() {
		k.mu.Lock()
		fn := k.onChange
		k.mu.Unlock()
		if fn != nil {
			fn(gk)
		}
	}
	if _, err := informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: func(interface{}) { tell() },
		UpdateFunc: func(old, obj interface{}) {
			if kept(old) != nil && !reflect.DeepEqual(kept(old), kept(obj)) {
				tell()
			}
		},
		DeleteFunc: func(interface{}) { tell() },
	}); err != nil {
		klog.FromContext(k.ctx).Error(err, "Cannot follow the kind", "kind", gk.String())
	}
	go informer.RunWithContext(k.ctx)
}

// kept is what a transformed object holds besides its resourceVersion.
func kept(obj interface{}) map[string]interface{} {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return nil
	}
	c := runtime.DeepCopyJSON(u.Object)
	unstructured.RemoveNestedField(c, "metadata", "resourceVersion")
	return c
}

// slimNodeHardware keeps of a Node what its hardware facts are read from:
// its labels (pool membership, node-feature-discovery's), capacity,
// allocatable and architecture.
func slimNodeHardware(obj interface{}) (interface{}, error) {
	slim, err := slimNode(obj)
	if u, ok := slim.(*unstructured.Unstructured); ok && err == nil {
		// Whether it is schedulable or tainted is no hardware.
		delete(u.Object, "spec")
	}
	return slim, err
}

// slimTopology keeps of a NodeResourceTopology its zones' names and types
// and each resource's capacity: not what is allocatable or available,
// which change with every pod.
func slimTopology(obj interface{}) (interface{}, error) {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return obj, nil
	}
	var zones []interface{}
	list, _, _ := unstructured.NestedSlice(u.Object, "zones")
	for _, z := range list {
		m, _ := z.(map[string]interface{})
		var resources []interface{}
		rs, _ := m["resources"].([]interface{})
		for _, r := range rs {
			rm, _ := r.(map[string]interface{})
			resources = append(resources, map[string]interface{}{"name": rm["name"], "capacity": rm["capacity"]})
		}
		zones = append(zones, map[string]interface{}{"name": m["name"], "type": m["type"], "resources": resources})
	}
	return &unstructured.Unstructured{Object: map[string]interface{}{
		"apiVersion": u.GetAPIVersion(), "kind": u.GetKind(),
		"metadata": map[string]interface{}{"name": u.GetName(), "resourceVersion": u.GetResourceVersion(), "uid": string(u.GetUID())},
		"zones":    zones,
	}}, nil
}
