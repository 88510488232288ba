// Package hardware says what the nodes of a MachineConfigPool are made of
// (CPUs, memory, huge pages, CPU vendor, architecture, NUMA zones) and
// whether they are alike where a derived value depends on it. It decides
// from objects in memory; Read takes them through a Lister its caller
// gives (the plan's reads today, informers tomorrow).
package hardware

import (
	"context"
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/sets"

	"github.com/kubevirt/virt-advisor/pkg/disruption"
	"github.com/kubevirt/virt-advisor/pkg/machineconfig"
)

var (
	// NodeGVK is the core Node.
	NodeGVK = schema.GroupVersionKind{Version: "v1", Kind: "Node"}
	// NodeResourceTopologyGVK is the NUMA topology a node's resource
	// topology exporter (node-feature-discovery's topology-updater, or
	// RTE) publishes, one object per node named like it
	// (k8stopologyawareschedwg/noderesourcetopology-api,
	// pkg/apis/topology/v1alpha2).
	NodeResourceTopologyGVK = schema.GroupVersionKind{Group: "topology.node.k8s.io", Version: "v1alpha2", Kind: "NodeResourceTopology"}
)

const (
	// VendorLabel is node-feature-discovery's label of the CPU vendor
	// (the cpuid vendor string: GenuineIntel, AuthenticAMD…;
	// docs/reference/feature-labels of kubernetes-sigs/node-feature-discovery).
	VendorLabel = "feature.node.kubernetes.io/cpu-model.vendor_id"
	// UnknownVendor is the vendor of a node without VendorLabel.
	UnknownVendor = "unknown"
	// MultithreadingLabel is node-feature-discovery's label of enabled
	// hardware multithreading (SMT, Intel HTT): "true" when there are more
	// logical than physical CPUs; absent otherwise, as NFD labels only the
	// features a node has (docs/usage/features of
	// kubernetes-sigs/node-feature-discovery, CPU: cpu-hardware_multithreading).
	MultithreadingLabel = "feature.node.kubernetes.io/cpu-hardware_multithreading"
	// ArchLabel is the well-known architecture label, read when the
	// kubelet did not report status.nodeInfo.architecture.
	ArchLabel = "kubernetes.io/arch"
	// numaZoneType is the zone type NodeResourceTopology gives NUMA nodes.
	numaZoneType    = "Node"
	hugePagesPrefix = "hugepages-"
)

// Zone is one NUMA zone of a node.
type Zone struct {
	Name string
	// NUMAID is the id of the NUMA node its name gives (node-<id>): the
	// id the kubelet's reservedMemory names it by.
	NUMAID int
	// CPUs and Memory (bytes) are the zone's capacity.
	CPUs   int64
	Memory int64
}

// Node is what a node is made of.
type Node struct {
	Name string
	// CPUs is status.capacity.cpu (logical CPUs).
	CPUs int64
	// Memory is status.allocatable.memory, in bytes; MemoryCapacity
	// status.capacity.memory.
	Memory         int64
	MemoryCapacity int64
	// HugePages is the capacity (bytes) of each hugepages-<size> resource
	// with any, by resource name.
	HugePages    map[string]int64
	Vendor       string
	Architecture string
	// SMT says whether hardware multithreading is on: SMTOn, SMTOff, or
	// SMTUnknown when node-feature-discovery labels nothing of the CPU.
	SMT   string
	Zones []Zone
	// ZonesAssumed says why the node is taken to be one NUMA zone ("" when
	// its NodeResourceTopology gave its zones).
	ZonesAssumed string
}

// Topologies is what the NodeResourceTopology API gave: the objects by
// node name, or, when it is not served, why.
type Topologies struct {
	ByNode    map[string]*unstructured.Unstructured
	NotServed string
}

// ReadNode reads one node's facts. A NodeResourceTopology whose NUMA
// zones are not numbered as a machine's are is an error.
func ReadNode(node *unstructured.Unstructured, topo Topologies) (Node, error) {
	n := Node{Name: node.GetName(), HugePages: map[string]int64{}}
	capacity, _, _ := unstructured.NestedStringMap(node.Object, "status", "capacity")
	allocatable, _, _ := unstructured.NestedStringMap(node.Object, "status", "allocatable")
	n.CPUs = quantity(capacity["cpu"])
	n.Memory = quantity(allocatable["memory"])
	n.MemoryCapacity = quantity(capacity["memory"])
	for name, v := range capacity {
		if strings.HasPrefix(name, hugePagesPrefix) {
			if q := quantity(v); q > 0 {
				n.HugePages[name] = q
			}
		}
	}
	n.Vendor = node.GetLabels()[VendorLabel]
	if n.Vendor == "" {
		n.Vendor = UnknownVendor
	}
	n.SMT = smt(node.GetLabels())
	n.Architecture, _, _ = unstructured.NestedString(node.Object, "status", "nodeInfo", "architecture")
	if n.Architecture == "" {
		n.Architecture = node.GetLabels()[ArchLabel]
	}
	var err error
	n.Zones, n.ZonesAssumed, err = zones(n, topo)
	return n, err
}

