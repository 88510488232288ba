// Package cluster is virt-advisor's access to the main cluster: reads,
// lists, dry-runs and applies by kind through a RESTMapper that follows
// CRDs as they come and go (discovery settling), the CRD cache, and the
// watches of the objects plans depend on. It decides nothing: the plan
// engine (pkg/plan) and the controller do.
package cluster

import (
	"context"
	"fmt"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/metadata/metadatainformer"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
)

// FieldManager owns the fields we apply; the earlier operator used the same
// name, so clusters that ran it keep their field ownership.
const FieldManager = "virt-advisor-operator"

// Cluster reads and writes objects of the main cluster by kind, through a
// RESTMapper so that kinds installed after start are found.
type Cluster struct {
	Dynamic dynamic.Interface
	Mapper  meta.ResettableRESTMapper
	// Raw reads what the dynamic client would decode whole (the VMI list,
	// ListVMIs); nil lists through Dynamic.
	Raw rest.Interface
	// Watches caches the objects profiles read as inputs (and tells the
	// controller when they change); nil reads everything live.
	Watches *Watches
	// NodeVMs caches the Nodes and VMIs plans read (nodevms.go); nil:
	// none.
	NodeVMs *NodeVMCache
	// Pods caches the launchers and requests per node the capacity check
	// reads (pods.go); nil: none.
	Pods *PodCache
	// Kinds tells when any object of a kind changes in what profiles
	// derive from it (kindchanges.go); nil: never.
	Kinds *KindChanges

	// CRDs are large and read on every plan (the descheduler schema): they
	// are kept, parsed, for as long as their resourceVersion in the CRD
	// metadata watch does not change.
	crdFactory metadatainformer.SharedInformerFactory
	crdMeta    cache.Indexer
	crds       sync.Map // name -> *unstructured.Unstructured
	// seenCRDs are the names of the CRDs the watch has seen: a kind whose
	// CRD was seen and is gone is not served, whatever a discovery cache
	// refreshed a moment too early still says.
	seenCRDs sync.Map // name -> struct{}
}

// Resource returns the client of the object's resource.
func (c *Cluster) Resource(gvk schema.GroupVersionKind, namespace string) (dynamic.ResourceInterface, error) {
	mapping, err := c.Mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if err != nil {
		return nil, err
	}
	if mapping.Scope.Name() == meta.RESTScopeNameRoot {
		return c.Dynamic.Resource(mapping.Resource), nil
	}
	return c.Dynamic.Resource(mapping.Resource).Namespace(namespace), nil
}

// Get returns the object, or nil when it or its kind does not exist. The
// result is shared: callers must not modify it.
func (c *Cluster) Get(ctx context.Context, gvk schema.GroupVersionKind, namespace, name string) (*unstructured.Unstructured, error) {
	if gvk == crdGVK && c.crdMeta != nil {
		if m, ok, _ := c.crdMeta.GetByKey(name); ok {
			if cached, ok := c.crds.Load(name); ok && cached.(*unstructured.Unstructured).GetResourceVersion() == m.(metav1.Object).GetResourceVersion() {
				return cached.(*unstructured.Unstructured), nil
			}
		}
	}
	obj, err := c.get(ctx, gvk, namespace, name)
	if err == nil && obj != nil && gvk == crdGVK {
		c.crds.Store(name, obj)
	}
	return obj, err
}

func (c *Cluster) get(ctx context.Context, gvk schema.GroupVersionKind, namespace, name string) (*unstructured.Unstructured, error) {
	ri, err := c.Resource(gvk, namespace)
	if meta.IsNoMatchError(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	obj, err := ri.Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading %s %s: %w", gvk.Kind, ObjectName(namespace, name), err)
	}
	return obj, nil
}

// GetAbsentAt reads an object that is expected not to exist and says at
// which resourceVersion it was read: a list of that one name, whose
// resourceVersion a create carries as its precondition (an object made
// after the list has a newer one, so the create fails instead of writing
// over it). It returns the object when it exists after all (and its own
// resourceVersion), nil and "" when its kind is not served.
func (c *Cluster) GetAbsentAt(ctx context.Context, gvk schema.GroupVersionKind, namespace, name string) (*unstructured.Unstructured, string, error) {
	ri, err := c.Resource(gvk, namespace)
	if meta.IsNoMatchError(err) {
		return nil, "", nil
	}
	if err != nil {
		return nil, "", err
	}
	list, err := ri.List(ctx, metav1.ListOptions{FieldSelector: "metadata.name=" + name})
	if err != nil {
		return nil, "", fmt.Errorf("reading %s %s: %w", gvk.Kind, ObjectName(namespace, name), err)
	}
	for i := range list.Items {
		// A server (or a fake) that ignores the selector lists them all.
		if obj := &list.Items[i]; obj.GetName() == name {
			return obj, obj.GetResourceVersion(), nil
		}
	}
	return nil, list.GetResourceVersion(), nil
}

// PreferredVersion is the version discovery prefers for the kind, "" when
// it is not served; a miss refreshes discovery once.
func (c *Cluster) PreferredVersion(gk schema.GroupKind) (string, error) {
	mapping, err := c.Mapper.RESTMapping(gk)
	if meta.IsNoMatchError(err) {
		c.Mapper.Reset()
		mapping, err = c.Mapper.RESTMapping(gk)
	}
	if meta.IsNoMatchError(err) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	return mapping.GroupVersionKind.Version, nil
}

