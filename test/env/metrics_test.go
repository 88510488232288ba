package env

import (
	"bytes"
	"testing"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

const exposition = `# HELP apiserver_request_total Counter of apiserver requests.
# TYPE apiserver_request_total counter
apiserver_request_total{code="200",dry_run="All",group="operator.openshift.io",resource="kubedeschedulers",verb="APPLY"} 7
apiserver_request_total{code="200",dry_run="All",group="machineconfiguration.openshift.io",resource="machineconfigs",verb="APPLY"} 5
apiserver_request_total{code="200",dry_run="",group="operator.openshift.io",resource="kubedeschedulers",verb="APPLY"} 3
apiserver_request_total{code="200",dry_run="",group="operator.openshift.io",resource="kubedeschedulers",verb="GET"} 11
# HELP virt_advisor_plan_duration_seconds Plan computation.
# TYPE virt_advisor_plan_duration_seconds histogram
virt_advisor_plan_duration_seconds_bucket{profile="example-profile",le="+Inf"} 4
virt_advisor_plan_duration_seconds_sum{profile="example-profile"} 0.02
virt_advisor_plan_duration_seconds_count{profile="example-profile"} 4
virt_advisor_plan_duration_seconds_bucket{profile="virt-higher-density",le="+Inf"} 1
virt_advisor_plan_duration_seconds_sum{profile="virt-higher-density"} 0.5
virt_advisor_plan_duration_seconds_count{profile="virt-higher-density"} 1
`

func TestMetricsSumAndCount(t *testing.T) {
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(bytes.NewReader([]byte(exposition)))
	if err != nil {
		t.Fatal(err)
	}
	m := Metrics(families)
	sums := []struct {
		family string
		match  map[string]string
		want   float64
	}{
		{"apiserver_request_total", map[string]string{"verb": "APPLY", "dry_run": "All"}, 12},
		{"apiserver_request_total", map[string]string{"verb": "APPLY", "dry_run": "All", "resource": "machineconfigs"}, 5},
		{"apiserver_request_total", map[string]string{"verb": "APPLY"}, 15},
		{"apiserver_request_total", nil, 26},
		{"apiserver_request_total", map[string]string{"verb": "DELETE"}, 0},
		{"apiserver_request_total", map[string]string{"no_such_label": "x"}, 0},
		{"no_such_family", nil, 0},
		{"virt_advisor_plan_duration_seconds", map[string]string{"profile": "example-profile"}, 0.02},
	}
	for _, s := range sums {
		if got := m.Sum(s.family, s.match); got != s.want {
			t.Errorf("Sum(%s, %v) = %v, want %v", s.family, s.match, got, s.want)
		}
	}
	if got := m.Count("virt_advisor_plan_duration_seconds", map[string]string{"profile": "example-profile"}); got != 4 {
		t.Errorf("Count(example-profile) = %d, want 4", got)
	}
	if got := m.Count("virt_advisor_plan_duration_seconds", nil); got != 5 {
		t.Errorf("Count() = %d, want 5", got)
	}
}
