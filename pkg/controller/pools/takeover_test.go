package pools

import (
	"context"
	"encoding/json"
	"slices"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/kubevirt/virt-advisor/pkg/apis/advisor/v1alpha1"
	listers "github.com/kubevirt/virt-advisor/pkg/generated/listers/advisor/v1alpha1"
	"github.com/kubevirt/virt-advisor/pkg/machineconfig"
	"github.com/kubevirt/virt-advisor/pkg/maintenance"
)

// At the start of a term, before a config in progress is reconciled, our
// coalescing pause of a pool its written item rolls out on ends only in a
// window its rollout trusts: a plan an approval policy approved does not
// resume in another Allow window because this replica has not looked at
// the config yet. The pool controller reads it all from the config's
// status in the cache: nothing is told to it, nothing rebuilt.
func TestTakeoverWeighsOnlyTrustedWindows(t *testing.T) {
	now := time.Date(2026, 11, 20, 22, 0, 1, 0, time.UTC) // Friday
	night := mustWindow(t, "night", "0 22 * * *")         // open now
	weekend := mustWindow(t, "weekend", "0 1 * * 6")      // opens Saturday 01:00
	onlyWeekend := func(*v1alpha1.VirtPlatformConfig) func(*maintenance.Window) bool {
		return func(w *maintenance.Window) bool { return w.Name == "weekend" }
	}
	for _, tc := range []struct {
		name         string
		trusted      func(*v1alpha1.VirtPlatformConfig) func(*maintenance.Window) bool
		written      bool
		wantUnpaused bool
	}{
		{name: "approved by a policy trusting only the weekend: held until it opens", trusted: onlyWeekend, written: true},
		{name: "approved by a person: any Allow window resumes it", written: true, wantUnpaused: true},
		{name: "approved by a policy, not written yet: held for the write", trusted: onlyWeekend},
	} {
		t.Run(tc.name, func(t *testing.T) {
			reader := &fakeReader{pools: map[string]*unstructured.Unstructured{machineconfig.WorkerPool: pausedWorker(now.Add(-30*time.Second), "")}}
			pauser := &fakePauser{reader: reader}
			cfg := rollingConfig(t, "load-aware-rebalancing", false)
			if !tc.written {
				cfg.Status.Items[0].State, cfg.Status.Items[0].Message, cfg.Status.Items[0].PoolConfigsBefore = v1alpha1.ItemStatePending, "", nil
			}
			c := New(Config{Cluster: reader, Pauser: pauser, Drains: &fakeDrains{}, Recorder: record.NewFakeRecorder(10),
				Clock: clocktesting.NewFakeClock(now), CoalesceWindow: time.Minute, Windows: fakeLister{night, weekend},
				TrustedWindows: tc.trusted, Wake: func(string) {}, Configs: listerOf(t, cfg)})
			if _, err := c.Reconcile(context.Background(), machineconfig.WorkerPool); err != nil {
				t.Fatalf("reconcile: %v", err)
			}
			if unpaused := slices.Equal(pauser.applies, []bool{false}); unpaused != tc.wantUnpaused {
				t.Errorf("applies %v, want unpaused %v", pauser.applies, tc.wantUnpaused)
			}
		})
	}
}

func mustWindow(t *testing.T, name, schedule string) *maintenance.Window {
	t.Helper()
	w, err := maintenance.New(name, maintenance.Spec{PoolNames: []string{machineconfig.WorkerPool}, Schedule: schedule, Duration: time.Hour, Kind: maintenance.Allow})
	if err != nil {
		t.Fatal(err)
	}
	return w
}

// rollingConfig is an InProgress config whose approved MachineConfig item
// for the worker role was written and rolls out on the worker pool.
func rollingConfig(t *testing.T, name string, allowBlocking bool) *v1alpha1.VirtPlatformConfig {
	t.Helper()
	it := psiItem(t)
	it.Message = "Applied; waiting for the MachineConfigPool rollout"
	it.PoolConfigsBefore = []v1alpha1.PoolConfiguration{{Pool: machineconfig.WorkerPool, Configuration: "rendered-a"}}
	return &v1alpha1.VirtPlatformConfig{ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID("uid-" + name), ResourceVersion: "10"},
		Spec:   v1alpha1.VirtPlatformConfigSpec{Rollout: &v1alpha1.RolloutSpec{AllowBlockingDrains: allowBlocking}},
		Status: v1alpha1.VirtPlatformConfigStatus{Phase: v1alpha1.PhaseInProgress, Items: []v1alpha1.VirtPlatformConfigItem{*it}}}
}

// listerOf is the informer's cache holding these configs.
func listerOf(t *testing.T, configs ...*v1alpha1.VirtPlatformConfig) listers.VirtPlatformConfigLister {
	t.Helper()
	indexer := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
	for _, cfg := range configs {
		if err := indexer.Add(cfg); err != nil {
			t.Fatal(err)
		}
	}
	return listers.NewVirtPlatformConfigLister(indexer)
}

// psiItem is an approved MachineConfig item for the worker role.
func psiItem(t *testing.T) *v1alpha1.VirtPlatformConfigItem {
	t.Helper()
	raw, err := json.Marshal(map[string]interface{}{"metadata": map[string]interface{}{
		"name": "99-worker-psi", "labels": map[string]interface{}{machineconfig.RoleLabel: machineconfig.WorkerPool}}})
	if err != nil {
		t.Fatal(err)
	}
	return &v1alpha1.VirtPlatformConfigItem{Name: "enable-psi-metrics", State: v1alpha1.ItemStateInProgress,
		TargetRef:    v1alpha1.ObjectReference{APIVersion: "machineconfiguration.openshift.io/v1", Kind: "MachineConfig", Name: "99-worker-psi"},
		DesiredState: &runtime.RawExtension{Raw: raw}}
}
