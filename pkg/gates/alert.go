package gates

import (
	"fmt"
	"sort"
	"strings"
)

// NoAlertSource is the source a plan shows for an alert gate on a server
// that reads no alerts.
const NoAlertSource = "none: the server reads no alerts (--alert-source-url is not set)"

// Alert is a firing alert: its labels, alertname among them.
type Alert struct {
	Labels map[string]string
}

// Name is the alert's alertname.
func (a Alert) Name() string { return a.Labels["alertname"] }

// Key names the alert and its labels, sorted, as Prometheus prints a
// series: Name{a="x", b="y"}. Two reads of the same alert have the same
// key; alertstate, which Prometheus adds to ALERTS, is left out.
func (a Alert) Key() string {
	keys := make([]string, 0, len(a.Labels))
	for k := range a.Labels {
		if k != "alertname" && k != "alertstate" {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s=%q", k, a.Labels[k])
	}
	return a.Name() + "{" + strings.Join(parts, ", ") + "}"
}
