package cluster

import (
	"reflect"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// A change is told only where profiles derive something from it: not a
// node's heartbeat or schedulability, not what a zone has available.
func TestKindChangesTellOnlyWhatProfilesDeriveFrom(t *testing.T) {
	node := func(edit func(map[string]interface{})) *unstructured.Unstructured {
		o := map[string]interface{}{
			"apiVersion": "v1", "kind": "Node",
			"metadata": map[string]interface{}{"name": "cnv-0", "resourceVersion": "1", "labels": map[string]interface{}{"node-role.kubernetes.io/worker-cnv": ""}},
			"spec":     map[string]interface{}{},
			"status": map[string]interface{}{
				"capacity":   map[string]interface{}{"cpu": "64"},
				"conditions": []interface{}{map[string]interface{}{"type": "Ready", "lastHeartbeatTime": "2026-01-01T00:00:00Z"}},
			},
		}
		if edit != nil {
			edit(o)
		}
		return &unstructured.Unstructured{Object: o}
	}
	zone := func(capacity, available string) map[string]interface{} {
		return map[string]interface{}{"name": "node-0", "type": "Node", "resources": []interface{}{
			map[string]interface{}{"name": "cpu", "capacity": capacity, "allocatable": capacity, "available": available}}}
	}
	nrt := func(capacity, available, rv string) *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: map[string]interface{}{
			"apiVersion": "topology.node.k8s.io/v1alpha2", "kind": "NodeResourceTopology",
			"metadata": map[string]interface{}{"name": "cnv-0", "resourceVersion": rv},
			"zones":    []interface{}{zone(capacity, available)},
		}}
	}
	tests := []struct {
		name      string
		transform func(interface{}) (interface{}, error)
		old, new  *unstructured.Unstructured
		told      bool
	}{
		{"a heartbeat", slimNodeHardware, node(nil), node(func(o map[string]interface{}) {
			o["metadata"].(map[string]interface{})["resourceVersion"] = "2"
			o["status"].(map[string]interface{})["conditions"] = []interface{}{map[string]interface{}{"type": "Ready", "lastHeartbeatTime": "2026-01-01T00:01:00Z"}}
		}), false},
		{"cordoned", slimNodeHardware, node(nil), node(func(o map[string]interface{}) { o["spec"] = map[string]interface{}{"unschedulable": true} }), false},
		{"more CPUs", slimNodeHardware, node(nil), node(func(o map[string]interface{}) {
			o["status"].(map[string]interface{})["capacity"] = map[string]interface{}{"cpu": "96"}
		}), true},
		{"labelled into another pool", slimNodeHardware, node(nil), node(func(o map[string]interface{}) {
			o["metadata"].(map[string]interface{})["labels"] = map[string]interface{}{"node-role.kubernetes.io/worker": ""}
		}), true},
		{"a pod took CPUs of a zone", slimTopology, nrt("32", "32", "1"), nrt("32", "28", "2"), false},
		{"a zone's capacity changed", slimTopology, nrt("32", "32", "1"), nrt("48", "48", "2"), true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			old, err := tt.transform(tt.old)
			if err != nil {
				t.Fatal(err)
			}
			now, err := tt.transform(tt.new)
			if err != nil {
				t.Fatal(err)
			}
			if told := !reflect.DeepEqual(kept(old), kept(now)); told != tt.told {
				t.Errorf("told = %v, want %v (kept %v then %v)", told, tt.told, kept(old), kept(now))
			}
		})
	}
}
