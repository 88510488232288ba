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
// as the earlier operator did.
func readSchema(crd *unstructured.Unstructured) deschedulerSchema {
	s := deschedulerSchema{profiles: map[string]bool{}, customizations: map[string]bool{}, thresholds: map[string]bool{}}
	versions, _, _ := unstructured.NestedSlice(crd.Object, "spec", "versions")
	for _, v := range versions {
		version, ok := v.(map[string]interface{})
		if !ok {
			continue
		}
		spec, _, _ := unstructured.NestedMap(version, "schema", "openAPIV3Schema", "properties", "spec", "properties")
		enum, _, _ := unstructured.NestedSlice(spec, "profiles", "items", "enum")
		if len(enum) == 0 {
			continue
		}
		for _, e := range enum {
			if name, ok := e.(string); ok {
				s.profiles[name] = true
			}
		}
		custom, _, _ := unstructured.NestedMap(spec, "profileCustomizations", "properties")
		for name := range custom {
			s.customizations[name] = true
		}
		thresholds, _, _ := unstructured.NestedSlice(custom, "devDeviationThresholds", "enum")
		for _, t := range thresholds {
			if name, ok := t.(string); ok {
				s.thresholds[name] = true
			}
		}
		limits, found, _ := unstructured.NestedMap(spec, "evictionLimits", "properties")
		s.evictionLimits = found
		_, s.evictionLimitNode = limits["node"]
		break
	}
	return s
}

func sortedKeys(m map[string]bool) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
