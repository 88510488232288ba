package plan

import (
	"context"
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubevirt/virt-advisor/pkg/apis/advisor/v1alpha1"
	"github.com/kubevirt/virt-advisor/pkg/profiles"
)

func toJSON(t *testing.T, v interface{}) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestRevertItems(t *testing.T) {
	overcommit := v1alpha1.ReplacedField{Path: "spec.overcommit", Previous: raw("100"), Written: raw("150")}
	ksmAdded := v1alpha1.ReplacedField{Path: "spec.ksm", Absent: true, Written: raw(`{"on":true}`)}
	removed := v1alpha1.ReplacedField{Path: "spec.old", Previous: raw(`"v"`)}
	created := v1alpha1.ReplacedObject{TargetRef: mcRef, UID: "mc-1", Created: true}
	tests := []struct {
		name     string
		replaced []v1alpha1.ReplacedObject
		live     []*unstructured.Unstructured
		// want: per item, its name, desired spec, managed fields; and the
		// conflicts its warnings name.
		want []wantItem
	}{{
		name:     "fields as written: previous values restored, an added field left out (removed), a removed field back",
		replaced: []v1alpha1.ReplacedObject{{TargetRef: hcoRef, UID: "u1", Fields: []v1alpha1.ReplacedField{overcommit, ksmAdded, removed}}},
		live:     []*unstructured.Unstructured{hco("u1", map[string]interface{}{"overcommit": int64(150), "ksm": map[string]interface{}{"on": true}})},
		want: []wantItem{{name: "revert-hyperconverged-kubevirt-hyperconverged", spec: `{"old":"v","overcommit":100}`,
			managed: []string{"spec.overcommit", "spec.ksm", "spec.old"}}},
	}, {
		name:     "a field changed by someone else: a conflict, left out; the others restored",
		replaced: []v1alpha1.ReplacedObject{{TargetRef: hcoRef, UID: "u1", Fields: []v1alpha1.ReplacedField{overcommit, ksmAdded}}},
		live:     []*unstructured.Unstructured{hco("u1", map[string]interface{}{"overcommit": int64(130), "ksm": map[string]interface{}{"on": true}})},
		want: []wantItem{{name: "revert-hyperconverged-kubevirt-hyperconverged", spec: `null`,
			managed: []string{"spec.overcommit", "spec.ksm"}, conflicts: []string{"spec.overcommit"}}},
	}, {
		name:     "a field we removed that someone set again: a conflict",
		replaced: []v1alpha1.ReplacedObject{{TargetRef: hcoRef, UID: "u1", Fields: []v1alpha1.ReplacedField{removed}}},
		live:     []*unstructured.Unstructured{hco("u1", map[string]interface{}{"old": "theirs"})},
		want: []wantItem{{name: "revert-hyperconverged-kubevirt-hyperconverged", spec: `null`,
			managed: []string{"spec.old"}, conflicts: []string{"spec.old"}}},
	}, {
		name: "noted before a write that was not made (refused): nothing of ours, no item",
		replaced: []v1alpha1.ReplacedObject{{TargetRef: hcoRef, UID: "u1", Fields: []v1alpha1.ReplacedField{
			pending(overcommit), pending(ksmAdded)}}},
		live: []*unstructured.Unstructured{hco("u1", map[string]interface{}{"overcommit": int64(100)})},
		want: nil,
	}, {
		name: "noted before a write made just before a crash: restored as a confirmed one; a pending field not written: left out",
		replaced: []v1alpha1.ReplacedObject{{TargetRef: hcoRef, UID: "u1", Fields: []v1alpha1.ReplacedField{
			pending(overcommit), pending(ksmAdded)}}},
		live: []*unstructured.Unstructured{hco("u1", map[string]interface{}{"overcommit": int64(150)})},
		want: []wantItem{{name: "revert-hyperconverged-kubevirt-hyperconverged", spec: `{"overcommit":100}`, managed: []string{"spec.overcommit"}}},
	}, {
		name:     "a previous value too large to record: left alone, said",
		replaced: []v1alpha1.ReplacedObject{{TargetRef: hcoRef, UID: "u1", Fields: []v1alpha1.ReplacedField{{Path: "spec.overcommit", Previous: raw(tooLargeValue), Written: raw("150")}}}},
		live:     []*unstructured.Unstructured{hco("u1", map[string]interface{}{"overcommit": int64(150)})},
		want: []wantItem{{name: "revert-hyperconverged-kubevirt-hyperconverged", spec: `null`,
			managed: []string{"spec.overcommit"}, conflicts: []string{"spec.overcommit"}}},
	}, {
		name:     "an object deleted and created again by someone else: every field a conflict",
		replaced: []v1alpha1.ReplacedObject{{TargetRef: hcoRef, UID: "u1", Fields: []v1alpha1.ReplacedField{overcommit}}},
		live:     []*unstructured.Unstructured{hco("u2", map[string]interface{}{"overcommit": int64(150)})},
		want: []wantItem{{name: "revert-hyperconverged-kubevirt-hyperconverged", spec: `null`,
			managed: []string{"spec.overcommit"}, conflicts: []string{"spec.overcommit"}}},
	}, {
		name:     "an object written over that is gone: nothing to restore",
		replaced: []v1alpha1.ReplacedObject{{TargetRef: hcoRef, UID: "u1", Fields: []v1alpha1.ReplacedField{overcommit}}},
		live:     []*unstructured.Unstructured{nil},
		want:     nil,
	}, {
		name:     "an object created: deleted, after the restores whatever the order of the record",
		replaced: []v1alpha1.ReplacedObject{created, {TargetRef: hcoRef, UID: "u1", Fields: []v1alpha1.ReplacedField{overcommit}}},
		live:     []*unstructured.Unstructured{nil, hco("u1", map[string]interface{}{"overcommit": int64(150)})},
		want: []wantItem{
			{name: "revert-hyperconverged-kubevirt-hyperconverged", spec: `{"overcommit":100}`, managed: []string{"spec.overcommit"}},
			{name: "revert-machineconfig-90-worker-swap", spec: `null`, absent: true},
		},
	}, {
		name:     "a MachineConfig we created, deleted and created again by us: one Delete, of the object there now",
		replaced: []v1alpha1.ReplacedObject{created, {TargetRef: mcRef, UID: "mc-2", Created: true}},
		live:     []*unstructured.Unstructured{mc("mc-2"), mc("mc-2")},
		want:     []wantItem{{name: "revert-machineconfig-90-worker-swap", spec: `null`, absent: true}},
	}, {
		name:     "recorded under two UIDs, the object gone since: nothing to restore nor delete, no item",
		replaced: []v1alpha1.ReplacedObject{created, {TargetRef: mcRef, UID: "mc-2", Created: true}},
		live:     []*unstructured.Unstructured{nil, nil},
		want:     nil,
	}, {
		name: "an object written over under two UIDs: restored from the record of the object there now only",
		replaced: []v1alpha1.ReplacedObject{
			{TargetRef: hcoRef, UID: "u2", Fields: []v1alpha1.ReplacedField{{Path: "spec.overcommit", Previous: raw("120"), Written: raw("150")}}},
			{TargetRef: hcoRef, UID: "u1", Fields: []v1alpha1.ReplacedField{overcommit}},
		},
		live: []*unstructured.Unstructured{hco("u1", map[string]interface{}{"overcommit": int64(150)}), hco("u1", map[string]interface{}{"overcommit": int64(150)})},
		want: []wantItem{{name: "revert-hyperconverged-kubevirt-hyperconverged", spec: `{"overcommit":100}`, managed: []string{"spec.overcommit"}}},
	}, {
		name: "recorded under two UIDs, the object there now is neither: one item, every field a conflict",
		replaced: []v1alpha1.ReplacedObject{
			{TargetRef: hcoRef, UID: "u1", Fields: []v1alpha1.ReplacedField{overcommit}},
			{TargetRef: hcoRef, UID: "u2", Fields: []v1alpha1.ReplacedField{overcommit}},
		},
		live: []*unstructured.Unstructured{hco("u3", map[string]interface{}{"overcommit": int64(150)}), hco("u3", map[string]interface{}{"overcommit": int64(150)})},
		want: []wantItem{{name: "revert-hyperconverged-kubevirt-hyperconverged", spec: `null`, managed: []string{"spec.overcommit"}, conflicts: []string{"spec.overcommit"}}},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			items := RevertItems(tt.replaced, tt.live)
			if len(items) != len(tt.want) {
				t.Fatalf("got %d items, want %d: %+v", len(items), len(tt.want), items)
			}
			for i, it := range items {
				w := tt.want[i]
				spec, _, _ := unstructured.NestedFieldNoCopy(it.Desired.Object, "spec")
				if it.Name != w.name || toJSON(t, spec) != w.spec || toJSON(t, it.ManagedFields) != toJSON(t, w.managed) || it.Absent != w.absent {
					t.Errorf("item %d: got %s spec %s managed %v absent %v; want %+v", i, it.Name, toJSON(t, spec), it.ManagedFields, it.Absent, w)
				}
				if it.Desired.GetName() == "" || it.Desired.GetKind() == "" {
					t.Errorf("item %d: desired state without its identity: %v", i, it.Desired.Object)
				}
				if len(it.Warnings) != len(w.conflicts) {
					t.Errorf("item %d: warnings %q, want one per conflict %v", i, it.Warnings, w.conflicts)
				}
				for j, c := range w.conflicts {
					if j < len(it.Warnings) && !strings.HasPrefix(it.Warnings[j], "conflict: "+c+" ") {
						t.Errorf("item %d: warning %q does not name the conflict %s", i, it.Warnings[j], c)
					}
				}
			}
		})
	}
}

