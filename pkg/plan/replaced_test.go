package plan

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubevirt/virt-advisor/pkg/apis/advisor/v1alpha1"
	"github.com/kubevirt/virt-advisor/pkg/cluster"
)

var hcoRef = v1alpha1.ObjectReference{APIVersion: "hco.kubevirt.io/v1beta1", Kind: "HyperConverged", Name: "kubevirt-hyperconverged", Namespace: "openshift-cnv"}
var mcRef = v1alpha1.ObjectReference{APIVersion: "machineconfiguration.openshift.io/v1", Kind: "MachineConfig", Name: "90-worker-swap"}

func hco(uid string, spec map[string]interface{}) *unstructured.Unstructured {
	obj := &unstructured.Unstructured{Object: map[string]interface{}{"apiVersion": hcoRef.APIVersion, "kind": hcoRef.Kind, "spec": spec}}
	obj.SetName(hcoRef.Name)
	obj.SetNamespace(hcoRef.Namespace)
	obj.SetUID(types.UID(uid))
	return obj
}

func raw(s string) *runtime.RawExtension { return &runtime.RawExtension{Raw: []byte(s)} }

func TestRecordReplaced(t *testing.T) {
	hcoItem := &v1alpha1.VirtPlatformConfigItem{Name: "hco", TargetRef: hcoRef, ManagedFields: []string{"spec.overcommit", "spec.ksm"}}
	mcItem := &v1alpha1.VirtPlatformConfigItem{Name: "swap", TargetRef: mcRef, ManagedFields: []string{"spec.config"}}
	mc := &unstructured.Unstructured{Object: map[string]interface{}{"spec": map[string]interface{}{"config": "x"}}}
	mc.SetUID("mc-1")
	tests := []struct {
		name string
		// writes are applied in order, each before -> after.
		writes []struct {
			it            *v1alpha1.VirtPlatformConfigItem
			before, after *unstructured.Unstructured
		}
		want []v1alpha1.ReplacedObject
	}{{
		name: "a field changed: its previous value; a field added: absent; a field the write left as it was: not recorded",
		writes: []struct {
			it            *v1alpha1.VirtPlatformConfigItem
			before, after *unstructured.Unstructured
		}{{hcoItem, hco("u1", map[string]interface{}{"overcommit": int64(100), "ksm": map[string]interface{}{}}),
			hco("u1", map[string]interface{}{"overcommit": int64(150), "ksm": map[string]interface{}{}})}},
		want: []v1alpha1.ReplacedObject{{TargetRef: hcoRef, UID: "u1", Fields: []v1alpha1.ReplacedField{
			{Path: "spec.overcommit", Previous: raw("100"), Written: raw("150")}}}},
	}, {
		name: "a field added, then changed by a later write: absent kept, written follows",
		writes: []struct {
			it            *v1alpha1.VirtPlatformConfigItem
			before, after *unstructured.Unstructured
		}{
			{hcoItem, hco("u1", map[string]interface{}{}), hco("u1", map[string]interface{}{"ksm": map[string]interface{}{"on": true}})},
			{hcoItem, hco("u1", map[string]interface{}{"ksm": map[string]interface{}{"on": true}}), hco("u1", map[string]interface{}{"ksm": map[string]interface{}{"on": false}})},
		},
		want: []v1alpha1.ReplacedObject{{TargetRef: hcoRef, UID: "u1", Fields: []v1alpha1.ReplacedField{
			{Path: "spec.ksm", Absent: true, Written: raw(`{"on":false}`)}}}},
	}, {
		name: "a field removed by a later write: written unset, the first previous value kept",
		writes: []struct {
			it            *v1alpha1.VirtPlatformConfigItem
			before, after *unstructured.Unstructured
		}{
			{hcoItem, hco("u1", map[string]interface{}{"overcommit": int64(100)}), hco("u1", map[string]interface{}{"overcommit": int64(150)})},
			{hcoItem, hco("u1", map[string]interface{}{"overcommit": int64(150)}), hco("u1", map[string]interface{}{})},
		},
		want: []v1alpha1.ReplacedObject{{TargetRef: hcoRef, UID: "u1", Fields: []v1alpha1.ReplacedField{
			{Path: "spec.overcommit", Previous: raw("100")}}}},
	}, {
		name: "an object created: recorded as created, no fields",
		writes: []struct {
			it            *v1alpha1.VirtPlatformConfigItem
			before, after *unstructured.Unstructured
		}{{mcItem, nil, mc}, {mcItem, mc, mc}},
		want: []v1alpha1.ReplacedObject{{TargetRef: mcRef, UID: "mc-1", Created: true}},
	}, {
		name: "a value too large to record is marked so",
		writes: []struct {
			it            *v1alpha1.VirtPlatformConfigItem
			before, after *unstructured.Unstructured
		}{{hcoItem, hco("u1", map[string]interface{}{"overcommit": strings.Repeat("x", MaxReplacedValue)}), hco("u1", map[string]interface{}{"overcommit": int64(150)})}},
		want: []v1alpha1.ReplacedObject{{TargetRef: hcoRef, UID: "u1", Fields: []v1alpha1.ReplacedField{
			{Path: "spec.overcommit", Previous: raw(tooLargeValue), Written: raw("150")}}}},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st := &v1alpha1.VirtPlatformConfigStatus{}
			for _, w := range tt.writes {
				RecordReplaced(st, w.it, w.before, w.after)
			}
			if got, want := toJSON(t, st.Replaced), toJSON(t, tt.want); got != want {
				t.Errorf("replaced:\n got %s\nwant %s", got, want)
			}
		})
	}
}

