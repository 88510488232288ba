package plan

import (
	"context"
	"encoding/json"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/client-go/dynamic"

	"github.com/kubevirt/virt-advisor/pkg/apis/advisor/v1alpha1"
	"github.com/kubevirt/virt-advisor/pkg/cluster"
	"github.com/kubevirt/virt-advisor/pkg/machineconfig"
	"github.com/kubevirt/virt-advisor/pkg/profiles"
)

type plannedItem struct {
	item     v1alpha1.PlanItem
	desired  map[string]interface{}
	snapshot map[string]interface{}
	key      string
	skip     bool // an Absent item whose object is already gone
	// differs: the managed fields the live target does not hold as
	// desired; nil when there is no target or no desired state.
	differs []string
	// target is the live target as planned against.
	target v1alpha1.ReviewedTarget
	// rolls is what the pools that render the item are found by, from
	// what it writes or, for a Delete, the live object (the pools that
	// render it are the pools that roll its removal).
	rolls machineconfig.Change
	// change is the spec before and after, for a MachineConfig (for a
	// KubeletConfig, of the MachineConfig generated from it).
	change mcChange
	// applied is the profile's desired object (Result.Desired) and
	// warnings are the profile's warnings about the item.
	applied  *unstructured.Unstructured
	warnings []string
}

// hashed is the item as the plan hash binds it. The operation of an item
// that could not be planned is shown, not bound (it is never written):
// plans hashed before it was shown keep their hash.
func (p *plannedItem) hashed() map[string]interface{} {
	op := p.item.Operation
	if p.item.Error != "" {
		op = ""
	}
	return map[string]interface{}{
		"name": p.item.Name, "targetRef": p.item.TargetRef, "operation": op, "desiredState": p.desired, "error": p.item.Error,
	}
}

// itemCheck is what an item's own check (profiles.Item.Check) said.
type itemCheck struct {
	sentence string
	warnings []string
}

// addProfileNotes adds what the profile says of the item besides its
// planning: its check's sentence and warnings, and its desired object.
func (p *plannedItem) addProfileNotes(it profiles.Item, check itemCheck) {
	if check.sentence != "" && !p.skip {
		p.item.Message += ". " + check.sentence
	}
	p.warnings = append(it.Warnings[:len(it.Warnings):len(it.Warnings)], check.warnings...)
	p.applied = it.Desired
}

// planItemSafely plans an item; a panic in a profile or in the engine
// fails that item, never the server.
func (e *Engine) planItemSafely(ctx context.Context, configName string, owned Ownership, it profiles.Item, snap *inputReader) (p plannedItem) {
	defer func() {
		if r := recover(); r != nil {
			utilruntime.HandleError(fmt.Errorf("planning item %q of %s panicked: %v", it.Name, configName, r))
			p = panicked(it, r)
		}
	}()
	return e.planItem(ctx, configName, owned, it, snap)
}

// panicked is the item whose planning panicked with r.
func panicked(it profiles.Item, r interface{}) plannedItem {
	p := plannedItem{item: v1alpha1.PlanItem{Name: it.Name, ImpactSeverity: v1alpha1.ImpactMedium,
		Error: fmt.Sprintf("internal error while planning this item (%v); the server log has the details", r)},
		snapshot: map[string]interface{}{"__state": "ERROR"}}
	if it.Desired != nil {
		gvk := it.Desired.GroupVersionKind()
		p.item.TargetRef = v1alpha1.ObjectReference{APIVersion: gvk.GroupVersion().String(), Kind: gvk.Kind, Name: it.Desired.GetName(), Namespace: it.Desired.GetNamespace()}
		p.key = snapshotKey(gvk, it.Desired.GetNamespace(), it.Desired.GetName())
	}
	return p
}

