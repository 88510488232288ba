package cluster

import (
	"context"
	"reflect"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	dynamicfake "k8s.io/client-go/dynamic/fake"

	"github.com/kubevirt/virt-advisor/pkg/cluster/clustertest"
	"github.com/kubevirt/virt-advisor/pkg/kubevirt"
)

// The transforms keep what the decisions read and nothing else.
func TestSlimObjects(t *testing.T) {
	node := &unstructured.Unstructured{Object: map[string]interface{}{
		"apiVersion": "v1", "kind": "Node",
		"metadata": map[string]interface{}{"name": "worker-0", "resourceVersion": "7", "uid": "u-1",
			"labels":        map[string]interface{}{"node-role.kubernetes.io/worker": ""},
			"annotations":   map[string]interface{}{"machineconfiguration.openshift.io/controlPlaneTopology": "SingleReplica", "big": "x"},
			"managedFields": []interface{}{map[string]interface{}{"manager": "kubelet"}}},
		"spec": map[string]interface{}{"podCIDR": "10.0.0.0/24", "unschedulable": true,
			"taints": []interface{}{map[string]interface{}{"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule"}}},
		"status": map[string]interface{}{
			"capacity":    map[string]interface{}{"memory": "16Gi", "cpu": "8"},
			"allocatable": map[string]interface{}{"memory": "15Gi", "cpu": "7"},
			"nodeInfo":    map[string]interface{}{"kernelVersion": "6.1", "architecture": "amd64", "swap": map[string]interface{}{"capacity": int64(1024)}},
			"images":      []interface{}{map[string]interface{}{"names": []interface{}{"a"}}},
		},
	}}
	vmi := clustertest.VMI("vm-0", "worker-0", "LiveMigrate", "False", "DisksNotLiveMigratable")
	vmi.SetResourceVersion("9")

	for _, tt := range []struct {
		name      string
		transform func(interface{}) (interface{}, error)
		in        interface{}
		want      interface{}
	}{
		{"a Node: name, labels, topology, schedulable and taints, resources, architecture, swap", slimNode, node, &unstructured.Unstructured{Object: map[string]interface{}{
			"apiVersion": "v1", "kind": "Node",
			"metadata": map[string]interface{}{"name": "worker-0", "resourceVersion": "7", "uid": "u-1",
				"labels":      map[string]interface{}{"node-role.kubernetes.io/worker": ""},
				"annotations": map[string]interface{}{"machineconfiguration.openshift.io/controlPlaneTopology": "SingleReplica"}},
			"spec": map[string]interface{}{"unschedulable": true,
				"taints": []interface{}{map[string]interface{}{"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule"}}},
			"status": map[string]interface{}{
				"capacity":    map[string]interface{}{"memory": "16Gi", "cpu": "8"},
				"allocatable": map[string]interface{}{"memory": "15Gi", "cpu": "7"},
				"nodeInfo":    map[string]interface{}{"architecture": "amd64", "swap": map[string]interface{}{"capacity": int64(1024)}},
			},
		}}},
		{"a VMI: identity and what a drain depends on", slimVMI, &vmi, &CachedVMI{
			ResourceVersion: "9",
			VMI: kubevirt.VMI{Namespace: "default", Name: "vm-0", Node: "worker-0", Phase: "Running", Strategy: "LiveMigrate",
				Condition: true, Reason: "DisksNotLiveMigratable"},
			own: [inlineBytes]byte{'v', 'm', '-', '0', '9'}}}, // the bytes of the name and resourceVersion
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, err := tt.transform(tt.in)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got %#v\nwant %#v", got, tt.want)
			}
			// A transform may be applied again to what it returned.
			again, err := tt.transform(got)
			if err != nil || !reflect.DeepEqual(again, tt.want) {
				t.Errorf("applied twice: %#v (%v)", again, err)
			}
		})
	}
}

