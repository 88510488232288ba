package plan

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubevirt/virt-advisor/pkg/apis/advisor/v1alpha1"
	"github.com/kubevirt/virt-advisor/pkg/machineconfig"
	"github.com/kubevirt/virt-advisor/pkg/profiles"
)

// RevertItemPrefix starts the name of every item of a revert plan.
const RevertItemPrefix = "revert-"

// ComputeRevertLive returns the revert plan of a config, for an API
// request: the items that restore what status.replaced recorded, planned
// by the same steps as any plan (dry-runs, diffs, reboot and VM notes,
// windows, hash). A revert is a different set of desired items through
// the same engine.
func (e *Engine) ComputeRevertLive(ctx context.Context, cfg *v1alpha1.VirtPlatformConfig) (*Result, error) {
	profile, ok := e.Profiles.Get(cfg.Spec.Profile)
	if !ok {
		return nil, fmt.Errorf("unknown profile %q", cfg.Spec.Profile)
	}
	rp := &revertProfile{Profile: profile, replaced: cfg.Status.Replaced}
	res, err := e.computeWith(ctx, cfg, rp, liveInputs)
	if e.Metrics != nil && !errors.Is(err, context.Canceled) {
		e.Metrics.PlanComputed(cfg.Spec.Profile, err != nil || res.itemFailed())
	}
	return res, err
}

// IsRevertItem is true for an item of a revert plan.
func IsRevertItem(name string) bool { return strings.HasPrefix(name, RevertItemPrefix) }

// revertProfile is the profile whose items restore a record: what the
// profile's writes replaced. It needs no prerequisite (an object whose
// API is gone has nothing left to restore) and reads no input.
type revertProfile struct {
	profiles.Profile
	replaced []v1alpha1.ReplacedObject
}

func (p *revertProfile) Prerequisites(v1alpha1.ProfileOptions) []profiles.Prerequisite { return nil }
func (p *revertProfile) InputObjects(v1alpha1.ProfileOptions) []profiles.ObjectRef     { return nil }
func (p *revertProfile) DescribeInputChange(string, map[string]interface{}, map[string]interface{}) string {
	return ""
}

// Items reads each recorded target and restores it (RevertItems).
func (p *revertProfile) Items(ctx context.Context, in profiles.Inputs) ([]profiles.Item, error) {
	records := map[v1alpha1.ObjectReference]int{}
	for _, r := range p.replaced {
		records[r.TargetRef]++
	}
	read := map[v1alpha1.ObjectReference]*unstructured.Unstructured{}
	live := make([]*unstructured.Unstructured, len(p.replaced))
	for i, r := range p.replaced {
		if r.Created && records[r.TargetRef] == 1 {
			continue // planned as a Delete: the engine reads it
		}
		obj, ok := read[r.TargetRef]
		if !ok {
			var err error
			if obj, err = in.Cluster.Get(ctx, TargetGVK(r.TargetRef), r.TargetRef.Namespace, r.TargetRef.Name); err != nil {
				return nil, fmt.Errorf("reading %s %s: %w", r.TargetRef.Kind, r.TargetRef.Name, err)
			}
			read[r.TargetRef] = obj
		}
		live[i] = obj
	}
	return RevertItems(p.replaced, live), nil
}

// RevertItems are the items that restore a record, given each recorded
// target as it is now (live, by index; ignored for an object created,
// unless the target has several records): first the objects written
// over, each field back to its previous value (or removed, when it was
// absent) unless someone else changed it since virt-advisor wrote it (a
// conflict: left alone, said in a warning), then the objects
// virt-advisor created, deleted (the engine deletes only an object whose
// UID the status records as ours). Restoring settings before deleting
// objects undoes a profile in the reverse of its order: the
// HyperConverged's overcommit is lowered before the swap that backs it
// goes. Each target has one item at most (revertedRecords).
func RevertItems(replaced []v1alpha1.ReplacedObject, live []*unstructured.Unstructured) []profiles.Item {
	var restores, deletes []profiles.Item
	for _, i := range revertedRecords(replaced, live) {
		r := replaced[i]
		if r.Created {
			deletes = append(deletes, deleteItem(r))
			continue
		}
		if it, ok := restoreItem(r, live[i]); ok {
			restores = append(restores, it)
		}
	}
	return append(restores, deletes...)
}

// revertedRecords are the indexes of the records the revert acts on, one
// per target: a target recorded under several UIDs (deleted and created
// again between two writes) is reverted from the record of the object
// there now; the records of objects deleted since have nothing left to
// restore. When the object there now is none of those recorded, the
// last record stands for it: its fields are conflicts, or, created, the
// engine leaves someone else's object in place.
func revertedRecords(replaced []v1alpha1.ReplacedObject, live []*unstructured.Unstructured) []int {
	var out []int
	seen := map[v1alpha1.ObjectReference]bool{}
	for i, r := range replaced {
		if seen[r.TargetRef] {
			continue
		}
		seen[r.TargetRef] = true
		same := recordsOf(replaced, r.TargetRef)
		if len(same) == 1 {
			out = append(out, i)
			continue
		}
		now := live[i]
		if now == nil {
			continue // gone: nothing to restore nor to delete
		}
		pick := same[len(same)-1]
		for _, j := range same {
			if replaced[j].UID == now.GetUID() {
				pick = j
			}
		}
		out = append(out, pick)
	}
	return out
}

