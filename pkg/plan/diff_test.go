package plan

import (
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"
)

func TestUnifiedDiff(t *testing.T) {
	tests := []struct {
		name, from, to, fromLabel, toLabel, want string
	}{
		{"new object", "", "a: 1\nb: 2\n", devNull, "x (ConfigMap)",
			"--- /dev/null\n+++ x (ConfigMap)\n@@ -0,0 +1,3 @@\n+a: 1\n+b: 2\n+\n"},
		{"no change", "a: 1\n", "a: 1\n", "x (ConfigMap)", "x (ConfigMap)",
			"--- x (ConfigMap)\n+++ x (ConfigMap)\n(no changes)\n"},
		{"update", "a: 1\nb: 2\n", "a: 1\nb: 3\n", "x (ConfigMap)", "x (ConfigMap)",
			"--- x (ConfigMap)\n+++ x (ConfigMap)\n@@ -1,3 +1,3 @@\n a: 1\n-b: 2\n+b: 3\n\n"},
		{"delete", "a: 1\n", "", "x (ConfigMap)", devNull,
			"--- x (ConfigMap)\n+++ /dev/null\n@@ -1,2 +0,0 @@\n-a: 1\n-\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := unifiedDiff(tt.from, tt.to, tt.fromLabel, tt.toLabel)
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Errorf("got\n%q\nwant\n%q", got, tt.want)
			}
		})
	}
}

func TestChangeSummary(t *testing.T) {
	tests := []struct{ diff, want string }{
		{"--- /dev/null\n+++ x (ConfigMap)\n@@ -0,0 +1,3 @@\n+a: 1\n+b: 2\n+\n", "+2 -0"},
		{"--- x (ConfigMap)\n+++ x (ConfigMap)\n(no changes)\n", "+0 -0"},
		{"--- x\n+++ x\n@@ -1,3 +1,3 @@\n a: 1\n-b: 2\n+b: 3\n \n", "+1 -1"},
	}
	for _, tt := range tests {
		if got := ChangeSummary(tt.diff); got != tt.want {
			t.Errorf("ChangeSummary(%q) = %s, want %s", tt.diff, got, tt.want)
		}
	}
}

func TestSanitizeDropsVolatileFields(t *testing.T) {
	obj := &unstructured.Unstructured{Object: map[string]interface{}{
		"kind": "ConfigMap",
		"metadata": map[string]interface{}{
			"name": "x", "resourceVersion": "5", "uid": "u", "generation": int64(2), "creationTimestamp": "t",
			"managedFields": []interface{}{}, "selfLink": "/x", "labels": map[string]interface{}{"a": "b"},
		},
		"status": map[string]interface{}{"ready": true},
		"data":   map[string]interface{}{"k": "v"},
	}}
	got, err := toYAML(sanitize(obj))
	if err != nil {
		t.Fatal(err)
	}
	want := "data:\n  k: v\nkind: ConfigMap\nmetadata:\n  labels:\n    a: b\n  name: x\n"
	if got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
	if obj.GetResourceVersion() != "5" {
		t.Error("sanitize changed its input")
	}
}

// TestToYAMLAsYAMLMarshal: the kept YAML of an object is what yaml.Marshal
// makes of it, the first time and after; another object gets its own.
func TestToYAMLAsYAMLMarshal(t *testing.T) {
	for _, obj := range []map[string]interface{}{
		{"kind": "KubeDescheduler", "spec": map[string]interface{}{"mode": "Automatic", "deschedulingIntervalSeconds": int64(3600)}},
		{"kind": "KubeDescheduler", "spec": map[string]interface{}{"mode": "Predictive", "deschedulingIntervalSeconds": int64(3600)}},
		{"kind": "MachineConfig", "spec": map[string]interface{}{"kernelArguments": []interface{}{"psi=1", "a: b"}}},
	} {
		want, err := yaml.Marshal(obj)
		if err != nil {
			t.Fatal(err)
		}
		for i := 0; i < 2; i++ {
			if got, err := toYAML(obj); err != nil || got != string(want) {
				t.Errorf("toYAML #%d = %q, %v; want %q", i+1, got, err, want)
			}
		}
	}
}
