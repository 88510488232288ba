package plan

import (
	"time"

	"github.com/kubevirt/virt-advisor/pkg/apis/advisor"
	"github.com/kubevirt/virt-advisor/pkg/apis/advisor/v1alpha1"
	"github.com/kubevirt/virt-advisor/pkg/gates"
	"github.com/kubevirt/virt-advisor/pkg/machineconfig"
)

// DefaultNodeReadyTimeout is how long a step's nodes may take to come
// back when neither the config nor the server says.
const DefaultNodeReadyTimeout = 20 * time.Minute

// GateDefaults are the server's defaults for spec.rollout.gates, and the
// alert source it reads (its flags).
type GateDefaults struct {
	NodeReadyTimeout time.Duration
	Soak             time.Duration
	// AlertSource names where the alerts are read, e.g. "Prometheus
	// https://thanos-querier.openshift-monitoring.svc:9091"; "" when the
	// server reads none.
	AlertSource string
	// Alerts puts the alert gate in force for every rollout, with
	// Matchers, unless a config sets its own.
	Alerts   bool
	Matchers []string
}

// gatesOf are the gates in force for spec's rollouts, the server's
// defaults resolved.
func (d GateDefaults) gatesOf(spec v1alpha1.VirtPlatformConfigSpec) *v1alpha1.PlanGates {
	var g v1alpha1.RolloutGates
	if spec.Rollout != nil && spec.Rollout.Gates != nil {
		g = *spec.Rollout.Gates
	}
	out := &v1alpha1.PlanGates{NodeReadyTimeout: d.duration(g.NodeReadyTimeout, d.NodeReadyTimeout, DefaultNodeReadyTimeout), Soak: d.duration(g.Soak, d.Soak, 0)}
	if g.MaxFailedMigrations != nil {
		out.MaxFailedMigrations = *g.MaxFailedMigrations
	}
	alerts := g.Alerts
	if alerts == nil && d.Alerts {
		alerts = &v1alpha1.AlertGate{Matchers: d.Matchers}
	}
	if alerts != nil {
		out.Alerts = &v1alpha1.PlanAlertGate{Source: d.AlertSource, Matchers: alerts.Matchers, Ignore: alerts.Ignore, OnError: alerts.OnError}
		if out.Alerts.Source == "" {
			out.Alerts.Source = gates.NoAlertSource
		}
		if out.Alerts.Ignore == nil {
			out.Alerts.Ignore = gates.DefaultIgnoredAlerts
		}
		if out.Alerts.OnError == "" {
			out.Alerts.OnError = v1alpha1.GateErrorHold
		}
	}
	return out
}

// duration is a gate's duration as the plan shows it: the config's, else
// the server's, else def.
func (d GateDefaults) duration(set string, server, def time.Duration) string {
	if v, err := advisor.ParseGateDuration(set, 0); err == nil && v > 0 {
		return v.String()
	}
	if server > 0 {
		return server.String()
	}
	return def.String()
}

// rollsPools is true when a planned item is of what a pool's nodes run:
// one already written too, whose rollout an approval (a resume) follows.
func rollsPools(planned []plannedItem) bool {
	for _, p := range planned {
		if machineconfig.RollsPools(p.item.TargetRef) {
			return true
		}
	}
	return false
}

// gateWarnings say what a reviewer must know of the gates in force: an
// alert gate the server cannot read holds every step.
func gateWarnings(g *v1alpha1.PlanGates) []string {
	if g.Alerts == nil || g.Alerts.Source != gates.NoAlertSource {
		return nil
	}
	if g.Alerts.OnError == v1alpha1.GateErrorIgnore {
		return []string{"spec.rollout.gates.alerts: the server reads no alerts (--alert-source-url is not set): the alert gate is not evaluated (onError: Ignore)"}
	}
	return []string{"spec.rollout.gates.alerts: the server reads no alerts (--alert-source-url is not set): every step of the rollout would hold; set onError: Ignore, or ask the administrator to configure the alert source"}
}
