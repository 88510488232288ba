package pools

import (
	"reflect"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kubevirt/virt-advisor/pkg/apis/advisor/v1alpha1"
	"github.com/kubevirt/virt-advisor/pkg/gates"
	"github.com/kubevirt/virt-advisor/pkg/machineconfig"
)

func TestGates(t *testing.T) {
	base := func(alerts *v1alpha1.PlanAlertGate) *v1alpha1.PlanGates {
		return &v1alpha1.PlanGates{NodeReadyTimeout: "20m0s", Soak: "0s", Alerts: alerts}
	}
	for _, tc := range []struct {
		name  string
		gates *v1alpha1.PlanGates
		want  string
	}{
		{"a plan that rolls no pool", nil, ""},
		{"no alert gate", base(nil), "node back within 20m0s, 0 failed migrations, soak 0s, no alert gate"},
		{"an alert gate", base(&v1alpha1.PlanAlertGate{Source: "Prometheus https://thanos-querier.openshift-monitoring.svc:9091",
			Matchers: []string{`severity="critical"`}, Ignore: gates.DefaultIgnoredAlerts, OnError: v1alpha1.GateErrorHold}),
			`node back within 20m0s, 0 failed migrations, soak 0s, alerts: Prometheus https://thanos-querier.openshift-monitoring.svc:9091 severity="critical" (ignoring Watchdog, InfoInhibitor; on error Hold)`},
		{"every alert, none ignored, going on when unread",
			&v1alpha1.PlanGates{NodeReadyTimeout: "5m0s", MaxFailedMigrations: 2, Soak: "10m0s",
				Alerts: &v1alpha1.PlanAlertGate{Source: "Prometheus https://p:9090", Ignore: []string{}, OnError: v1alpha1.GateErrorIgnore}},
			"node back within 5m0s, 2 failed migrations, soak 10m0s, alerts: Prometheus https://p:9090 any alert (on error Ignore)"},
		{"two matchers, on a server that reads no alerts", base(&v1alpha1.PlanAlertGate{Source: gates.NoAlertSource,
			Matchers: []string{`severity="critical"`, `namespace!~"openshift-.*"`}, Ignore: []string{"Watchdog"}}),
			`node back within 20m0s, 0 failed migrations, soak 0s, alerts: severity="critical", namespace!~"openshift-.*" (the server reads no alerts: --alert-source-url is not set; ignoring Watchdog; on error Hold)`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Gates(tc.gates); got != tc.want {
				t.Errorf("got\n%s\nwant\n%s", got, tc.want)
			}
		})
	}
}

func annotatedPool(annotations map[string]string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]interface{}{"apiVersion": "machineconfiguration.openshift.io/v1", "kind": "MachineConfigPool"}}
	u.SetName("worker")
	u.SetAnnotations(annotations)
	return u
}

