package dedicatedcpus

import (
	"context"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	"github.com/kubevirt/virt-advisor/pkg/apis/advisor"
	"github.com/kubevirt/virt-advisor/pkg/apis/advisor/v1alpha1"
	"github.com/kubevirt/virt-advisor/pkg/apis/advisor/validation"
	"github.com/kubevirt/virt-advisor/pkg/hardware"
	"github.com/kubevirt/virt-advisor/pkg/profiles"
)

// cluster is an in-memory profiles.Cluster: lists by kind; it serves
// NodeResourceTopology unless noTopology.
type cluster struct {
	noTopology bool
	objects    []*unstructured.Unstructured
}

func (c *cluster) Get(context.Context, schema.GroupVersionKind, string, string) (*unstructured.Unstructured, error) {
	return nil, nil
}

func (c *cluster) PreferredVersion(gk schema.GroupKind) (string, error) {
	if gk == hardware.NodeResourceTopologyGVK.GroupKind() {
		if c.noTopology {
			return "", nil
		}
		return hardware.NodeResourceTopologyGVK.Version, nil
	}
	return "v1", nil
}

func (c *cluster) List(_ context.Context, gvk schema.GroupVersionKind) ([]unstructured.Unstructured, error) {
	var out []unstructured.Unstructured
	for _, o := range c.objects {
		if o.GetKind() == gvk.Kind {
			out = append(out, *o.DeepCopy())
		}
	}
	return out, nil
}

// poolOf is pool worker-cnv with n nodes of cpus CPUs in zones (each of
// cpus/zones), SMT as given, each with its NodeResourceTopology.
func poolOf(n, cpus, zones int, smt bool) []*unstructured.Unstructured {
	objs := []*unstructured.Unstructured{Pool("worker-cnv")}
	for i := range n {
		name := "cnv-" + string(rune('a'+i))
		sizes := make([]int, zones)
		for z := range sizes {
			sizes[z] = cpus / zones
		}
		objs = append(objs, Node(name, "worker-cnv", cpus, smt), Topology(name, sizes...))
	}
	return objs
}

func itemOf(t *testing.T, c *cluster, o *v1alpha1.DedicatedCPUsConfig) profiles.Item {
	t.Helper()
	items, err := New().Items(context.Background(), profiles.Inputs{ConfigName: Name, Options: v1alpha1.ProfileOptions{DedicatedCPUs: o}, Cluster: c})
	if err != nil {
		t.Fatalf("Items: %v", err)
	}
	if len(items) != 1 {
		t.Fatalf("%d items, want 1", len(items))
	}
	return items[0]
}

func kubelet(it profiles.Item, field string) interface{} {
	v, _, _ := unstructured.NestedFieldNoCopy(it.Desired.Object, "spec", "kubeletConfig", field)
	return v
}

