package advisor

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/kubevirt/virt-advisor/pkg/apis/advisor/v1alpha1"
	"github.com/kubevirt/virt-advisor/pkg/cmd/advisor/internal/pools"
	"github.com/kubevirt/virt-advisor/pkg/machineconfig"
	"github.com/kubevirt/virt-advisor/pkg/machineconfig/machineconfigtest"
)

var t0 = metav1.NewTime(time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC))

// config is a VirtPlatformConfig of generation 2 in phase, its phase
// condition set at t0.
func config(phase v1alpha1.ConfigPhase) *v1alpha1.VirtPlatformConfig {
	return &v1alpha1.VirtPlatformConfig{
		ObjectMeta: metav1.ObjectMeta{Name: "load-aware-rebalancing", Generation: 2, CreationTimestamp: t0},
		Spec:       v1alpha1.VirtPlatformConfigSpec{Profile: "load-aware-rebalancing", Action: v1alpha1.PlanActionDryRun},
		Status: v1alpha1.VirtPlatformConfigStatus{Phase: phase, ObservedGeneration: 2, ImpactSeverity: v1alpha1.ImpactHigh,
			Conditions: []metav1.Condition{{Type: string(phase), Status: metav1.ConditionTrue, LastTransitionTime: t0, Message: "phase message"}}},
	}
}

func approvedAt(c *v1alpha1.VirtPlatformConfig, at time.Time, generation int64) *v1alpha1.VirtPlatformConfig {
	c.Status.Approval = &v1alpha1.ApprovalRecord{PlanHash: strings.Repeat("cd", 32), ApprovedBy: "alice", ApprovedAt: metav1.NewTime(at), Generation: generation}
	return c
}

func TestSettled(t *testing.T) {
	stale := config(v1alpha1.PhaseCompleted)
	stale.Generation = 3
	for _, tc := range []struct {
		name string
		cfg  *v1alpha1.VirtPlatformConfig
		want bool
	}{
		{"Completed", config(v1alpha1.PhaseCompleted), true},
		{"CompletedWithErrors", config(v1alpha1.PhaseCompletedWithErrors), true},
		{"CompletedWithUpgrade", config(v1alpha1.PhaseCompletedWithUpgrade), true},
		{"Failed", config(v1alpha1.PhaseFailed), true},
		{"Drifted", config(v1alpha1.PhaseDrifted), true},
		{"Ignored", config(v1alpha1.PhaseIgnored), true},
		{"PrerequisiteFailed", config(v1alpha1.PhasePrerequisiteFailed), true},
		{"ReviewRequired waits for the user", config(v1alpha1.PhaseReviewRequired), true},
		{"ReviewRequired with an older approval", approvedAt(config(v1alpha1.PhaseReviewRequired), t0.Add(-time.Minute), 2), true},
		{"ReviewRequired with an approval of an older generation", approvedAt(config(v1alpha1.PhaseReviewRequired), t0.Add(time.Minute), 1), true},
		{"ReviewRequired with a fresh approval is about to apply", approvedAt(config(v1alpha1.PhaseReviewRequired), t0.Add(time.Second), 2), false},
		{"approved in the same second as the review", approvedAt(config(v1alpha1.PhaseReviewRequired), t0.Time, 2), false},
		{"InProgress", config(v1alpha1.PhaseInProgress), false},
		{"Drafting", config(v1alpha1.PhaseDrafting), false},
		{"Pending", config(v1alpha1.PhasePending), false},
		{"no status yet", &v1alpha1.VirtPlatformConfig{ObjectMeta: metav1.ObjectMeta{Generation: 1}}, false},
		{"Completed of an older generation", stale, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := settled(tc.cfg); got != tc.want {
				t.Errorf("settled = %t, want %t", got, tc.want)
			}
		})
	}
}

// rollingOut is a config whose MachineConfig item is rolling out.
func rollingOut() *v1alpha1.VirtPlatformConfig {
	c := approvedAt(config(v1alpha1.PhaseInProgress), t0.Time, 2)
	c.Status.Items = []v1alpha1.VirtPlatformConfigItem{
		{Name: "enable-psi-metrics", Operation: v1alpha1.OperationCreate, State: v1alpha1.ItemStateInProgress,
			TargetRef:    v1alpha1.ObjectReference{APIVersion: "machineconfiguration.openshift.io/v1", Kind: "MachineConfig", Name: "99-worker-psi-karg"},
			DesiredState: &runtime.RawExtension{Raw: []byte(`{"metadata":{"labels":{"machineconfiguration.openshift.io/role":"worker"}}}`)},
			Message:      "MachineConfigPool 'worker' is updating (Updated: 1/3, Ready: 1/3)"},
		{Name: "enable-load-aware-descheduling", Operation: v1alpha1.OperationUpdate, State: v1alpha1.ItemStateCompleted,
			TargetRef: v1alpha1.ObjectReference{APIVersion: "operator.openshift.io/v1", Kind: "KubeDescheduler", Namespace: "openshift-kube-descheduler-operator", Name: "cluster"},
			Message:   "Applied successfully"},
	}
	return c
}

