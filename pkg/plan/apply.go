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

// ReadTargets reads the live targets of a plan's items, all at the same
// time (the first write waits for the slowest read, not for their sum),
// and hashes their managed fields as Compute does, so that a plan whose
// targets did not change since it was made has the same snapshot hash.
// Failed items are left out, as Compute leaves out items it could not
// plan. The targets are returned by item index (nil for a failed item or
// a target that does not exist), so that an item's own check before its
// write (CheckReadTarget) needs no second read.
func (e *Engine) ReadTargets(ctx context.Context, items []v1alpha1.VirtPlatformConfigItem) (string, []*unstructured.Unstructured, error) {
	live := make([]*unstructured.Unstructured, len(items))
	g, gctx := errgroup.WithContext(ctx)
	for i, it := range items {
		if it.State == v1alpha1.ItemStateFailed {
			continue
		}
		g.Go(func() error {
			obj, err := e.Cluster.Get(gctx, TargetGVK(it.TargetRef), it.TargetRef.Namespace, it.TargetRef.Name)
			if err != nil {
				return fmt.Errorf("reading %s %s: %w", it.TargetRef.Kind, cluster.ObjectName(it.TargetRef.Namespace, it.TargetRef.Name), err)
			}
			live[i] = obj
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return "", nil, err
	}
	snapshot := map[string]interface{}{}
	for i, it := range items {
		if it.State != v1alpha1.ItemStateFailed {
			snapshot[snapshotKey(TargetGVK(it.TargetRef), it.TargetRef.Namespace, it.TargetRef.Name)] = snapshotValue(live[i], it.ManagedFields)
		}
	}
	hash, err := hashJSON(snapshot)
	return hash, live, err
}

// Apply writes one item of a config to the main cluster: server-side
// apply of its desired state with our field manager (forced, as the
// earlier operator did), or deletion of an object the config's status
// records as ours. It returns the object written (nil for a Delete or
// nothing written).
func (e *Engine) Apply(ctx context.Context, cfg *v1alpha1.VirtPlatformConfig, it v1alpha1.VirtPlatformConfigItem) (*unstructured.Unstructured, error) {
	gvk := TargetGVK(it.TargetRef)
	ri, err := e.Cluster.Resource(gvk, it.TargetRef.Namespace)
	if err != nil {
		return nil, fmt.Errorf("resolving %s: %w", gvk.Kind, err)
	}
	name := it.TargetRef.Name
	if it.Operation == v1alpha1.OperationDelete {
		live, err := ri.Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return nil, nil
		}
		if err != nil {
			return nil, err
		}
		if !OwnershipOf(&cfg.Status).MadeByUs(live) {
			return nil, fmt.Errorf("%s %s was not created by virt-advisor for %s (its UID is not recorded as ours and it has other field managers): it is not deleted", gvk.Kind, name, cfg.Name)
		}
		uid := live.GetUID()
		err = ri.Delete(ctx, name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}})
		if apierrors.IsNotFound(err) {
			return nil, nil
		}
		return nil, err
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
	written, err := ri.Apply(ctx, name, obj, metav1.ApplyOptions{FieldManager: cluster.FieldManager, Force: true})
	if err != nil {
		return nil, dryRunCause(err)
	}
	return written, nil
}
