package plan

import (
	"context"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

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
	mc.SetGroupVersionKind(profiles.MachineConfigGVK)
	mc.SetName("99-worker-psi-karg")
	it := profiles.Item{Name: "enable-psi-metrics", Desired: mc, Owned: true, Absent: true}

	p := e.planItem(context.Background(), "load-aware-rebalancing", it, e.Cluster.inputReader(nil))
	if !p.skip || p.item.Error != "" {
		t.Errorf("skip = %v, error = %q: an Absent item of a kind the cluster does not serve has nothing to delete", p.skip, p.item.Error)
	}

	it.Absent = false
	p = e.planItem(context.Background(), "load-aware-rebalancing", it, e.Cluster.inputReader(nil))
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
