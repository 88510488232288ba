package plan

import (
	"context"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	clienttesting "k8s.io/client-go/testing"

	"github.com/kubevirt/virt-advisor/pkg/apis/advisor/v1alpha1"
	"github.com/kubevirt/virt-advisor/pkg/cluster"
	"github.com/kubevirt/virt-advisor/pkg/cluster/clustertest"
	"github.com/kubevirt/virt-advisor/pkg/kubevirt"
	"github.com/kubevirt/virt-advisor/pkg/machineconfig"
	"github.com/kubevirt/virt-advisor/pkg/profiles"
)

func TestAbsentItemOfUnservedKindIsSkipped(t *testing.T) {
	e := &Engine{Cluster: &cluster.Cluster{Mapper: clustertest.Namespaced(profiles.KubeDeschedulerGVK)}}
	mc := &unstructured.Unstructured{}
	mc.SetGroupVersionKind(machineconfig.MachineConfigGVK)
	mc.SetName("99-worker-psi-karg")
	it := profiles.Item{Name: "enable-psi-metrics", Desired: mc, Owned: true, Absent: true}

	p := e.planItem(context.Background(), "load-aware-rebalancing", Ownership{}, it, newInputReader(context.Background(), e.Cluster, nil, watchedInputs, nil))
	if !p.skip || p.item.Error != "" {
		t.Errorf("skip = %v, error = %q: an Absent item of a kind the cluster does not serve has nothing to delete", p.skip, p.item.Error)
	}

	it.Absent = false
	p = e.planItem(context.Background(), "load-aware-rebalancing", Ownership{}, it, newInputReader(context.Background(), e.Cluster, nil, watchedInputs, nil))
	if p.skip || p.item.Error == "" {
		t.Errorf("skip = %v, error = %q: a wanted object of an unserved kind is an item error", p.skip, p.item.Error)
	}
}

