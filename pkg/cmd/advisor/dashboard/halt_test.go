package dashboard

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/kubevirt/virt-advisor/pkg/apis/advisor/v1alpha1"
	"github.com/kubevirt/virt-advisor/pkg/machineconfig"
	"github.com/kubevirt/virt-advisor/pkg/status"
)

// TestRolloutPageOfASteppedRollout: the pool grid says which nodes are in
// the step and since when, and a halt stands out: the pool's badge, the
// gate, the node, when, the message and evidence, and who ends it.
func TestRolloutPageOfASteppedRollout(t *testing.T) {
	now := time.Date(2026, 11, 23, 10, 25, 0, 0, time.UTC)
	step := machineconfig.PoolStep{Nodes: []string{"worker-1"}, Desired: "rendered-worker-new", Started: now.Add(-25 * time.Minute)}.Encode()
	halt := machineconfig.PoolHalt{Gate: "nodeBack", Node: "worker-1", At: now.Add(-5 * time.Minute), Approvals: map[string]int64{"load-aware-rebalancing": 1},
		Message:  "node 'worker-1' of MachineConfigPool 'worker' did not come back within 20m0s of its update (Ready false)",
		Evidence: []string{"Ready=false", "machineconfiguration.openshift.io/state=Done"}}.Encode()
	haltMsg := "The rollout on MachineConfigPool 'worker' is halted: gate nodeBack tripped on node 'worker-1'"
	for _, tc := range []struct {
		name        string
		annotations map[string]any
		contains    []string
		not         []string
	}{
		{"halted", map[string]any{machineconfig.StepAnnotation: step, machineconfig.HaltAnnotation: halt, machineconfig.PausedUntilAnnotation: "2026-11-23T10:00:00Z"},
			[]string{`data-pool-state="bad"`, "Paused until the halt below ends: no node updates", ">Halted: gate nodeBack</span></h3>", `data-halted="nodeBack"`,
				"Rollout halted</strong>: gate <code>nodeBack</code> tripped on node <code>worker-1</code> at <time datetime=\"2026-11-23T10:20:00Z\">2026-11-23 10:20:00 UTC</time> (5m ago).",
				"did not come back within 20m0s of its update (Ready false)", "<li>Ready=false</li><li>machineconfiguration.openshift.io/state=Done</li>",
				"The rollout stays halted until an approver approves the plan again to resume (kubectl advisor approve load-aware-rebalancing), or aborts or reverts it",
				`<a href="/configs/load-aware-rebalancing">Review the plan</a>`,
				"The step it halted: node <code>worker-1</code>, in the step since <time datetime=\"2026-11-23T10:00:00Z\">",
				`<span class="badge bad" data-waiting="RolloutHalted">`, "Rollout halted: an approver decides"},
			nil},
		{"a step in flight", map[string]any{machineconfig.StepAnnotation: step, machineconfig.PausedUntilAnnotation: "2026-11-23T10:00:00Z"},
			[]string{"Step in flight: node <code>worker-1</code>, in the step since", "(25m ago)", `data-step="worker"`},
			[]string{"Rollout halted</strong>", "data-halted"}},
		{"neither", nil, nil, []string{"Rollout halted</strong>", "data-halted", "data-step="}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := exampleConfig()
			cfg.Name = "load-aware-rebalancing"
			cfg.Status.Approval = &v1alpha1.ApprovalRecord{PlanHash: hashA, ApprovedBy: "bob", ApprovedAt: metav1.NewTime(now.Add(-time.Hour)), Generation: 2, Sequence: 1}
			cfg.Status.Items = []v1alpha1.VirtPlatformConfigItem{{
				Name: "enable-psi-metrics", Operation: v1alpha1.OperationCreate, State: v1alpha1.ItemStateInProgress,
				TargetRef:    v1alpha1.ObjectReference{APIVersion: "machineconfiguration.openshift.io/v1", Kind: "MachineConfig", Name: "99-worker-psi-karg"},
				DesiredState: &runtime.RawExtension{Raw: []byte(`{"metadata":{"labels":{"machineconfiguration.openshift.io/role":"worker"}}}`)},
			}}
			if tc.annotations[machineconfig.HaltAnnotation] != nil {
				status.MarkWaiting(&cfg.Status, 2, status.Wait{Reason: status.WaitingRolloutHalted, Message: "Item 'enable-psi-metrics': " + haltMsg})
			} else {
				cfg.Status.Phase = v1alpha1.PhaseInProgress
			}
			pool := testPool(tc.annotations != nil, tc.annotations, map[string]any{"machineCount": int64(3), "updatedMachineCount": int64(1),
				"configuration": map[string]any{"name": "rendered-worker-old"}})
			pool.Object["spec"].(map[string]any)["machineConfigSelector"] = map[string]any{"matchLabels": map[string]any{"machineconfiguration.openshift.io/role": "worker"}}
			h := newHarness(t, "bob", cfg, pool)
			h.clock.SetTime(now)
			w := h.do(t, request{method: "GET", path: "/configs/load-aware-rebalancing/rollout"})
			if w.Code != 200 {
				t.Fatalf("code %d: %s", w.Code, w.Body)
			}
			body := w.Body.String()
			mustContain(t, body, tc.contains...)
			mustNotContain(t, body, tc.not...)
		})
	}
}

// TestPlanPageShowsGates: the plan section names the gates in force
// between node reboots, only when the plan has them.
func TestPlanPageShowsGates(t *testing.T) {
	for _, tc := range []struct {
		name  string
		gates *v1alpha1.PlanGates
		want  string
	}{
		{"no gates", nil, ""},
		{"gates", &v1alpha1.PlanGates{NodeReadyTimeout: "20m0s", Soak: "0s", Alerts: &v1alpha1.PlanAlertGate{
			Source: "Prometheus https://thanos-querier.openshift-monitoring.svc:9091", Matchers: []string{`severity="critical"`},
			Ignore: []string{"Watchdog", "InfoInhibitor"}, OnError: v1alpha1.GateErrorHold}},
			`<strong>Gates between node reboots:</strong> node back within 20m0s, 0 failed migrations, soak 0s, alerts: Prometheus https://thanos-querier.openshift-monitoring.svc:9091 severity="critical" (ignoring Watchdog, InfoInhibitor; on error Hold)`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, "bob", exampleConfig())
			p := planOf(hashA, "example-value")
			p.Status.Settings = v1alpha1.PlanSettings{Action: v1alpha1.PlanActionDryRun, FailurePolicy: v1alpha1.FailurePolicyAbort, Gates: tc.gates}
			h.plans = []*v1alpha1.Plan{p}
			w := h.do(t, request{method: "GET", path: "/configs/example-profile"})
			if w.Code != 200 {
				t.Fatalf("code %d: %s", w.Code, w.Body)
			}
			if tc.want == "" {
				mustNotContain(t, w.Body.String(), "Gates between node reboots")
				return
			}
			mustContain(t, w.Body.String(), tc.want)
		})
	}
}
