package plan

import (
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubevirt/virt-advisor/pkg/apis/advisor/v1alpha1"
	"github.com/kubevirt/virt-advisor/pkg/cluster"
	"github.com/kubevirt/virt-advisor/pkg/cluster/clustertest"
	"github.com/kubevirt/virt-advisor/pkg/profiles"
)

func TestMadeByUs(t *testing.T) {
	object := func(uid string, labels map[string]string, managers ...string) *unstructured.Unstructured {
		u := &unstructured.Unstructured{Object: map[string]interface{}{}}
		u.SetUID(types.UID(uid))
		u.SetLabels(labels)
		clustertest.SetAppliers(u, managers...)
		return u
	}
	ours := map[string]string{profiles.ManagedByLabel: "virt-higher-density"}
	record := Ownership{"created": true, "written-over": false}
	tests := []struct {
		name string
		live *unstructured.Unstructured
		want bool
	}{
		{"missing", nil, false},
		{"created by this config (UID recorded), edited since", object("created", ours, cluster.FieldManager, "kubectl-edit"), true},
		{"our label set by someone else: a label is no proof", object("other", ours, cluster.FieldManager, "kubectl-patch"), false},
		{"labelled for another config", object("other", map[string]string{profiles.ManagedByLabel: "other"}, "admin"), false},
		{"made by the earlier operator: only our field manager, UID not recorded", object("old", nil, cluster.FieldManager, cluster.FieldManager), true},
		{"someone else's object whose only field we took over", object("written-over", nil, cluster.FieldManager), false},
		{"someone else's object whose only field we took over, labelled by hand", object("written-over", ours, cluster.FieldManager), false},
		{"an administrator's own", object("admin", nil, "kubectl-client-side-apply"), false},
		{"ours and someone else's fields, unlabelled", object("mixed", nil, cluster.FieldManager, "kubectl-client-side-apply"), false},
		{"no managedFields at all", object("bare", nil), false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := record.MadeByUs(tc.live); got != tc.want {
				t.Fatalf("MadeByUs = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestRecordWrite(t *testing.T) {
	item := func(labels string) *v1alpha1.VirtPlatformConfigItem {
		return &v1alpha1.VirtPlatformConfigItem{Name: "swap",
			TargetRef:    v1alpha1.ObjectReference{APIVersion: "machineconfiguration.openshift.io/v1", Kind: "MachineConfig", Name: "90-worker-kubelet-swap"},
			DesiredState: &runtime.RawExtension{Raw: []byte(`{"metadata":{"name":"90-worker-kubelet-swap"` + labels + `}}`)}}
	}
	written := func(uid string, labels map[string]string) *unstructured.Unstructured {
		u := &unstructured.Unstructured{Object: map[string]interface{}{}}
		u.SetUID(types.UID(uid))
		u.SetLabels(labels)
		return u
	}
	withLabel := `,"labels":{"advisor.kubevirt.io/managed-by":"virt-higher-density"}`
	st := &v1alpha1.VirtPlatformConfigStatus{}
	RecordWrite(st, item(withLabel), written("a", nil), "virt-higher-density")
	// The written object carries our label (set by hand), the approved
	// desired state does not: it was written over, not created.
	RecordWrite(st, item(""), written("b", map[string]string{profiles.ManagedByLabel: "virt-higher-density"}), "virt-higher-density")
	// A later write with our label does not make an object written over ours.
	RecordWrite(st, item(withLabel), written("b", nil), "virt-higher-density")
	RecordWrite(st, item(withLabel), nil, "virt-higher-density")
	got := OwnershipOf(st)
	if len(got) != 2 || !got["a"] || got["b"] {
		t.Fatalf("ownership = %v, want a created, b written over", got)
	}
	ForgetWrite(st, "a")
	if got := OwnershipOf(st); len(got) != 1 || got["b"] {
		t.Fatalf("after forgetting a: %v", got)
	}
}
