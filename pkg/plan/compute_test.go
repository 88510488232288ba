package plan

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/kubevirt/virt-advisor/pkg/apis/advisor/v1alpha1"
	"github.com/kubevirt/virt-advisor/pkg/cluster"
	"github.com/kubevirt/virt-advisor/pkg/cluster/clustertest"
	"github.com/kubevirt/virt-advisor/pkg/kubevirt"
	"github.com/kubevirt/virt-advisor/pkg/machineconfig"
	"github.com/kubevirt/virt-advisor/pkg/maintenance"
	"github.com/kubevirt/virt-advisor/pkg/profiles"
)

// fakeCluster is a main cluster in memory: objects by key, the pools, the
// Nodes and the VMIs; a server-side apply dry-run sets the applied fields
// over the live object and answers with its resourceVersion.
type fakeCluster struct {
	mu      sync.Mutex
	objects map[cluster.ObjectKey]*unstructured.Unstructured
	pools   []unstructured.Unstructured
	nodes   []unstructured.Unstructured
	vmis    []kubevirt.VMI
	// unserved kinds have no resource.
	unserved map[string]bool
	requests map[string]int // by verb and kind: "get ConfigMap"
}

var _ Cluster = &fakeCluster{}

func (c *fakeCluster) count(verb, kind string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.requests == nil {
		c.requests = map[string]int{}
	}
	c.requests[verb+" "+kind]++
}

func (c *fakeCluster) object(gvk schema.GroupVersionKind, ns, name string) *unstructured.Unstructured {
	c.mu.Lock()
	defer c.mu.Unlock()
	if obj := c.objects[cluster.ObjectKey{GVK: gvk, Namespace: ns, Name: name}]; obj != nil {
		return obj.DeepCopy()
	}
	return nil
}

func (c *fakeCluster) Resource(gvk schema.GroupVersionKind, ns string) (dynamic.ResourceInterface, error) {
	if c.unserved[gvk.Kind] {
		return nil, &meta.NoKindMatchError{GroupKind: gvk.GroupKind()}
	}
	return &fakeResource{c: c, gvk: gvk, ns: ns}, nil
}

func (c *fakeCluster) Get(_ context.Context, gvk schema.GroupVersionKind, ns, name string) (*unstructured.Unstructured, error) {
	c.count("get", gvk.Kind)
	return c.object(gvk, ns, name), nil
}

func (c *fakeCluster) GetAbsentAt(ctx context.Context, gvk schema.GroupVersionKind, ns, name string) (*unstructured.Unstructured, string, error) {
	obj, err := c.Get(ctx, gvk, ns, name)
	return obj, "1", err
}

func (c *fakeCluster) List(_ context.Context, gvk schema.GroupVersionKind) ([]unstructured.Unstructured, error) {
	c.count("list", gvk.Kind)
	switch gvk.Kind {
	case "MachineConfigPool":
		return c.pools, nil
	case "Node":
		return c.nodes, nil
	}
	return nil, nil
}

func (c *fakeCluster) Served(gvk schema.GroupVersionKind) (bool, error) {
	return !c.unserved[gvk.Kind], nil
}
func (c *fakeCluster) ServedNow(gvk schema.GroupVersionKind) bool { return !c.unserved[gvk.Kind] }
func (c *fakeCluster) PreferredVersion(gk schema.GroupKind) (string, error) {
	return "v1", nil
}
func (c *fakeCluster) ListVMIs(context.Context) ([]kubevirt.VMI, bool, error) {
	c.count("list", "VirtualMachineInstance")
	return c.vmis, true, nil
}
func (c *fakeCluster) InputWatches() *cluster.Watches { return nil }

// fakeResource serves the Get and the dry-run of one kind.
type fakeResource struct {
	dynamic.ResourceInterface
	c   *fakeCluster
	gvk schema.GroupVersionKind
	ns  string
}

func (r *fakeResource) Get(_ context.Context, name string, _ metav1.GetOptions, _ ...string) (*unstructured.Unstructured, error) {
	r.c.count("get", r.gvk.Kind)
	if obj := r.c.object(r.gvk, r.ns, name); obj != nil {
		return obj, nil
	}
	return nil, apierrors.NewNotFound(schema.GroupResource{Group: r.gvk.Group, Resource: r.gvk.Kind}, name)
}