// The values of Node.SMT.
const (
	SMTOn      = "on"
	SMTOff     = "off"
	SMTUnknown = "unknown"
)

// smt reads MultithreadingLabel: a node NFD labelled (it has VendorLabel)
// without it has multithreading off; a node NFD did not label is unknown.
func smt(labels map[string]string) string {
	switch {
	case labels[MultithreadingLabel] == "true":
		return SMTOn
	case labels[VendorLabel] != "":
		return SMTOff
	}
	return SMTUnknown
}

// zones are the NUMA zones of the node's NodeResourceTopology, by NUMA
// id; one zone of the whole node, with the reason, when there is none.
func zones(n Node, topo Topologies) ([]Zone, string, error) {
	whole := []Zone{{Name: "node-0", NUMAID: 0, CPUs: n.CPUs, Memory: n.Memory}}
	if topo.NotServed != "" {
		return whole, topo.NotServed + ": one NUMA zone assumed", nil
	}
	nrt := topo.ByNode[n.Name]
	if nrt == nil {
		return whole, fmt.Sprintf("no NodeResourceTopology for node '%s': one NUMA zone assumed", n.Name), nil
	}
	list, _, _ := unstructured.NestedSlice(nrt.Object, "zones")
	var out []Zone
	for _, z := range list {
		m, _ := z.(map[string]interface{})
		if m == nil || m["type"] != numaZoneType {
			continue
		}
		out = append(out, readZone(m))
	}
	if len(out) == 0 {
		return whole, fmt.Sprintf("the NodeResourceTopology of node '%s' has no NUMA zone: one NUMA zone assumed", n.Name), nil
	}
	if err := numberZones(n.Name, nrt.GetName(), out); err != nil {
		return nil, "", err
	}
	sort.Slice(out, func(i, j int) bool { return out[i].NUMAID < out[j].NUMAID })
	return out, "", nil
}

func readZone(m map[string]interface{}) Zone {
	zone := Zone{}
	zone.Name, _ = m["name"].(string)
	resources, _ := m["resources"].([]interface{})
	for _, r := range resources {
		rm, _ := r.(map[string]interface{})
		switch rm["name"] {
		case "cpu":
			zone.CPUs = quantity(rm["capacity"])
		case "memory":
			zone.Memory = quantity(rm["capacity"])
		}
	}
	return zone
}

// zoneName is how a NodeResourceTopology names a NUMA zone: node-<id>,
// the id Linux gives the NUMA node (/sys/devices/system/node/node<id>),
// in decimal without leading zeros.
var zoneName = regexp.MustCompile(`^node-(0|[1-9][0-9]{0,3})$`)

// maxNUMAZones bounds the zones of a node: the kubelet's reservedMemory
// the admission policy admits names NUMA nodes 0 to 63.
const maxNUMAZones = 64

// numberZones sets each zone's NUMAID from its name. The ids must be
// those of a machine with that many NUMA nodes, 0 to len(zones)-1, each
// once: they become the numaNode of the kubelet's reservedMemory, and a
// kubelet whose reservedMemory names a NUMA node twice or one the machine
// lacks does not start after the reboot.
func numberZones(node, object string, zones []Zone) error {
	const fix = "the NUMA ids of the kubelet's reservedMemory are taken from it: check the resource topology exporter of that node (node-feature-discovery's topology-updater or RTE), or delete the object for it to be published again"
	if len(zones) > maxNUMAZones {
		return fmt.Errorf("NodeResourceTopology '%s' of node '%s' has %d NUMA zones: reserved memory is derived for at most %d (NUMA nodes 0-%d, as the admission policy admits them); %s",
			object, node, len(zones), maxNUMAZones, maxNUMAZones-1, fix)
	}
	seen := map[int]bool{}
	for i := range zones {
		m := zoneName.FindStringSubmatch(zones[i].Name)
		if m == nil {
			return fmt.Errorf("NodeResourceTopology '%s' of node '%s' has a NUMA zone named '%s', not node-<id> (its NUMA node id): %s", object, node, zones[i].Name, fix)
		}
		id, _ := strconv.Atoi(m[1])
		switch {
		case seen[id]:
			return fmt.Errorf("NodeResourceTopology '%s' of node '%s' names NUMA zone '%s' twice: %s", object, node, zones[i].Name, fix)
		case id >= len(zones):
			return fmt.Errorf("NodeResourceTopology '%s' of node '%s' has %d NUMA zones, one named '%s': a node of %d NUMA nodes numbers them 0-%d, and reserved memory on NUMA node %d would name one it lacks; %s",
				object, node, len(zones), zones[i].Name, len(zones), len(zones)-1, id, fix)
		}
		seen[id] = true
		zones[i].NUMAID = id
	}
	return nil
}

