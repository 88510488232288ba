package cluster

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"unique"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/kubevirt/virt-advisor/pkg/failpoint"
	"github.com/kubevirt/virt-advisor/pkg/kubevirt"
)

// VMIWatchFailpoint holds each change of a VirtualMachineInstance the
// VMI cache's watch delivers (not the objects of its initial list) when
// armed with a duration: an e2e test makes the cache stale on purpose.
const VMIWatchFailpoint = "vmi-watch-event"

// NodeVMCache serves the Nodes and VirtualMachineInstances every plan that
// writes a MachineConfig reads (which nodes a pool drains, what that does
// to the VMs there) from informers: on a cluster with thousands of VMs a
// list per plan costs kube-apiserver more than the rest of the plan. A
// transform cuts each object down to what the decisions read as it
// enters the cache, so memory grows by bytes per VM, not by the kilobytes
// of a whole VMI. The cache is as new as its watch: the controller's check
// right before a drain reads the VMs live instead (plan.Engine.DrainImpact).
type NodeVMCache struct {
	dynamic dynamic.Interface
	mapper  meta.RESTMapper
	// raw, when set, lists and watches the VMIs (vmiListWatch).
	raw rest.Interface

	mu                      sync.Mutex
	ctx                     context.Context
	nodes, vmis, migrations *slimInformer
}

// slimInformer is one informer and the sorted view of its store, built
// again only after an event changed the store.
type slimInformer struct {
	informer cache.SharedIndexInformer
	// changes counts the store's events; built is the count the view was
	// built at.
	changes atomic.Int64
	mu      sync.Mutex
	built   int64
	view    any
}

// NewNodeVMCache returns a cache whose informers start at Start (Nodes)
// and at the first read of the VMIs once the cluster serves them. The VMIs
// are read through raw when it is set, else through the dynamic client
// (tests).
func NewNodeVMCache(dyn dynamic.Interface, raw rest.Interface, mapper meta.RESTMapper) *NodeVMCache {
	return &NodeVMCache{dynamic: dyn, raw: raw, mapper: mapper}
}

// Start runs the Node informer until ctx ends; the VMI informer starts at
// the first read that finds the kind served.
func (c *NodeVMCache) Start(ctx context.Context) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.ctx = ctx
	nodes := schema.GroupVersionResource{Version: "v1", Resource: "nodes"}
	c.nodes = c.startLocked(nodes.Resource, c.dynamicListWatch(nodes, false), &unstructured.Unstructured{}, slimNode)
}

// Nodes returns the cached Nodes, sorted by name, shared (callers must not
// modify them), and the resourceVersion the cache is at; ok is false until
// the cache has synced (the caller reads live).
func (c *NodeVMCache) Nodes() (nodes []unstructured.Unstructured, resourceVersion string, ok bool) {
	c.mu.Lock()
	s := c.nodes
	c.mu.Unlock()
	if s == nil || !s.informer.HasSynced() {
		return nil, "", false
	}
	view := s.current(func(items []interface{}) any {
		out := make([]unstructured.Unstructured, 0, len(items))
		for _, o := range items {
			if u, isU := o.(*unstructured.Unstructured); isU {
				out = append(out, *u)
			}
		}
		slices.SortFunc(out, func(a, b unstructured.Unstructured) int { return strings.Compare(a.GetName(), b.GetName()) })
		return out
	})
	return view.([]unstructured.Unstructured), s.informer.LastSyncResourceVersion(), true
}

// VMIs returns the cached VirtualMachineInstances, sorted by namespace and
// name, shared, and the resourceVersion the cache is at; ok is false until
// the cache has synced, and when the cluster does not serve
// kubevirt.io/v1 VirtualMachineInstance (the caller reads live, which
// tells).
func (c *NodeVMCache) VMIs() (vmis []kubevirt.VMI, resourceVersion string, ok bool) {
	c.mu.Lock()
	s := c.vmis
	if s == nil && c.ctx != nil {
		if mapping, err := c.mapper.RESTMapping(VirtualMachineInstanceGVK.GroupKind(), VirtualMachineInstanceGVK.Version); err == nil {
			if c.raw != nil {
				s = c.startLocked(mapping.Resource.Resource, &vmiListWatch{raw: c.raw, gvr: mapping.Resource}, &CachedVMI{}, nil)
			} else {
				s = c.startLocked(mapping.Resource.Resource, c.dynamicListWatch(mapping.Resource, true), &unstructured.Unstructured{}, slimVMI)
			}
			c.vmis = s
		}
	}
	c.mu.Unlock()
	if s == nil || !s.informer.HasSynced() {
		return nil, "", false
	}
	view := s.current(func(items []interface{}) any {
		out := make([]kubevirt.VMI, 0, len(items))
		for _, o := range items {
			if v, isV := o.(*CachedVMI); isV {
				out = append(out, v.VMI)
			}
		}
		slices.SortFunc(out, kubevirt.CompareVMIs)
		return out
	})
	return view.([]kubevirt.VMI), s.informer.LastSyncResourceVersion(), true
}

