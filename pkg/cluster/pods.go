package cluster

import (
	"context"
	"encoding/json"
	goruntime "runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"weak"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/tools/cache"
	resourcehelper "k8s.io/component-helpers/resource"
	"k8s.io/klog/v2"
)

// Labels KubeVirt puts on a VMI's virt-launcher pod.
const (
	LauncherLabel      = "kubevirt.io"
	LauncherLabelValue = "virt-launcher"
	// LauncherVMILabel holds the name of the VMI the pod runs.
	LauncherVMILabel = "vm.kubevirt.io/name"
)

// PodGVR is core/v1 pods.
var PodGVR = schema.GroupVersionResource{Version: "v1", Resource: "pods"}

// Launcher is a virt-launcher pod cut down to what placing it elsewhere
// reads: its node, and a Pod whose spec keeps the node selector, the
// required node affinity, the tolerations and one container asking what
// the whole pod asks (containers, init containers, overhead).
type Launcher struct {
	Namespace, VMI, Node string
	Pod                  *corev1.Pod
	// derived keeps what a plan derives from Pod (what it asks of a
	// node), once per pod: the cache hands out the same launcher until
	// its pod changes.
	derived *derivedOnce
}

type derivedOnce struct {
	once sync.Once
	v    any
}

// NewLauncher is the launcher of pod as the cache makes it.
func NewLauncher(namespace, vmi, node string, pod *corev1.Pod) Launcher {
	return Launcher{Namespace: namespace, VMI: vmi, Node: node, Pod: pod, derived: &derivedOnce{}}
}

// Derived is derive(l.Pod), computed once per launcher NewLauncher made.
func (l Launcher) Derived(derive func(*corev1.Pod) any) any {
	if l.derived == nil {
		return derive(l.Pod)
	}
	l.derived.once.Do(func() { l.derived.v = derive(l.Pod) })
	return l.derived.v
}

// PodRequests are, of a cluster's pods, the launchers by node (a VMI has
// two while it migrates) and, per node, what all pods there request.
type PodRequests struct {
	Launchers *LauncherIndex
	Requested map[string]corev1.ResourceList
	// Version is the state of the cache they were read from: the same
	// version, the same pods. 0 when read live.
	Version int64
}

// LauncherIndex keeps launchers by node, in namespace and VMI name order,
// changed pod by pod (a cache of 10 000 pods builds nothing again when one
// changes). A node's slice is replaced, never modified: a reader may keep
// it. By node, because a plan pairs each node's VMs, which it holds in
// that order, with the node's launchers: a few hundred lookups rather
// than one per VM.
type LauncherIndex struct {
	mu     sync.RWMutex
	byNode map[string][]Launcher
	// generation counts the changes: a reader that finds it the same
	// before and after a walk, and later again, read the same launchers.
	generation int64
}

// Add indexes l.
func (x *LauncherIndex) Add(l Launcher) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.byNode == nil {
		x.byNode = map[string][]Launcher{}
	}
	on := x.byNode[l.Node]
	i, _ := slices.BinarySearchFunc(on, l, compareLaunchers)
	x.byNode[l.Node] = slices.Insert(slices.Clip(on), i, l)
	x.generation++
}

// remove takes out the launcher NewLauncher made as l or, when the index
// holds another launcher of the same pod, that one: a pod's update that
// changes nothing placement reads (a status update) is not applied to the
// index, but the informer's store then holds the new copy, and its
// deletion hands over that copy, whose launcher the index never held.
func (x *LauncherIndex) remove(l *Launcher) {
	x.mu.Lock()
	defer x.mu.Unlock()
	on := x.byNode[l.Node]
	i := slices.IndexFunc(on, func(k Launcher) bool { return k.derived == l.derived && k.Pod == l.Pod })
	if i < 0 {
		i = slices.IndexFunc(on, func(k Launcher) bool { return k.Namespace == l.Namespace && k.VMI == l.VMI })
	}
	if i < 0 {
		return
	}
	x.generation++
	if len(on) == 1 {
		delete(x.byNode, l.Node)
		return
	}
	// A new slice: readers hold the old one.
	x.byNode[l.Node] = slices.Concat(on[:i], on[i+1:])
}

