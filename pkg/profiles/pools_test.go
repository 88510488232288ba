package profiles

import (
	"reflect"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

func TestSelectingPools(t *testing.T) {
	pool := func(name string, selector map[string]interface{}) unstructured.Unstructured {
		u := unstructured.Unstructured{Object: map[string]interface{}{"spec": map[string]interface{}{}}}
		u.SetName(name)
		if selector != nil {
			u.Object["spec"].(map[string]interface{})["machineConfigSelector"] = selector
		}
		return u
	}
	role := func(r string) map[string]interface{} {
		return map[string]interface{}{"matchLabels": map[string]interface{}{MachineConfigRoleLabel: r}}
	}
	pools := []unstructured.Unstructured{
		pool("worker", role("worker")),
		pool("master", role("master")),
		pool("worker-cnv", map[string]interface{}{"matchExpressions": []interface{}{map[string]interface{}{
			"key": MachineConfigRoleLabel, "operator": "In", "values": []interface{}{"worker", "worker-cnv"}}}}),
		pool("infra", map[string]interface{}{
			"matchLabels":      map[string]interface{}{MachineConfigRoleLabel: "worker"},
			"matchExpressions": []interface{}{map[string]interface{}{"key": "infra", "operator": "Exists"}}}),
		pool("no-selector", nil),
	}
	tests := []struct {
		labels map[string]string
		want   []string
	}{
		{map[string]string{MachineConfigRoleLabel: "worker"}, []string{"worker", "worker-cnv"}},
		{map[string]string{MachineConfigRoleLabel: "worker", "infra": ""}, []string{"infra", "worker", "worker-cnv"}},
		{map[string]string{MachineConfigRoleLabel: "master"}, []string{"master"}},
		{map[string]string{MachineConfigRoleLabel: "worker-cnv"}, []string{"worker-cnv"}},
		{map[string]string{}, nil},
	}
	for _, tt := range tests {
		got, err := SelectingPools(pools, tt.labels)
		if err != nil || !reflect.DeepEqual(got, tt.want) {
			t.Errorf("SelectingPools(%v) = %v, %v; want %v", tt.labels, got, err, tt.want)
		}
	}
}
