package profiles

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"github.com/kubevirt/virt-advisor/pkg/apis/advisor/v1alpha1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
)

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

// SelectingPools returns the names of the pools whose machineConfigSelector
// (matchLabels and matchExpressions) selects a MachineConfig with these
// labels, sorted.
func SelectingPools(pools []unstructured.Unstructured, mcLabels map[string]string) ([]string, error) {
	var names []string
	for i := range pools {
		sel, err := PoolSelector(&pools[i], "machineConfigSelector")
		if err != nil {
			return nil, fmt.Errorf("MachineConfigPool '%s' has an invalid machineConfigSelector: %w", pools[i].GetName(), err)
		}
		if sel.Matches(labels.Set(mcLabels)) {
			names = append(names, pools[i].GetName())
		}
	}
	sort.Strings(names)
	return names, nil
}

// PoolsFor lists the pools and returns those that render a MachineConfig
// with these labels.
func PoolsFor(ctx context.Context, cluster Cluster, mcLabels map[string]string) ([]unstructured.Unstructured, error) {
	all, err := cluster.List(ctx, MachineConfigPoolGVK)
	if err != nil {
		return nil, err
	}
	names, err := SelectingPools(all, mcLabels)
	if err != nil {
		return nil, err
	}
	var out []unstructured.Unstructured
	for _, p := range all {
		for _, n := range names {
			if p.GetName() == n {
				out = append(out, p)
			}
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].GetName() < out[j].GetName() })
	return out, nil
}

// IsMachineConfig is true for a target that is a MachineConfig.
func IsMachineConfig(ref v1alpha1.ObjectReference) bool {
	return ref.Kind == MachineConfigGVK.Kind && strings.HasPrefix(ref.APIVersion, MachineConfigGVK.Group+"/")
}

// DesiredLabels are metadata.labels of a desired state (none when it is
// unset or not an object).
func DesiredLabels(raw *runtime.RawExtension) map[string]string {
	if raw == nil {
		return nil
	}
	var obj struct {
		Metadata struct {
			Labels map[string]string `json:"labels"`
		} `json:"metadata"`
	}
	_ = json.Unmarshal(raw.Raw, &obj)
	return obj.Metadata.Labels
}
