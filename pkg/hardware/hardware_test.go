package hardware

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// node is a Node as the kubelet reports it.
func node(name, role, cpus, memory string, labels map[string]interface{}, capacity map[string]interface{}) unstructured.Unstructured {
	l := map[string]interface{}{"node-role.kubernetes.io/" + role: ""}
	for k, v := range labels {
		l[k] = v
	}
	c := map[string]interface{}{"cpu": cpus, "memory": memory}
	for k, v := range capacity {
		c[k] = v
	}
	return unstructured.Unstructured{Object: map[string]interface{}{
		"apiVersion": "v1", "kind": "Node",
		"metadata": map[string]interface{}{"name": name, "labels": l},
		"status": map[string]interface{}{
			"capacity":    c,
			"allocatable": map[string]interface{}{"cpu": cpus, "memory": memory},
			"nodeInfo":    map[string]interface{}{"architecture": "amd64"},
		},
	}}
}

// nrt is a NodeResourceTopology with NUMA zones of these CPUs and 128 GiB
// each, plus a non-NUMA zone that is not counted.
func nrt(name string, zoneCPUs ...int64) unstructured.Unstructured {
	var zones []interface{}
	for i, c := range zoneCPUs {
		zones = append(zones, map[string]interface{}{"name": "node-" + string(rune('0'+i)), "type": "Node", "resources": []interface{}{
			map[string]interface{}{"name": "cpu", "capacity": c, "allocatable": c, "available": c},
			map[string]interface{}{"name": "memory", "capacity": "128Gi", "allocatable": "120Gi", "available": "120Gi"},
		}})
	}
	zones = append(zones, map[string]interface{}{"name": "core-0", "type": "Core"})
	return unstructured.Unstructured{Object: map[string]interface{}{
		"apiVersion": "topology.node.k8s.io/v1alpha2", "kind": "NodeResourceTopology",
		"metadata": map[string]interface{}{"name": name}, "zones": zones,
	}}
}

func pool(name string) unstructured.Unstructured {
	return unstructured.Unstructured{Object: map[string]interface{}{
		"apiVersion": "machineconfiguration.openshift.io/v1", "kind": "MachineConfigPool",
		"metadata": map[string]interface{}{"name": name},
		"spec":     map[string]interface{}{"nodeSelector": map[string]interface{}{"matchLabels": map[string]interface{}{"node-role.kubernetes.io/" + name: ""}}},
	}}
}

var intel = map[string]interface{}{VendorLabel: "GenuineIntel"}