// A watch whose events are still on their way: the cache keeps the value
// listed first. A plan an API request computes reads the input live.
func TestInputSourceOfAComputation(t *testing.T) {
	hco := kubevirt.HyperConvergedGVK.GroupKind().WithVersion("v1beta1")
	gvr := schema.GroupVersionResource{Group: hco.Group, Version: hco.Version, Resource: "hyperconvergeds"}
	obj := &unstructured.Unstructured{}
	obj.SetGroupVersionKind(hco)
	obj.SetNamespace(kubevirt.HCONamespace)
	obj.SetName(kubevirt.HCOName)
	_ = unstructured.SetNestedField(obj.Object, int64(5), "spec", "liveMigrationConfig", "parallelMigrationsPerCluster")
	obj.SetResourceVersion("1")
	dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{gvr: "HyperConvergedList"}, obj)
	dyn.PrependWatchReactor("hyperconvergeds", func(clienttesting.Action) (bool, watch.Interface, error) {
		return true, watch.NewFake(), nil
	})
	mapper := clustertest.Namespaced(hco)
	c := &cluster.Cluster{Dynamic: dyn, Mapper: mapper, Watches: cluster.NewWatches(dyn, mapper)}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	c.Watches.Start(ctx)
	refs := []profiles.ObjectRef{{GVK: kubevirt.HyperConvergedGVK, Namespace: kubevirt.HCONamespace, Name: kubevirt.HCOName}}
	key := cluster.ObjectKey{GVK: kubevirt.HyperConvergedGVK, Namespace: kubevirt.HCONamespace, Name: kubevirt.HCOName}
	newInputReader(ctx, c, refs, watchedInputs, nil) // starts the watch
	if err := wait.PollUntilContextTimeout(ctx, 10*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		_, ok := c.Watches.Cached(key)
		return ok, nil
	}); err != nil {
		t.Fatalf("the watch did not sync: %v", err)
	}
	_ = unstructured.SetNestedField(obj.Object, int64(20), "spec", "liveMigrationConfig", "parallelMigrationsPerCluster")
	obj.SetResourceVersion("2")
	if _, err := dyn.Resource(gvr).Namespace(kubevirt.HCONamespace).Update(ctx, obj, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}

	for _, tt := range []struct {
		name string
		from inputSource
		want int64
	}{{"the controller's, from the watch cache", watchedInputs, 5}, {"an API request's, live", liveInputs, 20}} {
		got, err := newInputReader(ctx, c, refs, tt.from, nil).Get(ctx, kubevirt.HyperConvergedGVK, kubevirt.HCONamespace, kubevirt.HCOName)
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
	r := newInputReader(ctx, c, refs, optimisticInputs, nil)
	got, err := r.Get(ctx, kubevirt.HyperConvergedGVK, kubevirt.HCONamespace, kubevirt.HCOName)
	if err != nil {
		t.Fatal(err)
	}
	if limit, _, _ := unstructured.NestedInt64(got.Object, "spec", "liveMigrationConfig", "parallelMigrationsPerCluster"); limit != 5 || r.consistent() {
		t.Errorf("optimistic read: parallelMigrationsPerCluster %d, consistent %v; want 5 from the cache, not consistent with the live 20", limit, r.consistent())
	}
	// An input that is a target too is never planned from the cache alone.
	targets := []profiles.ObjectRef{{GVK: kubevirt.HyperConvergedGVK, Namespace: kubevirt.HCONamespace, Name: kubevirt.HCOName, Target: true}}
	got, err = newInputReader(ctx, c, targets, watchedInputs, nil).Get(ctx, kubevirt.HyperConvergedGVK, kubevirt.HCONamespace, kubevirt.HCOName)
	if err != nil {
		t.Fatal(err)
	}
	if limit, _, _ := unstructured.NestedInt64(got.Object, "spec", "liveMigrationConfig", "parallelMigrationsPerCluster"); limit != 20 {
		t.Errorf("a target input read from the watch cache: parallelMigrationsPerCluster %d, want the live 20", limit)
	}

	// A target read from the cache that its dry-run confirmed needs no GET.
	gvr2 := schema.GroupVersionResource{Group: hco.Group, Version: hco.Version, Resource: "hyperconvergeds"}
	countGets := func() (n int) {
		for _, a := range dyn.Actions() {
			if a.GetVerb() == "get" && a.GetResource() == gvr2 {
				n++
			}
		}
		return n
	}
	beforeConfirm := countGets()
	confirmed := newInputReader(ctx, c, targets, optimisticInputs, nil)
	if _, err := confirmed.Get(ctx, kubevirt.HyperConvergedGVK, kubevirt.HCONamespace, kubevirt.HCOName); err != nil {
		t.Fatal(err)
	}
	confirmed.dryRunBasedOn(key, "1", "1") // the cached resourceVersion
	if !confirmed.consistent() || countGets() != beforeConfirm {
		t.Errorf("a confirmed target: consistent %v, %d GETs sent; want consistent and none", confirmed.consistent(), countGets()-beforeConfirm)
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
	r = newInputReader(ctx, c, refs, liveInputs, nil)
	for i := 0; i < 3; i++ {
		if _, err := r.Get(ctx, kubevirt.HyperConvergedGVK, kubevirt.HCONamespace, kubevirt.HCOName); err != nil {
			t.Fatal(err)
		}
	}
	if n := gets() - before; n != 1 {
		t.Errorf("a live computation that reads its input 3 times sent %d GETs, want 1", n)
	}

	// An optimistic snapshot found behind is planned again from its live
	// reads, none sent again.
	r = newInputReader(ctx, c, refs, optimisticInputs, nil)
	if _, err := r.Get(ctx, kubevirt.HyperConvergedGVK, kubevirt.HCONamespace, kubevirt.HCOName); err != nil || r.consistent() {
		t.Fatalf("optimistic read: error %v, consistent %v; want the cache behind", err, r.consistent())
	}
	before = gets()
	got, err = r.liveOnly().Get(ctx, kubevirt.HyperConvergedGVK, kubevirt.HCONamespace, kubevirt.HCOName)
	if err != nil {
		t.Fatal(err)
	}
	if limit, _, _ := unstructured.NestedInt64(got.Object, "spec", "liveMigrationConfig", "parallelMigrationsPerCluster"); limit != 20 || gets() != before {
		t.Errorf("planned again without the caches: parallelMigrationsPerCluster %d, %d GETs; want the live 20 and no GET", limit, gets()-before)
	}
}

// A panic while planning one item (here a profile bug: an item without a
// desired object) fails that item with an error, never the server.
func TestPanicWhilePlanningFailsTheItem(t *testing.T) {
	e := &Engine{Cluster: &cluster.Cluster{Mapper: clustertest.Namespaced(profiles.KubeDeschedulerGVK)}}
	it := profiles.Item{Name: "broken", Owned: true}
	p := e.planItemSafely(context.Background(), "load-aware-rebalancing", Ownership{}, it, newInputReader(context.Background(), e.Cluster, nil, watchedInputs, nil))
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

// An item with nothing to write does not say what it "will" do.
func TestUnchangedMessage(t *testing.T) {
	tests := []struct{ kind, name, message, want string }{
		{"KubeDescheduler", "cluster", "KubeDescheduler 'cluster' will be configured with profile 'KubeVirtRelieveAndMigrate'",
			"KubeDescheduler 'cluster' is already configured with profile 'KubeVirtRelieveAndMigrate'; nothing to change"},
		{"MachineConfig", "99-worker-psi-karg", "MachineConfig '99-worker-psi-karg' will be configured to enable PSI metrics",
			"MachineConfig '99-worker-psi-karg' is already configured to enable PSI metrics; nothing to change"},
		{"ConfigMap", "example-config", "ConfigMap 'example-config' will be configured", "ConfigMap 'example-config' is already configured; nothing to change"},
		{"ConfigMap", "x", "", "ConfigMap 'x' is already in the desired state; nothing to change"},
		{"MachineConfig", "99-worker-psi-karg", "PSI metrics already effective in MachineConfigPool 'worker'", "PSI metrics already effective in MachineConfigPool 'worker'"},
	}
	for _, tt := range tests {
		if got := unchangedMessage(tt.kind, tt.name, tt.message); got != tt.want {
			t.Errorf("unchangedMessage(%q) = %q, want %q", tt.message, got, tt.want)
		}
	}
}
