package plan

import (
	"reflect"
	"testing"
)

func TestContains(t *testing.T) {
	tests := []struct {
		name          string
		live, desired interface{}
		want          bool
	}{
		{"equal scalars", int64(60), float64(60), true},
		{"different scalars", int64(61), float64(60), false},
		{"live has more fields", map[string]interface{}{"a": "x", "logLevel": "Normal"}, map[string]interface{}{"a": "x"}, true},
		{"desired field missing", map[string]interface{}{"logLevel": "Normal"}, map[string]interface{}{"a": "x"}, false},
		{"lists in order", []interface{}{"A", "B"}, []interface{}{"A", "B"}, true},
		{"list order matters", []interface{}{"B", "A"}, []interface{}{"A", "B"}, false},
		{"list length matters", []interface{}{"A", "B", "C"}, []interface{}{"A", "B"}, false},
		{"nested", map[string]interface{}{"p": map[string]interface{}{"t": true, "x": 1}}, map[string]interface{}{"p": map[string]interface{}{"t": true}}, true},
		{"deleted", nil, map[string]interface{}{"a": "x"}, false},
	}
	for _, tt := range tests {
		if got := contains(tt.live, tt.desired); got != tt.want {
			t.Errorf("%s: contains = %v, want %v", tt.name, got, tt.want)
		}
	}
}

func TestDifferingFields(t *testing.T) {
	desired := map[string]interface{}{"spec": map[string]interface{}{"mode": "Automatic", "deschedulingIntervalSeconds": int64(60)}}
	tests := []struct {
		name    string
		live    map[string]interface{}
		managed []string
		want    []string
	}{
		{"in sync, with a field of someone else", map[string]interface{}{"spec": map[string]interface{}{"mode": "Automatic", "deschedulingIntervalSeconds": int64(60), "logLevel": "Normal"}},
			[]string{"spec.mode", "spec.deschedulingIntervalSeconds"}, []string{}},
		{"one managed field changed", map[string]interface{}{"spec": map[string]interface{}{"mode": "Predictive", "deschedulingIntervalSeconds": int64(60)}},
			[]string{"spec.mode", "spec.deschedulingIntervalSeconds"}, []string{"spec.mode"}},
		{"a managed field removed", map[string]interface{}{"spec": map[string]interface{}{"mode": "Automatic"}},
			[]string{"spec.mode", "spec.deschedulingIntervalSeconds"}, []string{"spec.deschedulingIntervalSeconds"}},
		{"a change outside the managed fields", map[string]interface{}{"spec": map[string]interface{}{"mode": "Automatic", "deschedulingIntervalSeconds": int64(3600)}},
			[]string{"spec.mode"}, []string{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := differingFields(tt.live, desired, tt.managed); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("differingFields = %q, want %q", got, tt.want)
			}
		})
	}
}