func TestReadNode(t *testing.T) {
	served := func(objs ...unstructured.Unstructured) Topologies {
		t := Topologies{ByNode: map[string]*unstructured.Unstructured{}}
		for i := range objs {
			t.ByNode[objs[i].GetName()] = &objs[i]
		}
		return t
	}
	tests := []struct {
		name string
		node unstructured.Unstructured
		topo Topologies
		want Node
	}{
		{name: "two NUMA zones from NodeResourceTopology, huge pages, NFD vendor",
			node: node("cnv-0", "worker-cnv", "64", "257668Mi", intel, map[string]interface{}{"hugepages-1Gi": "16Gi", "hugepages-2Mi": "0"}),
			topo: served(nrt("cnv-0", 32, 32)),
			want: Node{Name: "cnv-0", CPUs: 64, Memory: 257668 << 20, MemoryCapacity: 257668 << 20, HugePages: map[string]int64{"hugepages-1Gi": 16 << 30}, Vendor: "GenuineIntel", Architecture: "amd64", SMT: SMTOff,
				Zones: []Zone{{Name: "node-0", CPUs: 32, Memory: 128 << 30}, {Name: "node-1", NUMAID: 1, CPUs: 32, Memory: 128 << 30}}}},
		{name: "NFD says multithreading is on",
			node: node("cnv-1", "worker-cnv", "64", "32Gi", map[string]interface{}{VendorLabel: "AuthenticAMD", MultithreadingLabel: "true"}, nil),
			topo: served(nrt("cnv-1", 32, 32)),
			want: Node{Name: "cnv-1", CPUs: 64, Memory: 32 << 30, MemoryCapacity: 32 << 30, HugePages: map[string]int64{}, Vendor: "AuthenticAMD", Architecture: "amd64", SMT: SMTOn,
				Zones: []Zone{{Name: "node-0", CPUs: 32, Memory: 128 << 30}, {Name: "node-1", NUMAID: 1, CPUs: 32, Memory: 128 << 30}}}},
		{name: "no vendor label: unknown; NodeResourceTopology not served: one zone, said so",
			node: node("w-0", "worker", "8", "32Gi", nil, nil),
			topo: Topologies{NotServed: "topology.node.k8s.io/v1alpha2 NodeResourceTopology is not served"},
			want: Node{Name: "w-0", CPUs: 8, Memory: 32 << 30, MemoryCapacity: 32 << 30, HugePages: map[string]int64{}, Vendor: UnknownVendor, Architecture: "amd64", SMT: SMTUnknown,
				Zones:        []Zone{{Name: "node-0", CPUs: 8, Memory: 32 << 30}},
				ZonesAssumed: "topology.node.k8s.io/v1alpha2 NodeResourceTopology is not served: one NUMA zone assumed"}},
		{name: "served but none for this node",
			node: node("w-1", "worker", "8", "32Gi", nil, nil), topo: served(nrt("other", 4, 4)),
			want: Node{Name: "w-1", CPUs: 8, Memory: 32 << 30, MemoryCapacity: 32 << 30, HugePages: map[string]int64{}, Vendor: UnknownVendor, Architecture: "amd64", SMT: SMTUnknown,
				Zones:        []Zone{{Name: "node-0", CPUs: 8, Memory: 32 << 30}},
				ZonesAssumed: "no NodeResourceTopology for node 'w-1': one NUMA zone assumed"}},
		{name: "a topology without NUMA zones",
			node: node("w-2", "worker", "8", "32Gi", nil, nil), topo: served(nrt("w-2")),
			want: Node{Name: "w-2", CPUs: 8, Memory: 32 << 30, MemoryCapacity: 32 << 30, HugePages: map[string]int64{}, Vendor: UnknownVendor, Architecture: "amd64", SMT: SMTUnknown,
				Zones:        []Zone{{Name: "node-0", CPUs: 8, Memory: 32 << 30}},
				ZonesAssumed: "the NodeResourceTopology of node 'w-2' has no NUMA zone: one NUMA zone assumed"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got, err := ReadNode(&tt.node, tt.topo); err != nil || !reflect.DeepEqual(got, tt.want) {
				t.Errorf("ReadNode =\n %+v, %v\nwant\n %+v", got, err, tt.want)
			}
		})
	}
	// Without status.nodeInfo the architecture label is read.
	n := node("arm-0", "worker", "8", "32Gi", map[string]interface{}{ArchLabel: "arm64"}, nil)
	unstructured.RemoveNestedField(n.Object, "status", "nodeInfo")
	if got, _ := ReadNode(&n, Topologies{NotServed: "x"}); got.Architecture != "arm64" {
		t.Errorf("architecture = %q, want arm64", got.Architecture)
	}
}

// nrtNamed is a NodeResourceTopology of NUMA zones of these names, 8 CPUs
// each.
func nrtNamed(name string, zoneNames ...string) unstructured.Unstructured {
	o := nrt(name)
	zones := []interface{}{map[string]interface{}{"name": "core-0", "type": "Core"}}
	for _, z := range zoneNames {
		zones = append(zones, map[string]interface{}{"name": z, "type": "Node", "resources": []interface{}{
			map[string]interface{}{"name": "cpu", "capacity": int64(8)},
		}})
	}
	o.Object["zones"] = zones
	return o
}

