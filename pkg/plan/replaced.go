package plan

import (
	"bytes"
	"encoding/json"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubevirt/virt-advisor/pkg/apis/advisor/v1alpha1"
)

// MaxReplacedValue bounds the JSON of one recorded previous value: the
// record lives in the config's status, stored in etcd with the object
// (1.5 MiB at most). A larger value is recorded as such, without the
// value, and the revert leaves that field alone, saying why.
const MaxReplacedValue = 16 * 1024

// RecordReplaced notes in st what a write of item it replaced: for an
// object the write created, that it created it; for an object written
// over, each managed field the write changed and its value before (or
// that it was absent), kept from the first write that changed it, with
// the value the last write set. before is the target as read right before
// the write (nil: it did not exist), written the object the write
// returned. The revert plan (RevertItems) is computed from this record.
func RecordReplaced(st *v1alpha1.VirtPlatformConfigStatus, it *v1alpha1.VirtPlatformConfigItem, before, written *unstructured.Unstructured) {
	if written == nil || written.GetUID() == "" {
		return
	}
	i := replacedIndex(st.Replaced, written.GetUID())
	if i < 0 {
		// The create RecordReplacing noted before the write learns its UID.
		if i = pendingCreate(st.Replaced, it.TargetRef); i >= 0 {
			st.Replaced[i].UID = written.GetUID()
		}
	}
	if i < 0 {
		st.Replaced = append(st.Replaced, v1alpha1.ReplacedObject{TargetRef: it.TargetRef, UID: written.GetUID(), Created: before == nil})
		i = len(st.Replaced) - 1
	}
	rec := &st.Replaced[i]
	if rec.Created {
		return // the revert deletes the whole object
	}
	for _, path := range it.ManagedFields {
		now, nowSet := fieldValue(written, path)
		if j := replacedFieldIndex(rec.Fields, path); j >= 0 {
			// The write is made: a record noted before it is confirmed.
			rec.Fields[j].Written, rec.Fields[j].Pending = rawOf(now, nowSet), false
			continue
		}
		was, wasSet := fieldValue(before, path)
		if wasSet == nowSet && sameValue(was, now) {
			continue // this write did not change it
		}
		f := v1alpha1.ReplacedField{Path: path, Absent: !wasSet, Written: rawOf(now, nowSet)}
		if wasSet {
			f.Previous = rawOf(was, true)
		}
		rec.Fields = append(rec.Fields, f)
	}
}

// RecordReplacing notes in st, before a write of item it, what the write
// is about to replace, so that a crash between the write and the status
// that records it loses nothing: for an object it creates (before is
// nil), that it creates it (its UID is learnt after the write); for an
// object written over, each managed field its desired state changes, with
// its value before (or that it was absent), unless an earlier write
// recorded it first. What it notes is pending until RecordReplaced
// confirms it after the write (or after a retry that found the write
// made): the write may be refused, conflict or fail, and the next attempt
// notes again what it would replace then. It is true when the record
// changed: it must be stored before the write.
func RecordReplacing(st *v1alpha1.VirtPlatformConfigStatus, it *v1alpha1.VirtPlatformConfigItem, before *unstructured.Unstructured) bool {
	if before == nil {
		if pendingCreate(st.Replaced, it.TargetRef) >= 0 {
			return false
		}
		st.Replaced = append(st.Replaced, v1alpha1.ReplacedObject{TargetRef: it.TargetRef, Created: true})
		return true
	}
	changed := settlePendingCreate(st, it.TargetRef, before)
	i := replacedIndex(st.Replaced, before.GetUID())
	if i < 0 {
		st.Replaced = append(st.Replaced, v1alpha1.ReplacedObject{TargetRef: it.TargetRef, UID: before.GetUID()})
		i, changed = len(st.Replaced)-1, true
	}
	rec := &st.Replaced[i]
	if rec.Created {
		return changed // the revert deletes the whole object
	}
	desired := &unstructured.Unstructured{Object: map[string]interface{}{}}
	if it.DesiredState != nil {
		_ = json.Unmarshal(it.DesiredState.Raw, &desired.Object)
	}
	for _, path := range it.ManagedFields {
		was, wasSet := fieldValue(before, path)
		want, wantSet := fieldValue(desired, path)
		f := v1alpha1.ReplacedField{Path: path, Absent: !wasSet, Written: rawOf(want, wantSet), Pending: true}
		if wasSet {
			f.Previous = rawOf(was, true)
		}
		j := replacedFieldIndex(rec.Fields, path)
		switch {
		case j >= 0 && (!rec.Fields[j].Pending || sameRaw(was, wasSet, rec.Fields[j].Written)):
			// The first previous value is kept: confirmed, or the pending
			// write was made (a crash before its confirmation).
			continue
		case j >= 0:
			// The pending write was not made: what it would replace is
			// read again.
			if !equalField(rec.Fields[j], f) {
				rec.Fields[j], changed = f, true
			}
		case wasSet == wantSet && sameValue(was, want):
			continue // the write leaves it as it is
		default:
			rec.Fields, changed = append(rec.Fields, f), true
		}
	}
	return changed
}

