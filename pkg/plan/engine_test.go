package plan

import (
	"context"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"

	"github.com/kubevirt/virt-advisor/pkg/apis/advisor/v1alpha1"
	"github.com/kubevirt/virt-advisor/pkg/machineconfig"
	"github.com/kubevirt/virt-advisor/pkg/profiles"
)

// resettable adds a no-op Reset to a static RESTMapper.
type resettable struct{ meta.RESTMapper }

func (resettable) Reset() {}

func mapperWith(gvks ...schema.GroupVersionKind) resettable {
	var gvs []schema.GroupVersion
	for _, gvk := range gvks {
		gvs = append(gvs, gvk.GroupVersion())
	}
	m := meta.NewDefaultRESTMapper(gvs)
	for _, gvk := range gvks {
		m.Add(gvk, meta.RESTScopeNamespace)
	}
	return resettable{m}
}

func TestAbsentItemOfUnservedKindIsSkipped(t *testing.T) {
	e := &Engine{Cluster: &Cluster{Mapper: mapperWith(profiles.KubeDeschedulerGVK)}}
	mc := &unstructured.Unstructured{}
	mc.SetGroupVersionKind(machineconfig.MachineConfigGVK)
	mc.SetName("99-worker-psi-karg")
	it := profiles.Item{Name: "enable-psi-metrics", Desired: mc, Owned: true, Absent: true}

	p := e.planItem(context.Background(), "load-aware-rebalancing", Ownership{}, it, e.Cluster.inputReader(context.Background(), nil, watchedInputs, nil))
	if !p.skip || p.item.Error != "" {
		t.Errorf("skip = %v, error = %q: an Absent item of a kind the cluster does not serve has nothing to delete", p.skip, p.item.Error)
	}

	it.Absent = false
	p = e.planItem(context.Background(), "load-aware-rebalancing", Ownership{}, it, e.Cluster.inputReader(context.Background(), nil, watchedInputs, nil))
	if p.skip || p.item.Error == "" {
		t.Errorf("skip = %v, error = %q: a wanted object of an unserved kind is an item error", p.skip, p.item.Error)
	}
}

func TestWatchKeysResolveThePreferredVersion(t *testing.T) {
	hcoV1 := schema.GroupVersionKind{Group: "hco.kubevirt.io", Version: "v1", Kind: "HyperConverged"}
	w := NewWatches(nil, mapperWith(hcoV1))
	key := ObjectKey{GVK: profiles.HyperConvergedGVK, Namespace: "openshift-cnv", Name: "kubevirt-hyperconverged"}
	if got := w.resolve(key); got.GVK != hcoV1 {
		t.Errorf("resolve(%v) = %v, want %v", key.GVK, got.GVK, hcoV1)
	}
	unserved := ObjectKey{GVK: profiles.SchedulerGVK.GroupKind().WithVersion(""), Name: "cluster"}
	if got := w.resolve(unserved); got != unserved {
		t.Errorf("an unserved kind keeps its key: got %v", got)
	}
}

func TestAddReplacesAnObjectWatchedThroughAnotherVersion(t *testing.T) {
	hcoV1 := schema.GroupVersionKind{Group: "hco.kubevirt.io", Version: "v1", Kind: "HyperConverged"}
	hcoV1beta1 := hcoV1.GroupKind().WithVersion("v1beta1")
	listKinds := map[schema.GroupVersionResource]string{
		{Group: "hco.kubevirt.io", Version: "v1", Resource: "hyperconvergeds"}:      "HyperConvergedList",
		{Group: "hco.kubevirt.io", Version: "v1beta1", Resource: "hyperconvergeds"}: "HyperConvergedList",
	}
	dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), listKinds)
	mapper := meta.NewDefaultRESTMapper([]schema.GroupVersion{hcoV1beta1.GroupVersion()})
	mapper.Add(hcoV1beta1, meta.RESTScopeNamespace)
	w := NewWatches(dyn, mapper)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	w.Start(ctx)

	key := ObjectKey{GVK: profiles.HyperConvergedGVK, Namespace: "openshift-cnv", Name: "kubevirt-hyperconverged"}
	w.Add("owner", []ObjectKey{key})
	// The operator upgrade: v1 is now the only version served.
	mapper = meta.NewDefaultRESTMapper([]schema.GroupVersion{hcoV1.GroupVersion()})
	mapper.Add(hcoV1, meta.RESTScopeNamespace)
	w.mapper = mapper
	w.Add("owner", []ObjectKey{key})

	got := w.byConfig["owner"].UnsortedList()
	want := ObjectKey{GVK: hcoV1, Namespace: "openshift-cnv", Name: "kubevirt-hyperconverged"}
	if len(got) != 1 || got[0] != want {
		t.Errorf("owner watches %v, want only %v", got, want)
	}
}

