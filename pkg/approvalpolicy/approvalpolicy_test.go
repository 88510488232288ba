package approvalpolicy

import (
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubevirt/virt-advisor/pkg/apis/advisor/v1alpha1"
	"github.com/kubevirt/virt-advisor/pkg/gates"
	"github.com/kubevirt/virt-advisor/pkg/maintenance"
)

func policy(name string, mutate func(*v1alpha1.ApprovalPolicySpec)) *v1alpha1.ApprovalPolicy {
	p := &v1alpha1.ApprovalPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: v1alpha1.ApprovalPolicySpec{
			Configs: v1alpha1.PolicyConfigs{Names: []string{"load-aware-rebalancing"}},
			Bounds:  v1alpha1.PolicyBounds{MaxImpact: v1alpha1.ImpactLow, Reboots: v1alpha1.RebootBoundNone, VMFates: []v1alpha1.VMFate{v1alpha1.VMFateLiveMigrate}},
		},
		Status: v1alpha1.ApprovalPolicyStatus{Author: "alice"},
	}
	if mutate != nil {
		mutate(&p.Spec)
	}
	return p
}

func interval() v1alpha1.PlanItem {
	return v1alpha1.PlanItem{Name: "descheduler-profile", Operation: v1alpha1.OperationUpdate, ImpactSeverity: v1alpha1.ImpactLow,
		TargetRef: v1alpha1.ObjectReference{Kind: "KubeDescheduler", Name: "cluster"}}
}

func psi(vms ...v1alpha1.VMImpact) v1alpha1.PlanItem {
	return v1alpha1.PlanItem{Name: "enable-psi-metrics", Operation: v1alpha1.OperationCreate, ImpactSeverity: v1alpha1.ImpactHigh,
		TargetRef: v1alpha1.ObjectReference{Kind: "MachineConfig", Name: "99-worker-psi-karg"},
		Reboots:   []v1alpha1.PoolReboot{{Pool: "worker", Nodes: 3, Disruption: v1alpha1.NodeDisruptionReboot, Drains: true, VMImpacts: vms}}}
}

func planOf(impact v1alpha1.Impact, items ...v1alpha1.PlanItem) *v1alpha1.PlanStatus {
	return &v1alpha1.PlanStatus{ImpactSeverity: impact, Items: items}
}

func window(t *testing.T, name, schedule string, d time.Duration) *maintenance.Window {
	t.Helper()
	w, err := maintenance.New(name, maintenance.Spec{PoolNames: []string{"worker"}, Schedule: schedule, Duration: d, Kind: maintenance.Allow})
	if err != nil {
		t.Fatal(err)
	}
	return w
}

