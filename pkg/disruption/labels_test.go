package disruption

import (
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
)

// labelsOf reads what GetLabels copies, and selectors match it alike.
func TestLabelsReadInPlace(t *testing.T) {
	node := func(meta map[string]interface{}) *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: map[string]interface{}{"metadata": meta}}
	}
	cases := []struct {
		name     string
		obj      *unstructured.Unstructured
		key      string
		value    string
		has      bool
		selector string
		matches  bool
	}{
		{name: "set", obj: node(map[string]interface{}{"labels": map[string]interface{}{"a": "1", "b": ""}}),
			key: "a", value: "1", has: true, selector: "a=1,b", matches: true},
		{name: "empty value", obj: node(map[string]interface{}{"labels": map[string]interface{}{"b": ""}}),
			key: "b", value: "", has: true, selector: "b=", matches: true},
		{name: "absent key", obj: node(map[string]interface{}{"labels": map[string]interface{}{"a": "1"}}),
			key: "b", selector: "b", matches: false},
		{name: "no labels", obj: node(map[string]interface{}{"name": "n1"}),
			key: "a", selector: "!a", matches: true},
		{name: "no metadata", obj: &unstructured.Unstructured{Object: map[string]interface{}{}},
			key: "a", selector: "a notin (1)", matches: true},
		{name: "labels not a map", obj: node(map[string]interface{}{"labels": "a=1"}),
			key: "a", selector: "a", matches: false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			l := labelsOf(c.obj)
			if got, ok := l.Lookup(c.key); got != c.value || ok != c.has {
				t.Errorf("Lookup(%q) = %q, %v; want %q, %v", c.key, got, ok, c.value, c.has)
			}
			if l.Has(c.key) != c.has || l.Get(c.key) != c.value {
				t.Errorf("Has/Get(%q) = %v, %q; want %v, %q", c.key, l.Has(c.key), l.Get(c.key), c.has, c.value)
			}
			sel, err := labels.Parse(c.selector)
			if err != nil {
				t.Fatal(err)
			}
			if got, copied := sel.Matches(l), sel.Matches(labels.Set(c.obj.GetLabels())); got != c.matches || got != copied {
				t.Errorf("%q matches %v, the copied labels %v; want %v", c.selector, got, copied, c.matches)
			}
		})
	}
}

func TestAnnotationReadInPlace(t *testing.T) {
	n := &unstructured.Unstructured{Object: map[string]interface{}{"metadata": map[string]interface{}{
		"annotations": map[string]interface{}{TopologyAnnotation: singleReplica}}}}
	if got := annotation(n, TopologyAnnotation); got != singleReplica {
		t.Errorf("annotation = %q, want %q", got, singleReplica)
	}
	if got := annotation(n, "other"); got != "" {
		t.Errorf("absent annotation = %q, want empty", got)
	}
	if got := annotation(&unstructured.Unstructured{Object: map[string]interface{}{}}, TopologyAnnotation); got != "" {
		t.Errorf("annotation without metadata = %q, want empty", got)
	}
}