func TestDerivation(t *testing.T) {
	cnv := &v1alpha1.DedicatedCPUsConfig{Pool: "worker-cnv"}
	tests := []struct {
		name    string
		cluster *cluster
		opts    *v1alpha1.DedicatedCPUsConfig
		cpus    string
		memory  string // show() of reservedMemory
		message []string
	}{
		{name: "2 zones, SMT: one core per zone and its sibling at +N/2", cluster: &cluster{objects: poolOf(3, 64, 2, true)}, opts: cnv,
			cpus: "0,16,32,48", memory: "NUMA 0 562Mi, NUMA 1 562Mi",
			message: []string{"reservedSystemCPUs 0,16,32,48: 1 core per NUMA zone with its SMT sibling, from 3 nodes with 64 CPUs in 2 NUMA zones (CPU numbering assumed: cores zone by zone, SMT siblings at +32)",
				"reservedMemory 562Mi on NUMA node 0, 562Mi on NUMA node 1: systemReserved 512Mi + kubeReserved 512Mi + evictionHard memory.available 100Mi",
				"kubelet's CPU and memory manager state is reset on these nodes, which are drained and rebooted"}},
		{name: "2 zones, no SMT", cluster: &cluster{objects: poolOf(2, 32, 2, false)}, opts: cnv,
			cpus: "0,16", memory: "NUMA 0 562Mi, NUMA 1 562Mi", message: []string{"1 core per NUMA zone, from 2 nodes with 32 CPUs in 2 NUMA zones (CPU numbering assumed: CPUs zone by zone, no SMT)"}},
		{name: "1 zone, SMT", cluster: &cluster{objects: poolOf(1, 16, 1, true)}, opts: cnv,
			cpus: "0,8", memory: "NUMA 0 1124Mi", message: []string{"from 1 node with 16 CPUs in 1 NUMA zone"}},
		{name: "1 zone assumed without NodeResourceTopology", cluster: &cluster{noTopology: true, objects: poolOf(2, 16, 1, false)}, opts: cnv,
			cpus: "0", memory: "NUMA 0 1124Mi", message: []string{"one NUMA zone assumed"}},
		{name: "2 cores per zone with SMT", cluster: &cluster{objects: poolOf(3, 64, 2, true)}, opts: &v1alpha1.DedicatedCPUsConfig{Pool: "worker-cnv", ReservedCoresPerZone: ptr.To[int32](2)},
			cpus: "0-1,16-17,32-33,48-49", memory: "NUMA 0 562Mi, NUMA 1 562Mi", message: []string{"2 cores per NUMA zone with their SMT siblings"}},
		{name: "3 zones: the remainder of the memory on the first", cluster: &cluster{objects: poolOf(1, 48, 3, true)}, opts: cnv,
			cpus: "0,8,16,24,32,40", memory: "NUMA 0 376Mi, NUMA 1 374Mi, NUMA 2 374Mi"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			it := itemOf(t, tt.cluster, tt.opts)
			if it.Err != nil {
				t.Fatalf("item error: %v", it.Err)
			}
			if got := kubelet(it, "reservedSystemCPUs"); got != tt.cpus {
				t.Errorf("reservedSystemCPUs = %v, want %s", got, tt.cpus)
			}
			if got := show(kubelet(it, "reservedMemory")); got != tt.memory {
				t.Errorf("reservedMemory = %s, want %s", got, tt.memory)
			}
			for _, want := range tt.message {
				if !strings.Contains(it.Message, want) {
					t.Errorf("message %q\nlacks %q", it.Message, want)
				}
			}
			if len(it.Warnings) != 1 || !strings.Contains(it.Warnings[0], "the kubelet's CPU manager state is reset on the nodes of MachineConfigPool 'worker-cnv'") {
				t.Errorf("warnings = %q", it.Warnings)
			}
			if got := kubelet(it, "cpuManagerPolicy"); got != "static" {
				t.Errorf("cpuManagerPolicy = %v", got)
			}
			sel, _, _ := unstructured.NestedStringMap(it.Desired.Object, "spec", "machineConfigPoolSelector", "matchLabels")
			if _, ok := sel["pools.operator.machineconfiguration.openshift.io/worker-cnv"]; !ok || len(sel) != 1 {
				t.Errorf("machineConfigPoolSelector.matchLabels = %v", sel)
			}
		})
	}
}

// The reserved memory adds up to what the kubelet's memory manager requires.
func TestReservedMemoryAddsUp(t *testing.T) {
	for zones := 1; zones <= 8; zones++ {
		sum := 0
		for _, z := range spreadMemory(make([]hardware.Zone, zones)) {
			sum += z.mib
		}
		if sum != systemReservedMiB+kubeReservedMiB+evictionHardMiB {
			t.Errorf("%d zones: reservedMemory adds up to %dMi", zones, sum)
		}
	}
}