// mc is the MachineConfig of mcRef with a UID.
func mc(uid string) *unstructured.Unstructured {
	obj := identity(mcRef)
	obj.SetUID(types.UID(uid))
	return obj
}

// TestRevertReadsEachTargetOnce: the revert profile reads a target once,
// and a created object only when it has several records (else the engine
// reads it); its items name each target once.
func TestRevertReadsEachTargetOnce(t *testing.T) {
	replaced := []v1alpha1.ReplacedObject{
		{TargetRef: mcRef, UID: "mc-1", Created: true},
		{TargetRef: hcoRef, UID: "u1", Fields: []v1alpha1.ReplacedField{{Path: "spec.overcommit", Previous: raw("100"), Written: raw("150")}}},
		{TargetRef: mcRef, UID: "mc-2", Created: true},
		{TargetRef: swapRef, UID: "s-1", Created: true},
	}
	c := &countingCluster{objects: map[string]*unstructured.Unstructured{
		mcRef.Name: mc("mc-2"), hcoRef.Name: hco("u1", map[string]interface{}{"overcommit": int64(150)}),
	}}
	items, err := (&revertProfile{replaced: replaced}).Items(context.Background(), profiles.Inputs{Cluster: c})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, it := range items {
		names = append(names, it.Name)
	}
	if want := []string{"revert-hyperconverged-kubevirt-hyperconverged", "revert-machineconfig-90-worker-swap", "revert-machineconfig-99-swap"}; !reflect.DeepEqual(names, want) {
		t.Errorf("items %v, want %v", names, want)
	}
	if want := map[string]int{mcRef.Name: 1, hcoRef.Name: 1}; !reflect.DeepEqual(c.gets, want) {
		t.Errorf("reads %v, want %v", c.gets, want)
	}
}