// OnNode returns the launchers on node, in namespace and VMI name order.
func (x *LauncherIndex) OnNode(node string) []Launcher {
	if x == nil {
		return nil
	}
	x.mu.RLock()
	defer x.mu.RUnlock()
	return x.byNode[node]
}

// Generation changes whenever a launcher is added or removed (0 for a nil
// index).
func (x *LauncherIndex) Generation() int64 {
	if x == nil {
		return 0
	}
	x.mu.RLock()
	defer x.mu.RUnlock()
	return x.generation
}

func compareLaunchers(a, b Launcher) int {
	if c := strings.Compare(a.Namespace, b.Namespace); c != 0 {
		return c
	}
	return strings.Compare(a.VMI, b.VMI)
}

// cachedPod is a pod as the cache keeps it: its identity, node and
// requests, and for a launcher what placing it reads.
type cachedPod struct {
	metav1.TypeMeta
	metav1.ObjectMeta
	node     string
	requests corev1.ResourceList
	launcher *Launcher
}

// DeepCopyObject copies the identity; the rest is never modified.
func (p *cachedPod) DeepCopyObject() runtime.Object {
	out := *p
	p.ObjectMeta.DeepCopyInto(&out.ObjectMeta)
	return &out
}

// slimPod cuts a pod down as it enters the cache. A pod that has ended
// (Succeeded, Failed) or is not bound to a node asks nothing of a node.
func slimPod(logger klog.Logger, obj interface{}) (interface{}, error) {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return obj, nil
	}
	out := &cachedPod{ObjectMeta: metav1.ObjectMeta{Name: u.GetName(), Namespace: u.GetNamespace(), ResourceVersion: u.GetResourceVersion()}}
	phase, _, _ := unstructured.NestedString(u.Object, "status", "phase")
	out.node, _, _ = unstructured.NestedString(u.Object, "spec", "nodeName")
	if out.node == "" || phase == string(corev1.PodSucceeded) || phase == string(corev1.PodFailed) {
		out.node = ""
		return out, nil
	}
	pod := &corev1.Pod{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(placementFields(u), pod); err != nil {
		logger.V(2).Info("Cannot read a pod's requests", "pod", u.GetNamespace()+"/"+u.GetName(), "err", err)
		return out, nil
	}
	out.requests = resourcehelper.PodRequests(pod, resourcehelper.PodResourcesOptions{})
	labels := u.GetLabels()
	if labels[LauncherLabel] == LauncherLabelValue && labels[LauncherVMILabel] != "" {
		slim := &corev1.Pod{Spec: corev1.PodSpec{
			NodeSelector: pod.Spec.NodeSelector, Tolerations: pod.Spec.Tolerations,
			Containers: []corev1.Container{{Name: "compute", Resources: corev1.ResourceRequirements{Requests: out.requests}}},
		}}
		if a := pod.Spec.Affinity; a != nil && a.NodeAffinity != nil && a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution != nil {
			slim.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution}}
		}
		slim = launcherPlacements.intern(slim)
		out.requests = slim.Spec.Containers[0].Resources.Requests
		// Interned (see intern for how far that goes).
		l := NewLauncher(intern(u.GetNamespace()), intern(labels[LauncherVMILabel]), intern(out.node), slim)
		out.launcher = &l
	}
	return out, nil
}

// launcherPlacements are the cut-down launcher pods in use, shared.
var launcherPlacements placements

// placements interns the cut-down pods that place launchers: the
// launchers of VMs made from one template ask the same and may run on the
// same nodes, and 10 000 of them held 10 000 copies (about 2.7 KB each of
// the 3.3 KB a cached launcher took). A shared pod is never modified.
// Entries are weak: once no cached pod uses a placement, it is collected
// and its entry removed.
type placements struct {
	mu    sync.Mutex
	byKey map[string]weak.Pointer[corev1.Pod]
}

// intern returns the pod in use that places as pod does, else pod itself,
// kept for the next.
func (p *placements) intern(pod *corev1.Pod) *corev1.Pod {
	key, ok := placementKey(pod)
	if !ok {
		return pod
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if shared := p.byKey[key].Value(); shared != nil {
		return shared
	}
	if p.byKey == nil {
		p.byKey = map[string]weak.Pointer[corev1.Pod]{}
	}
	kept := weak.Make(pod)
	p.byKey[key] = kept
	goruntime.AddCleanup(pod, func(key string) { p.forget(key, kept) }, key)
	return pod
}

// forget removes the entry of a collected pod, unless another took its key.
func (p *placements) forget(key string, collected weak.Pointer[corev1.Pod]) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.byKey[key] == collected {
		delete(p.byKey, key)
	}
}