func TestEvaluate(t *testing.T) {
	now := time.Date(2026, 3, 28, 12, 0, 30, 0, time.UTC)
	everyMinute := window(t, "every-minute", "* * * * *", 20*time.Second) // closed at :30
	nightly := window(t, "nightly", "0 22 * * *", time.Hour)
	migrates := v1alpha1.VMImpact{Node: "worker-0", Namespace: "vms", Name: "db", Fate: v1alpha1.VMFateLiveMigrate}
	shutDown := v1alpha1.VMImpact{Node: "worker-0", Namespace: "vms", Name: "legacy", Fate: v1alpha1.VMFateShutDown, Reason: "evictionStrategy None"}
	high := func(s *v1alpha1.ApprovalPolicySpec) { s.Bounds.MaxImpact = v1alpha1.ImpactHigh }
	inWindow := func(s *v1alpha1.ApprovalPolicySpec) {
		high(s)
		s.Bounds.Reboots, s.TrustedWindows = v1alpha1.RebootBoundInWindow, &v1alpha1.PolicyWindows{Names: []string{"every-minute"}}
	}
	// Someone who may create windows opens one for the pool, now.
	untrusted := window(t, "opened-by-anyone", "* * * * *", time.Minute)
	labelled := window(t, "labelled", "* * * * *", time.Minute)
	labelled.Labels = map[string]string{"team": "platform"}
	byLabel := func(s *v1alpha1.ApprovalPolicySpec) {
		inWindow(s)
		s.TrustedWindows = &v1alpha1.PolicyWindows{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"team": "platform"}}}
	}
	freeze, err := maintenance.New("freeze", maintenance.Spec{PoolNames: []string{"worker"}, Schedule: "* * * * *", Duration: time.Minute, Kind: maintenance.Deny})
	if err != nil {
		t.Fatal(err)
	}

	tests := []struct {
		name     string
		policy   *v1alpha1.ApprovalPolicy
		plan     *v1alpha1.PlanStatus
		facts    Facts
		exceeded []string // nil: approved
		opensAt  time.Time
	}{
		{"a low interval change", policy("quiet-tuning", nil), planOf(v1alpha1.ImpactLow, interval()), Facts{}, nil, time.Time{}},
		{"unchanged items do not count", policy("quiet-tuning", nil),
			planOf(v1alpha1.ImpactLow, interval(), v1alpha1.PlanItem{Name: "enable-psi-metrics", Operation: v1alpha1.OperationNone, ImpactSeverity: v1alpha1.ImpactHigh}), Facts{}, nil, time.Time{}},
		{"PSI reboots: impact and reboot named", policy("quiet-tuning", nil), planOf(v1alpha1.ImpactHigh, interval(), psi()), Facts{},
			[]string{"impact High; policy 'quiet-tuning' allows at most Low", "reboots pool worker; policy 'quiet-tuning' allows no reboot"}, time.Time{}},
		{"a reboot within the impact allowed", policy("reboots-high", high), planOf(v1alpha1.ImpactHigh, psi()), Facts{},
			[]string{"reboots pool worker; policy 'reboots-high' allows no reboot"}, time.Time{}},
		{"InWindow: a windowed pool", policy("in-window", inWindow), planOf(v1alpha1.ImpactHigh, psi(migrates)),
			Facts{Now: now, Windows: []*maintenance.Window{everyMinute}}, nil, time.Time{}},
		{"InWindow: a pool no window governs", policy("in-window", inWindow), planOf(v1alpha1.ImpactHigh, psi()),
			Facts{Now: now, Windows: []*maintenance.Window{}},
			[]string{"reboots pool worker, which no Allow maintenance window it trusts governs; policy 'in-window' allows reboots only in the maintenance windows it trusts (every-minute)"}, time.Time{}},
		{"InWindow: an open Allow window it does not trust does not widen it", policy("in-window", inWindow), planOf(v1alpha1.ImpactHigh, psi(migrates)),
			Facts{Now: now, Windows: []*maintenance.Window{untrusted}},
			[]string{"reboots pool worker, which no Allow maintenance window it trusts governs; policy 'in-window' allows reboots only in the maintenance windows it trusts (every-minute)"}, time.Time{}},
		{"InWindow: a window it does not trust does not narrow it", policy("in-window", inWindow), planOf(v1alpha1.ImpactHigh, psi(migrates)),
			Facts{Now: now, Windows: []*maintenance.Window{everyMinute, untrusted, freeze}}, nil, time.Time{}},
		{"InWindow: a window trusted by label", policy("by-label", byLabel), planOf(v1alpha1.ImpactHigh, psi(migrates)),
			Facts{Now: now, Windows: []*maintenance.Window{labelled}}, nil, time.Time{}},
		{"InWindow: the label selects only labelled windows", policy("by-label", byLabel), planOf(v1alpha1.ImpactHigh, psi(migrates)),
			Facts{Now: now, Windows: []*maintenance.Window{everyMinute, untrusted}},
			[]string{"reboots pool worker, which no Allow maintenance window it trusts governs; policy 'by-label' allows reboots only in the maintenance windows it trusts (labelled team=platform)"}, time.Time{}},
		{"InWindow: a trusted Deny window does not make a pool windowed", policy("in-window", func(s *v1alpha1.ApprovalPolicySpec) {
			inWindow(s)
			s.TrustedWindows.Names = []string{"freeze"}
		}), planOf(v1alpha1.ImpactHigh, psi(migrates)), Facts{Now: now, Windows: []*maintenance.Window{freeze}},
			[]string{"reboots pool worker, which no Allow maintenance window it trusts governs; policy 'in-window' allows reboots only in the maintenance windows it trusts (freeze)"}, time.Time{}},
		{"InWindow: trusting no window (stored before trustedWindows was required)", policy("in-window", func(s *v1alpha1.ApprovalPolicySpec) {
			inWindow(s)
			s.TrustedWindows = nil
		}), planOf(v1alpha1.ImpactHigh, psi(migrates)), Facts{Now: now, Windows: []*maintenance.Window{everyMinute}},
			[]string{"reboots pool worker, which no Allow maintenance window it trusts governs; policy 'in-window' allows reboots only in the maintenance windows it trusts (none: spec.trustedWindows is not set)"}, time.Time{}},
		{"live migration only: a VM shut down is named", policy("in-window", inWindow), planOf(v1alpha1.ImpactHigh, psi(migrates, shutDown)),
			Facts{Now: now, Windows: []*maintenance.Window{everyMinute}},
			[]string{"VM vms/legacy on pool worker would be shut down (evictionStrategy None); policy 'in-window' allows only VMs that are live-migrated"}, time.Time{}},
		{"shut down allowed", policy("in-window", func(s *v1alpha1.ApprovalPolicySpec) {
			inWindow(s)
			s.Bounds.VMFates = []v1alpha1.VMFate{v1alpha1.VMFateLiveMigrate, v1alpha1.VMFateShutDown}
		}), planOf(v1alpha1.ImpactHigh, psi(migrates, shutDown)), Facts{Now: now, Windows: []*maintenance.Window{everyMinute}}, nil, time.Time{}},
		{"no live migration: counted, not one line per VM", policy("in-window", func(s *v1alpha1.ApprovalPolicySpec) {
			inWindow(s)
			s.Bounds.VMFates = []v1alpha1.VMFate{v1alpha1.VMFateShutDown}
		}), planOf(v1alpha1.ImpactHigh, func() v1alpha1.PlanItem {
			it := psi(migrates, shutDown)
			it.Reboots[0].LiveMigrations = 2500 // vmImpacts lists a few of them
			return it
		}()), Facts{Now: now, Windows: []*maintenance.Window{everyMinute}},
			[]string{"2500 VMs on pool worker would be live-migrated; policy 'in-window' allows only VMs that are shut down"}, time.Time{}},
		{"one VM live-migrated: said in the singular", policy("in-window", func(s *v1alpha1.ApprovalPolicySpec) {
			inWindow(s)
			s.Bounds.VMFates = []v1alpha1.VMFate{v1alpha1.VMFateShutDown}
		}), planOf(v1alpha1.ImpactHigh, func() v1alpha1.PlanItem {
			it := psi(migrates)
			it.Reboots[0].LiveMigrations = 1
			return it
		}()), Facts{Now: now, Windows: []*maintenance.Window{everyMinute}},
			[]string{"1 VM on pool worker would be live-migrated; policy 'in-window' allows only VMs that are shut down"}, time.Time{}},
		{"VMs not assessed", policy("in-window", inWindow), planOf(v1alpha1.ImpactHigh, func() v1alpha1.PlanItem {
			it := psi()
			it.Reboots[0].VMImpactUnknown = "the cluster does not serve VirtualMachineInstances"
			return it
		}()), Facts{Now: now, Windows: []*maintenance.Window{everyMinute}},
			[]string{"the VMs of pool worker could not be assessed (the cluster does not serve VirtualMachineInstances); policy 'in-window' approves only drains whose VMs it knows"}, time.Time{}},
		{"items: a kind allowed", policy("descheduler-only", func(s *v1alpha1.ApprovalPolicySpec) {
			s.Bounds.Items = []v1alpha1.PolicyItem{{Kind: "KubeDescheduler"}}
		}), planOf(v1alpha1.ImpactLow, interval()), Facts{}, nil, time.Time{}},
		{"items: another item", policy("descheduler-only", func(s *v1alpha1.ApprovalPolicySpec) {
			high(s)
			s.Bounds.Items = []v1alpha1.PolicyItem{{Kind: "KubeDescheduler", Name: "descheduler-profile"}}
		}), planOf(v1alpha1.ImpactLow, v1alpha1.PlanItem{Name: "swap", Operation: v1alpha1.OperationCreate, TargetRef: v1alpha1.ObjectReference{Kind: "MachineConfig", Name: "90-swap"}}), Facts{},
			[]string{"changes item swap (MachineConfig 90-swap); policy 'descheduler-only' allows only KubeDescheduler descheduler-profile"}, time.Time{}},
		{"an item that failed", policy("quiet-tuning", nil), planOf(v1alpha1.ImpactLow, func() v1alpha1.PlanItem { it := interval(); it.Error = "dry-run refused"; return it }()), Facts{},
			[]string{"item descheduler-profile could not be planned; policy 'quiet-tuning' approves only whole plans"}, time.Time{}},
		{"its window is closed: when it opens", policy("nights", func(s *v1alpha1.ApprovalPolicySpec) { s.Windows = []string{"nightly"} }),
			planOf(v1alpha1.ImpactLow, interval()), Facts{Now: now, Windows: []*maintenance.Window{nightly}},
			[]string{"policy 'nights' approves only while window nightly is open; the next opens Sat 28 Mar 22:00 UTC"}, time.Date(2026, 3, 28, 22, 0, 0, 0, time.UTC)},
		{"its window is open", policy("nights", func(s *v1alpha1.ApprovalPolicySpec) { s.Windows = []string{"nightly"} }),
			planOf(v1alpha1.ImpactLow, interval()), Facts{Now: time.Date(2026, 3, 28, 22, 30, 0, 0, time.UTC), Windows: []*maintenance.Window{nightly}}, nil, time.Time{}},
		{"a window that does not exist", policy("nights", func(s *v1alpha1.ApprovalPolicySpec) { s.Windows = []string{"weekend"} }),
			planOf(v1alpha1.ImpactLow, interval()), Facts{Now: now},
			[]string{"policy 'nights' approves only while window weekend is open; none of them is open (weekend: no such MaintenanceWindow)"}, time.Time{}},
		{"four eyes: the author changed the spec", policy("quiet-tuning", nil), planOf(v1alpha1.ImpactLow, interval()),
			Facts{SpecChangedBy: "alice", RequireDistinctApprover: true},
			[]string{`user "alice", who set policy 'quiet-tuning', made the last spec change, and this server requires a second person (--require-distinct-approver)`}, time.Time{}},
		{"four eyes: another user changed the spec", policy("quiet-tuning", nil), planOf(v1alpha1.ImpactLow, interval()),
			Facts{SpecChangedBy: "bob", RequireDistinctApprover: true}, nil, time.Time{}},
		{"without four eyes the author's change is approved", policy("quiet-tuning", nil), planOf(v1alpha1.ImpactLow, interval()),
			Facts{SpecChangedBy: "alice"}, nil, time.Time{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := Evaluate(tt.policy, tt.plan, tt.facts)
			if d.Approved != (tt.exceeded == nil) {
				t.Fatalf("approved = %v, want %v (%q)", d.Approved, tt.exceeded == nil, d.Exceeded)
			}
			if strings.Join(d.Exceeded, "\n") != strings.Join(tt.exceeded, "\n") {
				t.Errorf("exceeded:\n%s\nwant:\n%s", strings.Join(d.Exceeded, "\n"), strings.Join(tt.exceeded, "\n"))
			}
			if !d.OpensAt.Equal(tt.opensAt) {
				t.Errorf("opensAt = %v, want %v", d.OpensAt, tt.opensAt)
			}
		})
	}
}

