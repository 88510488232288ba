package plan

import (
	"context"
	"maps"
	"sync"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/sets"

	"github.com/kubevirt/virt-advisor/pkg/cluster"
	"github.com/kubevirt/virt-advisor/pkg/machineconfig"
	"github.com/kubevirt/virt-advisor/pkg/profiles"
)

// inputReader serves a profile's declared input objects from their watch
// caches once synced (watchedInputs), or live, each read once and all
// started together as the computation starts (liveInputs): however the
// profile orders its reads (the Scheduler, then the master pool), its
// inputs cost one round trip to kube-apiserver, taken while it reads its
// targets. Everything else is read live. The inputs are watched either
// way, so that the controller sees them change.
type inputReader struct {
	c Cluster
	// watches caches the inputs; nil reads them live.
	watches *cluster.Watches
	inputs  sets.Set[cluster.ObjectKey]
	// targets are the inputs that are targets too: read live unless optimistic.
	targets sets.Set[cluster.ObjectKey]
	live    map[cluster.ObjectKey]func() (*unstructured.Unstructured, error)
	// pools and nodes list once per plan, shared with the reboot notes.
	pools, nodes func() ([]unstructured.Unstructured, error)

	// optimistic: inputs are read from their watch caches while their
	// live reads run; consistent tells afterwards whether both agreed.
	optimistic bool

	// read remembers the objects read, so that an item whose target the
	// profile already read needs no second GET; cached, the
	// resourceVersions of those read from a watch cache ("" for absent).
	mu     sync.Mutex
	read   map[cluster.ObjectKey]*unstructured.Unstructured
	cached map[cluster.ObjectKey]string
	// overtaken: a target read from a cache was written before its dry-run.
	overtaken bool
	// confirmed are the targets read from a cache that their dry-run was
	// applied to: the dry-run confirmed them live, no GET needs to.
	confirmed sets.Set[cluster.ObjectKey]
}

func newInputReader(ctx context.Context, c Cluster, refs []profiles.ObjectRef, from inputSource, listPools func() ([]unstructured.Unstructured, error)) *inputReader {
	r := &inputReader{c: c, inputs: sets.New[cluster.ObjectKey](), targets: sets.New[cluster.ObjectKey](), read: map[cluster.ObjectKey]*unstructured.Unstructured{},
		cached: map[cluster.ObjectKey]string{}, confirmed: sets.New[cluster.ObjectKey](), optimistic: from == optimisticInputs && c.InputWatches() != nil, pools: listPools, watches: c.InputWatches()}
	for _, ref := range refs {
		r.inputs.Insert(cluster.ObjectKey{GVK: ref.GVK, Namespace: ref.Namespace, Name: ref.Name})
		if ref.Target {
			r.targets.Insert(cluster.ObjectKey{GVK: ref.GVK, Namespace: ref.Namespace, Name: ref.Name})
		}
	}
	if r.watches != nil && r.inputs.Len() > 0 {
		r.watches.Add(cluster.InputsOwner, r.inputs.UnsortedList())
	}
	if from.live() {
		r.live = map[cluster.ObjectKey]func() (*unstructured.Unstructured, error){}
		for key := range r.inputs {
			read := sync.OnceValues(func() (*unstructured.Unstructured, error) {
				if key.GVK.GroupKind() == machineconfig.MachineConfigPoolGVK.GroupKind() {
					// The plan lists the pools anyway (reboot notes).
					return poolNamed(listPools, key.Name)
				}
				return c.Get(ctx, key.GVK, key.Namespace, key.Name)
			})
			r.live[key] = read
			if r.optimistic && r.targets.Has(key) {
				continue // its dry-run confirms it; read only if it does not
			}
			go func() { _, _ = read() }()
		}
	}
	return r
}

func (r *inputReader) Get(ctx context.Context, gvk schema.GroupVersionKind, namespace, name string) (*unstructured.Unstructured, error) {
	key := cluster.ObjectKey{GVK: gvk, Namespace: namespace, Name: name}
	var obj *unstructured.Unstructured
	var err error
	switch read, live := r.live[key]; {
	case live && r.optimistic:
		if cached, ok := r.watches.Cached(key); ok {
			r.mu.Lock()
			r.read[key], r.cached[key] = cached, resourceVersion(cached)
			r.mu.Unlock()
			return cached, nil
		}
		obj, err = read()
	case live:
		obj, err = read()
	case r.inputs.Has(key) && !r.targets.Has(key) && r.watches != nil:
		if cached, ok := r.watches.Cached(key); ok {
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
func (r *inputReader) readLive(key cluster.ObjectKey) (*unstructured.Unstructured, bool) {
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
	for key := range r.confirmed {
		delete(cached, key)
	}
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
func (r *inputReader) readFromCache(key cluster.ObjectKey) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	_, ok := r.cached[key]
	return ok
}

// confirm records that a target read from a cache is the object its
// dry-run was applied to (same resourceVersion).
func (r *inputReader) confirm(key cluster.ObjectKey) {
	r.mu.Lock()
	r.confirmed.Insert(key)
	r.mu.Unlock()
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
