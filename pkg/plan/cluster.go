package plan

import (
	"context"
	"fmt"
	"maps"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/metadata/metadatainformer"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"

	"github.com/kubevirt/virt-advisor/pkg/machineconfig"
	"github.com/kubevirt/virt-advisor/pkg/profiles"
)

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

// resource returns the client of the object's resource.
func (c *Cluster) resource(gvk schema.GroupVersionKind, namespace string) (dynamic.ResourceInterface, error) {
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
	ri, err := c.resource(gvk, namespace)
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
		return nil, fmt.Errorf("reading %s %s: %w", gvk.Kind, objectName(namespace, name), err)
	}
	return obj, nil
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
	ri, err := c.resource(pool.GroupVersionKind(), "")
	if err != nil {
		return err
	}
	_, err = ri.Apply(ctx, pool.GetName(), pool, metav1.ApplyOptions{FieldManager: FieldManager, Force: true})
	return err
}

// List returns every object of a kind; none when the kind is not served.
func (c *Cluster) List(ctx context.Context, gvk schema.GroupVersionKind) ([]unstructured.Unstructured, error) {
	ri, err := c.resource(gvk, metav1.NamespaceAll)
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

func objectName(namespace, name string) string {
	if namespace == "" {
		return name
	}
	return namespace + "/" + name
}

var (
	crdGVR = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}
	crdGVK = crdGVR.GroupVersion().WithKind("CustomResourceDefinition")
)

