package kubevirt

import (
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// VirtualMachineInstanceGVK is KubeVirt's VMI.
var VirtualMachineInstanceGVK = schema.GroupVersionKind{Group: "kubevirt.io", Version: "v1", Kind: "VirtualMachineInstance"}

// NodeNameLabel is the label KubeVirt puts on a VirtualMachineInstance with
// the node it runs on (as status.nodeName).
const NodeNameLabel = "kubevirt.io/nodeName"

// VMI is what the eviction webhook reads of a VirtualMachineInstance (the
// drain assessment of package disruption).
type VMI struct {
	Namespace, Name string
	// Node is status.nodeName (the label kubevirt.io/nodeName if unset).
	Node  string
	Phase string
	// Strategy is spec.evictionStrategy, "" when unset.
	Strategy string
	// Migratable is the LiveMigratable condition being True; Condition
	// whether the condition is there at all, Reason its reason.
	Migratable, Condition bool
	Reason                string
	// Ready is the Ready condition being True (the gates between the
	// steps of a rollout ask it again of the VMs a step moved).
	Ready bool
}

// CompareVMIs orders VMIs by namespace and name.
func CompareVMIs(a, b VMI) int {
	if n := strings.Compare(a.Namespace, b.Namespace); n != 0 {
		return n
	}
	return strings.Compare(a.Name, b.Name)
}

// ReadVMI reads a VirtualMachineInstance.
func ReadVMI(u *unstructured.Unstructured) VMI {
	v := VMI{Namespace: u.GetNamespace(), Name: u.GetName()}
	v.Node, _, _ = unstructured.NestedString(u.Object, "status", "nodeName")
	if v.Node == "" {
		v.Node = u.GetLabels()[NodeNameLabel]
	}
	v.Phase, _, _ = unstructured.NestedString(u.Object, "status", "phase")
	v.Strategy, _, _ = unstructured.NestedString(u.Object, "spec", "evictionStrategy")
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, c := range conds {
		m, ok := c.(map[string]interface{})
		if ok && m["type"] == "Ready" {
			v.Ready = m["status"] == "True"
		}
		if !ok || m["type"] != "LiveMigratable" {
			continue
		}
		v.Condition = true
		v.Migratable = m["status"] == "True"
		v.Reason, _ = m["reason"].(string)
	}
	return v
}

// Running is true for a VMI that has a node and has not ended: only those
// have a virt-launcher pod a drain evicts.
func (v VMI) Running() bool {
	return v.Node != "" && v.Phase != "Succeeded" && v.Phase != "Failed"
}
