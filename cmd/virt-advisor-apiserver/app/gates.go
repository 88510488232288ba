package app

import (
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/kubevirt/virt-advisor/pkg/alertsource"
	"github.com/kubevirt/virt-advisor/pkg/apis/advisor"
	"github.com/kubevirt/virt-advisor/pkg/plan"
)

func (g *GateOptions) addFlags(fs *pflag.FlagSet) {
	fs.DurationVar(&g.NodeReadyTimeout, "rollout-node-ready-timeout", g.NodeReadyTimeout,
		"Default of spec.rollout.gates.nodeReadyTimeout: how long the nodes of a step of a MachineConfigPool rollout may take to come back before the rollout halts (30s to 24h).")
	fs.DurationVar(&g.Soak, "rollout-soak", g.Soak,
		"Default of spec.rollout.gates.soak: how long the nodes of a step must have been back before the next step starts (0 to 24h).")
	fs.StringVar(&g.AlertSourceURL, "alert-source-url", g.AlertSourceURL,
		"Where the alert gate reads firing alerts: a Prometheus-compatible query API (e.g. https://thanos-querier.openshift-monitoring.svc:9091) or an Alertmanager. Unset: no alerts are read, and an alert gate holds every step unless it says onError: Ignore.")
	fs.StringVar(&g.AlertSourceKind, "alert-source-kind", g.AlertSourceKind,
		"The API at --alert-source-url: Prometheus (ALERTS{alertstate=\"firing\"}) or Alertmanager (its v2 API: active, not silenced, not inhibited).")
	fs.StringVar(&g.AlertSourceTokenFile, "alert-source-token-file", g.AlertSourceTokenFile,
		"A file holding the bearer token sent to --alert-source-url (a mounted Secret), read again for every request so a rotated token is used.")
	fs.StringVar(&g.AlertSourceCAFile, "alert-source-ca-file", g.AlertSourceCAFile,
		"PEM certificates the --alert-source-url endpoint's certificate is verified against (a mounted Secret or ConfigMap); unset: the system's.")
	fs.BoolVar(&g.AlertGate, "rollout-alert-gate", g.AlertGate,
		"Put the alert gate in force for every rollout whose config sets none, with --rollout-alert-matchers.")
	fs.StringSliceVar(&g.AlertMatchers, "rollout-alert-matchers", g.AlertMatchers,
		`Label matchers of the default alert gate, e.g. severity="critical" (an alert must match every one).`)
}

func (g *GateOptions) validate() []error {
	var errs []error
	if g.NodeReadyTimeout < advisor.MinNodeReadyTimeout || g.NodeReadyTimeout > 24*time.Hour {
		errs = append(errs, fmt.Errorf("--rollout-node-ready-timeout must be between 30s and 24h, got %s", g.NodeReadyTimeout))
	}
	if g.Soak < 0 || g.Soak > 24*time.Hour {
		errs = append(errs, fmt.Errorf("--rollout-soak must be between 0 and 24h, got %s", g.Soak))
	}
	for _, m := range g.AlertMatchers {
		if _, err := advisor.ParseMatcher(m); err != nil {
			errs = append(errs, fmt.Errorf("--rollout-alert-matchers: %q: %w", m, err))
		}
	}
	if g.AlertSourceURL == "" {
		return errs
	}
	if _, err := g.reader(); err != nil {
		errs = append(errs, err)
	}
	return errs
}

// reader is the alert source's reader; nil without --alert-source-url.
func (g *GateOptions) reader() (*alertsource.Reader, error) {
	if g.AlertSourceURL == "" {
		return nil, nil
	}
	e := alertsource.Endpoint{Kind: alertsource.Kind(g.AlertSourceKind), URL: g.AlertSourceURL}
	if g.AlertSourceCAFile != "" {
		ca, err := os.ReadFile(g.AlertSourceCAFile)
		if err != nil {
			return nil, fmt.Errorf("--alert-source-ca-file: %w", err)
		}
		e.CA = ca
	}
	if f := g.AlertSourceTokenFile; f != "" {
		if _, err := os.Stat(f); err != nil {
			return nil, fmt.Errorf("--alert-source-token-file: %w", err)
		}
		e.Token = func() (string, error) {
			b, err := os.ReadFile(f)
			return strings.TrimSpace(string(b)), err
		}
	}
	r, err := alertsource.New(e)
	if err != nil {
		return nil, fmt.Errorf("--alert-source-url: %w", err)
	}
	return r, nil
}

// defaults are the gates' defaults as the plan engine resolves them.
func (g *GateOptions) defaults() plan.GateDefaults {
	d := plan.GateDefaults{NodeReadyTimeout: g.NodeReadyTimeout, Soak: g.Soak, Alerts: g.AlertGate, Matchers: g.AlertMatchers}
	if g.AlertSourceURL != "" {
		d.AlertSource = g.AlertSourceKind + " " + g.AlertSourceURL
	}
	return d
}