// planItem reads an item's target and its dry-run from the cluster, then
// plans the item from them (planFrom).
func (e *Engine) planItem(ctx context.Context, configName string, owned Ownership, it profiles.Item, snap *inputReader) plannedItem {
	if it.Err != nil && it.Desired == nil {
		// A profile that could not derive its object at all: the item
		// says why, and has no target to show.
		return failed(plannedItem{item: v1alpha1.PlanItem{Name: it.Name, Message: it.Message}}, it.Impact, it.Err)
	}
	desired := desiredOf(it, configName)
	if it.Err != nil {
		return failed(newPlannedItem(it, desired), it.Impact, it.Err)
	}
	gvk := desired.GroupVersionKind()
	ri, err := e.Cluster.Resource(gvk, desired.GetNamespace())
	if it.Absent && meta.IsNoMatchError(err) {
		// The kind is not served (no MachineConfig API on a hosted
		// control plane, say): there is nothing of it to delete.
		p := newPlannedItem(it, desired)
		p.skip = true
		return p
	}
	if err != nil {
		return failed(newPlannedItem(it, desired), it.Impact, fmt.Errorf("resolving %s: %w", gvk.Kind, err))
	}
	read, err := readTarget(ctx, ri, desired, it.Absent, snap)
	if err != nil {
		return failed(newPlannedItem(it, desired), it.Impact, fmt.Errorf("reading %s %s: %w", gvk.Kind, cluster.ObjectName(desired.GetNamespace(), desired.GetName()), err))
	}
	ours := owned.MadeByUs(read.live)
	if relabels(it, read, ours) {
		// Someone else made this object: it is changed as the profile
		// needs, but never labelled ours, so never pruned.
		removeManagedBy(desired)
		read.dry, read.dryErr = dryRun(ctx, ri, desired)
	}
	return planFrom(it, desired, read, ours)
}

// desiredOf is the item's desired object, labelled as ours when the
// profile owns it.
func desiredOf(it profiles.Item, configName string) *unstructured.Unstructured {
	desired := it.Desired.DeepCopy()
	if it.Owned {
		labels := desired.GetLabels()
		if labels == nil {
			labels = map[string]string{}
		}
		labels[profiles.ManagedByLabel] = configName
		desired.SetLabels(labels)
	}
	return desired
}

// relabels is true when the item's owned object exists and someone else
// made it: its desired state loses the managed-by label.
func relabels(it profiles.Item, read targetRead, ours bool) bool {
	return it.Owned && read.live != nil && !ours && !it.Absent && read.dryErr == nil
}

func removeManagedBy(desired *unstructured.Unstructured) {
	labels := desired.GetLabels()
	delete(labels, profiles.ManagedByLabel)
	desired.SetLabels(labels)
}

// newPlannedItem is the item as the profile describes it, before anything
// is read.
func newPlannedItem(it profiles.Item, desired *unstructured.Unstructured) plannedItem {
	gvk := desired.GroupVersionKind()
	ns, name := desired.GetNamespace(), desired.GetName()
	p := plannedItem{
		key:     snapshotKey(gvk, ns, name),
		desired: desired.Object,
		item: v1alpha1.PlanItem{
			Name:          it.Name,
			TargetRef:     v1alpha1.ObjectReference{APIVersion: gvk.GroupVersion().String(), Kind: gvk.Kind, Name: name, Namespace: ns},
			Message:       it.Message,
			ManagedFields: it.ManagedFields,
		},
	}
	if raw, err := json.Marshal(desired.Object); err == nil {
		p.item.DesiredState = &runtime.RawExtension{Raw: raw}
	}
	return p
}

// failed is an item that cannot be planned: it fails when applied, and its
// live state is not part of what is reviewed.
func failed(p plannedItem, impact v1alpha1.Impact, err error) plannedItem {
	p.item.Error = err.Error()
	p.item.ImpactSeverity = impact
	if p.item.ImpactSeverity == "" {
		p.item.ImpactSeverity = v1alpha1.ImpactMedium
	}
	p.snapshot = map[string]interface{}{"__state": "ERROR"}
	return p
}