// The NUMA ids of a NodeResourceTopology's zones become the numaNode of
// the kubelet's reservedMemory: names other than node-<id>, an id twice,
// or an id the machine cannot have (beyond its zone count) are refused,
// naming the node and the object.
func TestNUMAZoneIDs(t *testing.T) {
	zoneNames := func(n int) []string {
		out := make([]string, n)
		for i := range out {
			out[i] = fmt.Sprintf("node-%d", n-1-i)
		}
		return out
	}
	ids := func(n int) []int {
		out := make([]int, n)
		for i := range out {
			out[i] = i
		}
		return out
	}
	const fix = "check the resource topology exporter of that node"
	tests := []struct {
		zones   []string
		ids     []int
		wantErr string
	}{
		{zones: []string{"node-0", "node-1"}, ids: []int{0, 1}},
		{zones: []string{"node-1", "node-0"}, ids: []int{0, 1}},
		{zones: []string{"node-3", "node-2", "node-1", "node-0"}, ids: []int{0, 1, 2, 3}},
		{zones: []string{"node-0", "node-1", "node-2", "node-3", "node-4", "node-5", "node-6", "node-7", "node-8", "node-9", "node-10"},
			ids: []int{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10}},
		{zones: []string{"node-0", "x"},
			wantErr: "NodeResourceTopology 'cnv-0' of node 'cnv-0' has a NUMA zone named 'x', not node-<id> (its NUMA node id): the NUMA ids of the kubelet's reservedMemory are taken from it: " + fix},
		{zones: []string{"node-1", "x"}, wantErr: "a NUMA zone named 'x', not node-<id>"},
		{zones: []string{"node-0", "node-01"}, wantErr: "a NUMA zone named 'node-01', not node-<id>"},
		{zones: []string{"node-0", "node--1"}, wantErr: "a NUMA zone named 'node--1', not node-<id>"},
		{zones: []string{"node-0", "node-+1"}, wantErr: "a NUMA zone named 'node-+1', not node-<id>"},
		{zones: []string{"node-0", "Node-1"}, wantErr: "a NUMA zone named 'Node-1', not node-<id>"},
		{zones: []string{"node-0", ""}, wantErr: "a NUMA zone named '', not node-<id>"},
		{zones: []string{"node-1", "node-1"},
			wantErr: "NodeResourceTopology 'cnv-0' of node 'cnv-0' names NUMA zone 'node-1' twice: the NUMA ids of the kubelet's reservedMemory are taken from it: " + fix},
		{zones: []string{"node-7", "node-9"},
			wantErr: "NodeResourceTopology 'cnv-0' of node 'cnv-0' has 2 NUMA zones, one named 'node-7': a node of 2 NUMA nodes numbers them 0-1, and reserved memory on NUMA node 7 would name one it lacks; the NUMA ids of the kubelet's reservedMemory are taken from it: " + fix},
		{zones: []string{"node-0", "node-2"}, wantErr: "has 2 NUMA zones, one named 'node-2'"},
		{zones: []string{"node-99999"}, wantErr: "a NUMA zone named 'node-99999', not node-<id>"},
		{zones: zoneNames(64), ids: ids(64)},
		{zones: zoneNames(65), wantErr: "NodeResourceTopology 'cnv-0' of node 'cnv-0' has 65 NUMA zones: reserved memory is derived for at most 64 (NUMA nodes 0-63"},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.zones, ","), func(t *testing.T) {
			n := node("cnv-0", "worker-cnv", "64", "256Gi", intel, nil)
			o := nrtNamed("cnv-0", tt.zones...)
			got, err := ReadNode(&n, Topologies{ByNode: map[string]*unstructured.Unstructured{"cnv-0": &o}})
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("ReadNode: %v\nwant an error containing %q", err, tt.wantErr)
				}
				return
			}
			var ids []int
			for _, z := range got.Zones {
				ids = append(ids, z.NUMAID)
			}
			if err != nil || !reflect.DeepEqual(ids, tt.ids) {
				t.Errorf("NUMA ids %v, %v; want %v", ids, err, tt.ids)
			}
		})
	}
}