func TestRefusals(t *testing.T) {
	mismatched := poolOf(3, 64, 2, true)
	mismatched = append(mismatched, Node("cnv-odd", "worker-cnv", 48, true), Topology("cnv-odd", 24, 24))
	noTopology := poolOf(2, 64, 2, true)
	noTopology = append(noTopology, Node("cnv-new", "worker-cnv", 64, true))
	arm := poolOf(1, 64, 2, true)
	unstructured.SetNestedField(arm[1].Object, "arm64", "status", "nodeInfo", "architecture")
	uneven := []*unstructured.Unstructured{Pool("worker-cnv"), Node("cnv-a", "worker-cnv", 64, true), Topology("cnv-a", 40, 24)}
	// Zones named otherwise than node-0, node-1: the ids would reach
	// reservedMemory.
	renamed := func(names ...string) []*unstructured.Unstructured {
		objs := poolOf(2, 64, 2, true)
		zones, _, _ := unstructured.NestedSlice(objs[4].Object, "zones")
		for i, n := range names {
			zones[i].(map[string]interface{})["name"] = n
		}
		_ = unstructured.SetNestedSlice(objs[4].Object, zones, "zones")
		return objs
	}
	tests := []struct {
		name    string
		objects []*unstructured.Unstructured
		opts    *v1alpha1.DedicatedCPUsConfig
		want    string
	}{
		{"a node with another CPU count, named", mismatched, &v1alpha1.DedicatedCPUsConfig{Pool: "worker-cnv"},
			"the nodes of MachineConfigPool 'worker-cnv' differ in CPU count: cnv-a, cnv-b, cnv-c have 64; cnv-odd has 48"},
		{"a node without its NodeResourceTopology", noTopology, &v1alpha1.DedicatedCPUsConfig{Pool: "worker-cnv"},
			"differ in NUMA zones: cnv-a, cnv-b have 2 (CPUs 32+32); cnv-new has 1 (CPUs 64)"},
		{"no such pool", poolOf(1, 64, 2, true), &v1alpha1.DedicatedCPUsConfig{Pool: "worker-rt"}, "there is no MachineConfigPool 'worker-rt'"},
		{"a pool without nodes", []*unstructured.Unstructured{Pool("worker-cnv")}, &v1alpha1.DedicatedCPUsConfig{Pool: "worker-cnv"}, "MachineConfigPool 'worker-cnv' has no nodes"},
		{"every core reserved", poolOf(1, 8, 2, true), &v1alpha1.DedicatedCPUsConfig{Pool: "worker-cnv", ReservedCoresPerZone: ptr.To[int32](2)},
			"reservedCoresPerZone 2 leaves no core to pin in the 2-core NUMA zones"},
		{"arm64", arm, &v1alpha1.DedicatedCPUsConfig{Pool: "worker-cnv"}, "are arm64: the CPU numbering"},
		{"zones of different sizes", uneven, &v1alpha1.DedicatedCPUsConfig{Pool: "worker-cnv"}, "NUMA zones of 40+24 CPUs"},
		{"no pool", poolOf(1, 64, 2, true), &v1alpha1.DedicatedCPUsConfig{}, "options.dedicatedCPUs.pool is required"},
		{"a zone not named node-<id>", renamed("node-1", "x"), &v1alpha1.DedicatedCPUsConfig{Pool: "worker-cnv"},
			"NodeResourceTopology 'cnv-b' of node 'cnv-b' has a NUMA zone named 'x', not node-<id>"},
		{"a zone id twice", renamed("node-1", "node-1"), &v1alpha1.DedicatedCPUsConfig{Pool: "worker-cnv"},
			"NodeResourceTopology 'cnv-b' of node 'cnv-b' names NUMA zone 'node-1' twice"},
		{"zone ids a two-zone node lacks", renamed("node-7", "node-9"), &v1alpha1.DedicatedCPUsConfig{Pool: "worker-cnv"},
			"NodeResourceTopology 'cnv-b' of node 'cnv-b' has 2 NUMA zones, one named 'node-7': a node of 2 NUMA nodes numbers them 0-1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			it := itemOf(t, &cluster{objects: tt.objects}, tt.opts)
			if it.Err == nil || !strings.Contains(it.Err.Error(), tt.want) {
				t.Errorf("error = %v, want one containing %q", it.Err, tt.want)
			}
			if it.Desired == nil || it.Desired.GetName() != KubeletConfigName {
				t.Errorf("a failed item names no target: %v", it.Desired)
			}
		})
	}
}

