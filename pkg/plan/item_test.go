package plan

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/sets"

	"github.com/kubevirt/virt-advisor/pkg/apis/advisor/v1alpha1"
	"github.com/kubevirt/virt-advisor/pkg/cluster"
	"github.com/kubevirt/virt-advisor/pkg/profiles"
)

func withRV(u *unstructured.Unstructured, rv string) *unstructured.Unstructured {
	u = u.DeepCopy()
	u.SetResourceVersion(rv)
	return u
}

// planFrom plans an item from what was read, reading nothing: the
// operation, the impact, the diff's labels, what the review binds and the
// change of a MachineConfig.
func TestPlanFrom(t *testing.T) {
	desired := configMap("cm", map[string]interface{}{"a": "1"}, "", "")
	live := configMap("cm", map[string]interface{}{"a": "0"}, "5", "cm-uid")
	same := configMap("cm", map[string]interface{}{"a": "1"}, "5", "cm-uid")
	mcDesired := &unstructured.Unstructured{Object: map[string]interface{}{"apiVersion": "machineconfiguration.openshift.io/v1", "kind": "MachineConfig", "spec": psiSpec}}
	mcDesired.SetName("99-worker-psi")
	mcLive := withRV(mcDesired, "3")
	_ = unstructured.SetNestedSlice(mcLive.Object, []interface{}{"psi=0"}, "spec", "kernelArguments")
	for _, tc := range []struct {
		name      string
		it        profiles.Item
		desired   *unstructured.Unstructured
		read      targetRead
		ours      bool
		op        v1alpha1.Operation
		impact    v1alpha1.Impact
		skip      bool
		err       string
		diff      []string // lines the diff has
		differs   []string
		uid       string
		noDesired bool
		change    mcChange
	}{
		{name: "missing: created, Medium, diff from /dev/null", it: profiles.Item{Name: "i", ManagedFields: []string{"data"}}, desired: desired,
			read: targetRead{dry: desired}, op: v1alpha1.OperationCreate, impact: v1alpha1.ImpactMedium, diff: []string{"--- /dev/null", "+++ cm (ConfigMap)", "+  a: \"1\""}},
		{name: "changed: updated, Low, the differing fields", it: profiles.Item{Name: "i", ManagedFields: []string{"data"}}, desired: desired,
			read: targetRead{live: live, dry: withRV(desired, "5")}, op: v1alpha1.OperationUpdate, impact: v1alpha1.ImpactLow,
			diff: []string{"--- cm (ConfigMap)", "-  a: \"0\"", "+  a: \"1\""}, differs: []string{"data"}, uid: "cm-uid"},
		{name: "as desired: nothing to change, impact None", it: profiles.Item{Name: "i", ManagedFields: []string{"data"}, Impact: v1alpha1.ImpactHigh}, desired: desired,
			read: targetRead{live: same, dry: same}, op: v1alpha1.OperationNone, impact: v1alpha1.ImpactNone, differs: []string{}, uid: "cm-uid"},
		{name: "the version shown in the diff", it: profiles.Item{Name: "i", ShowVersion: true}, desired: desired,
			read: targetRead{live: live, dry: withRV(desired, "5")}, op: v1alpha1.OperationUpdate, impact: v1alpha1.ImpactLow, diff: []string{"--- cm (ConfigMap v1)"}, differs: []string{}, uid: "cm-uid"},
		{name: "dry-run rejected: an item error, the profile's impact", it: profiles.Item{Name: "i", Impact: v1alpha1.ImpactHigh}, desired: desired,
			read: targetRead{live: live, dryErr: apierrors.NewInvalid(schema.GroupKind{Kind: "ConfigMap"}, "cm", nil)}, op: v1alpha1.OperationUpdate, impact: v1alpha1.ImpactHigh,
			err: "server-side apply dry-run of ConfigMap ns/cm was rejected: ConfigMap \"cm\" is invalid", differs: []string{}, uid: "cm-uid"},
		{name: "dry-run of a create refused (by an admission policy, say): still a Create", it: profiles.Item{Name: "i"}, desired: desired,
			read: targetRead{dryErr: apierrors.NewForbidden(schema.GroupResource{Resource: "configmaps"}, "cm", errors.New("denied"))}, op: v1alpha1.OperationCreate, impact: v1alpha1.ImpactMedium,
			err: "server-side apply dry-run of ConfigMap ns/cm was rejected: configmaps \"cm\" is forbidden: denied"},
		{name: "absent and gone: skipped", it: profiles.Item{Name: "i", Absent: true}, desired: desired, skip: true, impact: v1alpha1.ImpactMedium},
		{name: "absent, someone else's: left in place", it: profiles.Item{Name: "i", Absent: true}, desired: desired, read: targetRead{live: live},
			op: v1alpha1.OperationNone, impact: v1alpha1.ImpactNone, noDesired: true, uid: "cm-uid"},
		{name: "absent, ours: deleted, diff to /dev/null", it: profiles.Item{Name: "i", Absent: true}, desired: desired, read: targetRead{live: live}, ours: true,
			op: v1alpha1.OperationDelete, impact: v1alpha1.ImpactLow, noDesired: true, diff: []string{"+++ /dev/null", "-  a: \"0\""}, uid: "cm-uid"},
		{name: "a MachineConfig: its spec before and after", it: profiles.Item{Name: "psi", ManagedFields: []string{"spec.kernelArguments"}}, desired: mcDesired,
			read: targetRead{live: mcLive, dry: withRV(mcDesired, "3")}, op: v1alpha1.OperationUpdate, impact: v1alpha1.ImpactLow, differs: []string{"spec.kernelArguments"},
			change: mcChange{before: map[string]interface{}{"kernelArguments": []interface{}{"psi=0"}}, after: psiSpec}},
		{name: "a MachineConfig deleted: nothing after", it: profiles.Item{Name: "psi", Absent: true}, desired: mcDesired, read: targetRead{live: mcLive}, ours: true,
			op: v1alpha1.OperationDelete, impact: v1alpha1.ImpactLow, noDesired: true, change: mcChange{before: map[string]interface{}{"kernelArguments": []interface{}{"psi=0"}}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := planFrom(tc.it, tc.desired, tc.read, tc.ours)
			if p.skip != tc.skip || p.item.Operation != tc.op || p.item.ImpactSeverity != tc.impact || p.item.Error != tc.err {
				t.Errorf("skip %v, operation %q, impact %q, error %q; want %v, %q, %q, %q", p.skip, p.item.Operation, p.item.ImpactSeverity, p.item.Error, tc.skip, tc.op, tc.impact, tc.err)
			}
			for _, line := range tc.diff {
				if !strings.Contains(p.item.Diff, line+"\n") {
					t.Errorf("the diff has no line %q:\n%s", line, p.item.Diff)
				}
			}
			if !reflect.DeepEqual(p.differs, tc.differs) {
				t.Errorf("differs %q, want %q", p.differs, tc.differs)
			}
			if string(p.target.UID) != tc.uid || p.target.SnapshotHash == "" {
				t.Errorf("target %+v, want UID %q and the hash of the reviewed state", p.target, tc.uid)
			}
			if (p.desired == nil) != tc.noDesired || (p.item.DesiredState == nil) != tc.noDesired {
				t.Errorf("desired %v, desiredState %v; want none: %v", p.desired, p.item.DesiredState, tc.noDesired)
			}
			if !reflect.DeepEqual(p.change, tc.change) {
				t.Errorf("change %+v, want %+v", p.change, tc.change)
			}
		})
	}
}

