package plan

import (
	"context"
	"encoding/json"
	"fmt"

	"golang.org/x/sync/errgroup"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/utils/ptr"

	"github.com/kubevirt/virt-advisor/pkg/apis/advisor/v1alpha1"
	"github.com/kubevirt/virt-advisor/pkg/cluster"
)

// StatusItems turns a computed plan into status items waiting to be applied;
// items that could not be planned are Failed with the reason.
func (r *Result) StatusItems(now metav1.Time) []v1alpha1.VirtPlatformConfigItem {
	items := make([]v1alpha1.VirtPlatformConfigItem, 0, len(r.Status.Items))
	for _, it := range r.Status.Items {
		si := v1alpha1.VirtPlatformConfigItem{
			Name:               it.Name,
			TargetRef:          it.TargetRef,
			ImpactSeverity:     it.ImpactSeverity,
			Operation:          it.Operation,
			Diff:               it.Diff,
			DesiredState:       it.DesiredState,
			State:              v1alpha1.ItemStatePending,
			Message:            it.Message,
			ManagedFields:      it.ManagedFields,
			LastTransitionTime: &now,
		}
		if it.Error != "" {
			si.State, si.Message = v1alpha1.ItemStateFailed, it.Error
		} else if t, ok := r.Targets[it.Name]; ok {
			si.ReviewedTarget = &t
		}
		si.ReviewedVMImpact = r.Disrupted[it.Name]
		items = append(items, si)
	}
	return items
}

// HasChanges is true when applying the plan would write something.
func (r *Result) HasChanges() bool {
	for _, it := range r.Status.Items {
		if it.Operation != v1alpha1.OperationNone || it.Error != "" {
			return true
		}
	}
	return false
}

// LeftInPlace is true for an item about an object the profile no longer
// wants but that virt-advisor did not create: nothing is written to it.
func LeftInPlace(it *v1alpha1.VirtPlatformConfigItem) bool {
	return it.Operation == v1alpha1.OperationNone && it.DesiredState == nil
}

// TargetGVK is the kind of an item's target.
func TargetGVK(ref v1alpha1.ObjectReference) schema.GroupVersionKind {
	return schema.FromAPIVersionAndKind(ref.APIVersion, ref.Kind)
}

// Target is an item's target as read right before its write: the object
// (nil when it does not exist) and the resourceVersion of that read, which
// the write carries as its precondition, so that the write fails rather
// than lands on anything the checks did not see.
type Target struct {
	Object *unstructured.Unstructured
	// ReadAt is the object's resourceVersion or, for an object that does
	// not exist, the resourceVersion at which it was read as absent.
	ReadAt string
	// Read is false when nothing was read (an item approved before plans
	// recorded their targets): the write then has no precondition.
	Read bool
}

// readTarget reads an item's target. A target reviewed as absent is read
// live as a list of its one name, whose resourceVersion makes the create
// fail if the object appears after this read. One that exists is read
// from the watch that keeps it (its config's) when the watch is current,
// else live: the write carries the resourceVersion read as its
// precondition, so a cache behind the cluster costs a Conflict and a new
// read, never a write over something the checks did not see.
func (e *Engine) readTarget(ctx context.Context, it *v1alpha1.VirtPlatformConfigItem) (Target, error) {
	gvk := TargetGVK(it.TargetRef)
	if it.ReviewedTarget != nil && it.ReviewedTarget.UID == "" {
		obj, at, err := e.Cluster.GetAbsentAt(ctx, gvk, it.TargetRef.Namespace, it.TargetRef.Name)
		return Target{Object: obj, ReadAt: at, Read: true}, err
	}
	if obj := e.cachedTarget(it); obj != nil {
		return Target{Object: obj, ReadAt: obj.GetResourceVersion(), Read: true}, nil
	}
	obj, err := e.Cluster.Get(ctx, gvk, it.TargetRef.Namespace, it.TargetRef.Name)
	if err != nil || obj == nil {
		return Target{Read: true}, err
	}
	return Target{Object: obj, ReadAt: obj.GetResourceVersion(), Read: true}, nil
}

// cachedTarget is a copy of an item's target from the watch that keeps
// it, nil when none does or it holds no such object.
func (e *Engine) cachedTarget(it *v1alpha1.VirtPlatformConfigItem) *unstructured.Unstructured {
	w := e.Cluster.InputWatches()
	if w == nil {
		return nil
	}
	obj, ok := w.Cached(cluster.ObjectKey{GVK: TargetGVK(it.TargetRef), Namespace: it.TargetRef.Namespace, Name: it.TargetRef.Name})
	if !ok || obj == nil {
		return nil
	}
	return obj.DeepCopy()
}

