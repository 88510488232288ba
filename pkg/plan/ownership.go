package plan

import (
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubevirt/virt-advisor/pkg/apis/advisor/v1alpha1"
	"github.com/kubevirt/virt-advisor/pkg/cluster"
	"github.com/kubevirt/virt-advisor/pkg/machineconfig"
	"github.com/kubevirt/virt-advisor/pkg/profiles"
)

// Ownership is what a config's status records of the objects virt-advisor
// wrote: by UID, whether it created them. Status is written only by the
// server, so this record, not the managed-by label that anyone who may
// patch an object can set, decides what a plan may delete.
type Ownership map[types.UID]bool

// OwnershipOf reads the record of a status.
func OwnershipOf(st *v1alpha1.VirtPlatformConfigStatus) Ownership {
	o := make(Ownership, len(st.WrittenObjects))
	for _, w := range st.WrittenObjects {
		o[w.UID] = w.Created
	}
	return o
}

// MadeByUs is true for an object virt-advisor created for this config
// (recorded by UID), or, when its UID is not recorded at all, one whose
// every managedFields entry is ours: made by the earlier operator (or an
// earlier version of this server), so nobody else ever wrote it. An
// object recorded as someone else's that we wrote over stays theirs, even
// when our force-apply took over all its fields.
func (o Ownership) MadeByUs(live *unstructured.Unstructured) bool {
	if live == nil {
		return false
	}
	if created, recorded := o[live.GetUID()]; recorded {
		return created
	}
	managers := live.GetManagedFields()
	if len(managers) == 0 {
		return false
	}
	for _, m := range managers {
		if m.Manager != cluster.FieldManager {
			return false
		}
	}
	return true
}

// RecordWrite notes in st that virt-advisor wrote obj for item it: created
// when the approved desired state carries our label (a plan keeps it only
// on objects it creates or that are ours), else written over. The label
// of the written object is not asked: anyone may have set it. The first
// record of a UID stands: an object that was someone else's never becomes
// ours by a later write.
func RecordWrite(st *v1alpha1.VirtPlatformConfigStatus, it *v1alpha1.VirtPlatformConfigItem, obj *unstructured.Unstructured, configName string) {
	if obj == nil || obj.GetUID() == "" {
		return
	}
	for _, w := range st.WrittenObjects {
		if w.UID == obj.GetUID() {
			return
		}
	}
	st.WrittenObjects = append(st.WrittenObjects, v1alpha1.WrittenObject{
		TargetRef: it.TargetRef, UID: obj.GetUID(),
		Created: machineconfig.DesiredLabels(it.DesiredState)[profiles.ManagedByLabel] == configName,
	})
}

// ForgetWrite drops the record of a deleted object.
func ForgetWrite(st *v1alpha1.VirtPlatformConfigStatus, uid types.UID) {
	out := st.WrittenObjects[:0]
	for _, w := range st.WrittenObjects {
		if w.UID != uid {
			out = append(out, w)
		}
	}
	st.WrittenObjects = out
	if len(out) == 0 {
		st.WrittenObjects = nil
	}
}
