package loadaware

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	"github.com/kubevirt/virt-advisor/pkg/apis/advisor/v1alpha1"
	"github.com/kubevirt/virt-advisor/pkg/apis/advisor/validation"
	"github.com/kubevirt/virt-advisor/pkg/kubevirt"
	"github.com/kubevirt/virt-advisor/pkg/profiles"
)

// objects is an in-memory profiles.Cluster: the profile's input, not the
// Kubernetes API (the e2e suite covers that).
type objects map[string]*unstructured.Unstructured

func (o objects) Get(_ context.Context, gvk schema.GroupVersionKind, ns, name string) (*unstructured.Unstructured, error) {
	return o[gvk.Kind+"/"+ns+"/"+name], nil
}

func (o objects) PreferredVersion(gk schema.GroupKind) (string, error) {
	if gk.Kind == "Scheduler" && o["Scheduler//cluster"] == nil {
		return "", nil
	}
	return "v1beta1", nil
}

func (o objects) List(_ context.Context, gvk schema.GroupVersionKind) ([]unstructured.Unstructured, error) {
	var out []unstructured.Unstructured
	for k, v := range o {
		if strings.HasPrefix(k, gvk.Kind+"/") {
			out = append(out, *v)
		}
	}
	return out, nil
}

func loadCRD(t *testing.T, level string) *unstructured.Unstructured {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("..", "..", "..", "artifacts", "testdata", "descheduler-levels", level+".yaml"))
	if err != nil {
		t.Fatal(err)
	}
	u := &unstructured.Unstructured{}
	if err := yaml.Unmarshal(raw, &u.Object); err != nil {
		t.Fatal(err)
	}
	return u
}

func hco(perCluster, perNode int64) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]interface{}{"spec": map[string]interface{}{
		"liveMigrationConfig": map[string]interface{}{"parallelMigrationsPerCluster": perCluster, "parallelOutboundMigrationsPerNode": perNode}}}}
}

func hcoV1(limits map[string]interface{}) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]interface{}{"apiVersion": "hco.kubevirt.io/v1", "kind": "HyperConverged", "spec": map[string]interface{}{}}}
	if limits != nil {
		u.Object["spec"] = map[string]interface{}{"virtualization": map[string]interface{}{"liveMigrationConfig": limits}}
	}
	return u
}

func kubeDescheduler(profiles ...interface{}) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]interface{}{"spec": map[string]interface{}{"profiles": profiles}}}
}

func defaults() *v1alpha1.LoadAwareConfig {
	return &v1alpha1.LoadAwareConfig{
		DeschedulingIntervalSeconds: ptr.To[int32](60), Mode: "Automatic", EnablePSIMetrics: ptr.To(true), DevDeviationThresholds: "AsymmetricLow",
	}
}

func TestScaleMigrationLimit(t *testing.T) {
	for in, want := range map[int64]int64{1: 1, 5: 5, 9: 9, 10: 10, 11: 10, 12: 11, 15: 14, 20: 18, 25: 22} {
		if got := ScaleMigrationLimit(in); got != want {
			t.Errorf("ScaleMigrationLimit(%d) = %d, want %d", in, got, want)
		}
	}
}

