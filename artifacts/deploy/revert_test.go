package deploy

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apiserver/pkg/admission"

	"github.com/kubevirt/virt-advisor/pkg/apis/advisor/v1alpha1"
	"github.com/kubevirt/virt-advisor/pkg/kubevirt"
	"github.com/kubevirt/virt-advisor/pkg/plan"
	"github.com/kubevirt/virt-advisor/pkg/profiles"
)

// administratorsCluster is the baseline with an administrator's own
// earlier values where the profiles write over an object: the
// KubeDescheduler's profiles, interval, mode, a customization and a limit;
// the HyperConverged's migration limits (a bandwidth in GiB/s); and their
// own example ConfigMap.
func administratorsCluster(t *testing.T, hcoVersion string) *cluster {
	c := newCluster(t, hcoVersion, filepath.Join("..", "crds", "kubedescheduler.yaml"))
	kd := readObject(t, filepath.Join("..", "testdata", "baseline.yaml"), "KubeDescheduler") // AffinityAndTaints, LifecycleAndUtilization, 3600
	set(kd.Object, "Predictive", "spec", "mode")
	set(kd.Object, map[string]interface{}{"devLowNodeUtilizationThresholds": "High", "devEnableSoftTainter": false}, "spec", "profileCustomizations")
	set(kd.Object, map[string]interface{}{"total": int64(5000)}, "spec", "evictionLimits")
	c.put(kd)
	hco := baselineHCO(hcoVersion)
	lm := kubevirt.HCOFieldPath(hcoVersion, "liveMigrationConfig")
	set(hco.Object, map[string]interface{}{"bandwidthPerMigration": "1Gi", "completionTimeoutPerGiB": int64(800), "parallelMigrationsPerCluster": int64(20),
		"parallelOutboundMigrationsPerNode": int64(4), "progressTimeout": int64(150)}, lm...)
	c.put(hco)
	cm := &unstructured.Unstructured{Object: map[string]interface{}{"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]interface{}{"name": "example-config", "namespace": kubevirt.HCONamespace, "resourceVersion": "3", "creationTimestamp": "2025-01-01T00:00:00Z"},
		"data":     map[string]interface{}{"example-key": "theirs", "other": "x"}}}
	c.put(cm)
	return c
}

// TestAdmitsTheRevertOfEveryProfile: the revert of every profile's
// writes, planned from what the writes recorded (plan.RecordReplaced,
// plan.RevertItems), is admitted by the shipped policy and gives back the
// administrator's values; the delete of what a profile created is too.
func TestAdmitsTheRevertOfEveryProfile(t *testing.T) {
	v := compileDeployed(t)
	for _, hcoVersion := range []string{kubevirt.HCOVersionV1beta1, kubevirt.HCOVersionV1} {
		for _, vr := range variants() {
			c := administratorsCluster(t, hcoVersion)
			config := vr.profile.Metadata().Name
			for _, it := range items(t, vr, c) {
				name := fmt.Sprintf("%s (HCO %s): %s", vr.name, hcoVersion, it.Name)
				if it.Absent {
					continue
				}
				gvr := gvrOf(it.Desired)
				live, _ := c.Get(context.Background(), it.Desired.GroupVersionKind(), it.Desired.GetNamespace(), it.Desired.GetName())
				if live == nil {
					obj := created(it.Desired, config)
					if denied := review(t, v, request{op: admission.Delete, gvr: gvr, old: obj}); denied != "" {
						t.Errorf("%s: the revert's delete of what it created: denied: %s", name, denied)
					}
					continue
				}
				before := live.DeepCopy()
				before.SetUID(types.UID("admins-uid"))
				written := applied(before, it.Desired)
				if denied := review(t, v, request{op: admission.Update, gvr: gvr, obj: written, old: before}); denied != "" {
					t.Errorf("%s: the write over the administrator's object: denied: %s", name, denied)
					continue
				}
				reverted := revertOf(t, it, before, written)
				if denied := review(t, v, request{op: admission.Update, gvr: gvr, obj: reverted, old: written}); denied != "" {
					t.Errorf("%s: the revert: denied: %s", name, denied)
				}
				for _, part := range []string{"spec", "data"} {
					if got, want := asJSON(t, reverted.Object[part]), asJSON(t, before.Object[part]); got != want {
						t.Errorf("%s: the revert leaves %s\n%s\nnot the administrator's\n%s", name, part, got, want)
					}
				}
			}
		}
	}
}

// revertOf is written after the server-side apply of its revert item:
// the fields the item manages set as it wants them, or removed where it
// leaves them out (only ours), as the API server decodes it.
func revertOf(t *testing.T, it profiles.Item, before, written *unstructured.Unstructured) *unstructured.Unstructured {
	t.Helper()
	gvk := it.Desired.GroupVersionKind()
	st := &v1alpha1.VirtPlatformConfigStatus{}
	ref := v1alpha1.ObjectReference{APIVersion: gvk.GroupVersion().String(), Kind: gvk.Kind, Name: it.Desired.GetName(), Namespace: it.Desired.GetNamespace()}
	plan.RecordReplaced(st, &v1alpha1.VirtPlatformConfigItem{Name: it.Name, TargetRef: ref, ManagedFields: it.ManagedFields}, before, written)
	revert := plan.RevertItems(st.Replaced, []*unstructured.Unstructured{written})
	if len(revert) != 1 {
		t.Fatalf("%s: revert items %+v, want one", it.Name, revert)
	}
	out := written.DeepCopy()
	for _, path := range revert[0].ManagedFields {
		fields := strings.Split(path, ".")
		if v, ok, _ := unstructured.NestedFieldCopy(revert[0].Desired.Object, fields...); ok {
			set(out.Object, v, fields...)
		} else {
			unstructured.RemoveNestedField(out.Object, fields...)
		}
	}
	bump(out)
	raw, err := json.Marshal(out.Object)
	if err != nil {
		t.Fatal(err)
	}
	decoded := &unstructured.Unstructured{}
	if err := decoded.UnmarshalJSON(raw); err != nil {
		t.Fatal(err)
	}
	return decoded
}

func asJSON(t *testing.T, v interface{}) string {
	t.Helper()
	raw, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(raw)
}