func TestForgetReplaced(t *testing.T) {
	st := &v1alpha1.VirtPlatformConfigStatus{Replaced: []v1alpha1.ReplacedObject{{TargetRef: hcoRef, UID: "u1"}, {TargetRef: mcRef, UID: "mc-1", Created: true}}}
	ForgetReplaced(st, mcRef)
	if len(st.Replaced) != 1 || st.Replaced[0].TargetRef != hcoRef {
		t.Fatalf("after forgetting the MachineConfig: %+v", st.Replaced)
	}
	ForgetReplaced(st, hcoRef)
	if st.Replaced != nil {
		t.Fatalf("after forgetting both: %+v, want nil", st.Replaced)
	}
}

// TestRecordReplacing: before a write, its record holds what it will
// replace; after it, RecordReplaced completes that record (a create's
// UID, the values written) rather than adding another.
func TestRecordReplacing(t *testing.T) {
	hcoItem := &v1alpha1.VirtPlatformConfigItem{Name: "hco", TargetRef: hcoRef, ManagedFields: []string{"spec.overcommit", "spec.ksm", "spec.same"},
		DesiredState: raw(`{"spec":{"overcommit":150,"ksm":{"on":true},"same":"x"}}`)}
	mcItem := &v1alpha1.VirtPlatformConfigItem{Name: "swap", TargetRef: mcRef, ManagedFields: []string{"spec.config"}, DesiredState: raw(`{"spec":{"config":"x"}}`)}
	mc := &unstructured.Unstructured{Object: map[string]interface{}{"spec": map[string]interface{}{"config": "x"}}}
	mc.SetUID("mc-1")
	before := hco("u1", map[string]interface{}{"overcommit": int64(100), "same": "x"})
	written := hco("u1", map[string]interface{}{"overcommit": int64(150), "ksm": map[string]interface{}{"on": true}, "same": "x"})
	tests := []struct {
		name    string
		it      *v1alpha1.VirtPlatformConfigItem
		given   []v1alpha1.ReplacedObject
		before  *unstructured.Unstructured
		changed bool
		noted   []v1alpha1.ReplacedObject // before the write
		written *unstructured.Unstructured
		after   []v1alpha1.ReplacedObject // once the write is recorded
	}{{
		name: "written over: each field the desired state changes, with its value before; a field it leaves as is: none",
		it:   hcoItem, before: before, changed: true,
		noted: []v1alpha1.ReplacedObject{{TargetRef: hcoRef, UID: "u1", Fields: []v1alpha1.ReplacedField{
			{Path: "spec.overcommit", Previous: raw("100"), Written: raw("150"), Pending: true}, {Path: "spec.ksm", Absent: true, Written: raw(`{"on":true}`), Pending: true}}}},
		written: written,
		after: []v1alpha1.ReplacedObject{{TargetRef: hcoRef, UID: "u1", Fields: []v1alpha1.ReplacedField{
			{Path: "spec.overcommit", Previous: raw("100"), Written: raw("150")}, {Path: "spec.ksm", Absent: true, Written: raw(`{"on":true}`)}}}},
	}, {
		name:   "written over again: the first previous value kept, nothing new to store",
		it:     hcoItem,
		given:  []v1alpha1.ReplacedObject{{TargetRef: hcoRef, UID: "u1", Fields: []v1alpha1.ReplacedField{{Path: "spec.overcommit", Previous: raw("90"), Written: raw("100")}, {Path: "spec.ksm", Absent: true, Written: raw(`{"on":false}`)}}}},
		before: before, changed: false,
		noted:   []v1alpha1.ReplacedObject{{TargetRef: hcoRef, UID: "u1", Fields: []v1alpha1.ReplacedField{{Path: "spec.overcommit", Previous: raw("90"), Written: raw("100")}, {Path: "spec.ksm", Absent: true, Written: raw(`{"on":false}`)}}}},
		written: written,
		after:   []v1alpha1.ReplacedObject{{TargetRef: hcoRef, UID: "u1", Fields: []v1alpha1.ReplacedField{{Path: "spec.overcommit", Previous: raw("90"), Written: raw("150")}, {Path: "spec.ksm", Absent: true, Written: raw(`{"on":true}`)}}}},
	}, {
		name: "noted before a write that was refused, the field changed since: read again at the next attempt",
		it:   hcoItem,
		given: []v1alpha1.ReplacedObject{{TargetRef: hcoRef, UID: "u1", Fields: []v1alpha1.ReplacedField{
			{Path: "spec.overcommit", Previous: raw("90"), Written: raw("150"), Pending: true}, {Path: "spec.ksm", Absent: true, Written: raw(`{"on":true}`), Pending: true}}}},
		before: before, changed: true,
		noted: []v1alpha1.ReplacedObject{{TargetRef: hcoRef, UID: "u1", Fields: []v1alpha1.ReplacedField{
			{Path: "spec.overcommit", Previous: raw("100"), Written: raw("150"), Pending: true}, {Path: "spec.ksm", Absent: true, Written: raw(`{"on":true}`), Pending: true}}}},
		written: written,
		after: []v1alpha1.ReplacedObject{{TargetRef: hcoRef, UID: "u1", Fields: []v1alpha1.ReplacedField{
			{Path: "spec.overcommit", Previous: raw("100"), Written: raw("150")}, {Path: "spec.ksm", Absent: true, Written: raw(`{"on":true}`)}}}},
	}, {
		name: "noted before a write made just before a crash: the first previous value kept, confirmed after",
		it:   hcoItem,
		given: []v1alpha1.ReplacedObject{{TargetRef: hcoRef, UID: "u1", Fields: []v1alpha1.ReplacedField{
			{Path: "spec.overcommit", Previous: raw("100"), Written: raw("150"), Pending: true}, {Path: "spec.ksm", Absent: true, Written: raw(`{"on":true}`), Pending: true}}}},
		before: written, changed: false,
		noted: []v1alpha1.ReplacedObject{{TargetRef: hcoRef, UID: "u1", Fields: []v1alpha1.ReplacedField{
			{Path: "spec.overcommit", Previous: raw("100"), Written: raw("150"), Pending: true}, {Path: "spec.ksm", Absent: true, Written: raw(`{"on":true}`), Pending: true}}}},
		written: written,
		after: []v1alpha1.ReplacedObject{{TargetRef: hcoRef, UID: "u1", Fields: []v1alpha1.ReplacedField{
			{Path: "spec.overcommit", Previous: raw("100"), Written: raw("150")}, {Path: "spec.ksm", Absent: true, Written: raw(`{"on":true}`)}}}},
	}, {
		name:  "a create that was never made, the object created by someone else since: its record dropped, the object written over",
		it:    mcItem,
		given: []v1alpha1.ReplacedObject{{TargetRef: mcRef, Created: true}}, before: managedBy(mc, "kubectl"), changed: true,
		noted:   []v1alpha1.ReplacedObject{{TargetRef: mcRef, UID: "mc-1"}},
		written: mc,
		after:   []v1alpha1.ReplacedObject{{TargetRef: mcRef, UID: "mc-1"}},
	}, {
		name:  "our create made just before a crash: the record learns its UID",
		it:    mcItem,
		given: []v1alpha1.ReplacedObject{{TargetRef: mcRef, Created: true}}, before: managedBy(mc, cluster.FieldManager), changed: true,
		noted:   []v1alpha1.ReplacedObject{{TargetRef: mcRef, UID: "mc-1", Created: true}},
		written: mc,
		after:   []v1alpha1.ReplacedObject{{TargetRef: mcRef, UID: "mc-1", Created: true}},
	}, {
		name: "created: noted without a UID, which the write gives it",
		it:   mcItem, changed: true,
		noted:   []v1alpha1.ReplacedObject{{TargetRef: mcRef, Created: true}},
		written: mc,
		after:   []v1alpha1.ReplacedObject{{TargetRef: mcRef, UID: "mc-1", Created: true}},
	}, {
		name:  "created, noted already (a retry): nothing new to store",
		it:    mcItem,
		given: []v1alpha1.ReplacedObject{{TargetRef: mcRef, Created: true}}, changed: false,
		noted:   []v1alpha1.ReplacedObject{{TargetRef: mcRef, Created: true}},
		written: mc,
		after:   []v1alpha1.ReplacedObject{{TargetRef: mcRef, UID: "mc-1", Created: true}},
	}, {
		name:  "created again after someone deleted the first: a record of its own",
		it:    mcItem,
		given: []v1alpha1.ReplacedObject{{TargetRef: mcRef, UID: "mc-0", Created: true}}, changed: true,
		noted:   []v1alpha1.ReplacedObject{{TargetRef: mcRef, UID: "mc-0", Created: true}, {TargetRef: mcRef, Created: true}},
		written: mc,
		after:   []v1alpha1.ReplacedObject{{TargetRef: mcRef, UID: "mc-0", Created: true}, {TargetRef: mcRef, UID: "mc-1", Created: true}},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st := &v1alpha1.VirtPlatformConfigStatus{Replaced: tt.given}
			if changed := RecordReplacing(st, tt.it, tt.before); changed != tt.changed {
				t.Errorf("changed %v, want %v", changed, tt.changed)
			}
			if got, want := toJSON(t, st.Replaced), toJSON(t, tt.noted); got != want {
				t.Errorf("before the write:\n got %s\nwant %s", got, want)
			}
			RecordReplaced(st, tt.it, tt.before, tt.written)
			if got, want := toJSON(t, st.Replaced), toJSON(t, tt.after); got != want {
				t.Errorf("after the write:\n got %s\nwant %s", got, want)
			}
		})
	}
}

// managedBy is obj with one managedFields entry, of manager.
func managedBy(obj *unstructured.Unstructured, manager string) *unstructured.Unstructured {
	out := obj.DeepCopy()
	out.SetManagedFields([]metav1.ManagedFieldsEntry{{Manager: manager, Operation: metav1.ManagedFieldsOperationApply}})
	return out
}