func TestDeschedulerItemPerLevel(t *testing.T) {
	tests := []struct {
		level, profile string
		custom         map[string]interface{}
		limits         map[string]interface{}
		note           string
	}{
		{"5.1.0", "LongLifecycle", nil, nil, ""},
		{"5.1.2", "DevKubeVirtRelieveAndMigrate",
			map[string]interface{}{"devDeviationThresholds": "Low", "devEnableEvictionsInBackground": true},
			map[string]interface{}{"total": int64(5)}, "devDeviationThresholds AsymmetricLow is not supported by the installed operator, using Low"},
		{"5.2.x", "DevKubeVirtRelieveAndMigrate",
			map[string]interface{}{"devDeviationThresholds": "AsymmetricLow", "devEnableEvictionsInBackground": true, "devEnableSoftTainter": true},
			map[string]interface{}{"total": int64(5)}, "evictionLimits.node is not supported"},
		{"5.3.3", "KubeVirtRelieveAndMigrate",
			map[string]interface{}{"devDeviationThresholds": "AsymmetricLow", "devEnableEvictionsInBackground": true, "devEnableSoftTainter": true},
			map[string]interface{}{"total": int64(5), "node": int64(2)}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.level, func(t *testing.T) {
			cluster := objects{
				"CustomResourceDefinition//" + profiles.DeschedulerCRDName:      loadCRD(t, tt.level),
				"KubeDescheduler/" + profiles.DeschedulerNamespace + "/cluster": kubeDescheduler("AffinityAndTaints", "LifecycleAndUtilization", "SoftTopologyAndDuplicates"),
			}
			item, err := deschedulerItem(context.Background(), cluster, defaults())
			if err != nil || item.Err != nil {
				t.Fatalf("err %v, item err %v", err, item.Err)
			}
			spec := item.Desired.Object["spec"].(map[string]interface{})
			wantProfiles := []interface{}{"AffinityAndTaints", "SoftTopologyAndDuplicates", tt.profile}
			if !equal(spec["profiles"], wantProfiles) {
				t.Errorf("profiles %v, want %v", spec["profiles"], wantProfiles)
			}
			if !equal(spec["profileCustomizations"], tt.custom) {
				t.Errorf("profileCustomizations %v, want %v", spec["profileCustomizations"], tt.custom)
			}
			if !equal(spec["evictionLimits"], tt.limits) {
				t.Errorf("evictionLimits %v, want %v", spec["evictionLimits"], tt.limits)
			}
			if !strings.Contains(item.Message, "with profile '"+tt.profile+"'") || !strings.Contains(item.Message, tt.note) {
				t.Errorf("message %q lacks %q", item.Message, tt.note)
			}
		})
	}
}

// The cooldowns go to an operator level whose CRD has them, normalised;
// to an older one they are dropped and named in the message.
func TestMigrationCooldownsPerLevel(t *testing.T) {
	tests := []struct {
		name, level               string
		cooldown, max, window     string
		wantCustom                map[string]interface{} // the cooldown fields only
		wantNotes, forbiddenNotes []string
	}{
		{name: "5.3.3 has the fields: all three sent", level: "5.3.3", cooldown: "30m", max: "4h", window: "24h",
			wantCustom:     map[string]interface{}{"devMigrationCooldown": "30m0s", "devMaxMigrationCooldown": "4h0m0s", "devMigrationHistoryWindow": "24h0m0s"},
			forbiddenNotes: []string{"not supported"}},
		{name: "5.3.3: one spelling of a duration", level: "5.3.3", cooldown: "90m",
			wantCustom: map[string]interface{}{"devMigrationCooldown": "1h30m0s"}},
		{name: "5.3.3: unset ones are left to the descheduler", level: "5.3.3",
			wantCustom: map[string]interface{}{}, forbiddenNotes: []string{"devMigration"}},
		{name: "5.2.x lacks them: dropped and named", level: "5.2.x", cooldown: "30m", window: "72h",
			wantCustom: map[string]interface{}{},
			wantNotes: []string{"devMigrationCooldown 30m is not supported by the installed operator (descheduler operator 5.4.0 and later) and is not set",
				"devMigrationHistoryWindow 72h is not supported"},
			forbiddenNotes: []string{"devMaxMigrationCooldown"}},
		{name: "5.1.0 (LongLifecycle) lacks them: named", level: "5.1.0", max: "2h",
			wantCustom: map[string]interface{}{}, wantNotes: []string{"devMaxMigrationCooldown 2h is not supported"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cluster := objects{"CustomResourceDefinition//" + profiles.DeschedulerCRDName: loadCRD(t, tt.level)}
			la := defaults()
			la.DevMigrationCooldown, la.DevMaxMigrationCooldown, la.DevMigrationHistoryWindow = tt.cooldown, tt.max, tt.window
			item, err := deschedulerItem(context.Background(), cluster, la)
			if err != nil || item.Err != nil {
				t.Fatalf("err %v, item err %v", err, item.Err)
			}
			custom, _, _ := unstructured.NestedMap(item.Desired.Object, "spec", "profileCustomizations")
			got := map[string]interface{}{}
			for k, v := range custom {
				if strings.HasPrefix(k, "devMigration") || strings.HasPrefix(k, "devMaxMigration") {
					got[k] = v
				}
			}
			if !equal(got, tt.wantCustom) {
				t.Errorf("cooldowns sent %v, want %v", got, tt.wantCustom)
			}
			for _, n := range tt.wantNotes {
				if !strings.Contains(item.Message, n) {
					t.Errorf("message %q lacks %q", item.Message, n)
				}
			}
			for _, n := range tt.forbiddenNotes {
				if strings.Contains(item.Message, n) {
					t.Errorf("message %q has %q", item.Message, n)
				}
			}
		})
	}
}

