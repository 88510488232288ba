package pools

import (
	"fmt"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kubevirt/virt-advisor/pkg/apis/advisor/v1alpha1"
	"github.com/kubevirt/virt-advisor/pkg/gates"
	"github.com/kubevirt/virt-advisor/pkg/machineconfig"
)

// steppedPool is a worker pool rolling out rendered-b, paused or not, with
// a step recorded when step is set.
func steppedPool(paused bool, step *machineconfig.PoolStep) *unstructured.Unstructured {
	p := pool(machineconfig.WorkerPool)
	_ = unstructured.SetNestedField(p.Object, paused, "spec", "paused")
	_ = unstructured.SetNestedField(p.Object, "rendered-b", "spec", "configuration", "name")
	if step != nil {
		p.SetAnnotations(map[string]string{machineconfig.StepAnnotation: step.Encode()})
	}
	return p
}

func TestDecideStep(t *testing.T) {
	now := time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)
	started := now.Add(-2 * time.Minute)
	done := func(name string) gates.Node {
		return gates.Node{Name: name, Ready: true, ReadySince: now.Add(-time.Minute), State: gates.StateDone, Current: "rendered-b", Desired: "rendered-b"}
	}
	old := func(name string) gates.Node {
		return gates.Node{Name: name, Ready: true, State: gates.StateDone, Current: "rendered-a", Desired: "rendered-a"}
	}
	targeted := func(name string) gates.Node {
		return gates.Node{Name: name, Ready: true, State: gates.StateWorking, Current: "rendered-a", Desired: "rendered-b"}
	}
	notReady := func(n gates.Node) gates.Node { n.Ready = false; return n }
	step1 := &machineconfig.PoolStep{Nodes: []string{"w1"}, Desired: "rendered-b", Started: started}
	settings := gates.Settings{NodeReadyTimeout: 10 * time.Minute}
	for _, tc := range []struct {
		name     string
		paused   bool
		step     *machineconfig.PoolStep
		nodes    []gates.Node
		settings gates.Settings
		action   machineconfig.StepAction
		outcome  gates.Outcome
		gate     string
		recorded []string
		migs     []gates.Migration
	}{
		{"paused between steps, nodes left: the next step starts", true, nil, []gates.Node{old("w1"), old("w2")}, settings, machineconfig.StepStart, gates.Pass, "", nil, nil},
		{"unpaused, nothing targeted yet: wait for the MCO", false, nil, []gates.Node{old("w1"), old("w2")}, settings, machineconfig.StepAwait, gates.Pass, "", nil, nil},
		{"w1 updated between two looks and not Ready: it is the step", false, nil, []gates.Node{notReady(done("w1")), old("w2")}, settings, machineconfig.StepRecord, gates.Pass, "", []string{"w1"}, nil},
		{"the MCO targeted w1: pause and record it", false, nil, []gates.Node{targeted("w1"), old("w2")}, settings, machineconfig.StepRecord, gates.Pass, "", []string{"w1"}, nil},
		{"w1 updating within the timeout: wait for it", true, step1, []gates.Node{targeted("w1"), old("w2")}, settings, machineconfig.StepInFlight, gates.Wait, gates.NodeBack, nil, nil},
		{"w1 updated but NotReady within the timeout: wait", true, step1, []gates.Node{notReady(done("w1")), old("w2")}, settings, machineconfig.StepGates, gates.Wait, gates.NodeBack, nil, nil},
		{"w1 NotReady past the timeout: halt", true, step1, []gates.Node{notReady(done("w1")), old("w2")}, gates.Settings{NodeReadyTimeout: time.Minute}, machineconfig.StepGates, gates.Halt, gates.NodeBack, nil, nil},
		{"w1 back: the gates pass", true, step1, []gates.Node{done("w1"), old("w2")}, settings, machineconfig.StepGates, gates.Pass, "", nil, nil},
		{"w1 back, soaking: wait", true, step1, []gates.Node{done("w1"), old("w2")}, gates.Settings{NodeReadyTimeout: time.Hour, Soak: 5 * time.Minute}, machineconfig.StepGates, gates.Wait, gates.Soak, nil, nil},
		{"w2 outside the step went NotReady: halt", true, step1, []gates.Node{done("w1"), notReady(old("w2"))}, settings, machineconfig.StepGates, gates.Halt, gates.NodeBack, nil, nil},
		{"a migration of w1's drain failed while w1 drains: halt at once", true, step1, []gates.Node{targeted("w1"), old("w2")}, settings, machineconfig.StepInFlight, gates.Halt, gates.VMsMoved, nil,
			[]gates.Migration{{Namespace: "default", Name: "m1", VMI: "db-0", Phase: gates.MigrationFailed}}},
		{"one failed migration allowed: w1 still awaited", true, step1, []gates.Node{targeted("w1"), old("w2")}, gates.Settings{NodeReadyTimeout: 10 * time.Minute, MaxFailedMigrations: 1}, machineconfig.StepInFlight, gates.Wait, gates.NodeBack, nil,
			[]gates.Migration{{Namespace: "default", Name: "m1", VMI: "db-0", Phase: gates.MigrationFailed}}},
		{"w1 back, a migration still running: wait", true, step1, []gates.Node{done("w1"), old("w2")}, settings, machineconfig.StepGates, gates.Wait, gates.VMsMoved, nil,
			[]gates.Migration{{Namespace: "default", Name: "m1", VMI: "db-0", Phase: "Running"}}},
		{"every node on the target: complete", false, nil, []gates.Node{done("w1"), done("w2")}, settings, machineconfig.StepComplete, gates.Pass, "", nil, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := decideStep(stepView{pool: steppedPool(tc.paused, tc.step), nodes: tc.nodes, settings: tc.settings, step: tc.step, now: now, migrations: tc.migs})
			if d.action != tc.action {
				t.Fatalf("action %s, want %s", d.action, tc.action)
			}
			if d.verdict.Outcome != tc.outcome || d.verdict.Gate != tc.gate {
				t.Errorf("verdict %s/%q (%s), want %s/%q", d.verdict.Outcome, d.verdict.Gate, d.verdict.Message, tc.outcome, tc.gate)
			}
			if tc.recorded != nil && (d.step == nil || !sameList(d.step.Nodes, tc.recorded) || !d.step.Started.Equal(now)) {
				t.Errorf("recorded %+v, want nodes %v started now", d.step, tc.recorded)
			}
			if d.action != machineconfig.StepComplete && (d.after <= 0 || d.after > StepPoll) {
				t.Errorf("looked at again after %s, want within %s", d.after, StepPoll)
			}
		})
	}
}