// planFrom plans an item from its desired state, its live target (nil:
// none) and the dry-run of the desired state over it: the operation, the
// diff, what the review binds, and what it changes of a MachineConfig.
// It reads nothing.
func planFrom(it profiles.Item, desired *unstructured.Unstructured, read targetRead, ours bool) plannedItem {
	p := newPlannedItem(it, desired)
	var err error
	if p.snapshot, p.target, err = reviewedState(read.live, it, desired); err != nil {
		return failed(p, it.Impact, err)
	}
	p.rolls = rolledBy(p.item.TargetRef, desired, read.live, it.Absent)
	if read.live != nil && !it.Absent {
		p.differs = differingFields(read.live.Object, desired.Object, it.ManagedFields)
	}
	p.change = machineConfigChange(p.item.TargetRef, read, it.Absent)
	p.item.ImpactSeverity = defaultImpact(it.Impact, read.live != nil)
	liveYAML, err := toYAML(sanitize(read.live))
	if err != nil {
		return failed(p, it.Impact, err)
	}
	if it.Absent {
		return planAbsent(p, it, desired, read.live != nil, ours, liveYAML)
	}
	return planWanted(p, it, desired, read, liveYAML)
}

// reviewedState is what the review binds of the live target: the values
// of its managed fields (and of the metadata the desired state sets),
// hashed whole and per field, and its UID.
func reviewedState(live *unstructured.Unstructured, it profiles.Item, desired *unstructured.Unstructured) (map[string]interface{}, v1alpha1.ReviewedTarget, error) {
	var bound boundMeta
	if !it.Absent {
		bound = boundMetaOf(desired) // a Delete sets nothing
	}
	snapshot := snapshotValue(live, it.ManagedFields, bound)
	var target v1alpha1.ReviewedTarget
	var err error
	if target.SnapshotHash, err = hashJSON(snapshot); err != nil {
		return nil, target, err
	}
	target.FieldHashes = fieldHashes(snapshot)
	if live != nil {
		target.UID = live.GetUID()
	}
	return snapshot, target, nil
}

// rolledBy is what the pools that render the item are found by: what it
// writes, or the live object for a Delete.
func rolledBy(ref v1alpha1.ObjectReference, desired, live *unstructured.Unstructured, absent bool) machineconfig.Change {
	if live != nil && absent {
		return machineconfig.ChangeOf(ref, live.Object)
	}
	return machineconfig.ChangeOf(ref, desired.Object)
}

// machineConfigChange is what the node disruption of an item that rolls
// pools (a MachineConfig, a KubeletConfig) is decided from: the rendered
// live spec and what the write leaves (the dry-run's answer). Other kinds
// change no node.
func machineConfigChange(ref v1alpha1.ObjectReference, read targetRead, absent bool) mcChange {
	if !machineconfig.RollsPools(ref) {
		return mcChange{}
	}
	change := mcChange{before: renderedSpecOf(ref, read.live)}
	if !absent && read.dryErr == nil {
		change.after = renderedSpecOf(ref, read.dry)
	}
	return change
}

// defaultImpact is the profile's impact of an item, else Low, Medium for
// an object created.
func defaultImpact(impact v1alpha1.Impact, exists bool) v1alpha1.Impact {
	switch {
	case impact != "":
		return impact
	case !exists:
		return v1alpha1.ImpactMedium
	}
	return v1alpha1.ImpactLow
}

// diffLabel names the item's object in its diff.
func diffLabel(it profiles.Item, gvk schema.GroupVersionKind, name string) string {
	if it.ShowVersion {
		return fmt.Sprintf("%s (%s %s)", name, gvk.Kind, gvk.GroupVersion())
	}
	return fmt.Sprintf("%s (%s)", name, gvk.Kind)
}

// planAbsent plans an item whose object the profile no longer wants.
func planAbsent(p plannedItem, it profiles.Item, desired *unstructured.Unstructured, exists, ours bool, liveYAML string) plannedItem {
	gvk, name := desired.GroupVersionKind(), desired.GetName()
	label := diffLabel(it, gvk, name)
	action := decideAbsent(exists, ours)
	if action == gone {
		p.skip = true
		return p
	}
	p.item.DesiredState = nil
	p.desired = nil
	if action == leaveInPlace {
		p.item.Operation = v1alpha1.OperationNone
		p.item.ImpactSeverity = v1alpha1.ImpactNone
		p.item.Message = fmt.Sprintf("%s '%s' was not created by virt-advisor: it is left in place (delete it yourself if it is no longer wanted)", gvk.Kind, name)
		p.item.Diff, _ = unifiedDiff(liveYAML, liveYAML, label, label)
		return p
	}
	p.item.Operation = v1alpha1.OperationDelete
	var err error
	if p.item.Diff, err = unifiedDiff(liveYAML, "", label, devNull); err != nil {
		return failed(p, it.Impact, err)
	}
	return p
}

