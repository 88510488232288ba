package plan

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
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
// the managed fields (the whole spec when none are named), or NOT_FOUND.
func snapshotValue(live *unstructured.Unstructured, managedFields []string) map[string]interface{} {
	if live == nil {
		return map[string]interface{}{"__state": "NOT_FOUND"}
	}
	if len(managedFields) == 0 {
		spec, _, _ := unstructured.NestedFieldNoCopy(live.Object, "spec")
		return map[string]interface{}{"spec": spec}
	}
	out := make(map[string]interface{}, len(managedFields))
	for _, path := range managedFields {
		v, _, _ := unstructured.NestedFieldNoCopy(live.Object, strings.Split(path, ".")...)
		out[path] = v
	}
	return out
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