func TestDisabledIsAbsent(t *testing.T) {
	it := itemOf(t, &cluster{}, &v1alpha1.DedicatedCPUsConfig{Enabled: ptr.To(false)})
	if !it.Absent || !it.Owned || it.Desired.GetName() != KubeletConfigName || it.Desired.GetKind() != "KubeletConfig" {
		t.Errorf("item = %+v, want the KubeletConfig absent", it)
	}
}

// A node joining with the same hardware derives the same desired state; a
// different one changes it, and the change is described.
func TestInputChange(t *testing.T) {
	base := poolOf(3, 64, 2, true)
	before := itemOf(t, &cluster{objects: base}, &v1alpha1.DedicatedCPUsConfig{Pool: "worker-cnv"})
	same := append(append([]*unstructured.Unstructured{}, base...), Node("cnv-z", "worker-cnv", 64, true), Topology("cnv-z", 32, 32))
	after := itemOf(t, &cluster{objects: same}, &v1alpha1.DedicatedCPUsConfig{Pool: "worker-cnv"})
	if got := New().DescribeInputChange(ItemName, before.Desired.Object, after.Desired.Object); got != "" {
		t.Errorf("a node alike changes %q", got)
	}
	if kubelet(before, "reservedSystemCPUs") != kubelet(after, "reservedSystemCPUs") {
		t.Error("a node alike changes the reserved CPUs")
	}
	bigger := poolOf(3, 96, 2, true)
	changed := itemOf(t, &cluster{objects: bigger}, &v1alpha1.DedicatedCPUsConfig{Pool: "worker-cnv"})
	want := "the nodes of the pool changed: reservedSystemCPUs 0,16,32,48 -> 0,24,48,72"
	if got := New().DescribeInputChange(ItemName, before.Desired.Object, changed.Desired.Object); got != want {
		t.Errorf("DescribeInputChange = %q, want %q", got, want)
	}
}

func TestValidateOptions(t *testing.T) {
	p := field.NewPath("spec", "options", "dedicatedCPUs")
	tests := []struct {
		name string
		o    advisor.DedicatedCPUsConfig
		want []string // field paths
	}{
		{"a custom pool", advisor.DedicatedCPUsConfig{Pool: "worker-cnv"}, nil},
		{"pool required", advisor.DedicatedCPUsConfig{}, []string{"spec.options.dedicatedCPUs.pool"}},
		{"disabled needs no pool", advisor.DedicatedCPUsConfig{Enabled: ptr.To(false)}, nil},
		{"worker refused", advisor.DedicatedCPUsConfig{Pool: "worker"}, []string{"spec.options.dedicatedCPUs.pool"}},
		{"worker allowed", advisor.DedicatedCPUsConfig{Pool: "worker", AllowAllWorkers: ptr.To(true)}, nil},
		{"master refused", advisor.DedicatedCPUsConfig{Pool: "master", AllowAllWorkers: ptr.To(true)}, []string{"spec.options.dedicatedCPUs.pool"}},
		{"not a pool name", advisor.DedicatedCPUsConfig{Pool: "Worker CNV"}, []string{"spec.options.dedicatedCPUs.pool"}},
		{"unknown topology policy", advisor.DedicatedCPUsConfig{Pool: "worker-cnv", TopologyManagerPolicy: "none"}, []string{"spec.options.dedicatedCPUs.topologyManagerPolicy"}},
		{"cores out of range", advisor.DedicatedCPUsConfig{Pool: "worker-cnv", ReservedCoresPerZone: ptr.To[int32](9)}, []string{"spec.options.dedicatedCPUs.reservedCoresPerZone"}},
		{"cores zero", advisor.DedicatedCPUsConfig{Pool: "worker-cnv", ReservedCoresPerZone: ptr.To[int32](0)}, []string{"spec.options.dedicatedCPUs.reservedCoresPerZone"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := tt.o
			errs := append(validation.DeclaredChecks("dedicatedCPUs", &advisor.ProfileOptions{DedicatedCPUs: &o}, p), validateOptions(&advisor.ProfileOptions{DedicatedCPUs: &o}, p)...)
			var got []string
			for _, e := range errs {
				got = append(got, e.Field)
			}
			if strings.Join(got, ",") != strings.Join(tt.want, ",") {
				t.Errorf("errors on %v (%v), want %v", got, errs, tt.want)
			}
		})
	}
}

