package plan

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
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
