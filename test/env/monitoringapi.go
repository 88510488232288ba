package env

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// What a test does with a running Monitoring: set the metrics its rules
// read, change the rules, and read the alerts through the two real APIs.

// metricSet is the scrape target: gauges the test sets, in the text
// exposition format.
type metricSet struct {
	mu     sync.Mutex
	series map[string]float64 // `name{labels}` → value
}

func (s *metricSet) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != "/metrics" {
		http.NotFound(w, r)
		return
	}
	s.mu.Lock()
	keys := slices.Sorted(maps.Keys(s.series))
	var b strings.Builder
	for _, k := range keys {
		fmt.Fprintf(&b, "%s %s\n", k, strconv.FormatFloat(s.series[k], 'g', -1, 64))
	}
	s.mu.Unlock()
	w.Header().Set("Content-Type", "text/plain; version=0.0.4")
	_, _ = io.WriteString(w, b.String())
}

// seriesKey is name{k="v",…} with the labels sorted.
func seriesKey(name string, labels map[string]string) string {
	if len(labels) == 0 {
		return name
	}
	parts := make([]string, 0, len(labels))
	for _, k := range slices.Sorted(maps.Keys(labels)) {
		parts = append(parts, fmt.Sprintf("%s=%q", k, labels[k]))
	}
	return name + "{" + strings.Join(parts, ",") + "}"
}

// SetMetric sets the gauge name{labels} the target exposes; Prometheus
// sees it at its next scrape (within Interval).
func (m *Monitoring) SetMetric(name string, labels map[string]string, value float64) {
	m.metrics.mu.Lock()
	defer m.metrics.mu.Unlock()
	if m.metrics.series == nil {
		m.metrics.series = map[string]float64{}
	}
	m.metrics.series[seriesKey(name, labels)] = value
}

// DeleteMetric stops exposing name{labels}: the series goes stale in
// Prometheus at its next scrape.
func (m *Monitoring) DeleteMetric(name string, labels map[string]string) {
	m.metrics.mu.Lock()
	defer m.metrics.mu.Unlock()
	delete(m.metrics.series, seriesKey(name, labels))
}

// SetRules replaces the rules file and has Prometheus reload it
// (POST /-/reload); an invalid file is refused with Prometheus' error.
func (m *Monitoring) SetRules(ctx context.Context, rules string) error {
	if err := os.WriteFile(filepath.Join(m.Dir, rulesFileName), []byte(rules), 0o644); err != nil {
		return fmt.Errorf("writing the rules file: %w", err)
	}
	_, err := m.call(ctx, http.MethodPost, m.PrometheusURL+"/-/reload", nil)
	return err
}

// call does one request and returns the body of a 2xx answer.
func (m *Monitoring) call(ctx context.Context, method, url string, body any) ([]byte, error) {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return nil, err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, url, rd)
	if err != nil {
		return nil, err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode/100 != 2 {
		return nil, fmt.Errorf("%s %s: %s: %s", method, url, resp.Status, strings.TrimSpace(string(data)))
	}
	return data, nil
}

// PrometheusAlert is an alert of Prometheus' /api/v1/alerts.
type PrometheusAlert struct {
	Labels      map[string]string `json:"labels"`
	Annotations map[string]string `json:"annotations"`
	// State is pending or firing.
	State    string    `json:"state"`
	ActiveAt time.Time `json:"activeAt"`
	Value    string    `json:"value"`
}

// PrometheusAlerts lists the pending and firing alerts of Prometheus' rules.
func (m *Monitoring) PrometheusAlerts(ctx context.Context) ([]PrometheusAlert, error) {
	data, err := m.call(ctx, http.MethodGet, m.PrometheusURL+"/api/v1/alerts", nil)
	if err != nil {
		return nil, err
	}
	var resp struct {
		Status string `json:"status"`
		Data   struct {
			Alerts []PrometheusAlert `json:"alerts"`
		} `json:"data"`
	}
	if err := json.Unmarshal(data, &resp); err != nil {
		return nil, fmt.Errorf("prometheus /api/v1/alerts: %w", err)
	}
	if resp.Status != "success" {
		return nil, fmt.Errorf("prometheus /api/v1/alerts: status %q", resp.Status)
	}
	return resp.Data.Alerts, nil
}

// AlertmanagerAlert is an alert of the Alertmanager's /api/v2/alerts.
type AlertmanagerAlert struct {
	Labels      map[string]string `json:"labels"`
	Annotations map[string]string `json:"annotations"`
	StartsAt    time.Time         `json:"startsAt"`
	EndsAt      time.Time         `json:"endsAt"`
	Fingerprint string            `json:"fingerprint"`
	Status      struct {
		// State is active, suppressed (silenced or inhibited) or unprocessed.
		State      string   `json:"state"`
		SilencedBy []string `json:"silencedBy"`
	} `json:"status"`
}