// workerPool is the worker pool as OpenShift has it: its own label, role
// worker MachineConfigs, the worker nodes.
func workerPool() *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]interface{}{
		"apiVersion": "machineconfiguration.openshift.io/v1", "kind": "MachineConfigPool",
		"metadata": map[string]interface{}{"name": "worker", "labels": map[string]interface{}{"pools.operator.machineconfiguration.openshift.io/worker": ""}},
		"spec": map[string]interface{}{
			"machineConfigSelector": map[string]interface{}{"matchLabels": map[string]interface{}{"machineconfiguration.openshift.io/role": "worker"}},
			"nodeSelector":          map[string]interface{}{"matchLabels": map[string]interface{}{"node-role.kubernetes.io/worker": ""}},
		},
	}}
}

// A KubeletConfig for worker is rendered as 99-worker-generated-kubelet
// with role worker, which worker-cnv (selecting role worker too) renders:
// its values must fit the nodes of both pools, or it is refused naming
// the pools and their nodes. One for worker-cnv lands on worker-cnv only.
func TestKubeletConfigForWorkerCoversTheCustomPools(t *testing.T) {
	worker := &v1alpha1.DedicatedCPUsConfig{Pool: "worker", AllowAllWorkers: ptr.To(true)}
	intel := []*unstructured.Unstructured{workerPool(),
		Node("worker-0", "worker", 32, false), Topology("worker-0", 32),
		Node("worker-1", "worker", 32, false), Topology("worker-1", 32)}
	mixed := append(append([]*unstructured.Unstructured{}, intel...), poolOf(2, 64, 2, false)[1:]...)
	mixed = append(mixed, Pool("worker-cnv"))

	it := itemOf(t, &cluster{objects: mixed}, worker)
	want := "KubeletConfig 'virt-advisor-dedicated-cpus' (rendered as MachineConfig '99-worker-generated-kubelet' with role 'worker') for MachineConfigPool 'worker' is rendered by MachineConfigPools 'worker', 'worker-cnv' (each one's machineConfigSelector selects it), whose nodes differ in CPU count: worker-0, worker-1 of pool worker have 32; cnv-a, cnv-b of pool worker-cnv have 64; choose a pool whose nodes are alike and whose MachineConfigs no other pool renders (a custom pool such as worker-cnv), or make the nodes alike"
	if it.Err == nil || it.Err.Error() != want {
		t.Errorf("mixed pools: error\n%v\nwant\n%s", it.Err, want)
	}

	alike := []*unstructured.Unstructured{workerPool(),
		Node("worker-0", "worker", 64, false), Topology("worker-0", 32, 32)}
	alike = append(alike, poolOf(2, 64, 2, false)...)
	it = itemOf(t, &cluster{objects: alike}, worker)
	if it.Err != nil {
		t.Fatalf("alike pools: %v", it.Err)
	}
	for _, want := range []string{
		"It is rendered as MachineConfig '99-worker-generated-kubelet' with role 'worker', which MachineConfigPool 'worker-cnv' renders too",
		"from 3 nodes with 64 CPUs in 2 NUMA zones",
	} {
		if !strings.Contains(it.Message, want) {
			t.Errorf("message %q\nlacks %q", it.Message, want)
		}
	}
	if len(it.Warnings) != 1 || !strings.Contains(it.Warnings[0], "on the nodes of MachineConfigPool 'worker', 'worker-cnv'") {
		t.Errorf("warnings = %q", it.Warnings)
	}

	// For worker-cnv: role worker-cnv, which worker does not render; the
	// Intel workers do not count.
	it = itemOf(t, &cluster{objects: mixed}, &v1alpha1.DedicatedCPUsConfig{Pool: "worker-cnv"})
	if it.Err != nil || !strings.Contains(it.Message, "from 2 nodes with 64 CPUs in 2 NUMA zones") || strings.Contains(it.Message, "renders too") {
		t.Errorf("worker-cnv: %v, %q", it.Err, it.Message)
	}
}
