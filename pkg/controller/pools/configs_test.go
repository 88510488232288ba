package pools

import (
	"encoding/json"
	"reflect"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/sets"

	"github.com/kubevirt/virt-advisor/pkg/apis/advisor/v1alpha1"
	"github.com/kubevirt/virt-advisor/pkg/machineconfig"
)

func pool(name string) *unstructured.Unstructured {
	p := &unstructured.Unstructured{Object: map[string]interface{}{
		"spec": map[string]interface{}{"machineConfigSelector": map[string]interface{}{"matchLabels": map[string]interface{}{machineconfig.RoleLabel: name}}},
	}}
	p.SetName(name)
	return p
}

// The configs' status answers a pool's reconcile, with nothing told to
// the pool controller: which configs wait to write to the pool, which
// items roll out on it, which aborts hold it.
func TestConfigView(t *testing.T) {
	worker, infra := pool("worker"), pool("infra")
	all := []unstructured.Unstructured{*worker, *infra}
	written := func(t *testing.T) *v1alpha1.VirtPlatformConfig { return rollingConfig(t, "a", false) }
	for _, tc := range []struct {
		name        string
		cfg         func(t *testing.T) *v1alpha1.VirtPlatformConfig
		dueWorker   []string
		rolling     []string
		abortWorker []string
	}{
		{name: "written: rolls out on the pools noted at its write", cfg: written, rolling: []string{"a/enable-psi-metrics"}},
		{name: "approved, not written: due on the pools rendering it", cfg: func(t *testing.T) *v1alpha1.VirtPlatformConfig {
			cfg := written(t)
			cfg.Status.Items[0].State, cfg.Status.Items[0].Message, cfg.Status.Items[0].PoolConfigsBefore = v1alpha1.ItemStatePending, "", nil
			return cfg
		}, dueWorker: []string{"a"}},
		{name: "its intent recorded, the write not confirmed: still due", cfg: func(t *testing.T) *v1alpha1.VirtPlatformConfig {
			cfg := written(t)
			cfg.Status.Items[0].Message = "Applying"
			return cfg
		}, dueWorker: []string{"a"}},
		{name: "a pending item of a config not in progress: not due", cfg: func(t *testing.T) *v1alpha1.VirtPlatformConfig {
			cfg := written(t)
			cfg.Status.Phase = v1alpha1.PhaseFailed
			cfg.Status.Items[0].State = v1alpha1.ItemStatePending
			return cfg
		}},
		{name: "completed: neither", cfg: func(t *testing.T) *v1alpha1.VirtPlatformConfig {
			cfg := written(t)
			cfg.Status.Items[0].State = v1alpha1.ItemStateCompleted
			return cfg
		}},
		{name: "action Ignore: not followed", cfg: func(t *testing.T) *v1alpha1.VirtPlatformConfig {
			cfg := written(t)
			cfg.Spec.Action = v1alpha1.PlanActionIgnore
			return cfg
		}},
		{name: "aborted: its held change holds the pools rendering it, whatever the action", cfg: func(t *testing.T) *v1alpha1.VirtPlatformConfig {
			cfg := written(t)
			cfg.Spec.Action = v1alpha1.PlanActionIgnore
			cfg.Status.Abort = &v1alpha1.AbortRecord{PlanHash: "sha256:p", Held: []v1alpha1.HeldConfig{
				machineconfig.Held(machineconfig.ItemChange(cfg.Status.Items[0].TargetRef, cfg.Status.Items[0].DesiredState))}}
			return cfg
		}, abortWorker: []string{"a"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := configView{configs: []*v1alpha1.VirtPlatformConfig{tc.cfg(t)}}
			changeOf := func(it *v1alpha1.VirtPlatformConfigItem) (machineconfig.Change, error) {
				return machineconfig.ItemChange(it.TargetRef, it.DesiredState), nil
			}
			if got := v.dueOn(worker, all, changeOf); !sameList(got, tc.dueWorker) {
				t.Errorf("due on worker %v, want %v", got, tc.dueWorker)
			}
			if got := v.dueOn(infra, all, changeOf); len(got) > 0 {
				t.Errorf("due on infra %v, want none", got)
			}
			var rolling []string
			for _, k := range v.rollingOn(worker, all) {
				rolling = append(rolling, k.config+"/"+k.item)
			}
			if !sameList(rolling, tc.rolling) || len(v.rollingOn(infra, all)) > 0 {
				t.Errorf("rolling on worker %v, want %v (none on infra)", rolling, tc.rolling)
			}
			if got := v.abortedOn(worker, all); !sameList(got, tc.abortWorker) || len(v.abortedOn(infra, all)) > 0 {
				t.Errorf("aborts holding worker %v, want %v (none on infra)", got, tc.abortWorker)
			}
		})
	}
}