func TestDecide(t *testing.T) {
	cfg := &v1alpha1.VirtPlatformConfig{ObjectMeta: metav1.ObjectMeta{Name: "load-aware-rebalancing", Labels: map[string]string{"tier": "quiet"}}}
	quiet := policy("a-quiet", nil)
	reboots := policy("b-reboots", func(s *v1alpha1.ApprovalPolicySpec) {
		s.Bounds.MaxImpact, s.Bounds.Reboots = v1alpha1.ImpactHigh, v1alpha1.RebootBoundInWindow
		s.TrustedWindows = &v1alpha1.PolicyWindows{Names: []string{"w"}}
	})
	bySelector := policy("c-selector", func(s *v1alpha1.ApprovalPolicySpec) {
		s.Configs = v1alpha1.PolicyConfigs{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"tier": "quiet"}}}
	})
	other := policy("d-other", func(s *v1alpha1.ApprovalPolicySpec) { s.Configs.Names = []string{"virt-higher-density"} })
	windows := Facts{Windows: []*maintenance.Window{window(t, "w", "* * * * *", 20*time.Second)}}

	tests := []struct {
		name     string
		policies []*v1alpha1.ApprovalPolicy
		plan     *v1alpha1.PlanStatus
		approved string
		refused  []string
	}{
		{"no policy", nil, planOf(v1alpha1.ImpactLow, interval()), "", nil},
		{"a policy of another config", []*v1alpha1.ApprovalPolicy{other}, planOf(v1alpha1.ImpactLow, interval()), "", nil},
		{"the first in name order approves", []*v1alpha1.ApprovalPolicy{bySelector, quiet}, planOf(v1alpha1.ImpactLow, interval()), "a-quiet", nil},
		{"one refuses, the next approves", []*v1alpha1.ApprovalPolicy{reboots, quiet}, planOf(v1alpha1.ImpactHigh, psi()), "b-reboots", []string{"a-quiet"}},
		{"every covering policy refuses", []*v1alpha1.ApprovalPolicy{quiet, bySelector, other}, planOf(v1alpha1.ImpactHigh, psi()), "", []string{"a-quiet", "c-selector"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			approved, refused := Decide(tt.policies, cfg, tt.plan, windows)
			got := ""
			if approved != nil {
				got = approved.Policy
			}
			if got != tt.approved {
				t.Errorf("approved by %q, want %q", got, tt.approved)
			}
			var names []string
			for _, r := range refused {
				names = append(names, r.Policy)
			}
			if strings.Join(names, ",") != strings.Join(tt.refused, ",") {
				t.Errorf("refused by %v, want %v", names, tt.refused)
			}
		})
	}
}