// AlertmanagerAlerts lists the alerts the Alertmanager holds and has not
// seen resolved (active, silenced and inhibited ones).
func (m *Monitoring) AlertmanagerAlerts(ctx context.Context) ([]AlertmanagerAlert, error) {
	data, err := m.call(ctx, http.MethodGet, m.AlertmanagerURL+"/api/v2/alerts", nil)
	if err != nil {
		return nil, err
	}
	var alerts []AlertmanagerAlert
	if err := json.Unmarshal(data, &alerts); err != nil {
		return nil, fmt.Errorf("alertmanager /api/v2/alerts: %w", err)
	}
	return alerts, nil
}

// Firing is where an alert is seen firing: in Prometheus and in the
// Alertmanager.
type Firing struct {
	Prometheus   PrometheusAlert
	Alertmanager AlertmanagerAlert
}

// WaitFiring waits until an alert whose labels include match (alertname
// among them) is firing in Prometheus and active in the Alertmanager.
func (m *Monitoring) WaitFiring(ctx context.Context, match map[string]string, timeout time.Duration) (Firing, error) {
	var f Firing
	err := poll(ctx, fmt.Sprintf("alert %v firing in Prometheus and active in Alertmanager", match), 200*time.Millisecond, timeout, m.prometheus,
		func(ctx context.Context) (bool, error) {
			var ok bool
			var err error
			f, ok, err = m.firing(ctx, match)
			return ok, err
		})
	return f, err
}

// firing looks for the alert in both APIs; the error says which lacks it.
func (m *Monitoring) firing(ctx context.Context, match map[string]string) (Firing, bool, error) {
	var f Firing
	prom, err := m.PrometheusAlerts(ctx)
	if err != nil {
		return f, false, err
	}
	i := slices.IndexFunc(prom, func(a PrometheusAlert) bool { return a.State == "firing" && labelsInclude(a.Labels, match) })
	if i < 0 {
		return f, false, fmt.Errorf("not firing in Prometheus (alerts: %v)", prom)
	}
	f.Prometheus = prom[i]
	am, err := m.AlertmanagerAlerts(ctx)
	if err != nil {
		return f, false, err
	}
	j := slices.IndexFunc(am, func(a AlertmanagerAlert) bool { return a.Status.State == "active" && labelsInclude(a.Labels, match) })
	if j < 0 {
		return f, false, fmt.Errorf("firing in Prometheus, not active in the Alertmanager (alerts: %v)", am)
	}
	f.Alertmanager = am[j]
	return f, true, nil
}

// WaitResolved waits until no alert whose labels include match is pending
// or firing in Prometheus, nor held unresolved by the Alertmanager.
func (m *Monitoring) WaitResolved(ctx context.Context, match map[string]string, timeout time.Duration) error {
	return poll(ctx, fmt.Sprintf("alert %v resolved in Prometheus and Alertmanager", match), 200*time.Millisecond, timeout, m.prometheus,
		func(ctx context.Context) (bool, error) {
			prom, err := m.PrometheusAlerts(ctx)
			if err != nil {
				return false, err
			}
			if slices.ContainsFunc(prom, func(a PrometheusAlert) bool { return labelsInclude(a.Labels, match) }) {
				return false, fmt.Errorf("still in Prometheus: %v", prom)
			}
			am, err := m.AlertmanagerAlerts(ctx)
			if err != nil {
				return false, err
			}
			if slices.ContainsFunc(am, func(a AlertmanagerAlert) bool { return labelsInclude(a.Labels, match) }) {
				return false, fmt.Errorf("resolved in Prometheus, still in the Alertmanager: %v", am)
			}
			return true, nil
		})
}

func labelsInclude(labels, match map[string]string) bool {
	for k, v := range match {
		if labels[k] != v {
			return false
		}
	}
	return true
}

// Silence silences, in the Alertmanager, the alerts whose labels equal
// match for d, and returns the silence's ID.
func (m *Monitoring) Silence(ctx context.Context, match map[string]string, d time.Duration, comment string) (string, error) {
	type matcher struct {
		Name    string `json:"name"`
		Value   string `json:"value"`
		IsRegex bool   `json:"isRegex"`
		IsEqual bool   `json:"isEqual"`
	}
	var matchers []matcher
	for _, k := range slices.Sorted(maps.Keys(match)) {
		matchers = append(matchers, matcher{Name: k, Value: match[k], IsEqual: true})
	}
	now := time.Now().UTC()
	body := map[string]any{"matchers": matchers, "startsAt": now, "endsAt": now.Add(d),
		"createdBy": "virt-advisor e2e", "comment": comment}
	data, err := m.call(ctx, http.MethodPost, m.AlertmanagerURL+"/api/v2/silences", body)
	if err != nil {
		return "", err
	}
	var resp struct {
		SilenceID string `json:"silenceID"`
	}
	if err := json.Unmarshal(data, &resp); err != nil {
		return "", fmt.Errorf("alertmanager /api/v2/silences: %w", err)
	}
	return resp.SilenceID, nil
}

// ExpireSilence ends a silence at once.
func (m *Monitoring) ExpireSilence(ctx context.Context, id string) error {
	_, err := m.call(ctx, http.MethodDelete, m.AlertmanagerURL+"/api/v2/silence/"+id, nil)
	return err
}
