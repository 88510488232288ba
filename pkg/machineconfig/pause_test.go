package machineconfig

import (
	"reflect"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kubevirt/virt-advisor/pkg/apis/advisor/v1alpha1"
)

func pausedBy(manager string, op metav1.ManagedFieldsOperationType) metav1.ManagedFieldsEntry {
	return metav1.ManagedFieldsEntry{Manager: manager, Operation: op, FieldsV1: &metav1.FieldsV1{Raw: []byte(`{"f:spec":{"f:paused":{}}}`)}}
}

func TestReadPool(t *testing.T) {
	until := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	pool := &unstructured.Unstructured{Object: map[string]interface{}{
		"metadata": map[string]interface{}{"name": "worker", "annotations": map[string]interface{}{PausedUntilAnnotation: until.Format(time.RFC3339)}},
		"spec": map[string]interface{}{"paused": true, "configuration": map[string]interface{}{"name": "rendered-worker-b",
			"source": []interface{}{map[string]interface{}{"name": "99-worker-psi-karg"}}}},
		"status": map[string]interface{}{"configuration": map[string]interface{}{"name": "rendered-worker-a"}, "degradedMachineCount": int64(0)},
	}}
	pool.SetManagedFields([]metav1.ManagedFieldsEntry{
		{Manager: "machine-config-controller", Operation: metav1.ManagedFieldsOperationApply, FieldsV1: &metav1.FieldsV1{Raw: []byte(`{"f:spec":{"f:configuration":{}}}`)}},
		pausedBy(testManager, metav1.ManagedFieldsOperationApply),
		pausedBy("kubectl-patch", metav1.ManagedFieldsOperationUpdate),
		// The same name in an update is not our apply: someone else's.
		pausedBy(testManager, metav1.ManagedFieldsOperationUpdate),
		{Manager: "machine-config-controller", Operation: metav1.ManagedFieldsOperationUpdate, Subresource: "status", FieldsV1: &metav1.FieldsV1{Raw: []byte(`{"f:status":{}}`)}},
	})
	got := ReadPool(pool, testManager, "99-worker-psi-karg", v1alpha1.OperationCreate)
	want := PoolPause{Name: "worker", Paused: true, Ours: true, Others: []string{"kubectl-patch", testManager}, Until: until,
		SpecConfig: "rendered-worker-b", StatusConfig: "rendered-worker-a", HasChange: true}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got  %+v\nwant %+v", got, want)
	}
	if del := ReadPool(pool, testManager, "99-worker-psi-karg", v1alpha1.OperationDelete); del.HasChange {
		t.Error("a delete is rendered only once the MachineConfig left the source")
	}
	for _, tc := range []struct {
		name        string
		annotations map[string]string
		unmarked    bool
	}{
		{"paused-until", map[string]string{PausedUntilAnnotation: "x"}, false},
		{"paused-for-window", map[string]string{PausedForAnnotation: "night"}, false},
		{"neither: removed by someone", map[string]string{"other": "x"}, true},
	} {
		p := pool.DeepCopy()
		p.SetAnnotations(tc.annotations)
		if got := ReadPool(p, testManager, "", "").Unmarked; got != tc.unmarked {
			t.Errorf("%s: Unmarked %v, want %v", tc.name, got, tc.unmarked)
		}
	}
}

func TestDecideWrite(t *testing.T) {
	const mc = "99-worker-psi-karg"
	idle := PoolPause{Name: "worker", SpecConfig: "rendered-worker-a", StatusConfig: "rendered-worker-a"}
	with := func(f func(*PoolPause)) PoolPause { p := idle; f(&p); return p }
	for _, tc := range []struct {
		name   string
		pool   PoolPause
		window time.Duration
		want   WriteAction
		reason string
	}{
		{"an idle pool is paused, then written", idle, 30 * time.Second, PauseThenWrite, ""},
		{"without a window it is written at once", idle, 0, WriteNow, ""},
		{"our window is joined", with(func(p *PoolPause) { p.Paused, p.Ours, p.SpecConfig = true, true, "rendered-worker-b" }), 30 * time.Second, WriteNow, ""},
		{"a pool paused by an administrator is never taken over",
			with(func(p *PoolPause) { p.Paused, p.Others = true, []string{"kubectl-patch"} }), 30 * time.Second, WaitToWrite,
			"MachineConfigPool 'worker' is paused by someone else (field manager kubectl-patch); virt-advisor never unpauses it: the change is written when the pool is unpaused"},
		{"nor when it is also paused by us",
			with(func(p *PoolPause) { p.Paused, p.Ours, p.Others = true, true, []string{"admin"} }), 30 * time.Second, WaitToWrite,
			"MachineConfigPool 'worker' is paused by someone else (field manager admin)"},
		{"nor without a window",
			with(func(p *PoolPause) { p.Paused = true }), 0, WaitToWrite,
			"MachineConfigPool 'worker' is paused by someone else (no field manager recorded)"},
		{"a degraded pool gets nothing",
			with(func(p *PoolPause) { p.Degraded, p.DegradedMachines = true, 1 }), 30 * time.Second, WaitToWrite,
			"MachineConfigPool 'worker' is degraded (1 degraded machines); the change is written when it is no longer degraded"},
		{"a pool updating to another config gets no second Rollout",
			with(func(p *PoolPause) { p.SpecConfig = "rendered-worker-x" }), 0, WaitToWrite,
			"MachineConfigPool 'worker' is updating to rendered-worker-x, which does not include MachineConfig '99-worker-psi-karg'; the change is written when it is done"},
		{"a pool rolling out this change is written without a pause (a retry after a crash)",
			with(func(p *PoolPause) { p.SpecConfig, p.HasChange = "rendered-worker-x", true }), 30 * time.Second, WriteNow, ""},
		{"a pool an administrator holds (annotation) gets nothing",
			with(func(p *PoolPause) { p.Held, p.Hold = true, "firmware upgrade" }), 30 * time.Second, WaitToWrite,
			`MachineConfigPool 'worker' is held by an administrator (annotation advisor.kubevirt.io/hold: "firmware upgrade")`},
		{"nor while our own window holds it",
			with(func(p *PoolPause) { p.Paused, p.Ours, p.Held = true, true, true }), 30 * time.Second, WaitToWrite,
			"MachineConfigPool 'worker' is held by an administrator"},
		{"a pause of ours whose annotations were removed is no longer ours: it waits",
			with(func(p *PoolPause) { p.Paused, p.Ours, p.Unmarked, p.SpecConfig = true, true, true, "rendered-worker-b" }), 30 * time.Second, WaitToWrite,
			"MachineConfigPool 'worker' is paused by virt-advisor, but its annotation advisor.kubevirt.io/paused-until was removed"},
		{"an idle pool that renders the MachineConfig already (an update) is paused",
			with(func(p *PoolPause) { p.HasChange = true }), 30 * time.Second, PauseThenWrite, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, reason := DecideWrite(tc.pool, mc, tc.window)
			if got != tc.want || !strings.HasPrefix(reason, tc.reason) || (tc.reason == "") != (reason == "") {
				t.Errorf("got %v %q, want %v %q", got, reason, tc.want, tc.reason)
			}
		})
	}
}