// Only an owned object someone else made loses the managed-by label.
func TestRelabels(t *testing.T) {
	live := configMap("cm", nil, "5", "cm-uid")
	for _, tc := range []struct {
		name string
		it   profiles.Item
		read targetRead
		ours bool
		want bool
	}{
		{"owned, someone else's", profiles.Item{Owned: true}, targetRead{live: live}, false, true},
		{"owned, ours", profiles.Item{Owned: true}, targetRead{live: live}, true, false},
		{"owned, to be created", profiles.Item{Owned: true}, targetRead{}, false, false},
		{"not owned", profiles.Item{}, targetRead{live: live}, false, false},
		{"absent", profiles.Item{Owned: true, Absent: true}, targetRead{live: live}, false, false},
		{"dry-run rejected", profiles.Item{Owned: true}, targetRead{live: live, dryErr: errors.New("no")}, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := relabels(tc.it, tc.read, tc.ours); got != tc.want {
				t.Errorf("relabels = %v, want %v", got, tc.want)
			}
		})
	}
	desired := desiredOf(profiles.Item{Desired: configMap("cm", nil, "", ""), Owned: true}, "cfg")
	if desired.GetLabels()[profiles.ManagedByLabel] != "cfg" {
		t.Errorf("labels %v: an owned object is labelled ours", desired.GetLabels())
	}
	removeManagedBy(desired)
	if _, ok := desired.GetLabels()[profiles.ManagedByLabel]; ok {
		t.Errorf("labels %v after removeManagedBy", desired.GetLabels())
	}
}

