package plan

import (
	"context"
	"encoding/json"
	"reflect"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kubevirt/virt-advisor/pkg/apis/advisor/v1alpha1"
	"github.com/kubevirt/virt-advisor/pkg/cluster"
	"github.com/kubevirt/virt-advisor/pkg/profiles"
)

// DriftFromCaches compares the applied items of a config with their
// targets as the watch caches hold them, without a dry-run: what an
// applied item made ours is its desired state at its managed fields, so a
// managed field whose cached value no longer holds the applied one has
// drifted. The profile computes its desired states again from the cached
// inputs first (no request to the cluster), so that a target that is also
// an input (the KubeDescheduler whose other profiles are kept) is drift
// only while the desired state stays the applied one.
//
// It returns, by item name, the fields that drifted (none: in sync), and
// decided false when only a full plan can tell: a target not cached, a
// desired state that changed (an input change), an item to delete, or a
// difference outside the managed fields (which server-side apply may or
// may not leave as it is).
func (e *Engine) DriftFromCaches(ctx context.Context, cfg *v1alpha1.VirtPlatformConfig, applied []v1alpha1.VirtPlatformConfigItem) (drifted map[string][]string, decided bool, err error) {
	watches := e.Cluster.InputWatches()
	profile, ok := e.Profiles.Get(cfg.Spec.Profile)
	if watches == nil || !ok {
		return nil, false, nil
	}
	byName, err := e.cachedItems(ctx, cfg, profile)
	if err != nil {
		return nil, false, err
	}
	drifted = map[string][]string{}
	for _, a := range applied {
		if a.State == v1alpha1.ItemStateFailed {
			continue // a known failure, not drift
		}
		fields, decided := cachedDrift(watches, cfg.Name, a, byName)
		if !decided {
			return nil, false, nil
		}
		if len(fields) > 0 {
			drifted[a.Name] = fields
		}
	}
	return drifted, true, nil
}

// cachedItems are the profile's items computed from the cached inputs (no
// request to the cluster), by name.
func (e *Engine) cachedItems(ctx context.Context, cfg *v1alpha1.VirtPlatformConfig, profile profiles.Profile) (map[string]profiles.Item, error) {
	opts := profiles.ResolveOptions(profile.Metadata().Options, cfg.Spec)
	refs := profile.InputObjects(opts)
	inputs := newInputReader(ctx, e.Cluster, refs, cachedInputs, e.poolLister(ctx, profile, refs, cachedInputs))
	nodes, _ := e.nodeReads(ctx, true, &readAt{})
	inputs.nodes = nodes
	items, err := profile.Items(ctx, profiles.Inputs{ConfigName: cfg.Name, Options: opts, Cluster: inputs})
	if err != nil {
		return nil, err
	}
	byName := make(map[string]profiles.Item, len(items))
	for _, it := range items {
		byName[it.Name] = it
	}
	return byName, nil
}

// cachedDrift is the drift of one applied item from its cached target: the
// managed fields that no longer hold the applied values (none: in sync),
// and decided false when only a full plan can tell.
func cachedDrift(watches *cluster.Watches, configName string, a v1alpha1.VirtPlatformConfigItem, byName map[string]profiles.Item) (fields []string, decided bool) {
	it, ok := byName[a.Name]
	if !ok || it.Err != nil || it.Absent || a.Operation == v1alpha1.OperationDelete || a.DesiredState == nil {
		return nil, false
	}
	var appliedDesired map[string]interface{}
	if err := json.Unmarshal(a.DesiredState.Raw, &appliedDesired); err != nil {
		return nil, false
	}
	if !reflect.DeepEqual(labelled(it, configName, appliedDesired), appliedDesired) {
		return nil, false // the inputs changed what is desired
	}
	gv, err := schema.ParseGroupVersion(a.TargetRef.APIVersion)
	if err != nil {
		return nil, false
	}
	live, cached := watches.Cached(cluster.ObjectKey{GVK: gv.WithKind(a.TargetRef.Kind), Namespace: a.TargetRef.Namespace, Name: a.TargetRef.Name})
	switch {
	case !cached:
		return nil, false
	case live == nil:
		return []string{"the object (deleted)"}, true
	}
	if fields := differingFields(live.Object, appliedDesired, a.ManagedFields); len(fields) > 0 {
		return fields, true
	}
	return nil, contains(live.Object, appliedDesired)
}

// labelled is the desired state of a profile item as the plan labels it:
// ours (the managed-by label) when Owned, unless the applied state went
// without it (an object someone else made is never labelled ours).
func labelled(it profiles.Item, configName string, applied map[string]interface{}) map[string]interface{} {
	desired := it.Desired.DeepCopy()
	if it.Owned {
		labels := desired.GetLabels()
		if labels == nil {
			labels = map[string]string{}
		}
		labels[profiles.ManagedByLabel] = configName
		if _, ours := (&unstructured.Unstructured{Object: applied}).GetLabels()[profiles.ManagedByLabel]; !ours {
			delete(labels, profiles.ManagedByLabel)
		}
		desired.SetLabels(labels)
	}
	// Round trip through JSON, as the applied state was recorded.
	raw, err := json.Marshal(desired.Object)
	if err != nil {
		return nil
	}
	var out map[string]interface{}
	if json.Unmarshal(raw, &out) != nil {
		return nil
	}
	return out
}
