package approvalpolicy

import (
	"fmt"
	"strings"
	"time"

	"github.com/kubevirt/virt-advisor/pkg/apis/advisor/v1alpha1"
	"github.com/kubevirt/virt-advisor/pkg/gates"
)

// gates checks the plan's gates against the least the policy requires;
// a plan that rolls no pool (no gates) has none to check.
func (e *evaluation) gates(plan *v1alpha1.PlanGates) {
	want := e.p.Spec.Bounds.Gates
	if want == nil || plan == nil {
		return
	}
	if max, ok := duration(want.MaxNodeReadyTimeout); ok {
		if got, _ := duration(plan.NodeReadyTimeout); got > max {
			e.gate("gates.nodeReadyTimeout %s; policy '%s' requires at most %s", plan.NodeReadyTimeout, e.p.Name, want.MaxNodeReadyTimeout)
		}
	}
	if min, ok := duration(want.MinSoak); ok {
		if got, _ := duration(plan.Soak); got < min {
			e.gate("gates.soak %s; policy '%s' requires at least %s", plan.Soak, e.p.Name, want.MinSoak)
		}
	}
	if max := want.MaxFailedMigrations; max != nil && plan.MaxFailedMigrations > *max {
		e.gate("gates.maxFailedMigrations %d; policy '%s' requires at most %d", plan.MaxFailedMigrations, e.p.Name, *max)
	}
	if want.RequireAlerts {
		switch a := plan.Alerts; {
		case a == nil:
			e.gate("no alert gate; policy '%s' requires one", e.p.Name)
		case a.Source == gates.NoAlertSource:
			e.gate("an alert gate the server cannot read (no alert source); policy '%s' requires one it reads", e.p.Name)
		case a.OnError == v1alpha1.GateErrorIgnore:
			e.gate("an alert gate that goes on when the alerts cannot be read (onError: Ignore); policy '%s' requires onError: Hold", e.p.Name)
		}
	}
}

// gate notes a gate weaker than the policy requires.
func (e *evaluation) gate(format string, args ...any) {
	e.d.Exceeded = append(e.d.Exceeded, fmt.Sprintf(format, args...))
}

// duration parses a gate's duration ("" or unparseable: not set).
func duration(s string) (time.Duration, bool) {
	d, err := time.ParseDuration(s)
	return d, err == nil && s != ""
}

// gatesSummary says the least gates a policy requires in a few words,
// e.g. "nodeReadyTimeout<=20m,soak>=5m,alerts".
func gatesSummary(g *v1alpha1.PolicyGates) string {
	var parts []string
	if g.MaxNodeReadyTimeout != "" {
		parts = append(parts, "nodeReadyTimeout<="+g.MaxNodeReadyTimeout)
	}
	if g.MinSoak != "" {
		parts = append(parts, "soak>="+g.MinSoak)
	}
	if g.MaxFailedMigrations != nil {
		parts = append(parts, fmt.Sprintf("failedMigrations<=%d", *g.MaxFailedMigrations))
	}
	if g.RequireAlerts {
		parts = append(parts, "alerts")
	}
	if len(parts) == 0 {
		return "any"
	}
	return strings.Join(parts, ",")
}