func TestUniform(t *testing.T) {
	cnv := func(name, cpus string, labels map[string]interface{}, capacity map[string]interface{}, zones ...int64) Node {
		n := node(name, "worker-cnv", cpus, "256Gi", labels, capacity)
		o := nrt(name, zones...)
		got, err := ReadNode(&n, Topologies{ByNode: map[string]*unstructured.Unstructured{name: &o}})
		if err != nil {
			t.Fatal(err)
		}
		return got
	}
	alike := []Node{cnv("cnv-0", "64", intel, nil, 32, 32), cnv("cnv-1", "64", intel, nil, 32, 32), cnv("cnv-2", "64", intel, nil, 32, 32)}
	tests := []struct {
		name  string
		nodes []Node
		facts []Fact
		want  string
	}{
		{name: "alike", nodes: alike, facts: []Fact{CPUs, Memory, HugePages, Vendor, Architecture, NUMAZones}},
		{name: "one node of another CPU count is named",
			nodes: []Node{alike[0], alike[1], cnv("cnv-2", "32", intel, nil, 16, 16)}, facts: []Fact{CPUs},
			want: "the nodes of MachineConfigPool 'worker-cnv' differ in CPU count: cnv-0, cnv-1 have 64; cnv-2 has 32; split the pool so that its nodes are alike, or set the value explicitly"},
		{name: "a difference in a fact not asked about is no error",
			nodes: []Node{alike[0], alike[1], cnv("cnv-2", "64", map[string]interface{}{VendorLabel: "AuthenticAMD"}, nil, 32, 32)}, facts: []Fact{CPUs, NUMAZones}},
		{name: "mixed vendors",
			nodes: []Node{alike[0], cnv("cnv-1", "64", map[string]interface{}{VendorLabel: "AuthenticAMD"}, nil, 32, 32), cnv("cnv-2", "64", nil, nil, 32, 32)}, facts: []Fact{Vendor},
			want: "differ in CPU vendor: cnv-1 has AuthenticAMD; cnv-0 has GenuineIntel; cnv-2 has unknown"},
		{name: "the same CPUs in other NUMA zones",
			nodes: []Node{alike[0], alike[1], cnv("cnv-2", "64", intel, nil, 16, 16, 16, 16)}, facts: []Fact{CPUs, NUMAZones},
			want: "differ in NUMA zones: cnv-0, cnv-1 have 2 (CPUs 32+32); cnv-2 has 4 (CPUs 16+16+16+16)"},
		{name: "huge pages",
			nodes: []Node{alike[0], cnv("cnv-1", "64", intel, map[string]interface{}{"hugepages-1Gi": "8Gi"}, 32, 32)}, facts: []Fact{HugePages},
			want: "differ in huge pages: cnv-1 has 1Gi 8Gi; cnv-0 has none"},
		{name: "no nodes", facts: []Fact{CPUs}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := Pool{Name: "worker-cnv", Nodes: tt.nodes}.Uniform(tt.facts...)
			if tt.want == "" {
				if err != nil {
					t.Errorf("Uniform = %v, want nil", err)
				}
				return
			}
			var nu *NotUniformError
			if !errors.As(err, &nu) || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Uniform = %v\nwant a NotUniformError containing %q", err, tt.want)
			}
		})
	}
}

// fakeLister serves pools, Nodes and, when version is set, topologies.
type fakeLister struct {
	objs    map[schema.GroupVersionKind][]unstructured.Unstructured
	version string
}

func (f fakeLister) List(_ context.Context, gvk schema.GroupVersionKind) ([]unstructured.Unstructured, error) {
	return f.objs[gvk], nil
}

func (f fakeLister) PreferredVersion(gk schema.GroupKind) (string, error) {
	if gk == NodeResourceTopologyGVK.GroupKind() {
		return f.version, nil
	}
	return "v1", nil
}

