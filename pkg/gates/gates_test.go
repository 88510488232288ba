package gates

import (
	"errors"
	"github.com/kubevirt/virt-advisor/pkg/apis/advisor"
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestEvaluate(t *testing.T) {
	start := time.Date(2026, 12, 2, 1, 0, 0, 0, time.UTC)
	back := start.Add(3 * time.Minute)
	done := func(name string) Node {
		return Node{Name: name, Ready: true, ReadySince: back, State: StateDone, Current: "rendered-b", Desired: "rendered-b"}
	}
	old := func(name string) Node {
		return Node{Name: name, Ready: true, ReadySince: start.Add(-time.Hour), State: StateDone, Current: "rendered-a", Desired: "rendered-a"}
	}
	rebooting := Node{Name: "worker-0", Ready: false, ReadySince: start.Add(time.Minute), State: StateWorking, Current: "rendered-a", Desired: "rendered-b"}
	step := Step{Pool: "worker", Nodes: []string{"worker-0"}, Desired: "rendered-b", StartedAt: start}
	settings := Settings{NodeReadyTimeout: 10 * time.Minute, Soak: 2 * time.Minute}
	alerting := settings
	alerting.Alerts = &AlertSettings{Ignore: DefaultIgnoredAlerts, Matchers: []advisor.Matcher{mustMatcher(t, `severity=~"critical|warning"`)}}
	ignoringErrors := alerting
	ignoringErrors.Alerts = &AlertSettings{Ignore: DefaultIgnoredAlerts, IgnoreErrors: true}
	critical := Alert{Labels: map[string]string{"alertname": "KubeNodeNotReady", "severity": "critical", "node": "worker-2"}}
	info := Alert{Labels: map[string]string{"alertname": "SomethingInfo", "severity": "info"}}
	watchdog := Alert{Labels: map[string]string{"alertname": "Watchdog", "severity": "critical"}}
	soaked := back.Add(2 * time.Minute)

	for _, tc := range []struct {
		name     string
		settings Settings
		baseline Baseline
		facts    Facts
		want     Outcome
		gate     string
		node     string
		after    time.Duration
		says     string
	}{
		{name: "the step's node reboots: wait until its deadline", settings: settings, facts: Facts{Now: start.Add(2 * time.Minute), Nodes: []Node{rebooting, old("worker-1")}},
			want: Wait, gate: NodeBack, node: "worker-0", after: 8 * time.Minute, says: "waiting for node 'worker-0' to come back"},
		{name: "the step's node not back past nodeReadyTimeout: halt naming it", settings: settings, facts: Facts{Now: start.Add(10 * time.Minute), Nodes: []Node{rebooting, old("worker-1")}},
			want: Halt, gate: NodeBack, node: "worker-0", says: "did not come back within 10m0s"},
		{name: "Ready and Done on the old config: not back", settings: settings, facts: Facts{Now: start.Add(5 * time.Minute), Nodes: []Node{{Name: "worker-0", Ready: true, State: StateDone, Current: "rendered-a", Desired: "rendered-a"}}},
			want: Wait, gate: NodeBack, node: "worker-0", after: 5 * time.Minute},
		{name: "the step's node Degraded: halt at once", settings: settings, facts: Facts{Now: start.Add(4 * time.Minute), Nodes: []Node{{Name: "worker-0", Ready: true, State: StateDegraded, Reason: "failed to apply kernel arguments"}}},
			want: Halt, gate: NodeBack, node: "worker-0", says: "is Degraded after its update: failed to apply kernel arguments"},
		{name: "another node became NotReady during the rollout: halt", settings: settings, facts: Facts{Now: soaked, Nodes: []Node{done("worker-0"), {Name: "worker-2", Ready: false, State: StateDone}}},
			want: Halt, gate: NodeBack, node: "worker-2", says: "not part of this step, became NotReady"},
		{name: "another node unreachable since before the rollout: not ours to judge", settings: settings, baseline: Baseline{NotReady: []string{"worker-2"}},
			facts: Facts{Now: soaked, Nodes: []Node{done("worker-0"), {Name: "worker-2", Ready: false, Unreachable: true}}}, want: Pass},
		{name: "a migration of the step failed: halt naming the VM and the migration", settings: settings,
			facts: Facts{Now: soaked, Nodes: []Node{done("worker-0")}, Migrations: []Migration{{Namespace: "default", Name: "kubevirt-evacuation-x1", VMI: "vm-db", Phase: MigrationFailed}}},
			want:  Halt, gate: VMsMoved, says: "first VM default/vm-db (migration kubevirt-evacuation-x1)"},
		{name: "one failed migration allowed: pass", settings: Settings{NodeReadyTimeout: 10 * time.Minute, MaxFailedMigrations: 1},
			facts: Facts{Now: soaked, Nodes: []Node{done("worker-0")}, Migrations: []Migration{{Namespace: "default", Name: "m", VMI: "vm-db", Phase: MigrationFailed}}}, want: Pass},
		{name: "a migration still running: wait", settings: settings,
			facts: Facts{Now: back, Nodes: []Node{done("worker-0")}, Migrations: []Migration{{Namespace: "default", Name: "m", VMI: "vm-web", Phase: "Running"}}},
			want:  Wait, gate: VMsMoved, after: 7 * time.Minute, says: "1 migration(s) still running"},
		{name: "a moved VM not Ready again past the deadline: halt", settings: settings,
			facts: Facts{Now: start.Add(11 * time.Minute), Nodes: []Node{done("worker-0")}, Moved: []VMI{{Namespace: "default", Name: "vm-web", Running: true, WasReady: true}}},
			want:  Halt, gate: VMsMoved, says: "VM(s) not running, or not Ready where they were, again: default/vm-web"},
		{name: "an alert starts firing: halt naming it", settings: alerting, facts: Facts{Now: soaked, Nodes: []Node{done("worker-0")}, Alerts: []Alert{critical, watchdog}},
			want: Halt, gate: Alerts, says: `alert KubeNodeNotReady{node="worker-2", severity="critical"} started firing`},
		{name: "an alert already firing when the rollout started: pass", settings: alerting, baseline: Baseline{Firing: []string{critical.Key()}},
			facts: Facts{Now: soaked, Nodes: []Node{done("worker-0")}, Alerts: []Alert{critical}}, want: Pass},
		{name: "an alert the matchers leave out, and Watchdog: pass", settings: alerting, facts: Facts{Now: soaked, Nodes: []Node{done("worker-0")}, Alerts: []Alert{info, watchdog}}, want: Pass},
		{name: "the alerts cannot be read: held, saying why", settings: alerting, facts: Facts{Now: soaked, Nodes: []Node{done("worker-0")}, AlertsErr: errors.New(`GET https://thanos-querier:9091/api/v1/query: 403 Forbidden`)},
			want: Wait, gate: Alerts, after: AlertRetry, says: "held: the alerts cannot be read: GET https://thanos-querier:9091/api/v1/query: 403 Forbidden"},
		{name: "the alerts cannot be read, onError Ignore: pass, warned", settings: ignoringErrors, facts: Facts{Now: soaked, Nodes: []Node{done("worker-0")}, AlertsErr: errors.New("connection refused")},
			want: Pass},
		{name: "back one minute ago, soak two: wait a minute", settings: settings, facts: Facts{Now: back.Add(time.Minute), Nodes: []Node{done("worker-0"), old("worker-1")}},
			want: Wait, gate: Soak, after: time.Minute, says: "soak until 2026-12-02T01:05:00Z"},
		{name: "soaked: pass", settings: settings, facts: Facts{Now: soaked, Nodes: []Node{done("worker-0"), old("worker-1")}}, want: Pass},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := Evaluate(tc.settings, tc.baseline, step, tc.facts)
			if v.Outcome != tc.want || v.Gate != tc.gate || v.Node != tc.node || v.After != tc.after {
				t.Errorf("got %s gate %q node %q after %v (%s); want %s gate %q node %q after %v",
					v.Outcome, v.Gate, v.Node, v.After, v.Message, tc.want, tc.gate, tc.node, tc.after)
			}
			if !strings.Contains(v.Message, tc.says) {
				t.Errorf("message %q, want it to say %q", v.Message, tc.says)
			}
			if v.Outcome == Halt && len(v.Evidence) == 0 {
				t.Errorf("a halt without evidence: %+v", v)
			}
			if tc.settings.Alerts != nil && tc.settings.Alerts.IgnoreErrors && len(v.Warnings) != 1 {
				t.Errorf("warnings %v, want the unevaluated gate named", v.Warnings)
			}
		})
	}
}

func TestAlertKeyIgnoresAlertState(t *testing.T) {
	a := Alert{Labels: map[string]string{"alertname": "X", "alertstate": "firing", "b": "2", "a": "1"}}
	b := Alert{Labels: map[string]string{"alertname": "X", "a": "1", "b": "2"}}
	if a.Key() != b.Key() || !reflect.DeepEqual(a.Key(), `X{a="1", b="2"}`) {
		t.Errorf("keys %s and %s", a.Key(), b.Key())
	}
}

func mustMatcher(t *testing.T, s string) advisor.Matcher {
	t.Helper()
	m, err := advisor.ParseMatcher(s)
	if err != nil {
		t.Fatal(err)
	}
	return m
}
