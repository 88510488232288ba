package env

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"github.com/kubevirt/virt-advisor/test/env/fakemco"
)

// HardwareClass is a kind of node: a pool of alike Nodes with what their
// kubelet, node-feature-discovery and the resource topology exporter
// report, so that the profiles deriving values from hardware have
// something to derive them from.
type HardwareClass struct {
	// Pool is the MachineConfigPool of the nodes, and their role label
	// node-role.kubernetes.io/<Pool>. A pool other than worker is created
	// selecting the worker MachineConfigs too, as OpenShift's custom pools do.
	Pool   string
	Count  int
	Vendor string // feature.node.kubernetes.io/cpu-model.vendor_id
	CPUs   int64
	// Memory is status.allocatable.memory; status.capacity.memory adds
	// the huge pages, which the kubelet takes out of allocatable memory.
	Memory string
	// NUMAZones is how many NUMA zones the NodeResourceTopology splits the
	// CPUs and memory into; 0 publishes no NodeResourceTopology.
	NUMAZones int
	// HugePages1Gi is the hugepages-1Gi capacity; "" reports none.
	HugePages1Gi string
}

// LocalHardware are the node classes `make run` creates: the worker pool
// of Intel nodes, one NUMA zone each, and a worker-cnv pool of larger AMD
// nodes in two NUMA zones with 1 GiB huge pages.
var LocalHardware = []HardwareClass{
	{Pool: "worker", Count: 3, Vendor: "GenuineIntel", CPUs: 32, Memory: "128Gi", NUMAZones: 1},
	{Pool: "worker-cnv", Count: 3, Vendor: "AuthenticAMD", CPUs: 64, Memory: "256Gi", NUMAZones: 2, HugePages1Gi: "32Gi"},
}

var nrtGVR = schema.GroupVersionResource{Group: "topology.node.k8s.io", Version: "v1alpha2", Resource: "noderesourcetopologies"}

// NodeNames are the names of a class's Nodes: <pool>-0 … <pool>-(n-1).
func (h HardwareClass) NodeNames() []string {
	out := make([]string, h.Count)
	for i := range out {
		out[i] = fmt.Sprintf("%s-%d", h.Pool, i)
	}
	return out
}

// CreateHardware creates the pools, Nodes (labels and status) and
// NodeResourceTopologies of the classes; what exists already is kept.
func (e *Env) CreateHardware(ctx context.Context, classes []HardwareClass) error {
	kube, err := kubernetes.NewForConfig(e.AdminConfig)
	if err != nil {
		return err
	}
	dyn, err := dynamic.NewForConfig(e.AdminConfig)
	if err != nil {
		return err
	}
	for _, h := range classes {
		if err := createPool(ctx, dyn, h); err != nil {
			return err
		}
		for _, name := range h.NodeNames() {
			if err := createHardwareNode(ctx, kube, h, name); err != nil {
				return err
			}
			if err := createTopology(ctx, dyn, h, name); err != nil {
				return err
			}
		}
	}
	return nil
}

// createPool creates a custom pool (the worker pool is the baseline's).
func createPool(ctx context.Context, dyn dynamic.Interface, h HardwareClass) error {
	if h.Pool == "worker" {
		return nil
	}
	pool := &unstructured.Unstructured{Object: map[string]interface{}{
		"apiVersion": "machineconfiguration.openshift.io/v1", "kind": "MachineConfigPool",
		"metadata": map[string]interface{}{"name": h.Pool,
			"labels":      map[string]interface{}{"pools.operator.machineconfiguration.openshift.io/" + h.Pool: ""},
			"annotations": map[string]interface{}{fakemco.MachinesAnnotation: fmt.Sprint(h.Count)}},
		"spec": map[string]interface{}{
			"machineConfigSelector": map[string]interface{}{"matchExpressions": []interface{}{map[string]interface{}{
				"key": "machineconfiguration.openshift.io/role", "operator": "In", "values": []interface{}{"worker", h.Pool}}}},
			"nodeSelector": map[string]interface{}{"matchLabels": map[string]interface{}{"node-role.kubernetes.io/" + h.Pool: ""}},
		},
	}}
	if _, err := dyn.Resource(poolGVR).Create(ctx, pool, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating MachineConfigPool %s: %w", h.Pool, err)
	}
	return nil
}