func TestApprovedBy(t *testing.T) {
	by := ApprovedBy(policy("quiet-tuning", nil))
	if by != "policy/quiet-tuning (set by alice)" {
		t.Fatalf("ApprovedBy = %q", by)
	}
	for _, tt := range []struct {
		approvedBy, policy string
		ok                 bool
	}{
		{by, "quiet-tuning", true},
		{"alice", "", false},
		{"policy/x", "", false}, // a user could be named so; a policy's record always says who set it
	} {
		if name, ok := PolicyOf(tt.approvedBy); name != tt.policy || ok != tt.ok {
			t.Errorf("PolicyOf(%q) = %q, %v; want %q, %v", tt.approvedBy, name, ok, tt.policy, tt.ok)
		}
	}
}

// An approval by a policy holds for the items not yet written only while
// that very policy, unchanged, still covers the config.
func TestLapsed(t *testing.T) {
	approving := func() *v1alpha1.ApprovalPolicy {
		p := policy("quiet-tuning", nil)
		p.UID, p.Generation = "uid-1", 3
		return p
	}
	record := func() *v1alpha1.ApprovalRecord {
		p := approving()
		return &v1alpha1.ApprovalRecord{PlanHash: "h", ApprovedBy: ApprovedBy(p), Policy: Ref(p)}
	}
	const config = "load-aware-rebalancing"
	tests := []struct {
		name    string
		record  func() *v1alpha1.ApprovalRecord
		current func() *v1alpha1.ApprovalPolicy
		labels  map[string]string
		want    string
	}{
		{name: "unchanged: holds", record: record, current: approving},
		{name: "labels only (generation kept): holds", record: record, current: func() *v1alpha1.ApprovalPolicy {
			p := approving()
			p.Labels = map[string]string{"team": "b"}
			return p
		}},
		{name: "a person's approval: not the policies' business", record: func() *v1alpha1.ApprovalRecord {
			return &v1alpha1.ApprovalRecord{PlanHash: "h", ApprovedBy: "alice"}
		}},
		{name: "no approval", record: func() *v1alpha1.ApprovalRecord { return nil }},
		{name: "deleted", record: record, current: func() *v1alpha1.ApprovalPolicy { return nil },
			want: "approval policy 'quiet-tuning' was deleted"},
		{name: "deleted and created again, same spec", record: record, current: func() *v1alpha1.ApprovalPolicy {
			p := approving()
			p.UID, p.Generation = "uid-2", 1
			return p
		}, want: "approval policy 'quiet-tuning' was deleted and created again (UID uid-2, was uid-1)"},
		{name: "bounds changed", record: record, current: func() *v1alpha1.ApprovalPolicy {
			p := approving()
			p.Generation = 4
			return p
		}, want: "approval policy 'quiet-tuning' changed (generation 3 → 4)"},
		{name: "no longer covers the config", record: record, current: func() *v1alpha1.ApprovalPolicy {
			p := approving()
			p.Generation, p.Spec.Configs.Names = 4, []string{"virt-higher-density"}
			return p
		}, want: "approval policy 'quiet-tuning' no longer covers the config"},
		{name: "selector: the config's labels changed", record: record, labels: map[string]string{"tier": "b"}, current: func() *v1alpha1.ApprovalPolicy {
			p := approving()
			p.Spec.Configs = v1alpha1.PolicyConfigs{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"tier": "a"}}}
			return p
		}, want: "approval policy 'quiet-tuning' no longer covers the config"},
		{name: "recorded without the policy's UID and generation", record: func() *v1alpha1.ApprovalRecord {
			r := record()
			r.Policy = nil
			return r
		}, current: approving, want: "approval policy 'quiet-tuning' approved the plan without a record of its UID and generation"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var current *v1alpha1.ApprovalPolicy
			if tt.current != nil {
				current = tt.current()
			}
			if got := Lapsed(tt.record(), current, config, tt.labels); got != tt.want {
				t.Errorf("Lapsed = %q, want %q", got, tt.want)
			}
		})
	}
}