// ReadTargets reads the live targets of a plan's items, all at the same
// time (the first write waits for the slowest read, not for their sum),
// and hashes their managed fields as Compute does, so that a plan whose
// targets did not change since it was made has the same snapshot hash.
// Failed items are left out, as Compute leaves out items it could not
// plan. The targets are returned by item index (nil Object for a failed
// item or a target that does not exist), so that an item's own check
// before its write (CheckReadTarget) and the write's precondition need no
// second read.
func (e *Engine) ReadTargets(ctx context.Context, items []v1alpha1.VirtPlatformConfigItem) (string, []Target, error) {
	live := make([]Target, len(items))
	g, gctx := errgroup.WithContext(ctx)
	for i := range items {
		it := &items[i]
		if it.State == v1alpha1.ItemStateFailed {
			continue
		}
		g.Go(func() error {
			t, err := e.readTarget(gctx, it)
			if err != nil {
				return fmt.Errorf("reading %s %s: %w", it.TargetRef.Kind, cluster.ObjectName(it.TargetRef.Namespace, it.TargetRef.Name), err)
			}
			live[i] = t
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return "", nil, err
	}
	snapshot := map[string]interface{}{}
	for i := range items {
		if it := &items[i]; it.State != v1alpha1.ItemStateFailed {
			snapshot[snapshotKey(TargetGVK(it.TargetRef), it.TargetRef.Namespace, it.TargetRef.Name)] = snapshotValue(live[i].Object, it.ManagedFields, boundMetaOfItem(it))
		}
	}
	hash, err := hashJSON(snapshot)
	return hash, live, err
}

// Apply writes one item of a config to the main cluster: server-side
// apply of its desired state with our field manager (forced, as the
// earlier operator did), or deletion of an object the config's status
// records as ours. The write carries the read it was checked against
// (at): an update or a create its resourceVersion, so that it fails with
// a Conflict if the object changed or appeared since; a delete the UID
// that was reviewed and the resourceVersion read. It returns the object
// written (nil for a Delete or nothing written).
func (e *Engine) Apply(ctx context.Context, cfg *v1alpha1.VirtPlatformConfig, it v1alpha1.VirtPlatformConfigItem, at Target) (*unstructured.Unstructured, error) {
	gvk := TargetGVK(it.TargetRef)
	ri, err := e.Cluster.Resource(gvk, it.TargetRef.Namespace)
	if err != nil {
		return nil, fmt.Errorf("resolving %s: %w", gvk.Kind, err)
	}
	name := it.TargetRef.Name
	if it.Operation == v1alpha1.OperationDelete {
		return nil, e.delete(ctx, ri, cfg, &it, at)
	}
	if LeftInPlace(&it) {
		return nil, nil
	}
	if it.DesiredState == nil || len(it.DesiredState.Raw) == 0 {
		return nil, fmt.Errorf("item %s has no desired state", it.Name)
	}
	obj := &unstructured.Unstructured{}
	if err := json.Unmarshal(it.DesiredState.Raw, &obj.Object); err != nil {
		return nil, fmt.Errorf("decoding the desired state of %s: %w", it.Name, err)
	}
	// With a resourceVersion, server-side apply is a conditional write:
	// an existing object must have exactly it, and a create (no object)
	// ignores it, which the read-as-absent's resourceVersion turns into a
	// create-only write (any object made since has a newer one).
	obj.SetResourceVersion(at.ReadAt)
	written, err := ri.Apply(ctx, name, obj, metav1.ApplyOptions{FieldManager: cluster.FieldManager, Force: true})
	if err != nil {
		return nil, dryRunCause(err)
	}
	return written, nil
}

// delete deletes an item's target if virt-advisor made it, with the
// reviewed UID and the resourceVersion read as preconditions.
func (e *Engine) delete(ctx context.Context, ri dynamic.ResourceInterface, cfg *v1alpha1.VirtPlatformConfig, it *v1alpha1.VirtPlatformConfigItem, at Target) error {
	name := it.TargetRef.Name
	live := at.Object
	if !at.Read {
		var err error
		if live, err = ri.Get(ctx, name, metav1.GetOptions{}); apierrors.IsNotFound(err) {
			return nil
		} else if err != nil {
			return err
		}
	}
	if live == nil {
		return nil // gone already (our write before a crash)
	}
	if !OwnershipOf(&cfg.Status).MadeByUs(live) {
		return fmt.Errorf("%s %s was not created by virt-advisor for %s (its UID is not recorded as ours and it has other field managers): it is not deleted", it.TargetRef.Kind, name, cfg.Name)
	}
	pre := metav1.Preconditions{UID: ptr.To(live.GetUID()), ResourceVersion: ptr.To(live.GetResourceVersion())}
	if it.ReviewedTarget != nil && it.ReviewedTarget.UID != "" {
		pre.UID = ptr.To(it.ReviewedTarget.UID)
	}
	err := ri.Delete(ctx, name, metav1.DeleteOptions{Preconditions: &pre})
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}
