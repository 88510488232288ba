package pcipassthrough

import (
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kubevirt/virt-advisor/pkg/apis/advisor/v1alpha1"
	"github.com/kubevirt/virt-advisor/pkg/hardware"
	"github.com/kubevirt/virt-advisor/pkg/profiles"
)

// examples are the worker pool of Intel nodes (the sample) and of AMD
// nodes: what the admission policy's tests and the catalogue's tests run.
func examples() []profiles.Example {
	opts := v1alpha1.ProfileOptions{PciPassthrough: &v1alpha1.PciPassthroughConfig{Pool: "worker"}}
	return []profiles.Example{
		{Name: Name, Options: opts, Objects: []*unstructured.Unstructured{Node("worker-0", Intel), Node("worker-1", Intel), Node("worker-2", Intel)}},
		{Name: Name + ", AMD", Options: opts, Objects: []*unstructured.Unstructured{Node("worker-0", AMD), Node("worker-1", AMD), Node("worker-2", AMD)}},
	}
}

// Node is a worker Node with this CPU vendor label ("" for none).
func Node(name, vendor string) *unstructured.Unstructured {
	labels := map[string]interface{}{"node-role.kubernetes.io/worker": ""}
	if vendor != "" {
		labels[hardware.VendorLabel] = vendor
	}
	return &unstructured.Unstructured{Object: map[string]interface{}{
		"apiVersion": "v1", "kind": "Node",
		"metadata": map[string]interface{}{"name": name, "labels": labels},
	}}
}