func (r *fakeResource) Apply(_ context.Context, name string, obj *unstructured.Unstructured, opts metav1.ApplyOptions, _ ...string) (*unstructured.Unstructured, error) {
	r.c.count("apply", r.gvk.Kind)
	if len(opts.DryRun) == 0 {
		return nil, errors.New("the fake cluster only dry-runs")
	}
	if obj.GetAnnotations()["reject"] != "" {
		return nil, apierrors.NewInvalid(r.gvk.GroupKind(), name, nil)
	}
	out := r.c.object(r.gvk, r.ns, name)
	if out == nil {
		out = &unstructured.Unstructured{Object: map[string]interface{}{"apiVersion": obj.GetAPIVersion(), "kind": obj.GetKind(),
			"metadata": map[string]interface{}{"name": name, "namespace": r.ns}}}
	}
	for k, v := range obj.Object {
		if k != "metadata" {
			out.Object[k] = v
		}
	}
	labels := out.GetLabels()
	if labels == nil {
		labels = map[string]string{}
	}
	maps.Copy(labels, obj.GetLabels())
	out.SetLabels(labels)
	return out, nil
}

// fakeProfile plans the items it is given, reading its input first.
type fakeProfile struct {
	items  []profiles.Item
	inputs []profiles.ObjectRef
}

func (p *fakeProfile) Metadata() profiles.Metadata {
	return profiles.Metadata{Name: "fake", Writes: []profiles.Write{
		{Resource: machineconfig.MachineConfigs.GroupResource()},
		{Resource: schema.GroupResource{Group: configMapGVK.Group, Resource: "configmaps"}},
	}}
}
func (p *fakeProfile) Prerequisites(v1alpha1.ProfileOptions) []profiles.Prerequisite {
	return []profiles.Prerequisite{{GVK: schema.GroupVersionKind{Group: "operator.openshift.io", Kind: "KubeDescheduler"}, Description: "the descheduler"}}
}
func (p *fakeProfile) Items(ctx context.Context, in profiles.Inputs) ([]profiles.Item, error) {
	for _, ref := range p.inputs {
		if _, err := in.Cluster.Get(ctx, ref.GVK, ref.Namespace, ref.Name); err != nil {
			return nil, err
		}
	}
	out := slices.Clone(p.items)
	for i := range out {
		if out[i].Desired != nil {
			out[i].Desired = out[i].Desired.DeepCopy()
		}
	}
	return out, nil
}
func (p *fakeProfile) InputObjects(v1alpha1.ProfileOptions) []profiles.ObjectRef { return p.inputs }
func (p *fakeProfile) DescribeInputChange(string, map[string]interface{}, map[string]interface{}) string {
	return ""
}

type oneProfile struct{ p profiles.Profile }

func (o oneProfile) Get(string) (profiles.Profile, bool) { return o.p, true }

var configMapGVK = schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}

func configMap(name string, data map[string]interface{}, rv string, uid types.UID, managers ...string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]interface{}{"apiVersion": "v1", "kind": "ConfigMap", "data": data}}
	u.SetNamespace("ns")
	u.SetName(name)
	u.SetResourceVersion(rv)
	u.SetUID(uid)
	if len(managers) > 0 {
		clustertest.SetAppliers(u, managers...)
	}
	return u
}

