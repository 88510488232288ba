package loadaware

import (
	"sort"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// deschedulerSchema is what the installed KubeDescheduler CRD accepts.
type deschedulerSchema struct {
	profiles          map[string]bool
	customizations    map[string]bool
	thresholds        map[string]bool // enum of devDeviationThresholds; empty = any
	evictionLimits    bool
	evictionLimitNode bool
}

// readSchema reads the first version whose spec.profiles enum is non-empty,
// as the earlier operator did. It reads the CRD in place: a plan reads it
// from a cache, and copying its whole schema cost more than the rest.
func readSchema(crd *unstructured.Unstructured) deschedulerSchema {
	s := deschedulerSchema{profiles: map[string]bool{}, customizations: map[string]bool{}, thresholds: map[string]bool{}}
	for _, v := range field[[]interface{}](crd.Object, "spec", "versions") {
		version, ok := v.(map[string]interface{})
		if !ok {
			continue
		}
		spec := field[map[string]interface{}](version, "schema", "openAPIV3Schema", "properties", "spec", "properties")
		enum := field[[]interface{}](spec, "profiles", "items", "enum")
		if len(enum) == 0 {
			continue
		}
		for _, e := range enum {
			if name, ok := e.(string); ok {
				s.profiles[name] = true
			}
		}
		custom := field[map[string]interface{}](spec, "profileCustomizations", "properties")
		for name := range custom {
			s.customizations[name] = true
		}
		for _, t := range field[[]interface{}](custom, "devDeviationThresholds", "enum") {
			if name, ok := t.(string); ok {
				s.thresholds[name] = true
			}
		}
		limits, found := fieldFound[map[string]interface{}](spec, "evictionLimits", "properties")
		s.evictionLimits = found
		_, s.evictionLimitNode = limits["node"]
		break
	}
	return s
}

// field is the value at fields of obj, not copied (the zero T when it is
// absent or of another type).
func field[T any](obj map[string]interface{}, fields ...string) T {
	v, _ := fieldFound[T](obj, fields...)
	return v
}

// fieldFound is field, and whether the value is there and a T.
func fieldFound[T any](obj map[string]interface{}, fields ...string) (T, bool) {
	raw, found, _ := unstructured.NestedFieldNoCopy(obj, fields...)
	v, ok := raw.(T)
	return v, found && ok
}

func sortedKeys(m map[string]bool) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
