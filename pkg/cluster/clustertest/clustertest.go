// Package clustertest builds what tests of cluster access need: a static
// RESTMapper and objects as kube-apiserver serves them.
package clustertest

import (
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Mapper is a static RESTMapper with the no-op Reset that the settling
// mapper of cluster access has.
type Mapper struct{ meta.RESTMapper }

// Reset does nothing: the kinds are fixed.
func (Mapper) Reset() {}

// Namespaced maps namespaced kinds.
func Namespaced(gvks ...schema.GroupVersionKind) Mapper {
	return mapper(meta.RESTScopeNamespace, gvks)
}

// ClusterScoped maps cluster-scoped kinds, as MachineConfigs are.
func ClusterScoped(gvks ...schema.GroupVersionKind) Mapper {
	return mapper(meta.RESTScopeRoot, gvks)
}

func mapper(scope meta.RESTScope, gvks []schema.GroupVersionKind) Mapper {
	var gvs []schema.GroupVersion
	for _, gvk := range gvks {
		gvs = append(gvs, gvk.GroupVersion())
	}
	m := meta.NewDefaultRESTMapper(gvs)
	for _, gvk := range gvks {
		m.Add(gvk, scope)
	}
	return Mapper{m}
}

// VMI is a running VirtualMachineInstance on node with an eviction
// strategy and its LiveMigratable condition (status, reason).
func VMI(name, node, strategy, migratable, reason string) unstructured.Unstructured {
	return unstructured.Unstructured{Object: map[string]interface{}{
		"apiVersion": "kubevirt.io/v1", "kind": "VirtualMachineInstance",
		"metadata": map[string]interface{}{"namespace": "default", "name": name, "labels": map[string]interface{}{"kubevirt.io/nodeName": node}},
		"spec":     map[string]interface{}{"evictionStrategy": strategy, "domain": map[string]interface{}{"devices": map[string]interface{}{}}},
		"status": map[string]interface{}{"nodeName": node, "phase": "Running", "conditions": []interface{}{
			map[string]interface{}{"type": "LiveMigratable", "status": migratable, "reason": reason}}},
	}}
}

// SetAppliers records managers as having applied u's fields (server-side
// apply), as managedFields tell who wrote an object.
func SetAppliers(u *unstructured.Unstructured, managers ...string) {
	var entries []metav1.ManagedFieldsEntry
	for _, m := range managers {
		entries = append(entries, metav1.ManagedFieldsEntry{Manager: m, Operation: metav1.ManagedFieldsOperationApply})
	}
	u.SetManagedFields(entries)
}
