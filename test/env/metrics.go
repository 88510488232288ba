package env

import (
	"bytes"
	"context"
	"fmt"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// Metrics is a parsed Prometheus text exposition, by family name.
type Metrics map[string]*dto.MetricFamily

// ScrapeMetrics reads and parses /metrics of the server behind c.
func ScrapeMetrics(ctx context.Context, c rest.Interface) (Metrics, error) {
	raw, err := c.Get().AbsPath("/metrics").SetHeader("Accept", string(expfmt.NewFormat(expfmt.TypeTextPlain))).DoRaw(ctx)
	if err != nil {
		return nil, fmt.Errorf("reading /metrics: %w", err)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(bytes.NewReader(raw))
	if err != nil {
		return nil, fmt.Errorf("parsing /metrics: %w", err)
	}
	return families, nil
}

// Sum adds up the counter, gauge or untyped samples of family whose labels
// include every label of match; for a histogram or a summary it adds up
// the sample sums. A family that is absent counts as 0: counters with no
// sample yet are not exposed.
func (m Metrics) Sum(family string, match map[string]string) float64 {
	f, ok := m[family]
	if !ok {
		return 0
	}
	var sum float64
	for _, s := range f.GetMetric() {
		if !hasLabels(s, match) {
			continue
		}
		switch {
		case s.Counter != nil:
			sum += s.Counter.GetValue()
		case s.Gauge != nil:
			sum += s.Gauge.GetValue()
		case s.Untyped != nil:
			sum += s.Untyped.GetValue()
		case s.Histogram != nil:
			sum += s.Histogram.GetSampleSum()
		case s.Summary != nil:
			sum += s.Summary.GetSampleSum()
		}
	}
	return sum
}

// Count adds up the sample counts of a histogram or summary family whose
// labels include every label of match.
func (m Metrics) Count(family string, match map[string]string) uint64 {
	f, ok := m[family]
	if !ok {
		return 0
	}
	var n uint64
	for _, s := range f.GetMetric() {
		if !hasLabels(s, match) {
			continue
		}
		switch {
		case s.Histogram != nil:
			n += s.Histogram.GetSampleCount()
		case s.Summary != nil:
			n += s.Summary.GetSampleCount()
		}
	}
	return n
}

func hasLabels(s *dto.Metric, match map[string]string) bool {
	found := 0
	for _, l := range s.GetLabel() {
		if v, ok := match[l.GetName()]; ok {
			if v != l.GetValue() {
				return false
			}
			found++
		}
	}
	return found == len(match)
}

// DryRunApplies is kube-apiserver's count of the server-side apply
// dry-runs (PATCH application/apply-patch?dryRun=All) it has answered.
func (e *Env) DryRunApplies(ctx context.Context) (float64, error) {
	m, err := e.kubeAPIServerMetrics(ctx)
	if err != nil {
		return 0, err
	}
	return m.Sum("apiserver_request_total", map[string]string{"verb": "APPLY", "dry_run": "All"}), nil
}

// KubeAPIServerCPU is the CPU time kube-apiserver has used so far
// (process_cpu_seconds_total of its /metrics), in seconds.
func (e *Env) KubeAPIServerCPU(ctx context.Context) (float64, error) {
	m, err := e.kubeAPIServerMetrics(ctx)
	if err != nil {
		return 0, err
	}
	return m.Sum("process_cpu_seconds_total", nil), nil
}

// PolicyAdmissionTime is the time kube-apiserver's ValidatingAdmissionPolicy
// admission plugin has spent so far on requests of operation (its
// apiserver_admission_controller_admission_duration_seconds: sum in
// seconds, and count), whichever policies it evaluated.
func (e *Env) PolicyAdmissionTime(ctx context.Context, operation string) (float64, uint64, error) {
	m, err := e.kubeAPIServerMetrics(ctx)
	if err != nil {
		return 0, 0, err
	}
	match := map[string]string{"name": "ValidatingAdmissionPolicy", "type": "validate", "operation": operation}
	const family = "apiserver_admission_controller_admission_duration_seconds"
	return m.Sum(family, match), m.Count(family, match), nil
}

// KubeAPIServerPid is kube-apiserver's process ID, 0 while it is not
// running.
func (e *Env) KubeAPIServerPid() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.apiserver == nil || e.apiserver.exited() {
		return 0
	}
	return e.apiserver.cmd.Process.Pid
}

// kubeAPIServerMetrics scrapes kube-apiserver's /metrics as the admin.
func (e *Env) kubeAPIServerMetrics(ctx context.Context) (Metrics, error) {
	c, err := kubernetes.NewForConfig(e.AdminConfig)
	if err != nil {
		return nil, err
	}
	m, err := ScrapeMetrics(ctx, c.CoreV1().RESTClient())
	if err != nil {
		return nil, fmt.Errorf("kube-apiserver: %w", err)
	}
	return m, nil
}
