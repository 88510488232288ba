package hugepages

import (
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"

	"github.com/kubevirt/virt-advisor/pkg/apis/advisor/v1alpha1"
	"github.com/kubevirt/virt-advisor/pkg/profiles"
)

// examples are the defaults on the worker pool (the sample), 2M pages at
// the largest share and 1G pages at the smallest, on three workers of
// 64 GiB: what the admission policy's tests and the catalogue's tests run.
func examples() []profiles.Example {
	world := []*unstructured.Unstructured{
		Node("worker-0", "64Gi", nil), Node("worker-1", "64Gi", nil), Node("worker-2", "64Gi", nil),
	}
	opts := func(size string, percent, floor int32) v1alpha1.ProfileOptions {
		return v1alpha1.ProfileOptions{Hugepages: &v1alpha1.HugepagesConfig{Pool: "worker", PageSize: size, MemoryPercent: ptr.To(percent), FloorGiB: ptr.To(floor)}}
	}
	return []profiles.Example{
		{Name: Name, Options: v1alpha1.ProfileOptions{Hugepages: &v1alpha1.HugepagesConfig{Pool: "worker"}}, Objects: world},
		{Name: Name + ", 2M pages, the largest share", Options: opts("2M", MemoryPercent.Max, FloorGiB.Min), Objects: world},
		{Name: Name + ", 1G pages, 2 %", Options: opts("1G", 2, FloorGiB.Min), Objects: world},
		{Name: Name + ", 2M pages, the smallest share", Options: opts("2M", MemoryPercent.Min, 32), Objects: world},
	}
}

// Node is a worker Node with this allocatable memory and capacity of huge
// pages (resource name to quantity); its memory capacity is both, as a
// kubelet takes the huge pages out of allocatable memory.
func Node(name, memory string, hugePages map[string]string) *unstructured.Unstructured {
	total := resource.MustParse(memory)
	capacity := map[string]interface{}{"cpu": "16"}
	for k, v := range hugePages {
		capacity[k] = v
		total.Add(resource.MustParse(v))
	}
	capacity["memory"] = total.String()
	return &unstructured.Unstructured{Object: map[string]interface{}{
		"apiVersion": "v1", "kind": "Node",
		"metadata": map[string]interface{}{"name": name, "labels": map[string]interface{}{"node-role.kubernetes.io/worker": ""}},
		"status":   map[string]interface{}{"capacity": capacity, "allocatable": map[string]interface{}{"cpu": "16", "memory": memory}},
	}}
}