func TestRead(t *testing.T) {
	poolGVK := schema.GroupVersionKind{Group: "machineconfiguration.openshift.io", Version: "v1", Kind: "MachineConfigPool"}
	nodes := []unstructured.Unstructured{
		node("cnv-0", "worker-cnv", "64", "256Gi", intel, nil), node("cnv-1", "worker-cnv", "64", "256Gi", intel, nil),
		node("cnv-2", "worker-cnv", "64", "256Gi", intel, nil), node("w-0", "worker", "16", "64Gi", nil, nil),
	}
	// A node of worker-cnv that the worker pool selects too is counted in
	// worker-cnv only, as the MachineConfig operator assigns it.
	nodes[0].SetLabels(map[string]string{"node-role.kubernetes.io/worker-cnv": "", "node-role.kubernetes.io/worker": "", VendorLabel: "GenuineIntel"})
	objs := map[schema.GroupVersionKind][]unstructured.Unstructured{
		poolGVK:                 {pool("worker"), pool("worker-cnv")},
		NodeGVK:                 nodes,
		NodeResourceTopologyGVK: {nrt("cnv-0", 32, 32), nrt("cnv-1", 32, 32), nrt("cnv-2", 32, 32)},
	}
	tests := []struct {
		name     string
		pool     string
		version  string
		nodes    []string
		describe string
		wantErr  string
	}{
		{name: "worker-cnv with its topology", pool: "worker-cnv", version: "v1alpha2", nodes: []string{"cnv-0", "cnv-1", "cnv-2"},
			describe: "3 nodes with 64 CPUs in 2 NUMA zones"},
		{name: "worker without the custom pool's node", pool: "worker", version: "v1alpha2", nodes: []string{"w-0"},
			describe: "1 node with 16 CPUs in 1 NUMA zone (no NodeResourceTopology for node 'w-0': one NUMA zone assumed)"},
		{name: "topology not served", pool: "worker-cnv", nodes: []string{"cnv-0", "cnv-1", "cnv-2"},
			describe: "3 nodes with 64 CPUs in 1 NUMA zone (topology.node.k8s.io/v1alpha2 NodeResourceTopology is not served: one NUMA zone assumed)"},
		{name: "topology served in another version only", pool: "worker-cnv", version: "v1alpha1", nodes: []string{"cnv-0", "cnv-1", "cnv-2"},
			describe: "3 nodes with 64 CPUs in 1 NUMA zone (NodeResourceTopology is served as topology.node.k8s.io/v1alpha1, not v1alpha2: one NUMA zone assumed)"},
		{name: "no such pool", pool: "infra", wantErr: "there is no MachineConfigPool 'infra'"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := Read(context.Background(), fakeLister{objs: objs, version: tt.version}, tt.pool)
			if tt.wantErr != "" {
				if err == nil || err.Error() != tt.wantErr {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
				return
			}
			var names []string
			for _, n := range p.Nodes {
				names = append(names, n.Name)
			}
			if err != nil || !reflect.DeepEqual(names, tt.nodes) || p.Describe() != tt.describe {
				t.Errorf("Read = %v %q, %v; want %v %q", names, p.Describe(), err, tt.nodes, tt.describe)
			}
		})
	} // One node's topology with a zone id twice refuses the pool.
	objs[NodeResourceTopologyGVK] = []unstructured.Unstructured{nrt("cnv-0", 32, 32), nrtNamed("cnv-1", "node-0", "node-0"), nrt("cnv-2", 32, 32)}
	if _, err := Read(context.Background(), fakeLister{objs: objs, version: "v1alpha2"}, "worker-cnv"); err == nil || !strings.Contains(err.Error(), "NodeResourceTopology 'cnv-1' of node 'cnv-1' names NUMA zone 'node-0' twice") {
		t.Errorf("Read with a zone named twice: %v", err)
	}
}
