package controller

import (
	"reflect"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kubevirt/virt-advisor/pkg/apis/advisor/v1alpha1"
	"github.com/kubevirt/virt-advisor/pkg/plan"
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
		pausedBy(plan.FieldManager, metav1.ManagedFieldsOperationApply),
		pausedBy("kubectl-patch", metav1.ManagedFieldsOperationUpdate),
		// The same name in an update is not our apply: someone else's.
		pausedBy(plan.FieldManager, metav1.ManagedFieldsOperationUpdate),
		{Manager: "machine-config-controller", Operation: metav1.ManagedFieldsOperationUpdate, Subresource: "status", FieldsV1: &metav1.FieldsV1{Raw: []byte(`{"f:status":{}}`)}},
	})
	got := readPool(pool, "99-worker-psi-karg", v1alpha1.OperationCreate)
	want := poolPause{name: "worker", paused: true, ours: true, others: []string{"kubectl-patch", plan.FieldManager}, until: until,
		specConfig: "rendered-worker-b", statusConfig: "rendered-worker-a", hasChange: true}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got  %+v\nwant %+v", got, want)
	}
	if del := readPool(pool, "99-worker-psi-karg", v1alpha1.OperationDelete); del.hasChange {
		t.Error("a delete is rendered only once the MachineConfig left the source")
	}
}

func TestDecideWrite(t *testing.T) {
	const mc = "99-worker-psi-karg"
	idle := poolPause{name: "worker", specConfig: "rendered-worker-a", statusConfig: "rendered-worker-a"}
	with := func(f func(*poolPause)) poolPause { p := idle; f(&p); return p }
	for _, tc := range []struct {
		name   string
		pool   poolPause
		window time.Duration
		want   writeAction
		reason string
	}{
		{"an idle pool is paused, then written", idle, 30 * time.Second, pauseThenWrite, ""},
		{"without a window it is written at once", idle, 0, writeNow, ""},
		{"our window is joined", with(func(p *poolPause) { p.paused, p.ours, p.specConfig = true, true, "rendered-worker-b" }), 30 * time.Second, writeNow, ""},
		{"a pool paused by an administrator is never taken over",
			with(func(p *poolPause) { p.paused, p.others = true, []string{"kubectl-patch"} }), 30 * time.Second, waitToWrite,
			"MachineConfigPool 'worker' is paused by someone else (field manager kubectl-patch); virt-advisor never unpauses it: the change is written when the pool is unpaused"},
		{"nor when it is also paused by us",
			with(func(p *poolPause) { p.paused, p.ours, p.others = true, true, []string{"admin"} }), 30 * time.Second, waitToWrite,
			"MachineConfigPool 'worker' is paused by someone else (field manager admin)"},
		{"nor without a window",
			with(func(p *poolPause) { p.paused = true }), 0, waitToWrite,
			"MachineConfigPool 'worker' is paused by someone else (no field manager recorded)"},
		{"a degraded pool gets nothing",
			with(func(p *poolPause) { p.degraded, p.degradedMachines = true, 1 }), 30 * time.Second, waitToWrite,
			"MachineConfigPool 'worker' is degraded (1 degraded machines); the change is written when it is no longer degraded"},
		{"a pool updating to another config gets no second rollout",
			with(func(p *poolPause) { p.specConfig = "rendered-worker-x" }), 0, waitToWrite,
			"MachineConfigPool 'worker' is updating to rendered-worker-x, which does not include MachineConfig '99-worker-psi-karg'; the change is written when it is done"},
		{"a pool rolling out this change is written without a pause (a retry after a crash)",
			with(func(p *poolPause) { p.specConfig, p.hasChange = "rendered-worker-x", true }), 30 * time.Second, writeNow, ""},
		{"a pool an administrator holds (annotation) gets nothing",
			with(func(p *poolPause) { p.held, p.hold = true, "firmware upgrade" }), 30 * time.Second, waitToWrite,
			`MachineConfigPool 'worker' is held by an administrator (annotation advisor.kubevirt.io/hold: "firmware upgrade")`},
		{"nor while our own window holds it",
			with(func(p *poolPause) { p.paused, p.ours, p.held = true, true, true }), 30 * time.Second, waitToWrite,
			"MachineConfigPool 'worker' is held by an administrator"},
		{"an idle pool that renders the MachineConfig already (an update) is paused",
			with(func(p *poolPause) { p.hasChange = true }), 30 * time.Second, pauseThenWrite, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, reason := decideWrite(tc.pool, mc, tc.window)
			if got != tc.want || !strings.HasPrefix(reason, tc.reason) || (tc.reason == "") != (reason == "") {
				t.Errorf("got %v %q, want %v %q", got, reason, tc.want, tc.reason)
			}
		})
	}
}

func TestDecideUnpause(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	ours := poolPause{name: "worker", paused: true, ours: true, until: now.Add(10 * time.Second)}
	with := func(f func(*poolPause)) poolPause { p := ours; f(&p); return p }
	for _, tc := range []struct {
		name    string
		pool    poolPause
		due     bool
		unpause bool
		after   time.Duration
	}{
		{"not ours: never touched", poolPause{name: "worker", paused: true, others: []string{"admin"}}, true, false, 0},
		{"the window runs", ours, false, false, 10 * time.Second},
		{"the window ended", with(func(p *poolPause) { p.until = now }), false, true, 0},
		{"ended, items still being written: held", with(func(p *poolPause) { p.until = now.Add(-time.Second) }), true, false, holdRetry},
		{"held at most one more window", with(func(p *poolPause) { p.until = now.Add(-30 * time.Second) }), true, true, 0},
		{"a degraded pool is not held", with(func(p *poolPause) { p.until, p.degraded = now.Add(-time.Second), true }), true, true, 0},
		{"an administrator's hold outlasts our window", with(func(p *poolPause) { p.until, p.held = now.Add(-time.Minute), true }), false, false, heldRetry},
		{"a pause of ours without its end is ended", with(func(p *poolPause) { p.until = time.Time{} }), false, true, 0},
		{"ended although someone else holds it too: our part is withdrawn", with(func(p *poolPause) { p.until, p.others = now, []string{"admin"} }), false, true, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			unpause, after := decideUnpause(tc.pool, now, tc.due, 30*time.Second)
			if unpause != tc.unpause || after != tc.after {
				t.Errorf("got %v after %v, want %v after %v", unpause, after, tc.unpause, tc.after)
			}
		})
	}
}