func TestEvictionLimits(t *testing.T) {
	tests := []struct {
		name        string
		hco         *unstructured.Unstructured
		total, node *int32
		want        EvictionLimits
	}{
		{"HCO missing: defaults 5/2", nil, nil, nil, EvictionLimits{Total: 5, Node: 2, FromHCO: true}},
		{"HCO 20/12 scaled", hco(20, 12), nil, nil, EvictionLimits{Total: 18, Node: 11, FromHCO: true}},
		{"explicit limits are not scaled", hco(20, 12), ptr.To[int32](25), ptr.To[int32](15), EvictionLimits{Total: 25, Node: 15}},
		{"one explicit, one derived", hco(20, 12), ptr.To[int32](30), nil, EvictionLimits{Total: 30, Node: 11, FromHCO: true}},
		{"HCO v1 20/4 under spec.virtualization", hcoV1(map[string]interface{}{"parallelMigrationsPerCluster": int64(20), "parallelOutboundMigrationsPerNode": int64(4)}),
			nil, nil, EvictionLimits{Total: 18, Node: 4, FromHCO: true}},
		{"HCO v1 defaults 5/1", hcoV1(nil), nil, nil, EvictionLimits{Total: 5, Node: 1, FromHCO: true}},
		// Scaled limits beyond the options' ranges are capped: the admission
		// policy refuses any other value.
		{"HCO 5000/500 capped at 1000/100", hco(5000, 500), nil, nil, EvictionLimits{Total: 1000, Node: 100, FromHCO: true}},
		{"HCO 0/-3 raised to 1/1", hco(0, -3), nil, nil, EvictionLimits{Total: 1, Node: 1, FromHCO: true}},
		{"HCO int32 max capped", hco(2147483647, 2147483647), nil, nil, EvictionLimits{Total: 1000, Node: 100, FromHCO: true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			la := defaults()
			la.EvictionLimitTotal, la.EvictionLimitNode = tt.total, tt.node
			if got := evictionLimits(tt.hco, la); got != tt.want {
				t.Errorf("got %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestPSIItem(t *testing.T) {
	pool := func(rendered string) *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: map[string]interface{}{"status": map[string]interface{}{"configuration": map[string]interface{}{"name": rendered}}}}
	}
	rendered := func(args ...interface{}) *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: map[string]interface{}{"spec": map[string]interface{}{"kernelArguments": args}}}
	}
	tests := []struct {
		name    string
		enabled bool
		cluster objects
		impact  v1alpha1.Impact
		absent  bool
		message string
	}{
		{"new", true, objects{}, v1alpha1.ImpactHigh, false, "MachineConfig '99-worker-psi-karg' will be configured to enable PSI metrics"},
		{"already effective", true, objects{"MachineConfigPool//worker": pool("rendered-worker-1"), "MachineConfig//rendered-worker-1": rendered("quiet", "psi=1")},
			v1alpha1.ImpactLow, false, "PSI metrics already effective in MachineConfigPool 'worker'"},
		{"last psi= wins", true, objects{"MachineConfigPool//worker": pool("rendered-worker-2"), "MachineConfig//rendered-worker-2": rendered("psi=1", "psi=0")},
			v1alpha1.ImpactHigh, false, "will be configured to enable PSI metrics"},
		{"disabled: removed", false, objects{}, v1alpha1.ImpactHigh, true, "will be removed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			item, err := psiItem(context.Background(), tt.cluster, psiWorker, tt.enabled)
			if err != nil {
				t.Fatal(err)
			}
			if item.Impact != tt.impact || item.Absent != tt.absent || !item.Owned || !strings.Contains(item.Message, tt.message) {
				t.Errorf("got impact %s absent %v owned %v message %q", item.Impact, item.Absent, item.Owned, item.Message)
			}
		})
	}
}

