// Package alertsource reads the alerts firing now from a
// Prometheus-compatible query API (Prometheus, OpenShift's
// thanos-querier: ALERTS{alertstate="firing"}) or from Alertmanager's v2
// API (active alerts, neither silenced nor inhibited), for the alert gate
// between two steps of a rollout (pkg/gates). It reads; it decides nothing.
package alertsource

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// Kind is the API an endpoint serves.
type Kind string

const (
	Prometheus   Kind = "Prometheus"
	Alertmanager Kind = "Alertmanager"
)

// Timeout bounds one read: a gate waits, it does not hang.
const Timeout = 10 * time.Second

// Endpoint is where the alerts are read, and how.
type Endpoint struct {
	Kind Kind
	// URL is the API's base, e.g. https://thanos-querier.openshift-monitoring.svc:9091.
	URL string
	// Token, when set, returns the bearer token sent with each request
	// (read again each time: a mounted token rotates).
	Token func() (string, error)
	// CA, when set, are the PEM certificates the endpoint's is verified
	// against (else the system's).
	CA []byte
}

// Reader reads an endpoint's firing alerts.
type Reader struct {
	endpoint Endpoint
	client   *http.Client
}

// New checks the endpoint and returns its reader.
func New(e Endpoint) (*Reader, error) {
	u, err := url.Parse(e.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("%q is not an http(s) URL", e.URL)
	}
	if e.Kind != Prometheus && e.Kind != Alertmanager {
		return nil, fmt.Errorf("unknown alert source %q: use %s or %s", e.Kind, Prometheus, Alertmanager)
	}
	transport := http.DefaultTransport.(*http.Transport).Clone()
	if len(e.CA) > 0 {
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(e.CA) {
			return nil, errors.New("the CA holds no PEM certificate")
		}
		transport.TLSClientConfig = &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	}
	e.URL = strings.TrimSuffix(e.URL, "/")
	return &Reader{endpoint: e, client: &http.Client{Transport: transport, Timeout: Timeout}}, nil
}

// Firing returns the label sets of the alerts firing now, alertname
// among them.
func (r *Reader) Firing(ctx context.Context) ([]map[string]string, error) {
	if r.endpoint.Kind == Alertmanager {
		return r.alertmanager(ctx)
	}
	return r.prometheus(ctx)
}

func (r *Reader) prometheus(ctx context.Context) ([]map[string]string, error) {
	var answer struct {
		Status string `json:"status"`
		Error  string `json:"error"`
		Data   struct {
			Result []struct {
				Metric map[string]string `json:"metric"`
			} `json:"result"`
		} `json:"data"`
	}
	if err := r.get(ctx, "/api/v1/query", url.Values{"query": {`ALERTS{alertstate="firing"}`}}, &answer); err != nil {
		return nil, err
	}
	if answer.Status != "success" {
		return nil, fmt.Errorf("%s: query failed: %s", r.endpoint.URL, answer.Error)
	}
	out := make([]map[string]string, 0, len(answer.Data.Result))
	for _, s := range answer.Data.Result {
		out = append(out, s.Metric)
	}
	return out, nil
}

func (r *Reader) alertmanager(ctx context.Context) ([]map[string]string, error) {
	var answer []struct {
		Labels map[string]string `json:"labels"`
		Status struct {
			State string `json:"state"`
		} `json:"status"`
	}
	q := url.Values{"active": {"true"}, "silenced": {"false"}, "inhibited": {"false"}, "unprocessed": {"false"}}
	if err := r.get(ctx, "/api/v2/alerts", q, &answer); err != nil {
		return nil, err
	}
	out := make([]map[string]string, 0, len(answer))
	for _, a := range answer {
		if a.Status.State == "active" {
			out = append(out, a.Labels)
		}
	}
	return out, nil
}

// get reads path under the endpoint's URL into v.
func (r *Reader) get(ctx context.Context, path string, q url.Values, v interface{}) error {
	u := r.endpoint.URL + path + "?" + q.Encode()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return err
	}
	req.Header.Set("Accept", "application/json")
	if r.endpoint.Token != nil {
		token, err := r.endpoint.Token()
		if err != nil {
			return fmt.Errorf("reading the bearer token of %s: %w", r.endpoint.URL, err)
		}
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := r.client.Do(req)
	if err != nil {
		return fmt.Errorf("GET %s: %w", r.endpoint.URL+path, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 32<<20))
	if err != nil {
		return fmt.Errorf("GET %s: reading the answer: %w", r.endpoint.URL+path, err)
	}
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("GET %s: %s: %s", r.endpoint.URL+path, resp.Status, firstLine(body))
	}
	if err := json.Unmarshal(body, v); err != nil {
		return fmt.Errorf("GET %s: not a %s answer: %v", r.endpoint.URL+path, r.endpoint.Kind, err)
	}
	return nil
}

func firstLine(b []byte) string {
	s := strings.TrimSpace(string(b))
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	if len(s) > 200 {
		s = s[:200] + "…"
	}
	return s
}