// settlePendingCreate settles, once the target exists (before), the
// record of a create noted before a write that did not learn its UID:
// our own create, made before a crash, learns its UID; an object someone
// else created (our create was refused or never made) drops it. True when
// the record changed.
func settlePendingCreate(st *v1alpha1.VirtPlatformConfigStatus, ref v1alpha1.ObjectReference, before *unstructured.Unstructured) bool {
	i := pendingCreate(st.Replaced, ref)
	if i < 0 {
		return false
	}
	if OwnershipOf(st).MadeByUs(before) {
		st.Replaced[i].UID = before.GetUID()
		return true
	}
	st.Replaced = append(st.Replaced[:i], st.Replaced[i+1:]...)
	if len(st.Replaced) == 0 {
		st.Replaced = nil
	}
	return true
}

// equalField compares two field records.
func equalField(a, b v1alpha1.ReplacedField) bool {
	return a.Path == b.Path && a.Absent == b.Absent && a.Pending == b.Pending && sameRawExt(a.Previous, b.Previous) && sameRawExt(a.Written, b.Written)
}

func sameRawExt(a, b *runtime.RawExtension) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	return bytes.Equal(a.Raw, b.Raw)
}

// pendingCreate is the index of the record of a create noted before its
// write and not yet given its UID, -1 if none.
func pendingCreate(recs []v1alpha1.ReplacedObject, ref v1alpha1.ObjectReference) int {
	for i := range recs {
		if recs[i].Created && recs[i].UID == "" && recs[i].TargetRef == ref {
			return i
		}
	}
	return -1
}

// ForgetReplaced drops the record of a target a revert item has
// restored (or deleted): nothing of it is ours to restore any more.
func ForgetReplaced(st *v1alpha1.VirtPlatformConfigStatus, ref v1alpha1.ObjectReference) {
	out := st.Replaced[:0]
	for _, r := range st.Replaced {
		if r.TargetRef != ref {
			out = append(out, r)
		}
	}
	st.Replaced = out
	if len(out) == 0 {
		st.Replaced = nil
	}
}

// replacedIndex is the index of the record of an object by its UID, -1
// if none.
func replacedIndex(recs []v1alpha1.ReplacedObject, uid types.UID) int {
	for i := range recs {
		if uid != "" && recs[i].UID == uid {
			return i
		}
	}
	return -1
}

func replacedFieldIndex(fields []v1alpha1.ReplacedField, path string) int {
	for i := range fields {
		if fields[i].Path == path {
			return i
		}
	}
	return -1
}

// fieldValue is the value at a dot path of obj, and whether it is set.
func fieldValue(obj *unstructured.Unstructured, path string) (interface{}, bool) {
	if obj == nil {
		return nil, false
	}
	v, found, err := unstructured.NestedFieldNoCopy(obj.Object, strings.Split(path, ".")...)
	return v, found && err == nil
}

// rawOf is a value as recorded: nil when unset; a value too large to
// record is recorded as {} with tooLarge set in the JSON's place.
func rawOf(v interface{}, set bool) *runtime.RawExtension {
	if !set {
		return nil
	}
	raw, err := json.Marshal(v)
	if err != nil || len(raw) > MaxReplacedValue {
		raw = []byte(tooLargeValue)
	}
	return &runtime.RawExtension{Raw: raw}
}

// tooLargeValue stands for a value not recorded: too large for the status.
const tooLargeValue = `{"advisor.kubevirt.io/not-recorded":"larger than 16 KiB"}`

// recordedTooLarge is true for a value rawOf did not record.
func recordedTooLarge(r *runtime.RawExtension) bool {
	return r != nil && string(r.Raw) == tooLargeValue
}

// sameValue compares two values as JSON (an int64 read from the API and a
// float64 decoded from the record are the same number).
func sameValue(a, b interface{}) bool {
	ja, errA := json.Marshal(a)
	jb, errB := json.Marshal(b)
	return errA == nil && errB == nil && bytes.Equal(ja, jb)
}

// sameRaw compares a live value with a recorded one.
func sameRaw(live interface{}, set bool, rec *runtime.RawExtension) bool {
	if rec == nil || !set {
		return rec == nil && !set
	}
	var v interface{}
	if err := json.Unmarshal(rec.Raw, &v); err != nil {
		return false
	}
	return sameValue(live, v)
}