func createHardwareNode(ctx context.Context, kube kubernetes.Interface, h HardwareClass, name string) error {
	want := h.NodeObject(name)
	created, err := kube.CoreV1().Nodes().Create(ctx, want, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("creating Node %s: %w", name, err)
	}
	// A create drops the status: the kubelet reports it afterwards.
	created.Status = want.Status
	reported, err := kube.CoreV1().Nodes().UpdateStatus(ctx, created, metav1.UpdateOptions{})
	if err != nil {
		return fmt.Errorf("reporting the status of Node %s: %w", name, err)
	}
	// The API server taints a new Node not-ready; a Ready kubelet's node
	// loses the taint, and VMs may then be placed there.
	kept := reported.Spec.Taints[:0]
	for _, t := range reported.Spec.Taints {
		if t.Key != corev1.TaintNodeNotReady {
			kept = append(kept, t)
		}
	}
	if len(kept) == len(reported.Spec.Taints) {
		return nil
	}
	reported.Spec.Taints = kept
	if _, err := kube.CoreV1().Nodes().Update(ctx, reported, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("untainting Node %s: %w", name, err)
	}
	return nil
}

// NodeObject is the Node as its kubelet and node-feature-discovery
// report it: role, CPU vendor and architecture labels; capacity.
func (h HardwareClass) NodeObject(name string) *corev1.Node {
	capacity := corev1.ResourceList{
		corev1.ResourceCPU:    *resource.NewQuantity(h.CPUs, resource.DecimalSI),
		corev1.ResourceMemory: resource.MustParse(h.Memory),
		corev1.ResourcePods:   resource.MustParse("250"),
	}
	allocatable := capacity.DeepCopy()
	if h.HugePages1Gi != "" {
		pages := resource.MustParse(h.HugePages1Gi)
		capacity["hugepages-1Gi"] = pages
		allocatable["hugepages-1Gi"] = pages
		memory := capacity[corev1.ResourceMemory]
		memory.Add(pages)
		capacity[corev1.ResourceMemory] = memory
	}
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{
			"node-role.kubernetes.io/" + h.Pool:              "",
			"feature.node.kubernetes.io/cpu-model.vendor_id": h.Vendor,
			"kubernetes.io/arch":                             "amd64",
		}},
		Status: corev1.NodeStatus{
			Capacity:    capacity,
			Allocatable: allocatable,
			NodeInfo:    corev1.NodeSystemInfo{Architecture: "amd64"},
			Conditions:  []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady"}},
		},
	}
}

// createTopology publishes the node's NodeResourceTopology, if any.
func createTopology(ctx context.Context, dyn dynamic.Interface, h HardwareClass, name string) error {
	nrt := h.TopologyObject(name)
	if nrt == nil {
		return nil
	}
	if _, err := dyn.Resource(nrtGVR).Create(ctx, nrt, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating NodeResourceTopology %s: %w", name, err)
	}
	return nil
}

// TopologyObject is the node's NodeResourceTopology, its CPUs and memory
// split evenly into NUMAZones zones, as node-feature-discovery's
// topology-updater publishes it; nil without zones.
func (h HardwareClass) TopologyObject(name string) *unstructured.Unstructured {
	if h.NUMAZones == 0 {
		return nil
	}
	memory := resource.MustParse(h.Memory)
	cpus, mem := fmt.Sprint(h.CPUs/int64(h.NUMAZones)), fmt.Sprint(memory.Value()/int64(h.NUMAZones))
	var zones []interface{}
	for i := 0; i < h.NUMAZones; i++ {
		zones = append(zones, map[string]interface{}{
			"name": fmt.Sprintf("node-%d", i), "type": "Node",
			"resources": []interface{}{
				map[string]interface{}{"name": "cpu", "capacity": cpus, "allocatable": cpus, "available": cpus},
				map[string]interface{}{"name": "memory", "capacity": mem, "allocatable": mem, "available": mem},
			},
		})
	}
	return &unstructured.Unstructured{Object: map[string]interface{}{
		"apiVersion": "topology.node.k8s.io/v1alpha2", "kind": "NodeResourceTopology",
		"metadata":         map[string]interface{}{"name": name},
		"topologyPolicies": []interface{}{"None"},
		"zones":            zones,
	}}
}