// recordsOf are the indexes of the records of a target.
func recordsOf(replaced []v1alpha1.ReplacedObject, ref v1alpha1.ObjectReference) []int {
	var out []int
	for i := range replaced {
		if replaced[i].TargetRef == ref {
			out = append(out, i)
		}
	}
	return out
}

// revertItemName names the item that reverts a target.
func revertItemName(ref v1alpha1.ObjectReference) string {
	return RevertItemPrefix + strings.ToLower(ref.Kind) + "-" + ref.Name
}

// identity is the object with only its apiVersion, kind, name and
// namespace.
func identity(ref v1alpha1.ObjectReference) *unstructured.Unstructured {
	obj := &unstructured.Unstructured{Object: map[string]interface{}{}}
	obj.SetAPIVersion(ref.APIVersion)
	obj.SetKind(ref.Kind)
	obj.SetName(ref.Name)
	if ref.Namespace != "" {
		obj.SetNamespace(ref.Namespace)
	}
	return obj
}

// deleteItem deletes an object virt-advisor created.
func deleteItem(r v1alpha1.ReplacedObject) profiles.Item {
	impact := v1alpha1.ImpactMedium
	if machineconfig.RollsPools(r.TargetRef) {
		impact = v1alpha1.ImpactHigh // its removal rolls its pools
	}
	return profiles.Item{
		Name: revertItemName(r.TargetRef), Desired: identity(r.TargetRef), Owned: true, Absent: true, Impact: impact,
		Message: fmt.Sprintf("Delete %s '%s': virt-advisor created it", r.TargetRef.Kind, r.TargetRef.Name),
	}
}

// restoreItem restores the fields of an object written over; false when
// the object is gone (nothing to restore; a desired state would create
// it).
func restoreItem(r v1alpha1.ReplacedObject, live *unstructured.Unstructured) (profiles.Item, bool) {
	if live == nil {
		return profiles.Item{}, false // deleted since: nothing to restore
	}
	desired := identity(r.TargetRef)
	it := profiles.Item{Name: revertItemName(r.TargetRef), Desired: desired, ShowVersion: true}
	var restored []string
	for _, f := range r.Fields {
		if f.Pending && !holdsWritten(live, f) {
			continue // noted before a write that was not made: nothing of ours
		}
		// The snapshot binds every recorded field, conflicts too: one
		// that changes after the review makes the approved plan stale.
		it.ManagedFields = append(it.ManagedFields, f.Path)
		if why := conflict(f, live, r.UID); why != "" {
			it.Warnings = append(it.Warnings, fmt.Sprintf("conflict: %s of %s '%s' %s; the revert leaves it alone", f.Path, r.TargetRef.Kind, r.TargetRef.Name, why))
			continue
		}
		restored = append(restored, f.Path)
		if f.Absent {
			continue // left out of the apply: removed, as only we own it
		}
		var v interface{}
		_ = json.Unmarshal(f.Previous.Raw, &v) // recorded by RecordReplaced
		_ = unstructured.SetNestedField(desired.Object, v, strings.Split(f.Path, ".")...)
	}
	if len(it.ManagedFields) == 0 {
		return profiles.Item{}, false // only writes that were not made
	}
	if len(restored) == 0 {
		// Planned all the same: the plan shows the conflicts, and the
		// apply of nothing but the object's name writes nothing of theirs.
		it.Message = fmt.Sprintf("Nothing of %s '%s' is restored: every field virt-advisor wrote there was changed since", r.TargetRef.Kind, r.TargetRef.Name)
		return it, true
	}
	it.Message = fmt.Sprintf("Restore %s of %s '%s' as they were before virt-advisor wrote them", strings.Join(restored, ", "), r.TargetRef.Kind, r.TargetRef.Name)
	return it, true
}

// holdsWritten is true when live's field holds what the record says was
// written there.
func holdsWritten(live *unstructured.Unstructured, f v1alpha1.ReplacedField) bool {
	now, set := fieldValue(live, f.Path)
	return sameRaw(now, set, f.Written)
}

// conflict says why a recorded field cannot be restored: someone else
// changed it since virt-advisor wrote it, or its previous value was too
// large to record; "" when it can.
func conflict(f v1alpha1.ReplacedField, live *unstructured.Unstructured, uid types.UID) string {
	if live.GetUID() != uid {
		return fmt.Sprintf("belongs to an object deleted and created again since virt-advisor wrote it (UID %s, now %s)", uid, live.GetUID())
	}
	if !holdsWritten(live, f) {
		now, set := fieldValue(live, f.Path)
		return fmt.Sprintf("was changed by someone else since virt-advisor wrote it (virt-advisor wrote %s, it is now %s)", recordedShown(f.Written), shown(set, now))
	}
	if recordedTooLarge(f.Previous) {
		return fmt.Sprintf("its previous value was larger than %d bytes and was not recorded", MaxReplacedValue)
	}
	return ""
}

// recordedShown is a recorded value in a message: its JSON, or "absent".
func recordedShown(r *runtime.RawExtension) string {
	if r == nil {
		return "absent"
	}
	return string(r.Raw)
}

// shown is a value in a message: its JSON, or "absent".
func shown(set bool, v interface{}) string {
	if !set {
		return "absent"
	}
	raw, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(raw)
}

var _ profiles.Profile = &revertProfile{}