// NewCluster returns a Cluster on the main cluster's clients. Nothing runs
// until Start.
func NewCluster(dyn dynamic.Interface, mapper meta.ResettableRESTMapper, meta metadata.Interface) (*Cluster, error) {
	settling := newSettlingMapper(mapper, time.Now)
	c := &Cluster{Dynamic: dyn, Mapper: settling, Watches: NewWatches(dyn, settling)}
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

// Start runs the CRD watch and lets the object watches run until ctx
// ends, and waits until the CRD watch has synced.
func (c *Cluster) Start(ctx context.Context) error {
	c.Watches.Start(ctx)
	c.crdFactory.Start(ctx.Done())
	for gvr, synced := range c.crdFactory.WaitForCacheSync(ctx.Done()) {
		if !synced {
			return fmt.Errorf("the watch of %s did not sync", gvr.Resource)
		}
	}
	c.Mapper.Reset()
	return nil
}

// inputsOwner holds the watches of every input object a plan has read.
const inputsOwner = "\x00plan-inputs"

// inputReader serves a profile's declared input objects from their watch
// caches once synced (watchedInputs), or live, each read once and all
// started together as the computation starts (liveInputs): however the
// profile orders its reads (the Scheduler, then the master pool), its
// inputs cost one round trip to kube-apiserver, taken while it reads its
// targets. Everything else is read live. The inputs are watched either
// way, so that the controller sees them change.
type inputReader struct {
	c      *Cluster
	inputs sets.Set[ObjectKey]
	// targets are the inputs that are targets too: read live unless optimistic.
	targets sets.Set[ObjectKey]
	live    map[ObjectKey]func() (*unstructured.Unstructured, error)
	// pools and nodes list once per plan, shared with the reboot notes.
	pools, nodes func() ([]unstructured.Unstructured, error)

	// optimistic: inputs are read from their watch caches while their
	// live reads run; consistent tells afterwards whether both agreed.
	optimistic bool

	// read remembers the objects read, so that an item whose target the
	// profile already read needs no second GET; cached, the
	// resourceVersions of those read from a watch cache ("" for absent).
	mu     sync.Mutex
	read   map[ObjectKey]*unstructured.Unstructured
	cached map[ObjectKey]string
	// overtaken: a target read from a cache was written before its dry-run.
	overtaken bool
}

func (c *Cluster) inputReader(ctx context.Context, refs []profiles.ObjectRef, from inputSource, listPools func() ([]unstructured.Unstructured, error)) *inputReader {
	r := &inputReader{c: c, inputs: sets.New[ObjectKey](), targets: sets.New[ObjectKey](), read: map[ObjectKey]*unstructured.Unstructured{},
		cached: map[ObjectKey]string{}, optimistic: from == optimisticInputs && c.Watches != nil, pools: listPools}
	for _, ref := range refs {
		r.inputs.Insert(ObjectKey{GVK: ref.GVK, Namespace: ref.Namespace, Name: ref.Name})
		if ref.Target {
			r.targets.Insert(ObjectKey{GVK: ref.GVK, Namespace: ref.Namespace, Name: ref.Name})
		}
	}
	if c.Watches != nil && r.inputs.Len() > 0 {
		c.Watches.Add(inputsOwner, r.inputs.UnsortedList())
	}
	if from == liveInputs || from == optimisticInputs {
		r.live = map[ObjectKey]func() (*unstructured.Unstructured, error){}
		for key := range r.inputs {
			read := sync.OnceValues(func() (*unstructured.Unstructured, error) {
				if key.GVK.GroupKind() == machineconfig.MachineConfigPoolGVK.GroupKind() {
					// The plan lists the pools anyway (reboot notes).
					return poolNamed(listPools, key.Name)
				}
				return c.Get(ctx, key.GVK, key.Namespace, key.Name)
			})
			r.live[key] = read
			go func() { _, _ = read() }()
		}
	}
	return r
}

func (r *inputReader) Get(ctx context.Context, gvk schema.GroupVersionKind, namespace, name string) (*unstructured.Unstructured, error) {
	key := ObjectKey{GVK: gvk, Namespace: namespace, Name: name}
	var obj *unstructured.Unstructured
	var err error
	switch read, live := r.live[key]; {
	case live && r.optimistic:
		if cached, ok := r.c.Watches.Cached(key); ok {
			r.mu.Lock()
			r.read[key], r.cached[key] = cached, resourceVersion(cached)
			r.mu.Unlock()
			return cached, nil
		}
		obj, err = read()
	case live:
		obj, err = read()
	case r.inputs.Has(key) && !r.targets.Has(key) && r.c.Watches != nil:
		if cached, ok := r.c.Watches.Cached(key); ok {
			return cached, nil
		}
		fallthrough
	default:
		obj, err = r.c.Get(ctx, gvk, namespace, name)
	}
	if err == nil {
		r.mu.Lock()
		r.read[key] = obj
		r.mu.Unlock()
	}
	return obj, err
}

// poolNamed is the pool of that name among the listed ones, nil if none.
func poolNamed(listPools func() ([]unstructured.Unstructured, error), name string) (*unstructured.Unstructured, error) {
	pools, err := listPools()
	if err != nil {
		return nil, err
	}
	for i := range pools {
		if pools[i].GetName() == name {
			return &pools[i], nil
		}
	}
	return nil, nil
}

func (r *inputReader) PreferredVersion(gk schema.GroupKind) (string, error) {
	return r.c.PreferredVersion(gk)
}

func (r *inputReader) List(ctx context.Context, gvk schema.GroupVersionKind) ([]unstructured.Unstructured, error) {
	switch {
	case gvk.GroupKind() == machineconfig.MachineConfigPoolGVK.GroupKind() && r.pools != nil:
		return r.pools()
	case gvk.GroupKind() == profiles.NodeGVK.GroupKind() && r.nodes != nil:
		return r.nodes()
	}
	return r.c.List(ctx, gvk)
}

// readLive returns the object this reader read live, if it did.
func (r *inputReader) readLive(key ObjectKey) (*unstructured.Unstructured, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	obj, ok := r.read[key]
	return obj, ok
}

// consistent is true when every input read from a watch cache is the
// object its live read returned (same resourceVersion, or absent in both),
// and no target read from a cache was written before its dry-run: the
// plan is then the plan of the live state.
func (r *inputReader) consistent() bool {
	r.mu.Lock()
	cached, overtaken := maps.Clone(r.cached), r.overtaken
	r.mu.Unlock()
	if overtaken {
		return false
	}
	for key, rv := range cached {
		live, err := r.live[key]()
		if err != nil || resourceVersion(live) != rv {
			return false
		}
	}
	return true
}

// readFromCache is true when the object was read from a watch cache.
func (r *inputReader) readFromCache(key ObjectKey) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	_, ok := r.cached[key]
	return ok
}

// overtake records that a target read from a cache changed before its
// dry-run: the desired state may stem from an older object.
func (r *inputReader) overtake() {
	r.mu.Lock()
	r.overtaken = true
	r.mu.Unlock()
}

func resourceVersion(obj *unstructured.Unstructured) string {
	if obj == nil {
		return ""
	}
	return obj.GetResourceVersion()
}