func TestMasterPSIItem(t *testing.T) {
	scheduler := func(on interface{}) *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: map[string]interface{}{"spec": map[string]interface{}{"mastersSchedulable": on}}}
	}
	tests := []struct {
		name    string
		cluster objects
		want    bool
	}{
		{"no Scheduler", objects{}, false},
		{"mastersSchedulable false", objects{"Scheduler//cluster": scheduler(false)}, false},
		{"mastersSchedulable true", objects{"Scheduler//cluster": scheduler(true)}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			on, err := mastersSchedulable(context.Background(), tt.cluster)
			if err != nil || on != tt.want {
				t.Fatalf("mastersSchedulable = %v, %v; want %v", on, err, tt.want)
			}
			item, err := psiItem(context.Background(), tt.cluster, psiMaster, on)
			if err != nil {
				t.Fatal(err)
			}
			if item.Name != "enable-psi-metrics-master" || item.Desired.GetName() != "99-master-psi-karg" ||
				item.Desired.GetLabels()["machineconfiguration.openshift.io/role"] != "master" || item.Impact != v1alpha1.ImpactHigh || !item.Owned {
				t.Errorf("item = %s %s %v %s owned=%v", item.Name, item.Desired.GetName(), item.Desired.GetLabels(), item.Impact, item.Owned)
			}
			if item.Absent == tt.want {
				t.Errorf("absent = %v, want %v", item.Absent, !tt.want)
			}
			if tt.want && !strings.Contains(item.Message, "reboots control-plane nodes one at a time") {
				t.Errorf("message = %q", item.Message)
			}
		})
	}
}

func TestPrerequisites(t *testing.T) {
	kinds := func(pre []profiles.Prerequisite) (out []string) {
		for _, p := range pre {
			out = append(out, p.GVK.Kind)
		}
		return out
	}
	on := v1alpha1.ProfileOptions{LoadAware: defaults()}
	if got := kinds(New().Prerequisites(on)); strings.Join(got, ",") != "KubeDescheduler,MachineConfig,HyperConverged" {
		t.Errorf("PSI on: %v", got)
	}
	off := v1alpha1.ProfileOptions{LoadAware: defaults()}
	off.LoadAware.EnablePSIMetrics = ptr.To(false)
	if got := kinds(New().Prerequisites(off)); strings.Join(got, ",") != "KubeDescheduler,HyperConverged" {
		t.Errorf("PSI off: %v", got)
	}
}

func equal(a, b interface{}) bool {
	ja, _ := yaml.Marshal(a)
	jb, _ := yaml.Marshal(b)
	return string(ja) == string(jb)
}

