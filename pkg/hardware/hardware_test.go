package hardware

import (
	"context"
	"errors"
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
			want: Node{Name: "cnv-0", CPUs: 64, Memory: 257668 << 20, HugePages: map[string]int64{"hugepages-1Gi": 16 << 30}, Vendor: "GenuineIntel", Architecture: "amd64", SMT: SMTOff,
				Zones: []Zone{{Name: "node-0", CPUs: 32, Memory: 128 << 30}, {Name: "node-1", CPUs: 32, Memory: 128 << 30}}}},
		{name: "NFD says multithreading is on",
			node: node("cnv-1", "worker-cnv", "64", "32Gi", map[string]interface{}{VendorLabel: "AuthenticAMD", MultithreadingLabel: "true"}, nil),
			topo: served(nrt("cnv-1", 32, 32)),
			want: Node{Name: "cnv-1", CPUs: 64, Memory: 32 << 30, HugePages: map[string]int64{}, Vendor: "AuthenticAMD", Architecture: "amd64", SMT: SMTOn,
				Zones: []Zone{{Name: "node-0", CPUs: 32, Memory: 128 << 30}, {Name: "node-1", CPUs: 32, Memory: 128 << 30}}}},
		{name: "no vendor label: unknown; NodeResourceTopology not served: one zone, said so",
			node: node("w-0", "worker", "8", "32Gi", nil, nil),
			topo: Topologies{NotServed: "topology.node.k8s.io/v1alpha2 NodeResourceTopology is not served"},
			want: Node{Name: "w-0", CPUs: 8, Memory: 32 << 30, HugePages: map[string]int64{}, Vendor: UnknownVendor, Architecture: "amd64", SMT: SMTUnknown,
				Zones:        []Zone{{Name: "node-0", CPUs: 8, Memory: 32 << 30}},
				ZonesAssumed: "topology.node.k8s.io/v1alpha2 NodeResourceTopology is not served: one NUMA zone assumed"}},
		{name: "served but none for this node",
			node: node("w-1", "worker", "8", "32Gi", nil, nil), topo: served(nrt("other", 4, 4)),
			want: Node{Name: "w-1", CPUs: 8, Memory: 32 << 30, HugePages: map[string]int64{}, Vendor: UnknownVendor, Architecture: "amd64", SMT: SMTUnknown,
				Zones:        []Zone{{Name: "node-0", CPUs: 8, Memory: 32 << 30}},
				ZonesAssumed: "no NodeResourceTopology for node 'w-1': one NUMA zone assumed"}},
		{name: "a topology without NUMA zones",
			node: node("w-2", "worker", "8", "32Gi", nil, nil), topo: served(nrt("w-2")),
			want: Node{Name: "w-2", CPUs: 8, Memory: 32 << 30, HugePages: map[string]int64{}, Vendor: UnknownVendor, Architecture: "amd64", SMT: SMTUnknown,
				Zones:        []Zone{{Name: "node-0", CPUs: 8, Memory: 32 << 30}},
				ZonesAssumed: "the NodeResourceTopology of node 'w-2' has no NUMA zone: one NUMA zone assumed"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := ReadNode(&tt.node, tt.topo); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("ReadNode =\n %+v\nwant\n %+v", got, tt.want)
			}
		})
	}
	// Without status.nodeInfo the architecture label is read.
	n := node("arm-0", "worker", "8", "32Gi", map[string]interface{}{ArchLabel: "arm64"}, nil)
	unstructured.RemoveNestedField(n.Object, "status", "nodeInfo")
	if got := ReadNode(&n, Topologies{NotServed: "x"}).Architecture; got != "arm64" {
		t.Errorf("architecture = %q, want arm64", got)
	}
}

func TestUniform(t *testing.T) {
	cnv := func(name, cpus string, labels map[string]interface{}, capacity map[string]interface{}, zones ...int64) Node {
		n := node(name, "worker-cnv", cpus, "256Gi", labels, capacity)
		o := nrt(name, zones...)
		return ReadNode(&n, Topologies{ByNode: map[string]*unstructured.Unstructured{name: &o}})
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
	}
}