func TestServedIsFalseOnceASeenCRDIsGone(t *testing.T) {
	kd := profiles.KubeDeschedulerGVK
	c := &Cluster{Mapper: mapperWith(kd), crdMeta: cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})}
	crd := &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Name: "kubedeschedulers.operator.openshift.io"}}
	if err := c.crdMeta.Add(crd); err != nil {
		t.Fatal(err)
	}
	c.seenCRDs.Store(crd.Name, struct{}{})
	if served, err := c.Served(kd); !served || err != nil {
		t.Fatalf("Served = %v, %v with the CRD present", served, err)
	}
	// The CRD is deleted; a discovery cache refreshed too early still maps the kind.
	if err := c.crdMeta.Delete(crd); err != nil {
		t.Fatal(err)
	}
	if served, err := c.Served(kd); served || err != nil {
		t.Errorf("Served = %v, %v after the CRD was deleted, want false", served, err)
	}
	// Kinds not known to come from a CRD are left to discovery.
	c.seenCRDs.Delete(crd.Name)
	if served, _ := c.Served(kd); !served {
		t.Errorf("Served = false for a kind with no CRD seen")
	}
}

// A watch whose events are still on their way: the cache keeps the value
// listed first. A plan an API request computes reads the input live.
func TestInputSourceOfAComputation(t *testing.T) {
	hco := profiles.HyperConvergedGVK.GroupKind().WithVersion("v1beta1")
	gvr := schema.GroupVersionResource{Group: hco.Group, Version: hco.Version, Resource: "hyperconvergeds"}
	obj := &unstructured.Unstructured{}
	obj.SetGroupVersionKind(hco)
	obj.SetNamespace(profiles.HCONamespace)
	obj.SetName(profiles.HCOName)
	_ = unstructured.SetNestedField(obj.Object, int64(5), "spec", "liveMigrationConfig", "parallelMigrationsPerCluster")
	obj.SetResourceVersion("1")
	dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{gvr: "HyperConvergedList"}, obj)
	dyn.PrependWatchReactor("hyperconvergeds", func(clienttesting.Action) (bool, watch.Interface, error) {
		return true, watch.NewFake(), nil
	})
	mapper := mapperWith(hco)
	c := &Cluster{Dynamic: dyn, Mapper: mapper, Watches: NewWatches(dyn, mapper)}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	c.Watches.Start(ctx)
	refs := []profiles.ObjectRef{{GVK: profiles.HyperConvergedGVK, Namespace: profiles.HCONamespace, Name: profiles.HCOName}}
	key := ObjectKey{GVK: profiles.HyperConvergedGVK, Namespace: profiles.HCONamespace, Name: profiles.HCOName}
	c.inputReader(ctx, refs, watchedInputs, nil) // starts the watch
	if err := wait.PollUntilContextTimeout(ctx, 10*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		_, ok := c.Watches.Cached(key)
		return ok, nil
	}); err != nil {
		t.Fatalf("the watch did not sync: %v", err)
	}
	_ = unstructured.SetNestedField(obj.Object, int64(20), "spec", "liveMigrationConfig", "parallelMigrationsPerCluster")
	obj.SetResourceVersion("2")
	if _, err := dyn.Resource(gvr).Namespace(profiles.HCONamespace).Update(ctx, obj, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}

	for _, tt := range []struct {
		name string
		from inputSource
		want int64
	}{{"the controller's, from the watch cache", watchedInputs, 5}, {"an API request's, live", liveInputs, 20}} {
		got, err := c.inputReader(ctx, refs, tt.from, nil).Get(ctx, profiles.HyperConvergedGVK, profiles.HCONamespace, profiles.HCOName)
		if err != nil {
			t.Fatal(err)
		}
		limit, _, _ := unstructured.NestedInt64(got.Object, "spec", "liveMigrationConfig", "parallelMigrationsPerCluster")
		if limit != tt.want {
			t.Errorf("%s: parallelMigrationsPerCluster %d, want %d", tt.name, limit, tt.want)
		}
	}

	// An optimistic computation plans from the cache while the live read
	// runs, and finds out that the cache was behind.
	r := c.inputReader(ctx, refs, optimisticInputs, nil)
	got, err := r.Get(ctx, profiles.HyperConvergedGVK, profiles.HCONamespace, profiles.HCOName)
	if err != nil {
		t.Fatal(err)
	}
	if limit, _, _ := unstructured.NestedInt64(got.Object, "spec", "liveMigrationConfig", "parallelMigrationsPerCluster"); limit != 5 || r.consistent() {
		t.Errorf("optimistic read: parallelMigrationsPerCluster %d, consistent %v; want 5 from the cache, not consistent with the live 20", limit, r.consistent())
	}
	// An input that is a target too is never planned from the cache alone.
	targets := []profiles.ObjectRef{{GVK: profiles.HyperConvergedGVK, Namespace: profiles.HCONamespace, Name: profiles.HCOName, Target: true}}
	got, err = c.inputReader(ctx, targets, watchedInputs, nil).Get(ctx, profiles.HyperConvergedGVK, profiles.HCONamespace, profiles.HCOName)
	if err != nil {
		t.Fatal(err)
	}
	if limit, _, _ := unstructured.NestedInt64(got.Object, "spec", "liveMigrationConfig", "parallelMigrationsPerCluster"); limit != 20 {
		t.Errorf("a target input read from the watch cache: parallelMigrationsPerCluster %d, want the live 20", limit)
	}

	// A live computation reads each input once, all started at once.
	gets := func() (n int) {
		for _, a := range dyn.Actions() {
			if a.GetVerb() == "get" && a.GetResource() == gvr {
				n++
			}
		}
		return n
	}
	before := gets()
	r = c.inputReader(ctx, refs, liveInputs, nil)
	for i := 0; i < 3; i++ {
		if _, err := r.Get(ctx, profiles.HyperConvergedGVK, profiles.HCONamespace, profiles.HCOName); err != nil {
			t.Fatal(err)
		}
	}
	if n := gets() - before; n != 1 {
		t.Errorf("a live computation that reads its input 3 times sent %d GETs, want 1", n)
	}
}