// Only a later approval of a config the halt names, or its deletion,
// ends a halt; an editor's spec change (the same approval) does not.
func TestHaltReleased(t *testing.T) {
	h := &machineconfig.PoolHalt{Gate: gates.NodeBack, Approvals: map[string]int64{"psi": 3}}
	approved := func(seq int64) *v1alpha1.VirtPlatformConfig {
		cfg := rollingConfig(t, "psi", false)
		cfg.Status.Approval = &v1alpha1.ApprovalRecord{Sequence: seq}
		return cfg
	}
	edited := approved(3)
	edited.Generation = 9
	edited.Status.Phase = v1alpha1.PhaseReviewRequired
	edited.Status.Items = nil
	for _, tc := range []struct {
		name    string
		configs []*v1alpha1.VirtPlatformConfig
		want    bool
	}{
		{"the same approval", []*v1alpha1.VirtPlatformConfig{approved(3)}, false},
		{"an editor's spec change", []*v1alpha1.VirtPlatformConfig{edited}, false},
		{"an approval without a record", []*v1alpha1.VirtPlatformConfig{rollingConfig(t, "psi", false)}, false},
		{"another config approved again", []*v1alpha1.VirtPlatformConfig{approved(3), func() *v1alpha1.VirtPlatformConfig {
			c := approved(7)
			c.Name = "other"
			return c
		}()}, false},
		{"approved again (resume or revert)", []*v1alpha1.VirtPlatformConfig{approved(4)}, true},
		{"the config deleted", nil, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := haltReleased(h, configView{configs: tc.configs}); got != tc.want {
				t.Errorf("released %v, want %v", got, tc.want)
			}
		})
	}
	unreadable := machineconfig.ReadHalt(func() *unstructured.Unstructured {
		p := pool("worker")
		p.SetAnnotations(map[string]string{machineconfig.HaltAnnotation: "{not json"})
		return p
	}())
	if unreadable == nil || haltReleased(unreadable, configView{}) {
		t.Errorf("a halt that cannot be read must hold: %+v", unreadable)
	}
}

