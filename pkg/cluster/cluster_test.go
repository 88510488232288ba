package cluster

import (
	"context"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	"k8s.io/client-go/tools/cache"

	"github.com/kubevirt/virt-advisor/pkg/cluster/clustertest"
	"github.com/kubevirt/virt-advisor/pkg/kubevirt"
	"github.com/kubevirt/virt-advisor/pkg/profiles"
)

func TestWatchKeysResolveThePreferredVersion(t *testing.T) {
	hcoV1 := schema.GroupVersionKind{Group: "hco.kubevirt.io", Version: "v1", Kind: "HyperConverged"}
	w := NewWatches(nil, clustertest.Namespaced(hcoV1))
	key := ObjectKey{GVK: kubevirt.HyperConvergedGVK, Namespace: "openshift-cnv", Name: "kubevirt-hyperconverged"}
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

	key := ObjectKey{GVK: kubevirt.HyperConvergedGVK, Namespace: "openshift-cnv", Name: "kubevirt-hyperconverged"}
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
	c := &Cluster{Mapper: clustertest.Namespaced(kd), crdMeta: cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})}
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