// readTarget uses the profile's read of the target, sends the dry-run
// alongside, reads both again once when a write slipped in, and tells
// the snapshot whether a target read from a watch cache was live.
func TestReadTarget(t *testing.T) {
	key := cluster.ObjectKey{GVK: configMapGVK, Namespace: "ns", Name: "cm"}
	desired := configMap("cm", map[string]interface{}{"a": "1"}, "", "")
	for _, tc := range []struct {
		name       string
		server     *unstructured.Unstructured // the live object; nil: none
		profile    *unstructured.Unstructured // what the profile read; nil: nothing
		fromCache  bool
		absent     bool
		wantLiveRV string
		requests   string
		consistent bool
	}{
		{name: "not read by the profile: a GET and the dry-run", server: configMap("cm", nil, "2", ""), wantLiveRV: "2",
			requests: "map[apply ConfigMap:1 get ConfigMap:1]", consistent: true},
		{name: "missing: no object", wantLiveRV: "", requests: "map[apply ConfigMap:1 get ConfigMap:1]", consistent: true},
		{name: "read live by the profile: no GET", server: configMap("cm", nil, "2", ""), profile: configMap("cm", nil, "2", ""), wantLiveRV: "2",
			requests: "map[apply ConfigMap:1]", consistent: true},
		{name: "read from a cache the dry-run confirms: no GET, consistent", server: configMap("cm", nil, "2", ""), profile: configMap("cm", nil, "2", ""), fromCache: true,
			wantLiveRV: "2", requests: "map[apply ConfigMap:1]", consistent: true},
		{name: "read from a cache that is behind: read again, overtaken", server: configMap("cm", nil, "2", ""), profile: configMap("cm", nil, "1", ""), fromCache: true,
			wantLiveRV: "2", requests: "map[apply ConfigMap:2 get ConfigMap:1]", consistent: false},
		{name: "a write slipped in after the profile's live read: read again", server: configMap("cm", nil, "2", ""), profile: configMap("cm", nil, "1", ""),
			wantLiveRV: "2", requests: "map[apply ConfigMap:2 get ConfigMap:1]", consistent: true},
		{name: "absent: no dry-run", server: configMap("cm", nil, "2", ""), absent: true, wantLiveRV: "2", requests: "map[get ConfigMap:1]", consistent: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := &fakeCluster{objects: map[cluster.ObjectKey]*unstructured.Unstructured{}}
			if tc.server != nil {
				c.objects[key] = tc.server
			}
			snap := &inputReader{read: map[cluster.ObjectKey]*unstructured.Unstructured{}, cached: map[cluster.ObjectKey]string{}, confirmed: sets.New[cluster.ObjectKey](),
				live: map[cluster.ObjectKey]func() (*unstructured.Unstructured, error){key: func() (*unstructured.Unstructured, error) { return tc.server, nil }}}
			if tc.profile != nil {
				snap.read[key] = tc.profile
			}
			if tc.fromCache {
				snap.cached[key] = tc.profile.GetResourceVersion()
			}
			ri, _ := c.Resource(configMapGVK, "ns")
			read, err := readTarget(context.Background(), ri, desired, tc.absent, snap)
			if err != nil {
				t.Fatal(err)
			}
			if got := resourceVersion(read.live); got != tc.wantLiveRV {
				t.Errorf("live resourceVersion %q, want %q", got, tc.wantLiveRV)
			}
			if got := fmt.Sprint(c.requests); got != tc.requests {
				t.Errorf("requests %s, want %s", got, tc.requests)
			}
			if got := snap.consistent(); got != tc.consistent {
				t.Errorf("consistent %v, want %v", got, tc.consistent)
			}
		})
	}
}