// The gates in force on a pool are the strictest its approvals approved.
func TestGatesOf(t *testing.T) {
	a, b := rollingConfig(t, "a", false), rollingConfig(t, "b", false)
	a.Status.Approval = &v1alpha1.ApprovalRecord{Sequence: 2, Gates: &v1alpha1.PlanGates{NodeReadyTimeout: "20m0s", Soak: "1m0s", MaxFailedMigrations: 2}}
	b.Status.Approval = &v1alpha1.ApprovalRecord{Sequence: 5, Gates: &v1alpha1.PlanGates{NodeReadyTimeout: "5m0s", Soak: "30s", MaxFailedMigrations: 1,
		Alerts: &v1alpha1.PlanAlertGate{Matchers: []string{`severity="critical"`}, Ignore: []string{"Watchdog"}}}}
	s, seqs := gatesOf(configView{configs: []*v1alpha1.VirtPlatformConfig{a, b}}, []itemKey{{config: "a"}, {config: "b"}})
	if s.NodeReadyTimeout != 5*time.Minute || s.Soak != time.Minute || s.MaxFailedMigrations != 1 || s.Alerts == nil || len(s.Alerts.Matchers) != 1 {
		t.Errorf("settings %+v", s)
	}
	if seqs["a"] != 2 || seqs["b"] != 5 {
		t.Errorf("approvals %v", seqs)
	}
	none, _ := gatesOf(configView{}, nil)
	if none.NodeReadyTimeout != defaultNodeReadyTimeout || none.MaxFailedMigrations != 0 || none.Alerts != nil {
		t.Errorf("defaults %+v", none)
	}
}

func TestHaltRecordIsBounded(t *testing.T) {
	ev := make([]string, 400)
	for i := range ev {
		ev[i] = "VirtualMachineInstanceMigration default/some-long-migration-name-0000 of VM default/some-long-vm-name: Failed"
	}
	h := machineconfig.PoolHalt{Gate: gates.VMsMoved, Message: "m", Evidence: ev, Approvals: map[string]int64{"c": 1}}
	if enc := h.Encode(); len(enc) > machineconfig.MaxRecordBytes {
		t.Fatalf("%d bytes", len(enc))
	}
	p := pool("worker")
	p.SetAnnotations(map[string]string{machineconfig.HaltAnnotation: h.Encode()})
	if got := machineconfig.ReadHalt(p); got == nil || got.Gate != gates.VMsMoved || len(got.Evidence) == 0 {
		t.Errorf("read back %+v", got)
	}
}

// A VM the step moves must be Ready again only where it was Ready as the
// step started; a record too large for the pool drops what it knows of
// the VMs rather than the step.
func TestStepRecordsTheVMsNotReady(t *testing.T) {
	step := machineconfig.PoolStep{Nodes: []string{"w1"}, NotReadyVMs: []string{"default/booting"}}
	if step.WasReady("default/booting") || !step.WasReady("default/db-0") {
		t.Errorf("WasReady of %v wrong", step.NotReadyVMs)
	}
	for i := range 400 {
		step.NotReadyVMs = append(step.NotReadyVMs, fmt.Sprintf("namespace-%03d/a-rather-long-virtual-machine-name", i))
	}
	p := pool("worker")
	p.SetAnnotations(map[string]string{machineconfig.StepAnnotation: step.Encode()})
	got := machineconfig.ReadStep(p)
	if len(step.Encode()) > machineconfig.MaxRecordBytes || got == nil || !got.VMsUnknown || len(got.NotReadyVMs) != 0 || got.WasReady("default/db-0") {
		t.Errorf("record of %d bytes read back as %+v", len(step.Encode()), got)
	}
}