func TestStatusOfOne(t *testing.T) {
	h := newHarness(t, machineconfigtest.Pool("worker", machineconfigtest.RoleSelector("worker"), 3, 1, false), machineconfigtest.Pool("master", machineconfigtest.RoleSelector("master"), 3, 3, false))
	if _, err := h.advisor.AdvisorV1alpha1().VirtPlatformConfigs().Create(context.Background(), rollingOut(), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if code := h.run(t, "", "status", "load-aware-rebalancing"); code != 0 {
		t.Fatalf("exit %d: %s", code, h.err.String())
	}
	want := `load-aware-rebalancing  (action DryRun)
Phase:     InProgress: phase message
Approval:  plan cdcdcdcdcdcd by alice at 2026-11-23T10:00:00Z (generation 2)
Items:
  ITEM                             TARGET                                                        OPERATION   STATE        MESSAGE
  enable-psi-metrics               MachineConfig 99-worker-psi-karg                              Create      InProgress   MachineConfigPool 'worker' is updating (Updated: 1/3, Ready: 1/3)
  enable-load-aware-descheduling   KubeDescheduler openshift-kube-descheduler-operator/cluster   Update      Completed    Applied successfully
Pools:
  POOL     UPDATED   READY   MACHINES   DEGRADED   PAUSED
  worker   1         1       3          0          false
`
	if got := h.out.String(); got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
}

func TestStatusPoolsUnreadable(t *testing.T) {
	var b bytes.Buffer
	printStatus(&b, rollingOut(), progress{err: "cannot read MachineConfigPools: user \"bob\" may not list machineconfigpools"}, false)
	mustContain(t, "status", b.String(), "Pools: unknown (cannot read MachineConfigPools: user \"bob\" may not list machineconfigpools)\n")

	b.Reset()
	c := config(v1alpha1.PhaseCompleted)
	c.Generation = 3
	c.Status.Conditions = append(c.Status.Conditions, metav1.Condition{Type: "InputDependencyDrift", Status: metav1.ConditionTrue, Message: "the HCO changed"})
	printStatus(&b, c, progress{}, false)
	mustContain(t, "status", b.String(), "Approval:  none\n", "(status of generation 2; the spec is at 3 and is being planned)\n",
		"InputDependencyDrift: the HCO changed\n")
	if strings.Contains(b.String(), "Pools:") {
		t.Errorf("pools shown without MachineConfig items:\n%s", b.String())
	}
}

func TestStatusList(t *testing.T) {
	var b bytes.Buffer
	a := approvedAt(config(v1alpha1.PhaseCompleted), t0.Time, 2)
	other := config(v1alpha1.PhaseIgnored)
	other.Name, other.Spec.Action = "virt-higher-density", v1alpha1.PlanActionIgnore
	printList(&b, []v1alpha1.VirtPlatformConfig{*a, *other}, t0.Add(90*time.Second))
	want := `NAME                     ACTION   PHASE       IMPACT   APPROVED                AGE
load-aware-rebalancing   DryRun   Completed   High     cdcdcdcdcdcd by alice   90s
virt-higher-density      Ignore   Ignored     High     -                       90s
`
	if b.String() != want {
		t.Errorf("got\n%s\nwant\n%s", b.String(), want)
	}
	b.Reset()
	printList(&b, nil, t0.Time)
	if b.String() != "No VirtPlatformConfigs found.\n" {
		t.Errorf("got %q", b.String())
	}
}

func TestStatusWatchFollowsUntilSettled(t *testing.T) {
	h := newHarness(t, machineconfigtest.Pool("worker", machineconfigtest.RoleSelector("worker"), 3, 1, false))
	configs := h.advisor.AdvisorV1alpha1().VirtPlatformConfigs()
	ctx := context.Background()
	if _, err := configs.Create(ctx, rollingOut(), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	done := make(chan int)
	go func() { done <- h.run(t, "", "status", "load-aware-rebalancing", "-w", "--timeout=20s") }()

	// The controller finishes: the item completes, then the phase.
	time.Sleep(200 * time.Millisecond)
	c := rollingOut()
	c.Status.Items[0].State, c.Status.Items[0].Message = v1alpha1.ItemStateCompleted, "MachineConfigPool 'worker' is ready (all 3 nodes updated)"
	if _, err := configs.Update(ctx, c, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	select {
	case code := <-done:
		t.Fatalf("returned %d before a terminal phase: %s", code, h.out.String())
	case <-time.After(300 * time.Millisecond):
	}
	c.Status.Phase = v1alpha1.PhaseCompleted
	c.Status.Conditions = []metav1.Condition{{Type: "Completed", Status: metav1.ConditionTrue, LastTransitionTime: t0, Message: "Configuration successfully applied and in sync"}}
	if _, err := configs.Update(ctx, c, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	select {
	case code := <-done:
		if code != 0 {
			t.Errorf("exit %d: %s", code, h.err.String())
		}
	case <-time.After(10 * time.Second):
		t.Fatal("status -w did not end at Completed")
	}
	out := h.out.String()
	if n := strings.Count(out, "load-aware-rebalancing  (action DryRun)"); n != 3 {
		t.Errorf("printed %d times, want 3 (one per change):\n%s", n, out)
	}
	mustContain(t, "stdout", out, "Phase:     InProgress: phase message\n", "is updating (Updated: 1/3, Ready: 1/3)",
		"is ready (all 3 nodes updated)", "Phase:     Completed: Configuration successfully applied and in sync\n")
	if !strings.HasSuffix(out, "PAUSED\n  worker   1         1       3          0          false\n") {
		t.Errorf("does not end with the last status:\n%s", out)
	}
}

func TestStatusWatchErrors(t *testing.T) {
	h := newHarness(t)
	if code := h.run(t, "", "status", "nope", "-w", "--timeout=5s"); code != 2 {
		t.Errorf("exit %d", code)
	}
	if want := "Error: virtplatformconfigs.advisor.kubevirt.io \"nope\" not found (kubectl advisor status lists the configs)\n"; h.err.String() != want {
		t.Errorf("stderr %q", h.err.String())
	}

	if _, err := h.advisor.AdvisorV1alpha1().VirtPlatformConfigs().Create(context.Background(), config(v1alpha1.PhaseInProgress), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if code := h.run(t, "", "status", "load-aware-rebalancing", "-w", "--timeout=300ms"); code != 2 {
		t.Errorf("exit %d", code)
	}
	if want := "Error: gave up after --timeout=300ms: load-aware-rebalancing is still in phase InProgress\n"; h.err.String() != want {
		t.Errorf("stderr %q", h.err.String())
	}

	ctx, cancel := context.WithCancel(context.Background()) // as Ctrl-C does
	time.AfterFunc(300*time.Millisecond, cancel)
	h.out.Reset()
	h.err.Reset()
	o := &options{streams: genericiooptions.IOStreams{In: strings.NewReader(""), Out: &h.out, ErrOut: &h.err},
		newClients: func() (*clients, error) { return &clients{advisor: h.advisor, dynamic: h.dynamic}, nil }}
	if code := execute(ctx, newRootCmd(o), []string{"status", "load-aware-rebalancing", "-w"}, &h.err); code != 2 {
		t.Errorf("exit %d", code)
	}
	if want := "Error: interrupted: load-aware-rebalancing is still in phase InProgress\n"; h.err.String() != want {
		t.Errorf("stderr %q", h.err.String())
	}

	if code := h.run(t, "", "status", "-w"); code != 2 {
		t.Errorf("exit %d", code)
	}
	if want := "Error: -w follows one VirtPlatformConfig: kubectl advisor status NAME -w\n"; h.err.String() != want {
		t.Errorf("stderr %q", h.err.String())
	}
}

// An aborted config set to Ignore: its status names the abort, the pools
// it holds paused (the items no longer name them) and how to release them.
func TestStatusAbortHeldUnderIgnore(t *testing.T) {
	h := newHarness(t, machineconfigtest.Pool("worker", machineconfigtest.RoleSelector("worker"), 3, 1, true), machineconfigtest.Pool("master", machineconfigtest.RoleSelector("master"), 3, 3, false))
	c := rollingOut()
	c.Spec.Action = v1alpha1.PlanActionIgnore
	c.Status.Phase = v1alpha1.PhaseIgnored
	c.Status.Items = c.Status.Items[1:]
	c.Status.Abort = &v1alpha1.AbortRecord{PlanHash: c.Status.Approval.PlanHash, AbortedBy: "bob", AbortedAt: t0, ApprovalSequence: 1,
		Held: []v1alpha1.HeldConfig{{Kind: "MachineConfig", Name: "99-worker-psi-karg", Labels: map[string]string{"machineconfiguration.openshift.io/role": "worker"}}}}
	if _, err := h.advisor.AdvisorV1alpha1().VirtPlatformConfigs().Create(context.Background(), c, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if code := h.run(t, "", "status", "load-aware-rebalancing"); code != 0 {
		t.Fatalf("exit %d: %s", code, h.err.String())
	}
	mustContain(t, "status", h.out.String(),
		"Abort:     plan cdcdcdcdcdcd by bob at 2026-11-23T10:00:00Z\n",
		"           The MachineConfigPools that render MachineConfig 99-worker-psi-karg stay paused by virt-advisor: plan cdcdcdcdcdcd was aborted by bob at 2026-11-23T10:00:00Z. To release them, set spec.action to DryRun",
		"or delete the config.\n",
		"  worker   1         1       3          0          true\n")
}

// halted is a pool of machines nodes, updated of them, with the records
// of a stepped rollout: the step in flight and, with gate, its halt.
func halted(updated int64, gate string) *unstructured.Unstructured {
	p := machineconfigtest.Pool("worker", machineconfigtest.RoleSelector("worker"), 3, updated, true)
	a := map[string]string{machineconfig.StepAnnotation: machineconfig.PoolStep{Nodes: []string{"worker-1"}, Started: t0.Time}.Encode()}
	if gate != "" {
		a[machineconfig.HaltAnnotation] = machineconfig.PoolHalt{Gate: gate, Node: "worker-1", At: t0.Add(20 * time.Minute),
			Message:   "node 'worker-1' of MachineConfigPool 'worker' did not come back within 20m0s of its update (Ready false)",
			Evidence:  []string{"Ready=false", "machineconfiguration.openshift.io/state=Done"},
			Approvals: map[string]int64{"load-aware-rebalancing": 1}}.Encode()
	}
	p.SetAnnotations(a)
	return p
}

// A stepped rollout: its status says, below the pools, the step in
// flight, and a halt as such: which gate tripped on which node, when,
// why, and who ends it.
func TestStatusSteppedRollout(t *testing.T) {
	const table = `Pools:
  POOL     UPDATED   READY   MACHINES   DEGRADED   PAUSED
  worker   1         1       3          0          true
`
	const halt = `Halted:    pool worker: gate nodeBack tripped on node worker-1 at 2026-11-23T10:20:00Z
           node 'worker-1' of MachineConfigPool 'worker' did not come back within 20m0s of its update (Ready false)
           evidence: Ready=false; machineconfiguration.openshift.io/state=Done
           The rollout stays halted until an approver approves the plan again to resume (kubectl advisor approve load-aware-rebalancing), or aborts or reverts it (kubectl advisor abort load-aware-rebalancing, kubectl advisor revert load-aware-rebalancing).
`
	const step = "Step:      pool worker: node(s) worker-1 in the step since 2026-11-23T10:00:00Z\n"
	for _, tc := range []struct {
		name string
		pool *unstructured.Unstructured
		want string
	}{
		{"a step in flight", halted(1, ""), table + step},
		{"halted", halted(1, "nodeBack"), table + halt + step},
		{"no step, no halt", machineconfigtest.Pool("worker", machineconfigtest.RoleSelector("worker"), 3, 1, true), table},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, tc.pool)
			c := rollingOut()
			c.Status.Approval.Sequence = 1
			if _, err := h.advisor.AdvisorV1alpha1().VirtPlatformConfigs().Create(context.Background(), c, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			if code := h.run(t, "", "status", "load-aware-rebalancing"); code != 0 {
				t.Fatalf("exit %d: %s", code, h.err.String())
			}
			if got := h.out.String(); !strings.HasSuffix(got, tc.want) {
				t.Errorf("got\n%s\nwant it to end with\n%s", got, tc.want)
			}
		})
	}

	var b bytes.Buffer
	printStatus(&b, rollingOut(), progress{pools: []poolStatus{{name: "worker", halt: &pools.Halt{Pool: "worker", Gate: "alerts", Message: "alert X started firing", End: "end"}}}}, true)
	mustContain(t, "coloured", b.String(), "\x1b[31mHalted:    pool worker: gate alerts tripped\x1b[0m\n           alert X started firing\n           end\n")
}
