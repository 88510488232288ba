package plan

import (
	"context"
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/sets"

	"github.com/kubevirt/virt-advisor/pkg/apis/advisor/v1alpha1"
	"github.com/kubevirt/virt-advisor/pkg/cluster"
	"github.com/kubevirt/virt-advisor/pkg/profiles"
)

// StaleTargetError says that an approved item's target is no longer the
// one its plan was computed against: writing it would write something
// nobody reviewed.
type StaleTargetError struct {
	Item   string
	Target string
	What   string
}

func (e *StaleTargetError) Error() string {
	return fmt.Sprintf("item '%s': %s %s", e.Item, e.Target, e.What)
}

// TargetCheck is how an approved item's target is checked before its write.
type TargetCheck struct {
	// Retry: the write may already have been made, before a crash or a
	// failover (the item is InProgress): the target then also passes when
	// it holds exactly what the item writes, as our own write left it.
	Retry bool
	// Bypass: spec.bypassOptimisticLock; the target's identity is checked,
	// not its managed fields.
	Bypass bool
}

// CheckOf is the check of item it of cfg before its write.
func CheckOf(cfg *v1alpha1.VirtPlatformConfig, it *v1alpha1.VirtPlatformConfigItem) TargetCheck {
	return TargetCheck{Retry: it.State == v1alpha1.ItemStateInProgress, Bypass: cfg.Spec.BypassOptimisticLock}
}

// CheckTarget reads an approved item's target from the main cluster (not
// a cache) just before it is written and checks it (CheckReadTarget). It
// returns the read, which the write carries as its precondition.
func (e *Engine) CheckTarget(ctx context.Context, cfg *v1alpha1.VirtPlatformConfig, it *v1alpha1.VirtPlatformConfigItem, check TargetCheck) (Target, *unstructured.Unstructured, error) {
	if it.ReviewedTarget == nil || LeftInPlace(it) {
		return Target{}, nil, nil
	}
	t, err := e.readTarget(ctx, it)
	if err != nil {
		return Target{}, nil, fmt.Errorf("reading %s %s before writing it: %w", it.TargetRef.Kind, cluster.ObjectName(it.TargetRef.Namespace, it.TargetRef.Name), err)
	}
	ours, err := e.CheckReadTarget(cfg, it, t.Object, check)
	return t, ours, err
}

// ExpectedTarget is what the checks right before an approved item's
// first write will most likely read of its target, without reading:
// absent for a target reviewed as absent, else the target as its watch
// cache holds it when that is still the one reviewed. ok is false when
// there is no such expectation (no cache holds it, or it changed). The
// controller records what the write replaces from it together with its
// intent to write; the checks' own read confirms it or records again.
func (e *Engine) ExpectedTarget(cfg *v1alpha1.VirtPlatformConfig, it *v1alpha1.VirtPlatformConfigItem) (obj *unstructured.Unstructured, ok bool) {
	switch {
	case it.ReviewedTarget == nil || LeftInPlace(it):
		return nil, false
	case it.ReviewedTarget.UID == "":
		return nil, true
	}
	if obj = e.cachedTarget(it); obj == nil || checkTarget(it, obj, CheckOf(cfg, it)) != nil {
		return nil, false
	}
	return obj, true
}

// CheckReadTarget checks an approved item's target as read from the main
// cluster just before the write (live, nil when it does not exist) and
// returns a *StaleTargetError when it is not the one reviewed: it appeared
// (for a Create), disappeared or was replaced (another UID), or, unless
// check.Bypass is set, its managed fields changed. An item that changes
// nothing is checked too: "no change" was reviewed against that target. On
// a check.Retry, the target that holds exactly what the item writes, as
// our own write left it, passes and is returned so that the write is not
// made a second time. An item approved before targets were
// recorded passes (the whole-plan snapshot check covers it).
func (e *Engine) CheckReadTarget(cfg *v1alpha1.VirtPlatformConfig, it *v1alpha1.VirtPlatformConfigItem, live *unstructured.Unstructured, check TargetCheck) (*unstructured.Unstructured, error) {
	if it.ReviewedTarget == nil || LeftInPlace(it) {
		return nil, nil
	}
	if check.Retry && live != nil && writtenAsItem(live, it, cfg.Name) {
		return live, nil
	}
	return nil, checkTarget(it, live, check)
}