var swapRef = v1alpha1.ObjectReference{APIVersion: mcRef.APIVersion, Kind: mcRef.Kind, Name: "99-swap"}

// countingCluster serves objects by name and counts the reads.
type countingCluster struct {
	objects map[string]*unstructured.Unstructured
	gets    map[string]int
}

func (c *countingCluster) Get(_ context.Context, _ schema.GroupVersionKind, _, name string) (*unstructured.Unstructured, error) {
	if c.gets == nil {
		c.gets = map[string]int{}
	}
	c.gets[name]++
	return c.objects[name], nil
}
func (c *countingCluster) PreferredVersion(schema.GroupKind) (string, error) { return "", nil }
func (c *countingCluster) List(context.Context, schema.GroupVersionKind) ([]unstructured.Unstructured, error) {
	return nil, nil
}

type wantItem struct {
	name, spec string
	managed    []string
	absent     bool
	conflicts  []string
}

// TestRevertIsTheRecordUndone: recording a write, then planning the revert
// against the object as written, restores the object as it was.
func TestRevertIsTheRecordUndone(t *testing.T) {
	before := hco("u1", map[string]interface{}{"overcommit": int64(100), "keep": "theirs"})
	after := hco("u1", map[string]interface{}{"overcommit": int64(150), "ksm": map[string]interface{}{"on": true}, "keep": "theirs"})
	st := &v1alpha1.VirtPlatformConfigStatus{}
	RecordReplaced(st, &v1alpha1.VirtPlatformConfigItem{TargetRef: hcoRef, ManagedFields: []string{"spec.overcommit", "spec.ksm"}}, before, after)
	items := RevertItems(st.Replaced, []*unstructured.Unstructured{after})
	if len(items) != 1 {
		t.Fatalf("items: %+v", items)
	}
	spec, _, _ := unstructured.NestedFieldNoCopy(items[0].Desired.Object, "spec")
	if got := toJSON(t, spec); got != `{"overcommit":100}` {
		t.Errorf("revert applies %s, want the previous overcommit only (ksm removed as only ours, keep never ours)", got)
	}
}

// pending is f as noted before a write not known to be made.
func pending(f v1alpha1.ReplacedField) v1alpha1.ReplacedField {
	f.Pending = true
	return f
}