// placementKey is what a cut-down pod asks and where it may run.
func placementKey(pod *corev1.Pod) (string, bool) {
	raw, err := json.Marshal(&pod.Spec)
	return string(raw), err == nil
}

// kept is true while the placement of key is kept.
func (p *placements) kept(key string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	_, ok := p.byKey[key]
	return ok
}

// placementFields are the parts of a pod's spec its requests and placement
// are read from, so that converting them stays cheap.
func placementFields(u *unstructured.Unstructured) map[string]interface{} {
	spec := map[string]interface{}{}
	for _, f := range []string{"nodeSelector", "tolerations", "overhead"} {
		if v, found, _ := unstructured.NestedFieldNoCopy(u.Object, "spec", f); found {
			spec[f] = v
		}
	}
	if v, found, _ := unstructured.NestedFieldNoCopy(u.Object, "spec", "affinity", "nodeAffinity", "requiredDuringSchedulingIgnoredDuringExecution"); found {
		spec["affinity"] = map[string]interface{}{"nodeAffinity": map[string]interface{}{"requiredDuringSchedulingIgnoredDuringExecution": v}}
	}
	for _, f := range []string{"containers", "initContainers"} {
		list, _, _ := unstructured.NestedSlice(u.Object, "spec", f)
		kept := make([]interface{}, 0, len(list))
		for _, c := range list {
			cm, _ := c.(map[string]interface{})
			k := map[string]interface{}{"name": cm["name"]}
			if rp, ok := cm["restartPolicy"]; ok {
				k["restartPolicy"] = rp
			}
			if req, found, _ := unstructured.NestedFieldNoCopy(cm, "resources", "requests"); found {
				k["resources"] = map[string]interface{}{"requests": req}
			}
			kept = append(kept, k)
		}
		if len(kept) > 0 {
			spec[f] = kept
		}
	}
	return map[string]interface{}{"spec": spec}
}

// podChanged is false when b asks what a asked, on the same node, and
// places as a did.
func podChanged(a, b *cachedPod) bool {
	if a == nil || b == nil {
		return a != b
	}
	if a.node != b.node || !equality.Semantic.DeepEqual(a.requests, b.requests) || (a.launcher == nil) != (b.launcher == nil) {
		return true
	}
	return a.launcher != nil && (a.launcher.Namespace != b.launcher.Namespace || a.launcher.VMI != b.launcher.VMI ||
		a.launcher.Node != b.launcher.Node || !equality.Semantic.DeepEqual(a.launcher.Pod, b.launcher.Pod))
}

// podTotals keeps, per node, the sum of the requests of the pods bound
// there, updated by each event rather than summed per read.
type podTotals struct {
	mu        sync.Mutex
	requested map[string]corev1.ResourceList
}