// ApplyPool server-side applies the fields of a MachineConfigPool that
// pool sets (the controller's pause), as FieldManager, taking over a
// field someone else set to the same or another value.
func (c *Cluster) ApplyPool(ctx context.Context, pool *unstructured.Unstructured) error {
	ri, err := c.Resource(pool.GroupVersionKind(), "")
	if err != nil {
		return err
	}
	_, err = ri.Apply(ctx, pool.GetName(), pool, metav1.ApplyOptions{FieldManager: FieldManager, Force: true})
	return err
}

// List returns every object of a kind; none when the kind is not served.
func (c *Cluster) List(ctx context.Context, gvk schema.GroupVersionKind) ([]unstructured.Unstructured, error) {
	ri, err := c.Resource(gvk, metav1.NamespaceAll)
	if meta.IsNoMatchError(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	list, err := ri.List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("listing %s: %w", gvk.Kind, err)
	}
	return list.Items, nil
}

// Served reports whether the cluster serves the kind; a miss refreshes
// discovery once, so CRDs installed after start are seen.
func (c *Cluster) Served(gvk schema.GroupVersionKind) (bool, error) {
	mapping, err := c.Mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if err == nil && c.crdDeleted(mapping.Resource) {
		c.Mapper.Reset()
		return false, nil
	}
	if meta.IsNoMatchError(err) {
		c.Mapper.Reset()
		_, err = c.Mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	}
	if meta.IsNoMatchError(err) {
		return false, nil
	}
	return err == nil, err
}

// crdDeleted reports whether the resource comes from a CRD the watch saw
// and no longer holds. Discovery drops a deleted CRD's API shortly after
// the delete event: a mapper reset on that event can read it again.
func (c *Cluster) crdDeleted(gvr schema.GroupVersionResource) bool {
	if c.crdMeta == nil {
		return false
	}
	name := gvr.Resource + "." + gvr.Group
	if _, seen := c.seenCRDs.Load(name); !seen {
		return false
	}
	_, exists, err := c.crdMeta.GetByKey(name)
	return err == nil && !exists
}

// ObjectName is namespace/name, or name for a cluster-scoped object.
func ObjectName(namespace, name string) string {
	if namespace == "" {
		return name
	}
	return namespace + "/" + name
}

var (
	crdGVR = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}
	crdGVK = crdGVR.GroupVersion().WithKind("CustomResourceDefinition")
)

// NewCluster returns a Cluster on the main cluster's clients (raw: Raw).
// Nothing runs until Start.
func NewCluster(dyn dynamic.Interface, raw rest.Interface, mapper meta.ResettableRESTMapper, meta metadata.Interface) (*Cluster, error) {
	settling := newSettlingMapper(mapper, time.Now)
	c := &Cluster{Dynamic: dyn, Raw: raw, Mapper: settling, Watches: NewWatches(dyn, settling), NodeVMs: NewNodeVMCache(dyn, raw, settling), Pods: NewPodCache(dyn), Kinds: NewKindChanges(dyn, settling)}
	// The CRD metadata watch forgets the cached discovery whenever a CRD is
	// created, changed or deleted (and until discovery has settled), so
	// prerequisites and mappings follow the cluster without a restart, and
	// tells which cached CRDs are current.
	// Metadata only, to stay small.
	c.crdFactory = metadatainformer.NewSharedInformerFactory(meta, 0)
	informer := c.crdFactory.ForResource(crdGVR).Informer()
	c.crdMeta = informer.GetIndexer()
	if _, err := informer.AddEventHandler(cache.ResourceEventHandlerDetailedFuncs{
		AddFunc: func(obj interface{}, isInInitialList bool) {
			if m, ok := obj.(metav1.Object); ok {
				c.seenCRDs.Store(m.GetName(), struct{}{})
			}
			// The CRDs there at start are no change: Start reads
			// discovery afresh once they are listed.
			if !isInInitialList {
				settling.Changed()
			}
		},
		UpdateFunc: func(_, _ interface{}) { settling.Changed() },
		DeleteFunc: func(interface{}) { settling.Changed() },
	}); err != nil {
		return nil, err
	}
	return c, nil
}

// Start runs the CRD watch and lets the object watches and the Node and
// VMI caches run until ctx ends, and waits until the CRD watch has synced.
func (c *Cluster) Start(ctx context.Context) error {
	c.Watches.Start(ctx)
	if c.NodeVMs != nil {
		c.NodeVMs.Start(ctx)
	}
	if c.Pods != nil {
		c.Pods.Start(ctx)
	}
	if c.Kinds != nil {
		c.Kinds.Start(ctx)
	}
	c.crdFactory.Start(ctx.Done())
	for gvr, synced := range c.crdFactory.WaitForCacheSync(ctx.Done()) {
		if !synced {
			return fmt.Errorf("the watch of %s did not sync", gvr.Resource)
		}
	}
	c.Mapper.Reset()
	return nil
}

// ListIfServed lists every object of a kind; served is false when the
// cluster does not serve it (no mapping, or its CRD went away and the
// list answers 404).
func (c *Cluster) ListIfServed(ctx context.Context, gvk schema.GroupVersionKind) ([]unstructured.Unstructured, bool, error) {
	ri, err := c.Resource(gvk, metav1.NamespaceAll)
	if meta.IsNoMatchError(err) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	list, err := ri.List(ctx, metav1.ListOptions{})
	if apierrors.IsNotFound(err) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("listing %s: %w", gvk.Kind, err)
	}
	return list.Items, true, nil
}

// ServedNow tells from the cached discovery whether a kind is served
// (the CRD watch keeps it current), without reading discovery again.
func (c *Cluster) ServedNow(gvk schema.GroupVersionKind) bool {
	_, err := c.Mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	return err == nil
}

// InputWatches caches the objects plans read as inputs; nil when there
// are no watches (everything is read live).
func (c *Cluster) InputWatches() *Watches { return c.Watches }
