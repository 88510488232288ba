package machineconfig

import (
	"fmt"
	"sort"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
)

// A MachineConfig is rendered by every MachineConfigPool whose
// machineConfigSelector selects its labels (custom pools such as
// worker-cnv select role worker too), so a change rolls through all of
// them.

// PoolSelector parses a selector of a MachineConfigPool's spec
// (machineConfigSelector or nodeSelector); a missing one selects nothing,
// as in the MachineConfig operator.
func PoolSelector(pool *unstructured.Unstructured, field string) (labels.Selector, error) {
	m, found, err := unstructured.NestedMap(pool.Object, "spec", field)
	if err != nil {
		return nil, err
	}
	if !found {
		return labels.Nothing(), nil
	}
	var ls metav1.LabelSelector
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(m, &ls); err != nil {
		return nil, err
	}
	return metav1.LabelSelectorAsSelector(&ls)
}

// SelectingPools returns the pools whose machineConfigSelector
// (matchLabels and matchExpressions) selects a MachineConfig with these
// labels, sorted by name.
func SelectingPools(pools []unstructured.Unstructured, mcLabels map[string]string) ([]unstructured.Unstructured, error) {
	var out []unstructured.Unstructured
	for i := range pools {
		selects, err := Selects(&pools[i], mcLabels)
		if err != nil {
			return nil, err
		}
		if selects {
			out = append(out, pools[i])
		}
	}
	sortByName(out)
	return out, nil
}

func sortByName(pools []unstructured.Unstructured) {
	sort.Slice(pools, func(i, j int) bool { return pools[i].GetName() < pools[j].GetName() })
}

// Selects is true when the pool renders a MachineConfig with these labels.
func Selects(pool *unstructured.Unstructured, mcLabels map[string]string) (bool, error) {
	sel, err := PoolSelector(pool, "machineConfigSelector")
	if err != nil {
		return false, fmt.Errorf("MachineConfigPool '%s' has an invalid machineConfigSelector: %w", pool.GetName(), err)
	}
	return sel.Matches(labels.Set(mcLabels)), nil
}

// Count reads an integer of a pool's status, 0 when unset.
func Count(pool *unstructured.Unstructured, field string) int64 {
	v, _, _ := unstructured.NestedInt64(pool.Object, "status", field)
	return v
}