// The cache serves what the cluster holds, sorted, and follows changes;
// the VMIs only once their kind is served.
func TestNodeVMCacheFollowsTheCluster(t *testing.T) {
	nodeGVR := schema.GroupVersionResource{Version: "v1", Resource: "nodes"}
	vmiGVR := schema.GroupVersionResource{Group: "kubevirt.io", Version: "v1", Resource: "virtualmachineinstances"}
	n1 := &unstructured.Unstructured{Object: map[string]interface{}{"apiVersion": "v1", "kind": "Node", "metadata": map[string]interface{}{"name": "worker-1"}}}
	n0 := &unstructured.Unstructured{Object: map[string]interface{}{"apiVersion": "v1", "kind": "Node", "metadata": map[string]interface{}{"name": "worker-0"},
		"status": map[string]interface{}{"conditions": []interface{}{map[string]interface{}{
			"type": "Ready", "status": "True", "lastTransitionTime": "2026-12-01T00:00:00Z", "lastHeartbeatTime": "2026-12-01T00:00:00Z"}}}}}
	b := clustertest.VMI("b", "worker-1", "LiveMigrate", "True", "")
	a := clustertest.VMI("a", "worker-0", "LiveMigrate", "True", "")
	dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(),
		map[schema.GroupVersionResource]string{nodeGVR: "NodeList", vmiGVR: "VirtualMachineInstanceList"}, n1, n0, &b, &a)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	c := NewNodeVMCache(dyn, nil, clustertest.ClusterScoped())
	c.Start(ctx)
	if _, _, ok := c.VMIs(); ok {
		t.Fatal("VMIs served from a cache while the cluster does not serve the kind")
	}
	c.mapper = clustertest.Namespaced(VirtualMachineInstanceGVK)
	poll(t, func() bool { _, _, ok := c.Nodes(); return ok })
	poll(t, func() bool { _, _, ok := c.VMIs(); return ok })

	nodes, _, _ := c.Nodes()
	if len(nodes) != 2 || nodes[0].GetName() != "worker-0" || nodes[1].GetName() != "worker-1" {
		t.Errorf("nodes %v, want worker-0 and worker-1 in that order", nodes)
	}
	vmis, _, _ := c.VMIs()
	if len(vmis) != 2 || vmis[0].Name != "a" || vmis[1].Name != "b" || !vmis[0].Migratable {
		t.Errorf("VMIs %+v, want a then b, migratable", vmis)
	}

	// An update of what the cache does not keep (the guest agent's data,
	// a Node's heartbeat) builds no new view; the change after it does.
	vmiChanges, nodeChanges := c.vmis.changes.Load(), c.nodes.changes.Load()
	guest := a.DeepCopy()
	_ = unstructured.SetNestedField(guest.Object, "Fedora", "status", "guestOSInfo", "name")
	if _, err := dyn.Resource(vmiGVR).Namespace("default").Update(ctx, guest, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	heartbeat := n0.DeepCopy()
	_ = unstructured.SetNestedSlice(heartbeat.Object, []interface{}{map[string]interface{}{
		"type": "Ready", "status": "True", "lastTransitionTime": "2026-12-01T00:00:00Z", "lastHeartbeatTime": "2026-12-01T00:00:40Z"}}, "status", "conditions")
	if _, err := dyn.Resource(nodeGVR).Update(ctx, heartbeat, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	stuck := clustertest.VMI("a", "worker-0", "LiveMigrate", "False", "HostDeviceNotLiveMigratable")
	if _, err := dyn.Resource(vmiGVR).Namespace("default").Update(ctx, &stuck, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	labelled := heartbeat.DeepCopy()
	labelled.SetLabels(map[string]string{"node-role.kubernetes.io/worker": ""})
	if _, err := dyn.Resource(nodeGVR).Update(ctx, labelled, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	poll(t, func() bool { v, _, _ := c.VMIs(); return len(v) == 2 && !v[0].Migratable })
	if v, _, _ := c.VMIs(); v[0].Reason != "HostDeviceNotLiveMigratable" {
		t.Errorf("VMI a after the change: %+v", v[0])
	}
	poll(t, func() bool { n, _, _ := c.Nodes(); return len(n[0].GetLabels()) == 1 })
	if got := c.vmis.changes.Load() - vmiChanges; got != 1 {
		t.Errorf("%d VMI changes counted, want 1 (the guest agent's data is not one)", got)
	}
	if got := c.nodes.changes.Load() - nodeChanges; got != 1 {
		t.Errorf("%d Node changes counted, want 1 (a heartbeat is not one)", got)
	}
}

func poll(t *testing.T, cond func() bool) {
	t.Helper()
	if err := wait.PollUntilContextTimeout(context.Background(), 10*time.Millisecond, 10*time.Second, true,
		func(context.Context) (bool, error) { return cond(), nil }); err != nil {
		t.Fatalf("not so within 10s: %v", err)
	}
}

// The gates between the steps of a rollout read the Machine Config
// daemon's annotations and the Ready condition from the cache: they are
// kept, nothing else of the annotations and conditions.
func TestSlimNodeKeepsWhatTheGatesRead(t *testing.T) {
	in := &unstructured.Unstructured{Object: map[string]interface{}{"apiVersion": "v1", "kind": "Node",
		"metadata": map[string]interface{}{"name": "worker-0", "annotations": map[string]interface{}{
			"machineconfiguration.openshift.io/currentConfig": "rendered-a", "machineconfiguration.openshift.io/desiredConfig": "rendered-b",
			"machineconfiguration.openshift.io/state": "Working", "machineconfiguration.openshift.io/reason": "",
			"volumes.kubernetes.io/controller-managed-attach-detach": "true"}},
		"status": map[string]interface{}{"conditions": []interface{}{
			map[string]interface{}{"type": "MemoryPressure", "status": "False"},
			map[string]interface{}{"type": "Ready", "status": "False", "lastTransitionTime": "2026-12-01T00:00:00Z", "lastHeartbeatTime": "2026-12-01T00:00:40Z"}}}}}
	out, err := slimNode(in)
	if err != nil {
		t.Fatal(err)
	}
	u := out.(*unstructured.Unstructured)
	if got := u.GetAnnotations(); len(got) != 4 || got["machineconfiguration.openshift.io/desiredConfig"] != "rendered-b" {
		t.Errorf("annotations %v", got)
	}
	conditions, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	want := []interface{}{map[string]interface{}{"type": "Ready", "status": "False", "lastTransitionTime": "2026-12-01T00:00:00Z"}}
	if !reflect.DeepEqual(conditions, want) {
		t.Errorf("conditions %v, want %v", conditions, want)
	}
}

// TestSlimVMIKeepsItsOwnStrings: the name and resourceVersion live in the
// CachedVMI when they fit, in allocations of their own when not, and a
// copy reads the same.
func TestSlimVMIKeepsItsOwnStrings(t *testing.T) {
	for _, name := range []string{"vm-0", strings.Repeat("n", inlineBytes-3), strings.Repeat("long", 20)} {
		u := &unstructured.Unstructured{Object: map[string]interface{}{"metadata": map[string]interface{}{
			"namespace": "default", "name": name, "resourceVersion": "12345"}}}
		got, err := slimVMI(u)
		if err != nil {
			t.Fatal(err)
		}
		c := got.(*CachedVMI)
		u.SetName("changed") // what the cache keeps does not share the decoded object's bytes
		u.SetResourceVersion("0")
		copied := c.DeepCopyObject().(*CachedVMI)
		for _, v := range []*CachedVMI{c, copied} {
			if v.VMI.Name != name || v.ResourceVersion != "12345" {
				t.Errorf("name %q resourceVersion %q, want %q and 12345", v.VMI.Name, v.ResourceVersion, name)
			}
		}
	}
}