// current is the view of the store, built by build when the store changed
// since the last one.
func (s *slimInformer) current(build func([]interface{}) any) any {
	s.mu.Lock()
	defer s.mu.Unlock()
	if n := s.changes.Load(); s.view == nil || n != s.built {
		s.view, s.built = build(s.informer.GetStore().List()), n
	}
	return s.view
}

// dynamicListWatch lists and watches gvr through the dynamic client;
// held passes each change through VMIWatchFailpoint (heldWatch).
func (c *NodeVMCache) dynamicListWatch(gvr schema.GroupVersionResource, held bool) cache.ListerWatcher {
	ri := c.dynamic.Resource(gvr)
	lw := &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			return ri.List(ctx, o)
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			w, err := ri.Watch(ctx, o)
			if err != nil || !held {
				return w, err
			}
			return heldWatch(ctx, w), nil
		},
	}
	return cache.ToListWatcherWithWatchListSemantics(lw, c.dynamic)
}

// startLocked runs an informer of objType on lw, its objects cut down by
// transform (nil: lw decodes them cut down).
func (c *NodeVMCache) startLocked(resource string, lw cache.ListerWatcher, objType runtime.Object, transform cache.TransformFunc) *slimInformer {
	informer := cache.NewSharedIndexInformer(lw, objType, 0, cache.Indexers{})
	if transform != nil {
		if err := informer.SetTransform(transform); err != nil {
			klog.FromContext(c.ctx).Error(err, "Cannot cut down the cached objects", "resource", resource)
		}
	}
	s := &slimInformer{informer: informer}
	bump := func() { s.changes.Add(1) }
	if _, err := informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: func(interface{}) { bump() },
		UpdateFunc: func(old, obj interface{}) {
			if slimChanged(old, obj) {
				bump()
			}
		},
		DeleteFunc: func(interface{}) { bump() },
	}); err != nil {
		klog.FromContext(c.ctx).Error(err, "Cannot follow the cache", "resource", resource)
	}
	go informer.RunWithContext(c.ctx)
	return s
}

// slimChanged is false for an update that left what the cache keeps as
// it was (a Node's heartbeat, a VMI's guest agent data), but for the
// resourceVersion: the view and what plans derived from it stay valid.
func slimChanged(old, obj interface{}) bool {
	switch o := old.(type) {
	case *CachedVMI:
		n, ok := obj.(*CachedVMI)
		return !ok || o.VMI != n.VMI
	case *unstructured.Unstructured:
		n, ok := obj.(*unstructured.Unstructured)
		return !ok || !equalBut(o.Object, n.Object, "resourceVersion")
	}
	return true
}

// equalBut compares two objects but for the metadata field named.
func equalBut(a, b map[string]interface{}, field string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, va := range a {
		vb, ok := b[k]
		if !ok {
			return false
		}
		if k == "metadata" {
			ma, aok := va.(map[string]interface{})
			mb, bok := vb.(map[string]interface{})
			if aok && bok {
				ma, mb = maps.Clone(ma), maps.Clone(mb)
				delete(ma, field)
				delete(mb, field)
				va, vb = ma, mb
			}
		}
		if !equality.Semantic.DeepEqual(va, vb) {
			return false
		}
	}
	return true
}

// heldWatch passes each change (Modified, Deleted) of w through the
// failpoint VMIWatchFailpoint; with the failpoint unarmed it is w.
func heldWatch(ctx context.Context, w watch.Interface) watch.Interface {
	if !failpoint.Armed(VMIWatchFailpoint) {
		return w
	}
	h := &held{Interface: w, out: make(chan watch.Event), stop: make(chan struct{})}
	go func() {
		defer close(h.out)
		for ev := range w.ResultChan() {
			if ev.Type == watch.Modified || ev.Type == watch.Deleted {
				failpoint.Hit(ctx, VMIWatchFailpoint)
			}
			select {
			case h.out <- ev:
			case <-h.stop:
				return
			}
		}
	}()
	return h
}

// held is a watch whose events are handed on one by one.
type held struct {
	watch.Interface
	out      chan watch.Event
	stop     chan struct{}
	stopOnce sync.Once
}

func (h *held) ResultChan() <-chan watch.Event { return h.out }

func (h *held) Stop() {
	h.stopOnce.Do(func() { close(h.stop) })
	h.Interface.Stop()
}

// CachedVMI is a VirtualMachineInstance as the cache keeps it: what a
// drain depends on (kubevirt.VMI, whose namespace and name are the
// object's) and its resourceVersion, 176 bytes with the bytes of its
// name and resourceVersion, where a whole ObjectMeta alone takes 250. The
// strings many VMIs share (namespace, node, phase, strategy, reason) are
// interned (see intern for how far that goes).
type CachedVMI struct {
	ResourceVersion string
	VMI             kubevirt.VMI
	// own holds the bytes of ResourceVersion and VMI.Name (slimVMI).
	own [inlineBytes]byte
}

// GetObjectMeta is what the informer keys the VMI by.
func (v *CachedVMI) GetObjectMeta() metav1.Object {
	return &metav1.ObjectMeta{Namespace: v.VMI.Namespace, Name: v.VMI.Name, ResourceVersion: v.ResourceVersion}
}

