package cluster

import (
	"slices"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// VirtualMachineInstanceMigrationGVK is KubeVirt's live migration.
var VirtualMachineInstanceMigrationGVK = schema.GroupVersionKind{Group: "kubevirt.io", Version: "v1", Kind: "VirtualMachineInstanceMigration"}

// Migration is what the gates between the steps of a rollout read of a
// VirtualMachineInstanceMigration: which VM, off which node, since when,
// how it ended.
type Migration struct {
	Namespace, Name string
	// VMI is spec.vmiName; Source status.migrationState.sourceNode ("":
	// not known yet); Phase status.phase.
	VMI, Source, Phase string
	Created            time.Time
}

// CachedMigration is a Migration as the cache keeps it.
type CachedMigration struct {
	ResourceVersion string
	Migration       Migration
}

// GetObjectMeta is what the informer keys the migration by.
func (m *CachedMigration) GetObjectMeta() metav1.Object {
	return &metav1.ObjectMeta{Namespace: m.Migration.Namespace, Name: m.Migration.Name, ResourceVersion: m.ResourceVersion}
}

// GetObjectKind: the cache holds one kind.
func (m *CachedMigration) GetObjectKind() schema.ObjectKind { return schema.EmptyObjectKind }

// DeepCopyObject copies the migration (all its fields are values).
func (m *CachedMigration) DeepCopyObject() runtime.Object {
	out := *m
	return &out
}

// slimMigration keeps of a migration what Migration holds.
func slimMigration(obj interface{}) (interface{}, error) {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return obj, nil
	}
	return &CachedMigration{ResourceVersion: u.GetResourceVersion(), Migration: ReadMigration(u)}, nil
}

// ReadMigration reads a VirtualMachineInstanceMigration.
func ReadMigration(u *unstructured.Unstructured) Migration {
	m := Migration{Namespace: u.GetNamespace(), Name: u.GetName(), Created: u.GetCreationTimestamp().Time}
	m.VMI, _, _ = unstructured.NestedString(u.Object, "spec", "vmiName")
	m.Phase, _, _ = unstructured.NestedString(u.Object, "status", "phase")
	m.Source, _, _ = unstructured.NestedString(u.Object, "status", "migrationState", "sourceNode")
	return m
}

// Migrations returns the cached live migrations, sorted by namespace and
// name, shared; ok is false until the cache has synced, and when the
// cluster does not serve them (the caller reads live, which tells).
func (c *NodeVMCache) Migrations() (migrations []Migration, ok bool) {
	c.mu.Lock()
	s := c.migrations
	if s == nil && c.ctx != nil {
		gvk := VirtualMachineInstanceMigrationGVK
		if mapping, err := c.mapper.RESTMapping(gvk.GroupKind(), gvk.Version); err == nil {
			s = c.startLocked(mapping.Resource.Resource, c.dynamicListWatch(mapping.Resource, false), &unstructured.Unstructured{}, slimMigration)
			c.migrations = s
		}
	}
	c.mu.Unlock()
	if s == nil || !s.informer.HasSynced() {
		return nil, false
	}
	view := s.current(func(items []interface{}) any {
		out := make([]Migration, 0, len(items))
		for _, o := range items {
			if m, isM := o.(*CachedMigration); isM {
				out = append(out, m.Migration)
			}
		}
		slices.SortFunc(out, func(a, b Migration) int {
			if c := strings.Compare(a.Namespace, b.Namespace); c != 0 {
				return c
			}
			return strings.Compare(a.Name, b.Name)
		})
		return out
	})
	return view.([]Migration), true
}
