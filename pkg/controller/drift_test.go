package controller

import "testing"

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

func TestDriftSummaryIsSorted(t *testing.T) {
	got := driftSummary(map[string][]string{"b": {"spec.x"}, "a": {"spec.y", "spec.z"}})
	if want := "item 'a' (spec.y, spec.z); item 'b' (spec.x)"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}