func TestReadHalt(t *testing.T) {
	at := time.Date(2026, 11, 23, 10, 20, 0, 0, time.UTC)
	halt := func(approvals map[string]int64) string {
		return machineconfig.PoolHalt{Gate: gates.NodeBack, Node: "worker-1", At: at, Approvals: approvals,
			Message:  "node 'worker-1' of MachineConfigPool 'worker' did not come back within 20m0s of its update (Ready false)",
			Evidence: []string{"Ready=false", "machineconfiguration.openshift.io/state=Done"}}.Encode()
	}
	cfg := &v1alpha1.VirtPlatformConfig{ObjectMeta: metav1.ObjectMeta{Name: "hugepages"}}
	aborted := cfg.DeepCopy()
	aborted.Status.Abort = &v1alpha1.AbortRecord{PlanHash: "0123456789abcdef", AbortedBy: "bob", ApprovalSequence: 4}
	abortedBefore := cfg.DeepCopy()
	abortedBefore.Status.Abort = &v1alpha1.AbortRecord{PlanHash: "0123456789abcdef", AbortedBy: "bob", ApprovalSequence: 3}
	for _, tc := range []struct {
		name     string
		pool     *unstructured.Unstructured
		cfg      *v1alpha1.VirtPlatformConfig
		headline string
		end      string
	}{
		{"not halted", annotatedPool(nil), cfg, "", ""},
		{"halted under this config's approval", annotatedPool(map[string]string{machineconfig.HaltAnnotation: halt(map[string]int64{"hugepages": 4})}), cfg,
			"pool worker: gate nodeBack tripped on node worker-1 at 2026-11-23T10:20:00Z",
			"The rollout stays halted until an approver approves the plan again to resume (kubectl advisor approve hugepages), or aborts or reverts it (kubectl advisor abort hugepages, kubectl advisor revert hugepages)."},
		{"an abort of the halted approval since", annotatedPool(map[string]string{machineconfig.HaltAnnotation: halt(map[string]int64{"hugepages": 4})}), aborted,
			"pool worker: gate nodeBack tripped on node worker-1 at 2026-11-23T10:20:00Z",
			"Plan 0123456789ab was aborted since: the abort holds the pool paused until an approver approves a plan of this config again (kubectl advisor approve hugepages), or the config is deleted."},
		{"an abort older than the halt", annotatedPool(map[string]string{machineconfig.HaltAnnotation: halt(map[string]int64{"hugepages": 4})}), abortedBefore,
			"pool worker: gate nodeBack tripped on node worker-1 at 2026-11-23T10:20:00Z",
			"The rollout stays halted until an approver approves the plan again to resume (kubectl advisor approve hugepages), or aborts or reverts it (kubectl advisor abort hugepages, kubectl advisor revert hugepages)."},
		{"halted under another config's approval", annotatedPool(map[string]string{machineconfig.HaltAnnotation: halt(map[string]int64{"pci-passthrough": 2})}), cfg,
			"pool worker: gate nodeBack tripped on node worker-1 at 2026-11-23T10:20:00Z",
			"The halt is of another config's rollout: it stays halted until an approver approves the plan of config pci-passthrough again to resume (kubectl advisor approve pci-passthrough), or aborts or reverts it."},
		{"halted under two other configs' approvals", annotatedPool(map[string]string{machineconfig.HaltAnnotation: halt(map[string]int64{"z-config": 1, "pci-passthrough": 2})}), cfg,
			"pool worker: gate nodeBack tripped on node worker-1 at 2026-11-23T10:20:00Z",
			"The halt is of another config's rollout: it stays halted until an approver approves the plan of one of the configs pci-passthrough, z-config again to resume (kubectl advisor approve pci-passthrough), or aborts or reverts it."},
		{"a halt that cannot be read", annotatedPool(map[string]string{machineconfig.HaltAnnotation: "{not json"}), cfg,
			"pool worker: gate unknown tripped",
			"The halt names no approval: the rollout stays halted until the configs rolling out on the pool are aborted, reverted or deleted, or someone removes the annotation advisor.kubevirt.io/halted from it."},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := ReadHalt(tc.pool, tc.cfg)
			if tc.headline == "" {
				if h != nil {
					t.Fatalf("a halt on a pool without one: %+v", h)
				}
				return
			}
			if h == nil {
				t.Fatal("no halt")
			}
			if got := h.Headline(); got != tc.headline {
				t.Errorf("headline\n%s\nwant\n%s", got, tc.headline)
			}
			if h.End != tc.end {
				t.Errorf("end\n%s\nwant\n%s", h.End, tc.end)
			}
		})
	}
}

func TestReadStep(t *testing.T) {
	started := time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name string
		pool *unstructured.Unstructured
		want *Step
		line string
	}{
		{"none", annotatedPool(nil), nil, ""},
		{"unreadable", annotatedPool(map[string]string{machineconfig.StepAnnotation: "nope"}), nil, ""},
		{"one node", annotatedPool(map[string]string{machineconfig.StepAnnotation: machineconfig.PoolStep{Nodes: []string{"worker-1"}, Desired: "rendered-worker-new", Started: started}.Encode()}),
			&Step{Pool: "worker", Nodes: []string{"worker-1"}, Started: started}, "pool worker: node(s) worker-1 in the step since 2026-11-23T10:00:00Z"},
		{"two nodes", annotatedPool(map[string]string{machineconfig.StepAnnotation: machineconfig.PoolStep{Nodes: []string{"worker-1", "worker-2"}, Started: started}.Encode()}),
			&Step{Pool: "worker", Nodes: []string{"worker-1", "worker-2"}, Started: started}, "pool worker: node(s) worker-1, worker-2 in the step since 2026-11-23T10:00:00Z"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := ReadStep(tc.pool)
			if !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("got %+v, want %+v", got, tc.want)
			}
			if got != nil && got.Line() != tc.line {
				t.Errorf("line %q, want %q", got.Line(), tc.line)
			}
		})
	}
}