// planFixture is a cluster and a profile whose items plan to every
// operation: create, update (of a MachineConfig that reboots a pool with
// a VM that shuts down, and of an object someone else made), delete,
// left in place, unchanged, rejected, failed, and skipped.
func planFixture() (*fakeCluster, *fakeProfile, *v1alpha1.VirtPlatformConfig) {
	mc := &unstructured.Unstructured{Object: map[string]interface{}{"apiVersion": "machineconfiguration.openshift.io/v1", "kind": "MachineConfig",
		"spec": map[string]interface{}{"kernelArguments": []interface{}{"psi=0"}}}}
	mc.SetName("99-worker-psi")
	mc.SetLabels(workerLabels)
	mc.SetResourceVersion("7")
	mc.SetUID("mc-uid")
	clustertest.SetAppliers(mc, cluster.FieldManager)
	desiredMC := &unstructured.Unstructured{Object: map[string]interface{}{"apiVersion": "machineconfiguration.openshift.io/v1", "kind": "MachineConfig",
		"spec": map[string]interface{}{"kernelArguments": []interface{}{"psi=1"}}}}
	desiredMC.SetName("99-worker-psi")
	desiredMC.SetLabels(workerLabels)
	rejected := configMap("rejected", map[string]interface{}{"a": "1"}, "", "")
	rejected.SetAnnotations(map[string]string{"reject": "yes"})
	same := configMap("same", map[string]interface{}{"a": "1"}, "14", "same-uid", cluster.FieldManager)
	same.SetLabels(map[string]string{profiles.ManagedByLabel: "fake"})
	input := configMap("input", map[string]interface{}{"limit": "5"}, "3", "input-uid")
	c := &fakeCluster{
		objects:  map[cluster.ObjectKey]*unstructured.Unstructured{},
		pools:    []unstructured.Unstructured{testPool("worker", []interface{}{"worker"}, 3, false)},
		nodes:    workers,
		vmis:     []kubevirt.VMI{kubevirt.ReadVMI(&e2eVMIs[0]), kubevirt.ReadVMI(&e2eVMIs[1])},
		unserved: map[string]bool{"Secret": true},
	}
	for _, obj := range []*unstructured.Unstructured{
		mc, input,
		configMap("theirs", map[string]interface{}{"a": "0"}, "11", "theirs-uid", "someone-else"),
		configMap("old", map[string]interface{}{"a": "0"}, "12", "old-uid", cluster.FieldManager),
		configMap("kept", map[string]interface{}{"a": "0"}, "13", "kept-uid", "someone-else"),
		same,
	} {
		c.objects[cluster.ObjectKey{GVK: obj.GroupVersionKind(), Namespace: obj.GetNamespace(), Name: obj.GetName()}] = obj
	}
	secret := &unstructured.Unstructured{Object: map[string]interface{}{"apiVersion": "v1", "kind": "Secret"}}
	secret.SetName("gone")
	p := &fakeProfile{
		inputs: []profiles.ObjectRef{{GVK: configMapGVK, Namespace: "ns", Name: "input"}},
		items: []profiles.Item{
			{Name: "create", Desired: configMap("new", map[string]interface{}{"a": "1"}, "", ""), ManagedFields: []string{"data"}, Owned: true, Message: "ConfigMap 'new' will be configured"},
			{Name: "psi", Desired: desiredMC, ManagedFields: []string{"spec.kernelArguments"}, Owned: true, Message: "MachineConfig '99-worker-psi' will be configured", Warnings: []string{"a warning"}},
			{Name: "theirs", Desired: configMap("theirs", map[string]interface{}{"a": "1"}, "", ""), ManagedFields: []string{"data"}, Owned: true},
			{Name: "old", Desired: configMap("old", nil, "", ""), Owned: true, Absent: true},
			{Name: "kept", Desired: configMap("kept", nil, "", ""), Owned: true, Absent: true},
			{Name: "same", Desired: configMap("same", map[string]interface{}{"a": "1"}, "", ""), ManagedFields: []string{"data"}, Owned: true, ShowVersion: true,
				Message: "ConfigMap 'same' will be configured",
				Check:   func(context.Context) (string, []string) { return "coverage checked", []string{"check warning"} }},
			{Name: "rejected", Desired: rejected, ManagedFields: []string{"data"}, Impact: v1alpha1.ImpactHigh},
			{Name: "failed", Desired: configMap("failed", nil, "", ""), Err: errors.New("no usable API")},
			{Name: "gone", Desired: secret, Owned: true, Absent: true},
			{Name: "gone-too", Desired: configMap("gone-too", nil, "", ""), Owned: true, Absent: true},
		},
	}
	cfg := &v1alpha1.VirtPlatformConfig{ObjectMeta: metav1.ObjectMeta{Name: "fake", Generation: 4, UID: "cfg-uid"},
		Spec: v1alpha1.VirtPlatformConfigSpec{Profile: "fake", Action: v1alpha1.PlanActionDryRun}}
	cfg.Status.WrittenObjects = []v1alpha1.WrittenObject{{UID: "old-uid", Created: true}}
	return c, p, cfg
}