// A policy may require the gates between the steps of a plan's rollouts
// to be at least its own; each weaker gate is named.
func TestEvaluateGates(t *testing.T) {
	three := int32(3)
	strict := func(s *v1alpha1.ApprovalPolicySpec) {
		s.Bounds.MaxImpact = v1alpha1.ImpactHigh
		s.Bounds.Gates = &v1alpha1.PolicyGates{MaxNodeReadyTimeout: "20m", MinSoak: "5m", MaxFailedMigrations: &three, RequireAlerts: true}
	}
	alerts := &v1alpha1.PlanAlertGate{Source: "Prometheus https://thanos-querier:9091", Ignore: []string{"Watchdog"}, OnError: v1alpha1.GateErrorHold}
	gated := func(g v1alpha1.PlanGates) *v1alpha1.PlanStatus {
		p := planOf(v1alpha1.ImpactHigh, interval())
		p.Settings.Gates = &g
		return p
	}
	for _, tc := range []struct {
		name     string
		plan     *v1alpha1.PlanStatus
		exceeded []string
	}{
		{"at the policy's bounds", gated(v1alpha1.PlanGates{NodeReadyTimeout: "20m0s", Soak: "5m0s", MaxFailedMigrations: 3, Alerts: alerts}), nil},
		{"stricter than the policy", gated(v1alpha1.PlanGates{NodeReadyTimeout: "10m0s", Soak: "10m0s", MaxFailedMigrations: 0, Alerts: alerts}), nil},
		{"a plan that rolls no pool: no gates to check", planOf(v1alpha1.ImpactHigh, interval()), nil},
		{"one bound over each", gated(v1alpha1.PlanGates{NodeReadyTimeout: "20m1s", Soak: "4m59s", MaxFailedMigrations: 4}), []string{
			"gates.nodeReadyTimeout 20m1s; policy 'gated' requires at most 20m",
			"gates.soak 4m59s; policy 'gated' requires at least 5m",
			"gates.maxFailedMigrations 4; policy 'gated' requires at most 3",
			"no alert gate; policy 'gated' requires one"}},
		{"an alert gate the server cannot read", gated(v1alpha1.PlanGates{NodeReadyTimeout: "20m0s", Soak: "5m0s",
			Alerts: &v1alpha1.PlanAlertGate{Source: gates.NoAlertSource, OnError: v1alpha1.GateErrorHold}}), []string{
			"an alert gate the server cannot read (no alert source); policy 'gated' requires one it reads"}},
		{"an alert gate that ignores errors", gated(v1alpha1.PlanGates{NodeReadyTimeout: "20m0s", Soak: "5m0s",
			Alerts: &v1alpha1.PlanAlertGate{Source: alerts.Source, OnError: v1alpha1.GateErrorIgnore}}), []string{
			"an alert gate that goes on when the alerts cannot be read (onError: Ignore); policy 'gated' requires onError: Hold"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := Evaluate(policy("gated", strict), tc.plan, Facts{})
			if !slices.Equal(d.Exceeded, tc.exceeded) || d.Approved != (len(tc.exceeded) == 0) {
				t.Errorf("approved %v, exceeded %q; want %q", d.Approved, d.Exceeded, tc.exceeded)
			}
		})
	}
}