// GetObjectKind: the cache holds one kind.
func (v *CachedVMI) GetObjectKind() schema.ObjectKind { return schema.EmptyObjectKind }

// DeepCopyObject copies the VMI (all its fields are values; the copy's
// strings share the bytes of the original's, which are never written).
func (v *CachedVMI) DeepCopyObject() runtime.Object {
	out := *v
	return &out
}

// intern is the copy of s that everything interned since the last
// collection shares (unique keeps a value only while a handle of it lives).
func intern(s string) string { return unique.Make(s).Value() }

// slimNode keeps of a Node what the plans read: its name, labels (pools
// select nodes by them), the control-plane topology annotation (a single
// node cluster), the Machine Config daemon's annotations and the Ready
// condition (the gates between the steps of a rollout), whether it is schedulable and its taints (where VMs may
// go), its capacity and allocatable resources, its architecture and the
// swap it reports (virt-higher-density's check).
func slimNode(obj interface{}) (interface{}, error) {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return obj, nil
	}
	md := map[string]interface{}{"name": u.GetName(), "resourceVersion": u.GetResourceVersion(), "uid": string(u.GetUID())}
	if l, found, _ := unstructured.NestedFieldNoCopy(u.Object, "metadata", "labels"); found {
		md["labels"] = l
	}
	annotations := map[string]interface{}{}
	for _, key := range keptNodeAnnotations {
		if a, found := u.GetAnnotations()[key]; found {
			annotations[key] = a
		}
	}
	if len(annotations) > 0 {
		md["annotations"] = annotations
	}
	status := map[string]interface{}{}
	for _, f := range []string{"capacity", "allocatable"} {
		if v, found, _ := unstructured.NestedFieldNoCopy(u.Object, "status", f); found {
			status[f] = v
		}
	}
	nodeInfo := map[string]interface{}{}
	for _, f := range []string{"swap", "architecture"} {
		if v, found, _ := unstructured.NestedFieldNoCopy(u.Object, "status", "nodeInfo", f); found {
			nodeInfo[f] = v
		}
	}
	if len(nodeInfo) > 0 {
		status["nodeInfo"] = nodeInfo
	}
	if conditions := keptConditions(u); len(conditions) > 0 {
		status["conditions"] = conditions
	}
	spec := map[string]interface{}{}
	for _, f := range []string{"unschedulable", "taints"} {
		if v, found, _ := unstructured.NestedFieldNoCopy(u.Object, "spec", f); found {
			spec[f] = v
		}
	}
	return &unstructured.Unstructured{Object: map[string]interface{}{
		"apiVersion": "v1", "kind": "Node", "metadata": md, "spec": spec, "status": status,
	}}, nil
}

// keptNodeAnnotations are what the plans and the gates between the steps
// of a rollout read of a Node's annotations: the single-node topology, and
// what the Machine Config daemon says of its update.
var keptNodeAnnotations = []string{controlPlaneTopologyAnnotation,
	"machineconfiguration.openshift.io/currentConfig", "machineconfiguration.openshift.io/desiredConfig",
	"machineconfiguration.openshift.io/state", "machineconfiguration.openshift.io/reason"}

// keptConditions are the Node's Ready condition and those another
// controller sets while it maintains the node (Kubernetes' node lifecycle
// conditions), without their heartbeats (which change every few seconds
// and no decision reads).
func keptConditions(u *unstructured.Unstructured) []interface{} {
	conditions, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	var out []interface{}
	for _, c := range conditions {
		m, ok := c.(map[string]interface{})
		if !ok || (m["type"] != "Ready" && m["type"] != "MaintenanceInProgress" && m["type"] != "DrainInProgress") {
			continue
		}
		kept := map[string]interface{}{"type": m["type"], "status": m["status"]}
		for _, f := range []string{"lastTransitionTime", "reason"} {
			if v, found := m[f]; found {
				kept[f] = v
			}
		}
		out = append(out, kept)
	}
	return out
}

// controlPlaneTopologyAnnotation is what marks a single-node cluster's node
// (pkg/disruption.TopologyAnnotation; this package decides nothing).
const controlPlaneTopologyAnnotation = "machineconfiguration.openshift.io/controlPlaneTopology"

// OnNodeChange calls fn after every change of a Node in what the cache
// keeps (not its heartbeats): the pool controller looks at a stepped
// pool as soon as the MCO targets a node. remove stops the calls; an
// error when the cache has not started.
func (c *NodeVMCache) OnNodeChange(fn func()) (remove func(), err error) {
	c.mu.Lock()
	s := c.nodes
	c.mu.Unlock()
	if s == nil {
		return nil, fmt.Errorf("the Node cache has not started")
	}
	reg, err := s.informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: func(interface{}) { fn() },
		UpdateFunc: func(old, obj interface{}) {
			if slimChanged(old, obj) {
				fn()
			}
		},
		DeleteFunc: func(interface{}) { fn() },
	})
	if err != nil {
		return nil, err
	}
	return func() { _ = s.informer.RemoveEventHandler(reg) }, nil
}