// addItems: skipped items are left out; a failed item is listed, hashed
// and its impact counted, but neither its live state nor its target is
// bound; a Delete has no desired object; warnings name their item.
func TestAddItems(t *testing.T) {
	cm := configMap("cm", nil, "", "")
	planned := []plannedItem{
		{item: v1alpha1.PlanItem{Name: "create", Operation: v1alpha1.OperationCreate, ImpactSeverity: v1alpha1.ImpactMedium}, key: "k1",
			snapshot: map[string]interface{}{"a": 1}, target: v1alpha1.ReviewedTarget{SnapshotHash: "h1"}, applied: cm, warnings: []string{"w"}},
		{item: v1alpha1.PlanItem{Name: "update", Operation: v1alpha1.OperationUpdate, ImpactSeverity: v1alpha1.ImpactLow}, key: "k2",
			snapshot: map[string]interface{}{"b": 2}, differs: []string{"data"}, applied: cm},
		{item: v1alpha1.PlanItem{Name: "delete", Operation: v1alpha1.OperationDelete, ImpactSeverity: v1alpha1.ImpactLow}, key: "k3", snapshot: map[string]interface{}{}, applied: cm},
		{item: v1alpha1.PlanItem{Name: "failed", ImpactSeverity: v1alpha1.ImpactHigh, Error: "no"}, key: "k4", snapshot: map[string]interface{}{"__state": "ERROR"},
			differs: []string{"x"}, applied: cm},
		{item: v1alpha1.PlanItem{Name: "skipped", ImpactSeverity: v1alpha1.ImpactHigh}, skip: true, key: "k5", applied: cm},
	}
	res := newResult(&v1alpha1.VirtPlatformConfig{})
	snapshot, hashed := res.addItems(planned)
	for _, tc := range []struct {
		what      string
		got, want interface{}
	}{
		{"items", len(res.Status.Items), 4},
		{"hashed", len(hashed), 4},
		{"snapshot keys", len(snapshot), 3},
		{"targets", len(res.Targets), 3},
		{"differs", res.Differs, map[string][]string{"update": {"data"}}},
		{"desired", len(res.Desired), 3},
		{"delete has no desired object", res.Desired["delete"] == nil, true},
		{"warnings", res.Status.Warnings, []string{"item 'create': w"}},
		{"impact", res.Status.ImpactSeverity, v1alpha1.ImpactHigh},
		{"failed item hashed with its error", hashed[3].(map[string]interface{})["error"], "no"},
	} {
		if !reflect.DeepEqual(tc.got, tc.want) {
			t.Errorf("%s: %v, want %v", tc.what, tc.got, tc.want)
		}
	}
}
