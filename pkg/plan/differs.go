package plan

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// differingFields lists the managed fields whose live value does not hold
// the desired one; fields set only by others (or defaulted by the API) are
// not a difference.
func differingFields(live, desired map[string]interface{}, managedFields []string) []string {
	out := []string{}
	for _, path := range managedFields {
		fields := strings.Split(path, ".")
		want, _, _ := unstructured.NestedFieldNoCopy(desired, fields...)
		got, _, _ := unstructured.NestedFieldNoCopy(live, fields...)
		if !contains(got, want) {
			out = append(out, path)
		}
	}
	return out
}

// contains reports whether live holds everything desired sets (live may
// carry more, e.g. defaults of the API).
func contains(live, desired interface{}) bool {
	switch d := desired.(type) {
	case map[string]interface{}:
		l, ok := live.(map[string]interface{})
		if !ok {
			return false
		}
		for k, v := range d {
			if !contains(l[k], v) {
				return false
			}
		}
		return true
	case []interface{}:
		l, ok := live.([]interface{})
		if !ok || len(l) != len(d) {
			return false
		}
		for i := range d {
			if !contains(l[i], d[i]) {
				return false
			}
		}
		return true
	default:
		return fmt.Sprint(live) == fmt.Sprint(desired)
	}
}