// TestItemsStayWithinWrites: over the options' extremes, every operator
// level, HCO limits out of any range and the profiles an administrator
// may have set, the KubeDescheduler item writes only what Writes
// declares (the admission policy of artifacts/deploy is generated from
// it).
func TestItemsStayWithinWrites(t *testing.T) {
	w := Writes()
	levels, err := filepath.Glob(filepath.Join("..", "..", "..", "artifacts", "testdata", "descheduler-levels", "*.yaml"))
	if err != nil || len(levels) == 0 {
		t.Fatalf("no descheduler levels: %v", err)
	}
	var configs []*v1alpha1.LoadAwareConfig
	for _, mode := range validation.DescheduleModes {
		for _, th := range validation.DeviationLevels {
			for _, interval := range []int32{validation.DeschedulingIntervalSeconds.Min, validation.DeschedulingIntervalSeconds.Max} {
				for _, limits := range [][2]*int32{{nil, nil},
					{ptr.To(validation.EvictionLimitTotal.Min), ptr.To(validation.EvictionLimitNode.Min)},
					{ptr.To(validation.EvictionLimitTotal.Max), ptr.To(validation.EvictionLimitNode.Max)}} {
					configs = append(configs, &v1alpha1.LoadAwareConfig{DeschedulingIntervalSeconds: ptr.To(interval), Mode: mode,
						DevDeviationThresholds: th, EvictionLimitTotal: limits[0], EvictionLimitNode: limits[1]})
				}
			}
		}
	}
	for _, r := range [][3]string{{"1m", "1m", "1h"}, {"24h", "120h", "720h"}, {"90m", "", ""}} {
		c := &v1alpha1.LoadAwareConfig{DeschedulingIntervalSeconds: ptr.To[int32](60), Mode: "Automatic", DevDeviationThresholds: "AsymmetricLow"}
		c.DevMigrationCooldown, c.DevMaxMigrationCooldown, c.DevMigrationHistoryWindow = r[0], r[1], r[2]
		configs = append(configs, c)
	}
	in := func(v interface{}, list []interface{}) bool {
		for _, l := range list {
			if l == v {
				return true
			}
		}
		return false
	}
	checked := 0
	for _, level := range levels {
		crd := loadCRD(t, strings.TrimSuffix(filepath.Base(level), ".yaml"))
		for _, hcoObj := range []*unstructured.Unstructured{nil, hco(0, -3), hco(2147483647, 2147483647)} {
			for _, existing := range [][]interface{}{nil, {"AffinityAndTaints", "LifecycleAndUtilization", "SoftTopologyAndDuplicates", "CompactAndScale"}} {
				for _, la := range configs {
					cluster := objects{
						"CustomResourceDefinition//" + profiles.DeschedulerCRDName:      crd,
						"KubeDescheduler/" + profiles.DeschedulerNamespace + "/cluster": kubeDescheduler(existing...),
					}
					if hcoObj != nil {
						cluster["HyperConverged/"+kubevirt.HCONamespace+"/"+kubevirt.HCOName] = hcoObj
					}
					item, err := deschedulerItem(context.Background(), cluster, la)
					if err != nil || item.Err != nil {
						continue // no write
					}
					checked++
					spec := item.Desired.Object["spec"].(map[string]interface{})
					name := fmt.Sprintf("%s %+v HCO %v existing %v", filepath.Base(level), *la, hcoObj != nil, existing)
					if v := spec["managementState"]; !slices.Contains(w.ManagementStates, v.(string)) {
						t.Errorf("%s: managementState %v", name, v)
					}
					if v := spec["mode"]; !slices.Contains(w.Modes, v.(string)) {
						t.Errorf("%s: mode %v", name, v)
					}
					if v := spec["deschedulingIntervalSeconds"].(int64); !w.IntervalSeconds.Contains(int32(v)) {
						t.Errorf("%s: deschedulingIntervalSeconds %v", name, v)
					}
					ps := spec["profiles"].([]interface{})
					if !slices.Contains(w.Selected, ps[len(ps)-1].(string)) {
						t.Errorf("%s: profiles %v end with no selected profile", name, ps)
					}
					for _, p := range ps[:len(ps)-1] {
						if !slices.Contains(w.Kept, p.(string)) || !in(p, existing) {
							t.Errorf("%s: profiles %v: %v is neither kept nor there before", name, ps, p)
						}
					}
					custom, _ := spec["profileCustomizations"].(map[string]interface{})
					for k, v := range custom {
						if r, ok := w.DurationCustomizations[k]; ok {
							if d, err := time.ParseDuration(v.(string)); err != nil || d < r.Min || d > r.Max {
								t.Errorf("%s: profileCustomizations.%s %v", name, k, v)
							}
							continue
						}
						if !in(v, w.Customizations[k]) {
							t.Errorf("%s: profileCustomizations.%s %v", name, k, v)
						}
					}
					limits, _ := spec["evictionLimits"].(map[string]interface{})
					for k, v := range limits {
						if r, ok := w.EvictionLimits[k]; !ok || !r.Contains(int32(v.(int64))) || v.(int64) != int64(int32(v.(int64))) {
							t.Errorf("%s: evictionLimits.%s %v", name, k, v)
						}
					}
					for k := range spec {
						if !slices.Contains([]string{"managementState", "mode", "deschedulingIntervalSeconds", "profiles", "profileCustomizations", "evictionLimits"}, k) {
							t.Errorf("%s: spec.%s is not in Writes", name, k)
						}
					}
				}
			}
		}
	}
	if checked == 0 {
		t.Fatal("no item was checked")
	}
}
