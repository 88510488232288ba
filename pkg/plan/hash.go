package plan

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kubevirt/virt-advisor/pkg/apis/advisor/v1alpha1"
)

// snapshotKey is group/version/kind[/namespace]/name.
func snapshotKey(gvk schema.GroupVersionKind, namespace, name string) string {
	parts := []string{gvk.Group, gvk.Version, gvk.Kind}
	if namespace != "" {
		parts = append(parts, namespace)
	}
	return strings.Join(append(parts, name), "/")
}

// snapshotValue is what the plan depends on in a live object: the values of
// the managed fields (the whole spec when none are named) and of the labels
// and annotations the write sets (bound), or NOT_FOUND. A label is bound as
// much as a field: a MachineConfig's role label decides the pools it rolls.
func snapshotValue(live *unstructured.Unstructured, managedFields []string, bound boundMeta) map[string]interface{} {
	if live == nil {
		return map[string]interface{}{"__state": "NOT_FOUND"}
	}
	out := make(map[string]interface{}, len(managedFields)+len(bound.labels)+len(bound.annotations))
	if len(managedFields) == 0 {
		spec, _, _ := unstructured.NestedFieldNoCopy(live.Object, "spec")
		out["spec"] = spec
	}
	for _, path := range managedFields {
		v, _, _ := unstructured.NestedFieldNoCopy(live.Object, strings.Split(path, ".")...)
		out[path] = v
	}
	for _, k := range bound.labels {
		out[metaKey("labels", k)] = metaValue(live.GetLabels(), k)
	}
	for _, k := range bound.annotations {
		out[metaKey("annotations", k)] = metaValue(live.GetAnnotations(), k)
	}
	return out
}

// boundMeta names the labels and annotations a write sets.
type boundMeta struct {
	labels, annotations []string
}

// boundMetaOf is what the desired state of a write sets in metadata.
func boundMetaOf(desired *unstructured.Unstructured) boundMeta {
	if desired == nil {
		return boundMeta{}
	}
	return boundMeta{labels: sortedKeys(desired.GetLabels()), annotations: sortedKeys(desired.GetAnnotations())}
}

// boundMetaOfItem is what an item's approved desired state sets in
// metadata (nothing for a Delete or an item left in place).
func boundMetaOfItem(it *v1alpha1.VirtPlatformConfigItem) boundMeta {
	if it.DesiredState == nil || len(it.DesiredState.Raw) == 0 {
		return boundMeta{}
	}
	desired := &unstructured.Unstructured{}
	if err := desired.UnmarshalJSON(it.DesiredState.Raw); err != nil {
		return boundMeta{}
	}
	return boundMetaOf(desired)
}

// metaKey names a label or annotation in a snapshot and in messages:
// metadata.labels[machineconfiguration.openshift.io/role].
func metaKey(kind, key string) string { return "metadata." + kind + "[" + key + "]" }

// metaValue is a label's or annotation's value, nil when it is not set
// (an empty value is a value).
func metaValue(m map[string]string, key string) interface{} {
	if v, ok := m[key]; ok {
		return v
	}
	return nil
}

func sortedKeys(m map[string]string) []string {
	if len(m) == 0 {
		return nil
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// fieldHashes shortens each value of a snapshot to 16 hex digits of its
// hash: enough to tell which field changed, small enough for status.
func fieldHashes(snapshot map[string]interface{}) map[string]string {
	out := make(map[string]string, len(snapshot))
	for k, v := range snapshot {
		if h, err := hashJSON(v); err == nil {
			out[k] = h[:16]
		}
	}
	return out
}

// hashJSON is the lowercase hex SHA-256 of v as JSON; encoding/json sorts
// map keys, so equal content hashes equally.
func hashJSON(v interface{}) (string, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:]), nil
}

// ItemsHash is the hash of what applying the items writes: for each item,
// in order, its name, target, operation, desired state, the target as
// reviewed and the VMs it was reviewed to shut down or be blocked by. An
// approval
// records it, and the controller writes an item only while the items
// still hash to the recorded value; states and messages, which change as
// the plan is applied, are left out.
func ItemsHash(items []v1alpha1.VirtPlatformConfigItem) (string, error) {
	hashed := make([]interface{}, 0, len(items))
	for _, it := range items {
		var desired interface{}
		if it.DesiredState != nil && len(it.DesiredState.Raw) > 0 {
			// Decoded, so that equal objects hash equally whatever their
			// key order or spacing.
			if err := json.Unmarshal(it.DesiredState.Raw, &desired); err != nil {
				return "", fmt.Errorf("decoding the desired state of item %s: %w", it.Name, err)
			}
		}
		h := map[string]interface{}{
			"name": it.Name, "targetRef": it.TargetRef, "operation": it.Operation, "desiredState": desired,
		}
		// The target as reviewed is part of what was approved; items
		// recorded before it existed hash as they did.
		if it.ReviewedTarget != nil {
			h["reviewedTarget"] = it.ReviewedTarget
		}
		// So are the VMs it was said to shut down or be blocked by.
		if len(it.ReviewedVMImpact) > 0 {
			h["reviewedVMImpact"] = it.ReviewedVMImpact
		}
		hashed = append(hashed, h)
	}
	return hashJSON(hashed)
}