// A panic while planning one item (here a profile bug: an item without a
// desired object) fails that item with an error, never the server.
func TestPanicWhilePlanningFailsTheItem(t *testing.T) {
	e := &Engine{Cluster: &Cluster{Mapper: mapperWith(profiles.KubeDeschedulerGVK)}}
	it := profiles.Item{Name: "broken", Owned: true}
	p := e.planItemSafely(context.Background(), "load-aware-rebalancing", Ownership{}, it, e.Cluster.inputReader(context.Background(), nil, watchedInputs, nil))
	if p.item.Name != "broken" || !strings.Contains(p.item.Error, "internal error while planning this item") {
		t.Fatalf("item = %+v, want an item error", p.item)
	}
}

func TestDecideWhatAnItemDoes(t *testing.T) {
	for _, tc := range []struct {
		name         string
		exists, ours bool
		want         absentAction
	}{
		{"an unwanted object that is gone: no item", false, false, gone},
		{"an unwanted object someone else made: left in place", true, false, leaveInPlace},
		{"an unwanted object we made: deleted", true, true, deleteIt},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := decideAbsent(tc.exists, tc.ours); got != tc.want {
				t.Errorf("decideAbsent = %v, want %v", got, tc.want)
			}
		})
	}
	for _, tc := range []struct {
		name              string
		exists, unchanged bool
		want              v1alpha1.Operation
	}{
		{"a wanted object that does not exist: created", false, false, v1alpha1.OperationCreate},
		{"a wanted object the apply leaves as it is: nothing to do", true, true, v1alpha1.OperationNone},
		{"a wanted object the apply changes: updated", true, false, v1alpha1.OperationUpdate},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := decideWanted(tc.exists, tc.unchanged); got != tc.want {
				t.Errorf("decideWanted = %v, want %v", got, tc.want)
			}
		})
	}
}