// quantity is a resource quantity (a string or, in a
// NodeResourceTopology, an integer) as an integer; 0 when unreadable.
func quantity(v interface{}) int64 {
	switch t := v.(type) {
	case int64:
		return t
	case float64:
		return int64(t)
	case string:
		q, err := resource.ParseQuantity(t)
		if err != nil {
			return 0
		}
		return q.Value()
	}
	return 0
}

// Pool is the facts of a pool's nodes, sorted by name.
type Pool struct {
	Name  string
	Nodes []Node
}

// ForPool reads the facts of the nodes a pool has: those its
// nodeSelector selects, a node of a custom pool not counted in worker (as
// the MachineConfig operator assigns them).
func ForPool(pool *unstructured.Unstructured, pools, nodes []unstructured.Unstructured, topo Topologies) (Pool, error) {
	c := disruption.Cluster{Pools: pools, Nodes: nodes}
	names, err := c.PoolNodes(pool)
	if err != nil {
		return Pool{}, err
	}
	in := sets.New(names...)
	out := Pool{Name: pool.GetName()}
	for i := range nodes {
		if !in.Has(nodes[i].GetName()) {
			continue
		}
		n, err := ReadNode(&nodes[i], topo)
		if err != nil {
			return Pool{}, err
		}
		out.Nodes = append(out.Nodes, n)
	}
	sort.Slice(out.Nodes, func(i, j int) bool { return out.Nodes[i].Name < out.Nodes[j].Name })
	return out, nil
}

// Lister lists the objects of a kind ({} when it is not served) and says
// which version of a kind the cluster prefers ("" when it serves none):
// what profiles.Cluster offers.
type Lister interface {
	List(ctx context.Context, gvk schema.GroupVersionKind) ([]unstructured.Unstructured, error)
	PreferredVersion(gk schema.GroupKind) (string, error)
}

// Read reads the facts of the named pool's nodes: the pools, the Nodes
// and, when served, the NodeResourceTopologies, through the Lister.
func Read(ctx context.Context, l Lister, poolName string) (Pool, error) {
	pools, err := l.List(ctx, machineconfig.MachineConfigPoolGVK)
	if err != nil {
		return Pool{}, fmt.Errorf("listing MachineConfigPools: %w", err)
	}
	var pool *unstructured.Unstructured
	for i := range pools {
		if pools[i].GetName() == poolName {
			pool = &pools[i]
		}
	}
	if pool == nil {
		return Pool{}, fmt.Errorf("there is no MachineConfigPool '%s'", poolName)
	}
	nodes, err := l.List(ctx, NodeGVK)
	if err != nil {
		return Pool{}, fmt.Errorf("listing Nodes: %w", err)
	}
	topo, err := readTopologies(ctx, l)
	if err != nil {
		return Pool{}, err
	}
	return ForPool(pool, pools, nodes, topo)
}

func readTopologies(ctx context.Context, l Lister) (Topologies, error) {
	gk := NodeResourceTopologyGVK.GroupKind()
	version, err := l.PreferredVersion(gk)
	if err != nil {
		return Topologies{}, fmt.Errorf("discovering %s: %w", gk, err)
	}
	switch version {
	case "":
		return Topologies{NotServed: NodeResourceTopologyGVK.GroupVersion().String() + " NodeResourceTopology is not served"}, nil
	case NodeResourceTopologyGVK.Version:
	default:
		return Topologies{NotServed: fmt.Sprintf("NodeResourceTopology is served as %s/%s, not %s", gk.Group, version, NodeResourceTopologyGVK.Version)}, nil
	}
	list, err := l.List(ctx, NodeResourceTopologyGVK)
	if err != nil {
		return Topologies{}, fmt.Errorf("listing NodeResourceTopologies: %w", err)
	}
	topo := Topologies{ByNode: map[string]*unstructured.Unstructured{}}
	for i := range list {
		topo.ByNode[list[i].GetName()] = &list[i]
	}
	return topo, nil
}
