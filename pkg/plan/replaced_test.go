package plan

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubevirt/virt-advisor/pkg/apis/advisor/v1alpha1"
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