// change adds what p asks to its node (sign 1) or takes it away (-1). A
// node's list is replaced, never modified, so a read may share it.
func (t *podTotals) change(p *cachedPod, sign int) {
	if p == nil || p.node == "" || len(p.requests) == 0 {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	next := t.requested[p.node].DeepCopy()
	if next == nil {
		next = corev1.ResourceList{}
	}
	for name, q := range p.requests {
		cur := next[name]
		if sign > 0 {
			cur.Add(q)
		} else {
			cur.Sub(q)
		}
		next[name] = cur
	}
	if sign < 0 && allZero(next) {
		delete(t.requested, p.node)
		return
	}
	t.requested[p.node] = next
}

func allZero(l corev1.ResourceList) bool {
	for _, q := range l {
		if !q.IsZero() {
			return false
		}
	}
	return true
}

func (t *podTotals) snapshot() map[string]corev1.ResourceList {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := make(map[string]corev1.ResourceList, len(t.requested))
	for k, v := range t.requested {
		out[k] = v
	}
	return out
}

// PodCache serves, from an informer on every pod, what the capacity check
// of a plan reads: the virt-launcher pods and the requests per node. Each
// pod is cut down as it enters (slimPod); the sums per node are kept up
// to date by the events. The check right before a drain lists live
// instead (ReadPodRequests).
type PodCache struct {
	dynamic   dynamic.Interface
	informer  cache.SharedIndexInformer
	totals    podTotals
	launchers LauncherIndex
	changes   atomic.Int64
	mu        sync.Mutex
	built     int64
	// version numbers the views built (from 1).
	version int64
	view    PodRequests
}

// NewPodCache returns a cache whose informer starts at Start.
func NewPodCache(dyn dynamic.Interface) *PodCache {
	return &PodCache{dynamic: dyn, totals: podTotals{requested: map[string]corev1.ResourceList{}}}
}

// Start runs the informer until ctx ends.
func (c *PodCache) Start(ctx context.Context) {
	logger := klog.FromContext(ctx)
	ri := c.dynamic.Resource(PodGVR)
	lw := &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			return ri.List(ctx, o)
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			return ri.Watch(ctx, o)
		},
	}
	informer := cache.NewSharedIndexInformer(cache.ToListWatcherWithWatchListSemantics(lw, c.dynamic), &unstructured.Unstructured{}, 0, cache.Indexers{})
	if err := informer.SetTransform(func(obj interface{}) (interface{}, error) { return slimPod(logger, obj) }); err != nil {
		logger.Error(err, "Cannot cut down the cached pods")
	}
	asPod := func(o interface{}) *cachedPod {
		if d, ok := o.(cache.DeletedFinalStateUnknown); ok {
			o = d.Obj
		}
		p, _ := o.(*cachedPod)
		return p
	}
	if _, err := informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(o interface{}) { c.added(asPod(o)) },
		UpdateFunc: func(old, o interface{}) { c.updated(asPod(old), asPod(o)) },
		DeleteFunc: func(o interface{}) { c.deleted(asPod(o)) },
	}); err != nil {
		logger.Error(err, "Cannot follow the pod cache")
	}
	c.mu.Lock()
	c.informer = informer
	c.mu.Unlock()
	go informer.RunWithContext(ctx)
}

// added, updated and deleted follow the informer's events.
func (c *PodCache) added(p *cachedPod) { c.change(p, 1); c.changes.Add(1) }

func (c *PodCache) updated(old, p *cachedPod) {
	if !podChanged(old, p) {
		return // a status update: nothing placement reads
	}
	c.change(old, -1)
	c.change(p, 1)
	c.changes.Add(1)
}

func (c *PodCache) deleted(p *cachedPod) { c.change(p, -1); c.changes.Add(1) }

// change adds p to the cache's sums and launchers (sign 1) or takes it
// away (-1).
func (c *PodCache) change(p *cachedPod, sign int) {
	c.totals.change(p, sign)
	if p == nil || p.launcher == nil {
		return
	}
	if sign > 0 {
		c.launchers.Add(*p.launcher)
	} else {
		c.launchers.remove(p.launcher)
	}
}

// Pods returns the launchers and the requests per node, shared (callers
// must not modify them); ok is false until the cache has synced. The
// version changes with the pods; the launchers are the cache's own index,
// which may already hold a change the version does not count yet.
func (c *PodCache) Pods() (PodRequests, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.informer == nil || !c.informer.HasSynced() {
		return PodRequests{}, false
	}
	// The view is built after the count is read: it holds at least the
	// changes counted, and a change counted later builds it again.
	if n := c.changes.Load(); c.view.Requested == nil || n != c.built {
		c.version++
		c.view = PodRequests{Launchers: &c.launchers, Requested: c.totals.snapshot(), Version: c.version}
		c.built = n
	}
	return c.view, true
}

// ReadPodRequests is PodRequests from a live list of pods (items as the
// API returns them), as the check right before a drain reads them.
func ReadPodRequests(ctx context.Context, items []unstructured.Unstructured) PodRequests {
	logger := klog.FromContext(ctx)
	totals := podTotals{requested: map[string]corev1.ResourceList{}}
	launchers := &LauncherIndex{}
	for i := range items {
		o, _ := slimPod(logger, &items[i])
		p := o.(*cachedPod)
		totals.change(p, 1)
		if p.launcher != nil {
			launchers.Add(*p.launcher)
		}
	}
	return PodRequests{Launchers: launchers, Requested: totals.requested}
}
