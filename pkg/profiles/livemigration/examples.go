package livemigration

import (
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"

	"github.com/kubevirt/virt-advisor/pkg/apis/advisor/v1alpha1"
	"github.com/kubevirt/virt-advisor/pkg/kubevirt"
	"github.com/kubevirt/virt-advisor/pkg/profiles"
)

// examples are the defaults (the sample), and every option at each end of
// its range, on three worker nodes running two VMs: what the admission
// policy's tests and the catalogue's tests run.
func examples() []profiles.Example {
	world := []*unstructured.Unstructured{
		Node("worker-0"), Node("worker-1"), Node("worker-2"),
		VMI("vm-a", "worker-0", "8Gi"), VMI("vm-b", "worker-1", "16Gi"),
	}
	opts := func(gbps, share, perNode int32, completion, progress int64) v1alpha1.ProfileOptions {
		return v1alpha1.ProfileOptions{LiveMigrationLimits: &v1alpha1.LiveMigrationLimitsConfig{
			MigrationNetworkGbps: ptr.To(gbps), NetworkSharePercent: ptr.To(share), ParallelOutboundMigrationsPerNode: ptr.To(perNode),
			CompletionTimeoutPerGiB: ptr.To(completion), ProgressTimeout: ptr.To(progress)}}
	}
	return []profiles.Example{
		{Name: Name, Options: v1alpha1.ProfileOptions{LiveMigrationLimits: &v1alpha1.LiveMigrationLimitsConfig{}}, Objects: world},
		{Name: Name + ", every option at its maximum", Objects: world,
			Options: opts(NetworkGbps.Max, NetworkSharePercent.Max, OutboundPerNode.Max, int64(CompletionTimeoutPerGiB.Max), int64(ProgressTimeout.Max))},
		{Name: Name + ", every option at its minimum", Objects: world,
			Options: opts(NetworkGbps.Min, NetworkSharePercent.Min, OutboundPerNode.Min, int64(CompletionTimeoutPerGiB.Min), int64(ProgressTimeout.Min))},
	}
}

// Node is a schedulable worker Node.
func Node(name string) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]interface{}{
		"apiVersion": "v1", "kind": "Node",
		"metadata": map[string]interface{}{"name": name, "labels": map[string]interface{}{"node-role.kubernetes.io/worker": ""}},
	}}
}

// VMI is a running VirtualMachineInstance with guest memory on a node.
func VMI(name, node, memory string) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]interface{}{
		"apiVersion": kubevirt.VirtualMachineInstanceGVK.GroupVersion().String(), "kind": kubevirt.VirtualMachineInstanceGVK.Kind,
		"metadata": map[string]interface{}{"namespace": "vms", "name": name, "labels": map[string]interface{}{kubevirt.NodeNameLabel: node}},
		"spec":     map[string]interface{}{"domain": map[string]interface{}{"memory": map[string]interface{}{"guest": memory}}},
		"status":   map[string]interface{}{"phase": "Running", "nodeName": node},
	}}
}
