package machineconfig

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
		return map[string]interface{}{"matchLabels": map[string]interface{}{RoleLabel: r}}
	}
	pools := []unstructured.Unstructured{
		pool("worker", role("worker")),
		pool("master", role("master")),
		pool("worker-cnv", map[string]interface{}{"matchExpressions": []interface{}{map[string]interface{}{
			"key": RoleLabel, "operator": "In", "values": []interface{}{"worker", "worker-cnv"}}}}),
		pool("infra", map[string]interface{}{
			"matchLabels":      map[string]interface{}{RoleLabel: "worker"},
			"matchExpressions": []interface{}{map[string]interface{}{"key": "infra", "operator": "Exists"}}}),
		pool("no-selector", nil),
	}
	tests := []struct {
		labels map[string]string
		want   []string
	}{
		{map[string]string{RoleLabel: "worker"}, []string{"worker", "worker-cnv"}},
		{map[string]string{RoleLabel: "worker", "infra": ""}, []string{"infra", "worker", "worker-cnv"}},
		{map[string]string{RoleLabel: "master"}, []string{"master"}},
		{map[string]string{RoleLabel: "worker-cnv"}, []string{"worker-cnv"}},
		{map[string]string{}, nil},
	}
	for _, tt := range tests {
		selected, err := SelectingPools(pools, tt.labels)
		var got []string
		for _, p := range selected {
			got = append(got, p.GetName())
		}
		if err != nil || !reflect.DeepEqual(got, tt.want) {
			t.Errorf("SelectingPools(%v) = %v, %v; want %v", tt.labels, got, err, tt.want)
		}
	}
}