// recordedPlan is the plan of planFixture as the engine computed it
// before it was split into steps (one function planned an item, another
// the whole plan): its items, warnings, hashes and the requests it sent.
var recordedPlan = []string{
	`create Create Medium "ConfigMap 'new' will be configured" err=""`,
	`psi Update Low "MachineConfig '99-worker-psi' will be configured; reboots: pool worker, 3 nodes, once; 1 VM live-migrates, 1 shuts down: default/vm-none (EvictionStrategyNone); maintenance windows: pool 'worker': window 'weekend' opens Sat 28 Nov 22:00 UTC, in 3d12h; it is written then" err=""`,
	`theirs Update Low "" err=""`,
	`old Delete Low "" err=""`,
	`kept None None "ConfigMap 'kept' was not created by virt-advisor: it is left in place (delete it yourself if it is no longer wanted)" err=""`,
	`same None None "ConfigMap 'same' is already configured; nothing to change. coverage checked" err=""`,
	`rejected Create High "" err="server-side apply dry-run of ConfigMap ns/rejected was rejected: ConfigMap \"rejected\" is invalid"`,
	`failed  Medium "" err="no usable API"`,
	"item 'psi': a warning",
	"item 'same': check warning",
	"item 'psi': draining the nodes shuts down 1 VM: default/vm-none (shuts down, EvictionStrategyNone, pool worker)",
	"impact High desired [create failed kept psi rejected same theirs] differs map[psi:[spec.kernelArguments] same:[] theirs:[data]] targets [create kept old psi same theirs] disrupted 1",
	// Changed once since: a plan that rolls pools binds the gates in
	// force between their steps (spec.rollout.gates).
	"plan 4533b71c2502f8131826267fc64ad7b4b25d3bccd96e6c618f1b0695a0d184e9",
	"snapshot 331e187e5857c55b5f5c7e9b10d9b609ba4afcdc296f43e935e708a20002178c",
	// The pods are listed since the capacity check (no pod cache here).
	"map[apply ConfigMap:5 apply MachineConfig:1 get ConfigMap:8 get MachineConfig:1 get MachineConfiguration:1 list MachineConfigPool:1 list Node:1 list Pod:1 list VirtualMachineInstance:1]",
}

// TestComputeIsUnchanged: the plan of every kind of item (its operations,
// messages, notes, warnings and hashes) and the requests computing it
// sends are what they were before the engine was split into steps:
// approvals of existing plans stay valid.
func TestComputeIsUnchanged(t *testing.T) {
	weekend, err := maintenance.New("weekend", maintenance.Spec{PoolNames: []string{"worker"}, Schedule: "0 22 * * 6", Duration: 8 * time.Hour, TimeZone: "UTC"})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name    string
		compute func(*Engine, context.Context, *v1alpha1.VirtPlatformConfig) (*Result, error)
	}{
		{"the controller's, from the watch caches", (*Engine).Compute},
		{"an API request's, live (no watches)", (*Engine).ComputeLive},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, p, cfg := planFixture()
			e := &Engine{Cluster: c, Profiles: oneProfile{p}, Clock: testingclock.NewFakePassiveClock(time.Date(2026, 11, 25, 10, 0, 0, 0, time.UTC))}
			e.SetMaintenanceWindows(windowList{weekend})
			res, err := tc.compute(e, context.Background(), cfg)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, it := range res.Status.Items {
				got = append(got, fmt.Sprintf("%s %s %s %q err=%q", it.Name, it.Operation, it.ImpactSeverity, it.Message, it.Error))
			}
			got = append(got, res.Status.Warnings...)
			got = append(got, fmt.Sprintf("impact %s desired %v differs %v targets %v disrupted %v", res.Status.ImpactSeverity,
				slices.Sorted(maps.Keys(res.Desired)), res.Differs, slices.Sorted(maps.Keys(res.Targets)), len(res.Disrupted["psi"])))
			got = append(got, "plan "+res.Status.PlanHash, "snapshot "+res.SnapshotHash, fmt.Sprint(c.requests))
			for i := range max(len(got), len(recordedPlan)) {
				if i >= len(got) || i >= len(recordedPlan) || got[i] != recordedPlan[i] {
					t.Errorf("the plan differs from the one recorded from line %d:\n got %q\nwant %q", i+1, got[i:], recordedPlan[min(i, len(recordedPlan)):])
					break
				}
			}
		})
	}
}

// An item whose profile could not derive an object (its pool's nodes
// differ, say) says why, with no target, instead of an internal error.
func TestAnItemWithoutAnObjectSaysWhy(t *testing.T) {
	c, p, cfg := planFixture()
	p.items = []profiles.Item{{Name: "underived", Owned: true, Message: "pool worker-cnv", Err: errors.New("nodes cnv-0 and cnv-1 differ in CPU count")}}
	e := &Engine{Cluster: c, Profiles: oneProfile{p}, Clock: testingclock.NewFakePassiveClock(time.Date(2026, 11, 25, 10, 0, 0, 0, time.UTC))}
	res, err := e.ComputeLive(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Status.Items) != 1 {
		t.Fatalf("items %+v", res.Status.Items)
	}
	if it := res.Status.Items[0]; it.Error != "nodes cnv-0 and cnv-1 differ in CPU count" || it.TargetRef.Kind != "" || it.Message != "pool worker-cnv" {
		t.Errorf("item %+v", it)
	}
}