func checkTarget(it *v1alpha1.VirtPlatformConfigItem, live *unstructured.Unstructured, check TargetCheck) error {
	rt := it.ReviewedTarget
	gvk := TargetGVK(it.TargetRef)
	stale := func(what string) error {
		return &StaleTargetError{Item: it.Name, Target: fmt.Sprintf("%s '%s'", gvk.Kind, cluster.ObjectName(it.TargetRef.Namespace, it.TargetRef.Name)), What: what}
	}
	switch {
	case rt.UID == "" && live == nil:
		return nil
	case rt.UID == "":
		return stale("was created by someone else after the plan was reviewed" + managersOf(live))
	case live == nil:
		if it.Operation == v1alpha1.OperationDelete && check.Retry {
			return nil // deleted by our write before a crash
		}
		return stale("was deleted after the plan was reviewed")
	case live.GetUID() != rt.UID:
		return stale("was deleted and created again after the plan was reviewed" + managersOf(live))
	case check.Bypass:
		return nil
	}
	now := snapshotValue(live, it.ManagedFields, boundMetaOfItem(it))
	snap, err := hashJSON(now)
	if err != nil {
		return err
	}
	if snap != rt.SnapshotHash {
		return stale(fmt.Sprintf("changed after the plan was reviewed (%s)", strings.Join(changedFields(rt, now, it.ManagedFields), ", ")))
	}
	return nil
}

// changedFields names the managed fields whose value is not the reviewed
// one; all of them when the review recorded no per-field hashes.
func changedFields(rt *v1alpha1.ReviewedTarget, now map[string]interface{}, managed []string) []string {
	var changed []string
	if rt.FieldHashes != nil {
		got := fieldHashes(now)
		for _, f := range sets.List(sets.KeySet(now)) {
			if got[f] != rt.FieldHashes[f] {
				changed = append(changed, f)
			}
		}
	}
	if len(changed) > 0 {
		return changed
	}
	if len(managed) == 0 {
		return []string{"spec"}
	}
	return managed
}

// writtenAsItem is true when live holds what the item writes: its managed
// fields as desired and, for an object the item creates, only our field
// manager and our label, as our own write leaves it.
func writtenAsItem(live *unstructured.Unstructured, it *v1alpha1.VirtPlatformConfigItem, configName string) bool {
	if it.Operation == v1alpha1.OperationDelete {
		return false
	}
	desired := &unstructured.Unstructured{}
	if it.DesiredState == nil || desired.UnmarshalJSON(it.DesiredState.Raw) != nil {
		return false
	}
	bound := boundMetaOf(desired)
	if a, errA := hashJSON(snapshotValue(live, it.ManagedFields, bound)); errA != nil {
		return false
	} else if b, errB := hashJSON(snapshotValue(desired, it.ManagedFields, bound)); errB != nil || a != b {
		return false
	}
	if it.ReviewedTarget.UID != "" {
		return true
	}
	for _, m := range live.GetManagedFields() {
		if m.Manager != cluster.FieldManager {
			return false
		}
	}
	return live.GetLabels()[profiles.ManagedByLabel] == configName
}

// managersOf names the field managers of an object, for messages.
func managersOf(obj *unstructured.Unstructured) string {
	var names []string
	seen := map[string]bool{}
	for _, m := range obj.GetManagedFields() {
		if !seen[m.Manager] {
			seen[m.Manager] = true
			names = append(names, m.Manager)
		}
	}
	if len(names) == 0 {
		return ""
	}
	return " (field managers: " + strings.Join(names, ", ") + ")"
}