// planWanted plans an item whose object the profile wants.
func planWanted(p plannedItem, it profiles.Item, desired *unstructured.Unstructured, read targetRead, liveYAML string) plannedItem {
	gvk, ns, name := desired.GroupVersionKind(), desired.GetNamespace(), desired.GetName()
	if read.dryErr != nil {
		// What the refused write would have done is still shown: a
		// reviewer reads "Update … refused", not an unknown operation.
		p.item.Operation = decideWanted(read.live != nil, false)
		return failed(p, it.Impact, fmt.Errorf("server-side apply dry-run of %s %s was rejected: %w", gvk.Kind, cluster.ObjectName(ns, name), dryRunCause(read.dryErr)))
	}
	dryYAML, err := toYAML(sanitize(read.dry))
	if err != nil {
		return failed(p, it.Impact, err)
	}
	label := diffLabel(it, gvk, name)
	fromLabel := label
	p.item.Operation = decideWanted(read.live != nil, liveYAML == dryYAML)
	switch p.item.Operation {
	case v1alpha1.OperationCreate:
		fromLabel = devNull
	case v1alpha1.OperationNone:
		p.item.ImpactSeverity = v1alpha1.ImpactNone
		p.item.Message = unchangedMessage(gvk.Kind, name, it.Message)
	}
	if p.item.Diff, err = unifiedDiff(liveYAML, dryYAML, fromLabel, label); err != nil {
		return failed(p, it.Impact, err)
	}
	return p
}

// targetRead is an item's target as read for planning: the live object
// (nil: none) and the server-side apply dry-run of the desired state over
// it (none for an Absent item).
type targetRead struct {
	live, dry *unstructured.Unstructured
	dryErr    error
}

// readTarget reads an item's target and dry-runs its desired state, both
// at once. The target the profile has just read (from the snapshot) is
// used rather than a second GET, checked like a fresh GET against the
// resourceVersion the dry-run was based on; the snapshot learns from it
// whether a target it read from a watch cache was live. If a write
// slipped in between, both are read again, once.
func readTarget(ctx context.Context, ri dynamic.ResourceInterface, desired *unstructured.Unstructured, absent bool, snap *inputReader) (targetRead, error) {
	key := cluster.ObjectKey{GVK: desired.GroupVersionKind(), Namespace: desired.GetNamespace(), Name: desired.GetName()}
	prev, _ := snap.readLive(key)
	read, err := readOnce(ctx, ri, desired, prev, absent)
	if err != nil || absent || read.dryErr != nil || read.live == nil {
		return read, err
	}
	snap.dryRunBasedOn(key, resourceVersion(read.dry), resourceVersion(read.live))
	if resourceVersion(read.dry) == resourceVersion(read.live) {
		return read, nil
	}
	return readOnce(ctx, ri, desired, nil, false)
}

// readOnce sends the GET of the target (unless prev is it) and the
// dry-run together.
func readOnce(ctx context.Context, ri dynamic.ResourceInterface, desired, prev *unstructured.Unstructured, absent bool) (targetRead, error) {
	var read targetRead
	done := make(chan struct{})
	if absent {
		close(done)
	} else {
		go func() {
			defer close(done)
			read.dry, read.dryErr = dryRun(ctx, ri, desired)
		}()
	}
	var err error
	if prev != nil {
		read.live = prev
	} else {
		read.live, err = ri.Get(ctx, desired.GetName(), metav1.GetOptions{})
	}
	<-done
	if apierrors.IsNotFound(err) {
		read.live, err = nil, nil
	}
	return read, err
}

// dryRun is the server-side apply of desired, not persisted.
func dryRun(ctx context.Context, ri dynamic.ResourceInterface, desired *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	return ri.Apply(ctx, desired.GetName(), desired, metav1.ApplyOptions{FieldManager: cluster.FieldManager, Force: true, DryRun: []string{metav1.DryRunAll}})
}
