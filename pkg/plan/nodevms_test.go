package plan

import (
	"context"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"

	"github.com/kubevirt/virt-advisor/pkg/cluster"
	"github.com/kubevirt/virt-advisor/pkg/cluster/clustertest"
	"github.com/kubevirt/virt-advisor/pkg/kubevirt"
	"github.com/kubevirt/virt-advisor/pkg/profiles"
)

// cachedNodeVMs is a cache at resourceVersion "100" that holds a VM
// migratable that the cluster no longer has migratable.
type cachedNodeVMs struct{ synced bool }

func (c cachedNodeVMs) Nodes() ([]unstructured.Unstructured, string, bool) {
	return []unstructured.Unstructured{{Object: map[string]interface{}{"metadata": map[string]interface{}{"name": "cached-node"}}}}, "100", c.synced
}

func (c cachedNodeVMs) VMIs() ([]kubevirt.VMI, string, bool) {
	return []kubevirt.VMI{{Namespace: "default", Name: "vm-0", Node: "worker-0", Phase: "Running", Strategy: "LiveMigrate", Condition: true, Migratable: true}}, "100", c.synced
}

// A plan reads Nodes and VMIs from their caches once synced and says at
// which resourceVersion; the look before a drain (cached false) reads
// them live whatever the caches hold.
func TestNodeReadsCachedOrLive(t *testing.T) {
	nodeGVR := schema.GroupVersionResource{Version: "v1", Resource: "nodes"}
	vmiGVR := schema.GroupVersionResource{Group: "kubevirt.io", Version: "v1", Resource: "virtualmachineinstances"}
	node := &unstructured.Unstructured{Object: map[string]interface{}{"apiVersion": "v1", "kind": "Node", "metadata": map[string]interface{}{"name": "live-node"}}}
	vmi := clustertest.VMI("vm-0", "worker-0", "LiveMigrate", "False", "HostDeviceNotLiveMigratable")
	dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(),
		map[schema.GroupVersionResource]string{nodeGVR: "NodeList", vmiGVR: "VirtualMachineInstanceList"}, node, &vmi)
	mapper := clustertest.Namespaced(cluster.VirtualMachineInstanceGVK, profiles.NodeGVK)

	for _, tt := range []struct {
		name       string
		cache      NodeVMs
		cached     bool
		node       string
		migratable bool
		at         ReadAt
	}{
		{"a plan, caches synced: from the caches", cachedNodeVMs{synced: true}, true, "cached-node", true, ReadAt{Nodes: "100", VMIs: "100"}},
		{"a plan, caches not synced yet: live", cachedNodeVMs{}, true, "live-node", false, ReadAt{}},
		{"a plan without caches: live", nil, true, "live-node", false, ReadAt{}},
		{"the look before a drain: live", cachedNodeVMs{synced: true}, false, "live-node", false, ReadAt{}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			e := &Engine{Cluster: &cluster.Cluster{Dynamic: dyn, Mapper: mapper}, NodeVMs: tt.cache}
			at := &readAt{}
			nodes, vmis := e.nodeReads(context.Background(), tt.cached, at)
			n, err := nodes()
			if err != nil || len(n) != 1 || n[0].GetName() != tt.node {
				t.Errorf("nodes %v (%v), want %s", n, err, tt.node)
			}
			v, served, err := vmis()
			if err != nil || !served || len(v) != 1 || v[0].Migratable != tt.migratable {
				t.Errorf("VMIs %+v served %v (%v), want vm-0 migratable %v", v, served, err, tt.migratable)
			}
			if got := at.get(); got != tt.at {
				t.Errorf("read at %+v, want %+v", got, tt.at)
			}
		})
	}
}