func sameList(a, b []string) bool { return len(a)+len(b) == 0 || reflect.DeepEqual(a, b) }

// An approved KubeletConfig for worker is due on every pool that renders
// the MachineConfig generated from it: a custom pool selecting role
// worker too, whose pause must not end under it either.
func TestDueKubeletConfigOnCustomPool(t *testing.T) {
	worker, infra := pool("worker"), pool("infra")
	worker.SetLabels(map[string]string{machineconfig.PoolLabelPrefix + "worker": ""})
	cnv := pool("worker-cnv")
	_ = unstructured.SetNestedField(cnv.Object, map[string]interface{}{"matchExpressions": []interface{}{map[string]interface{}{
		"key": machineconfig.RoleLabel, "operator": "In", "values": []interface{}{"worker", "worker-cnv"}}}}, "spec", "machineConfigSelector")
	all := []unstructured.Unstructured{*worker, *cnv, *infra}
	raw, err := json.Marshal(map[string]interface{}{"metadata": map[string]interface{}{"name": "dedicated-cpus"},
		"spec": map[string]interface{}{"machineConfigPoolSelector": map[string]interface{}{"matchLabels": map[string]interface{}{machineconfig.PoolLabelPrefix + "worker": ""}}}})
	if err != nil {
		t.Fatal(err)
	}
	cfg := &v1alpha1.VirtPlatformConfig{ObjectMeta: metav1.ObjectMeta{Name: "dc"}, Status: v1alpha1.VirtPlatformConfigStatus{Phase: v1alpha1.PhaseInProgress,
		Items: []v1alpha1.VirtPlatformConfigItem{{Name: "kubelet", State: v1alpha1.ItemStatePending,
			TargetRef:    v1alpha1.ObjectReference{APIVersion: "machineconfiguration.openshift.io/v1", Kind: "KubeletConfig", Name: "dedicated-cpus"},
			DesiredState: &runtime.RawExtension{Raw: raw}}}}}
	v := configView{configs: []*v1alpha1.VirtPlatformConfig{cfg}}
	changeOf := func(it *v1alpha1.VirtPlatformConfigItem) (machineconfig.Change, error) {
		return machineconfig.ItemChange(it.TargetRef, it.DesiredState), nil
	}
	for _, tc := range []struct {
		pool *unstructured.Unstructured
		want []string
	}{{worker, []string{"dc"}}, {cnv, []string{"dc"}}, {infra, nil}} {
		if got := v.dueOn(tc.pool, all, changeOf); !sameList(got, tc.want) {
			t.Errorf("due on %s: %v, want %v", tc.pool.GetName(), got, tc.want)
		}
	}
}

// The window pauses of a written item count from what its status said,
// and are dropped with the item's rollout or its config.
func TestPauseCounts(t *testing.T) {
	psi, swap := itemKey{"a", "psi", "uid-a"}, itemKey{"a", "swap", "uid-a"}
	p := newPauseCounts()
	p.follow(psi, 1)
	p.paused([]itemKey{psi})
	p.paused([]itemKey{psi, swap}) // swap is not followed: not counted
	if got := p.follow(psi, 0); got != 3 {
		t.Errorf("window pauses of psi %d, want 3 (1 stored, 2 made)", got)
	}
	p.keepItems("a", "uid-a", sets.New("swap"))
	if got := p.follow(psi, 0); got != 0 {
		t.Errorf("window pauses of psi after its rollout ended %d, want 0", got)
	}
	p.keepConfigs(sets.New(itemKey{config: "a", uid: "uid-other"}))
	if len(p.counts) != 0 {
		t.Errorf("counts %v left for a config gone", p.counts)
	}
}

// An abort stored before the cache holds it is read from what was stored
// until the cache catches up; a config gone takes it along.
func TestAbortingOverTheCache(t *testing.T) {
	cached := rollingConfig(t, "a", false)
	stored := cached.DeepCopy()
	stored.ResourceVersion = "11"
	stored.Status.Abort = &v1alpha1.AbortRecord{PlanHash: "sha256:p"}
	a := newAborting()
	a.put(stored)
	if got := a.over([]*v1alpha1.VirtPlatformConfig{cached}); got[0].Status.Abort == nil {
		t.Errorf("the cache behind the abort: read without it")
	}
	caught := stored.DeepCopy()
	caught.ResourceVersion = "12"
	if got := a.over([]*v1alpha1.VirtPlatformConfig{caught}); got[0] != caught || len(a.configs) != 0 {
		t.Errorf("the cache caught up: the stored abort still read")
	}
	a.put(stored)
	if a.over(nil); len(a.configs) != 0 {
		t.Errorf("the config gone: its stored abort kept")
	}
}
