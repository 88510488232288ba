package plan

import (
	"context"
	"maps"
	"slices"
	"sync"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/sets"

	"github.com/kubevirt/virt-advisor/pkg/apis/advisor/v1alpha1"
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
	// lists are the other kinds the profile lists (NodeResourceTopologies),
	// each listed once, started with the inputs when the request is live.
	lists map[schema.GroupVersionKind]func() ([]unstructured.Unstructured, error)
	// reads are what the notes read of nodes and VMs, once per plan.
	reads *clusterReads

	// optimistic: inputs are read from their watch caches while their
	// live reads run; consistent tells afterwards whether both agreed.
	optimistic bool
	// allCached: the inputs that are targets are read from their watch
	// caches too (cachedInputs).
	allCached bool

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

// readSnapshot decides once where the plan reads its inputs and starts
// reading them: from the watch caches (the controller's plans), or live
// for an API request, optimistically from the caches while the live reads
// run when the inputs are watched. The pools, Nodes and VMs that the
// notes need are listed at most once per plan, started with the inputs
// when the request is live and the profile writes MachineConfigs.
func (e *Engine) readSnapshot(ctx context.Context, profile profiles.Profile, opts v1alpha1.ProfileOptions, from inputSource) *inputReader {
	if from == liveInputs && e.Cluster.InputWatches() != nil {
		from = optimisticInputs
	}
	refs := profile.InputObjects(opts)
	r := newInputReader(ctx, e.Cluster, refs, from, e.poolLister(ctx, profile, refs, from))
	r.reads = e.newClusterReads(ctx, r.getLive, true)
	r.nodes = r.reads.nodes // the profile's reads of Nodes share the list
	if from.live() && writesMachineConfigs(profile) {
		r.reads.start()
	}
	return r
}

func newInputReader(ctx context.Context, c Cluster, refs []profiles.ObjectRef, from inputSource, listPools func() ([]unstructured.Unstructured, error)) *inputReader {
	r := &inputReader{c: c, inputs: sets.New[cluster.ObjectKey](), targets: sets.New[cluster.ObjectKey](), read: map[cluster.ObjectKey]*unstructured.Unstructured{},
		cached: map[cluster.ObjectKey]string{}, confirmed: sets.New[cluster.ObjectKey](), optimistic: from == optimisticInputs && c.InputWatches() != nil, allCached: from == cachedInputs,
		pools: listPools, watches: c.InputWatches()}
	var listed []schema.GroupVersionKind
	for _, ref := range refs {
		if ref.Name == "" {
			listed = append(listed, ref.GVK) // every object of a kind: listed, not read by name
			continue
		}
		r.inputs.Insert(cluster.ObjectKey{GVK: ref.GVK, Namespace: ref.Namespace, Name: ref.Name})
		if ref.Target {
			r.targets.Insert(cluster.ObjectKey{GVK: ref.GVK, Namespace: ref.Namespace, Name: ref.Name})
		}
	}
	if r.watches != nil && r.inputs.Len() > 0 {
		r.watches.Add(cluster.InputsOwner, r.inputs.UnsortedList())
	}
	if from.live() {
		r.lists = listedInputs(ctx, c, listed)
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
	case r.inputs.Has(key) && (r.allCached || !r.targets.Has(key)) && r.watches != nil:
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
	if list, ok := r.lists[gvk]; ok {
		return list()
	}
	return r.c.List(ctx, gvk)
}

// listedInputs starts listing the kinds a profile declares it lists whole
// (other than pools and Nodes, listed for the notes anyway) and that are
// served: the list is on its way while the profile reads the pools, rather
// than one more round trip after them.
func listedInputs(ctx context.Context, c Cluster, kinds []schema.GroupVersionKind) map[schema.GroupVersionKind]func() ([]unstructured.Unstructured, error) {
	lists := map[schema.GroupVersionKind]func() ([]unstructured.Unstructured, error){}
	for _, gvk := range kinds {
		switch gvk.GroupKind() {
		case machineconfig.MachineConfigPoolGVK.GroupKind(), profiles.NodeGVK.GroupKind():
			continue
		}
		if _, seen := lists[gvk]; seen || !c.ServedNow(gvk) {
			continue
		}
		list := sync.OnceValues(func() ([]unstructured.Unstructured, error) { return c.List(ctx, gvk) })
		lists[gvk] = list
		go func() { _, _ = list() }()
	}
	return lists
}

// readLive returns the object the profile read for key, if it did.
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

// dryRunBasedOn records the resourceVersion a target's dry-run was
// applied to (dryRV) and that of the target the item was planned against
// (liveRV). A target read from a watch cache is confirmed live when they
// agree, and found overtaken when they do not (the desired state may
// stem from an older object). Targets not read from a cache need neither.
func (r *inputReader) dryRunBasedOn(key cluster.ObjectKey, dryRV, liveRV string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, cached := r.cached[key]; !cached {
		return
	}
	if dryRV == liveRV {
		r.confirmed.Insert(key)
	} else {
		r.overtaken = true
	}
}

// liveOnly is this snapshot without its watch caches: every input is
// served by its live read, already made or on its way (none is sent
// again), and the lists of pools and nodes are shared.
func (r *inputReader) liveOnly() *inputReader {
	return &inputReader{c: r.c, watches: r.watches, inputs: r.inputs, targets: r.targets, live: r.live,
		pools: r.pools, nodes: r.nodes, reads: r.reads,
		read: map[cluster.ObjectKey]*unstructured.Unstructured{}, cached: map[cluster.ObjectKey]string{}, confirmed: sets.New[cluster.ObjectKey]()}
}

// getLive reads as Get does, but never from a watch cache when the input
// is read live too: what the notes read (the HyperConverged's default
// eviction strategy) is not checked against the live state afterwards.
func (r *inputReader) getLive(ctx context.Context, gvk schema.GroupVersionKind, namespace, name string) (*unstructured.Unstructured, error) {
	if read, ok := r.live[cluster.ObjectKey{GVK: gvk, Namespace: namespace, Name: name}]; ok {
		return read()
	}
	return r.Get(ctx, gvk, namespace, name)
}

func resourceVersion(obj *unstructured.Unstructured) string {
	if obj == nil {
		return ""
	}
	return obj.GetResourceVersion()
}

// poolLister lists the MachineConfigPools at most once per plan, for the
// reboot notes and, in a plan a user waits for (live inputs), the
// profile's pool inputs. That plan starts the list as it starts, when the
// profile reads pools or manages MachineConfigs, rather than after its
// items; the controller's plans list only when an item writes a
// MachineConfig.
func (e *Engine) poolLister(ctx context.Context, profile profiles.Profile, inputs []profiles.ObjectRef, from inputSource) func() ([]unstructured.Unstructured, error) {
	list := sync.OnceValues(func() ([]unstructured.Unstructured, error) {
		return e.Cluster.List(ctx, machineconfig.MachineConfigPoolGVK)
	})
	readsPools := slices.ContainsFunc(inputs, func(ref profiles.ObjectRef) bool {
		return ref.GVK.GroupKind() == machineconfig.MachineConfigPoolGVK.GroupKind()
	})
	if from.live() && (readsPools || writesMachineConfigs(profile)) {
		go func() { _, _ = list() }()
	}
	return list
}

// writesMachineConfigs is true for a profile that manages MachineConfigs
// or KubeletConfigs (rendered into MachineConfigs).
func writesMachineConfigs(profile profiles.Profile) bool {
	return slices.ContainsFunc(profile.Metadata().ManagedResources(), func(gr schema.GroupResource) bool {
		return gr == machineconfig.MachineConfigs.GroupResource() || gr == machineconfig.KubeletConfigs.GroupResource()
	})
}
