package dedicatedcpus

import (
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"

	"github.com/kubevirt/virt-advisor/pkg/apis/advisor/v1alpha1"
	"github.com/kubevirt/virt-advisor/pkg/hardware"
	"github.com/kubevirt/virt-advisor/pkg/machineconfig"
	"github.com/kubevirt/virt-advisor/pkg/profiles"
)

// examples are a pool worker-cnv of two nodes with 64 CPUs in two NUMA
// zones (the sample), then every option at each end of its range and each
// topology manager policy, and the worker pool allowed: what the admission
// policy's tests and the catalogue's tests run.
func examples() []profiles.Example {
	world := []*unstructured.Unstructured{
		Pool("worker-cnv"),
		Node("cnv-0", "worker-cnv", 64, true), Node("cnv-1", "worker-cnv", 64, true),
		Topology("cnv-0", 32, 32), Topology("cnv-1", 32, 32),
	}
	workers := []*unstructured.Unstructured{Node("worker-0", "worker", 16, false), Node("worker-1", "worker", 16, false)}
	opts := func(pool, policy string, cores int32) v1alpha1.ProfileOptions {
		return v1alpha1.ProfileOptions{DedicatedCPUs: &v1alpha1.DedicatedCPUsConfig{Pool: pool, TopologyManagerPolicy: policy, ReservedCoresPerZone: ptr.To(cores)}}
	}
	out := []profiles.Example{{Name: Name, Objects: world, Options: v1alpha1.ProfileOptions{DedicatedCPUs: &v1alpha1.DedicatedCPUsConfig{Pool: "worker-cnv"}}}}
	for _, policy := range TopologyManagerPolicies {
		out = append(out, profiles.Example{Name: Name + ", " + policy, Objects: world, Options: opts("worker-cnv", policy, 1)})
	}
	out = append(out,
		profiles.Example{Name: Name + ", the most cores reserved", Objects: world, Options: opts("worker-cnv", "restricted", ReservedCoresPerZone.Max)},
		profiles.Example{Name: Name + ", every worker", Objects: workers, Options: v1alpha1.ProfileOptions{DedicatedCPUs: &v1alpha1.DedicatedCPUsConfig{
			Pool: machineconfig.WorkerPool, AllowAllWorkers: ptr.To(true), ReservedCoresPerZone: ptr.To(ReservedCoresPerZone.Min)}}},
	)
	return out
}

// Pool is a custom MachineConfigPool as OpenShift documents them: it
// renders the worker MachineConfigs and its own, selects nodes by their
// role label, and carries its own pool label (what a KubeletConfig
// selects it by).
func Pool(name string) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]interface{}{
		"apiVersion": machineconfig.MachineConfigPoolGVK.GroupVersion().String(), "kind": machineconfig.MachineConfigPoolGVK.Kind,
		"metadata": map[string]interface{}{"name": name, "labels": map[string]interface{}{machineconfig.PoolLabelPrefix + name: ""}},
		"spec": map[string]interface{}{
			"machineConfigSelector": map[string]interface{}{"matchExpressions": []interface{}{map[string]interface{}{
				"key": machineconfig.RoleLabel, "operator": "In", "values": []interface{}{machineconfig.WorkerPool, name}}}},
			"nodeSelector": map[string]interface{}{"matchLabels": map[string]interface{}{"node-role.kubernetes.io/" + name: ""}},
		},
	}}
}

// Node is a node of role (and of worker) with cpus CPUs and 256 GiB, its
// CPU vendor and multithreading labelled as node-feature-discovery does.
func Node(name, role string, cpus int, smt bool) *unstructured.Unstructured {
	labels := map[string]interface{}{"node-role.kubernetes.io/worker": "", "node-role.kubernetes.io/" + role: "", hardware.VendorLabel: "GenuineIntel"}
	if smt {
		labels[hardware.MultithreadingLabel] = "true"
	}
	c := fmt.Sprint(cpus)
	return &unstructured.Unstructured{Object: map[string]interface{}{
		"apiVersion": "v1", "kind": "Node",
		"metadata": map[string]interface{}{"name": name, "labels": labels},
		"status": map[string]interface{}{
			"capacity":    map[string]interface{}{"cpu": c, "memory": "256Gi"},
			"allocatable": map[string]interface{}{"cpu": c, "memory": "250Gi"},
			"nodeInfo":    map[string]interface{}{"architecture": "amd64"},
		},
	}}
}

// Topology is a node's NodeResourceTopology with NUMA zones node-0, node-1…
// of these CPUs and 128 GiB each.
func Topology(node string, zoneCPUs ...int) *unstructured.Unstructured {
	zones := make([]interface{}, len(zoneCPUs))
	for i, c := range zoneCPUs {
		zones[i] = map[string]interface{}{"name": fmt.Sprintf("node-%d", i), "type": "Node", "resources": []interface{}{
			map[string]interface{}{"name": "cpu", "capacity": fmt.Sprint(c), "allocatable": fmt.Sprint(c), "available": fmt.Sprint(c)},
			map[string]interface{}{"name": "memory", "capacity": "128Gi", "allocatable": "125Gi", "available": "125Gi"},
		}}
	}
	return &unstructured.Unstructured{Object: map[string]interface{}{
		"apiVersion": hardware.NodeResourceTopologyGVK.GroupVersion().String(), "kind": hardware.NodeResourceTopologyGVK.Kind,
		"metadata":         map[string]interface{}{"name": node},
		"topologyPolicies": []interface{}{"None"},
		"zones":            zones,
	}}
}