func TestDecideUnpause(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	ours := PoolPause{Name: "worker", Paused: true, Ours: true, Until: now.Add(10 * time.Second)}
	with := func(f func(*PoolPause)) PoolPause { p := ours; f(&p); return p }
	for _, tc := range []struct {
		name    string
		pool    PoolPause
		due     bool
		closed  bool
		unpause bool
		after   time.Duration
	}{
		{"not ours: never touched", PoolPause{Name: "worker", Paused: true, Others: []string{"admin"}}, true, false, false, 0},
		{"the window runs", ours, false, false, false, 10 * time.Second},
		{"the window ended", with(func(p *PoolPause) { p.Until = now }), false, false, true, 0},
		{"ended, items still being written: held", with(func(p *PoolPause) { p.Until = now.Add(-time.Second) }), true, false, false, HoldRetry},
		{"held at most one more window", with(func(p *PoolPause) { p.Until = now.Add(-30 * time.Second) }), true, false, true, 0},
		{"a degraded pool is not held", with(func(p *PoolPause) { p.Until, p.Degraded = now.Add(-time.Second), true }), true, false, true, 0},
		{"an administrator's hold outlasts our window", with(func(p *PoolPause) { p.Until, p.Held = now.Add(-time.Minute), true }), false, false, false, HeldRetry},
		{"closed window: stays paused until it opens, whatever the recorded end", with(func(p *PoolPause) { p.Until = now.Add(-time.Minute) }), true, true, false, time.Hour},
		{"a pause for a window ends once the pool may be disrupted, whatever its recorded end", with(func(p *PoolPause) { p.Until, p.ForWindow = now.Add(20*time.Hour), "night" }), false, false, true, 0},
		{"closed window, not ours: never touched", PoolPause{Name: "worker", Paused: true, Others: []string{"admin"}}, false, true, false, 0},
		{"a pause of ours whose end is no time is ended", with(func(p *PoolPause) { p.Until = time.Time{} }), false, false, true, 0},
		{"a pause of ours whose annotations were removed is not ended (the admission policy would refuse it)",
			with(func(p *PoolPause) { p.Until, p.Unmarked = time.Time{}, true }), false, false, false, 0},
		{"ended although someone else holds it too: our part is withdrawn", with(func(p *PoolPause) { p.Until, p.Others = now, []string{"admin"} }), false, false, true, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			unpause, after := DecideUnpause(tc.pool, now, tc.due, 30*time.Second, tc.closed, time.Hour)
			if unpause != tc.unpause || after != tc.after {
				t.Errorf("got %v after %v, want %v after %v", unpause, after, tc.unpause, tc.after)
			}
		})
	}
}

func TestDecideWindowPause(t *testing.T) {
	for _, tc := range []struct {
		name             string
		pool             PoolPause
		rolling, allowed bool
		want             bool
	}{
		{"window closed mid-rollout: pause", PoolPause{Name: "worker"}, true, false, true},
		{"window open: no pause", PoolPause{Name: "worker"}, true, true, false},
		{"nothing left to roll out: no pause", PoolPause{Name: "worker"}, false, false, false},
		{"already paused by us: stays paused, no second pause", PoolPause{Name: "worker", Paused: true, Ours: true}, true, false, false},
		{"paused by someone else: never taken over", PoolPause{Name: "worker", Paused: true, Others: []string{"admin"}}, true, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := DecideWindowPause(tc.pool, tc.rolling, tc.allowed); got != tc.want {
				t.Errorf("got %v, want %v", got, tc.want)
			}
		})
	}
}
