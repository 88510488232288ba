package env

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"
)

// A Prometheus and an Alertmanager run as processes (built by `make tools`
// from their Go modules, hack/tools/prometheus and hack/tools/alertmanager):
// Prometheus scrapes a target the test serves (gauges it sets with
// SetMetric), evaluates the rules it is given and sends what fires to the
// Alertmanager. Nothing of either API is faked.

const (
	// PrometheusBinary and AlertmanagerBinary are their files in BinDir.
	PrometheusBinary   = "prometheus"
	AlertmanagerBinary = "alertmanager"

	monitoringReadyTimeout = 60 * time.Second
	// DefaultMonitoringInterval is the scrape and evaluation interval:
	// short, so that an alert fires within seconds of its metric.
	DefaultMonitoringInterval = time.Second
	// rulesFileName is the rules file in the Prometheus directory.
	rulesFileName = "rules.yaml"
)

// MonitoringOptions configures StartMonitoring.
type MonitoringOptions struct {
	// Dir holds the configuration, data and logs of both (logs/prometheus.log,
	// logs/alertmanager.log). Empty: a temporary directory Stop removes.
	Dir string
	// BinDir holds prometheus and alertmanager (default
	// <RepoRoot>/_output/bin).
	BinDir string
	// Rules is the Prometheus rules file (YAML, `groups:`); empty: none
	// until SetRules.
	Rules string
	// Interval is the scrape and evaluation interval (default
	// DefaultMonitoringInterval).
	Interval time.Duration
	// Log receives progress lines; nil discards them.
	Log io.Writer
}

// Monitoring is a running Prometheus and Alertmanager.
type Monitoring struct {
	Dir string
	// PrometheusURL and AlertmanagerURL are their HTTP APIs on localhost.
	PrometheusURL, AlertmanagerURL string
	// TargetURL is the scrape target's /metrics, served by this process.
	TargetURL string

	opts         MonitoringOptions
	ownDir       bool
	target       *httptest.Server
	metrics      *metricSet
	prometheus   *process
	alertmanager *process
	stopOnce     sync.Once
}

// StartMonitoring starts an Alertmanager, then a Prometheus sending it its
// alerts and scraping a target of this process, and returns once both are
// ready. On error what started is stopped again.
func StartMonitoring(ctx context.Context, o MonitoringOptions) (_ *Monitoring, err error) {
	m, err := newMonitoring(o)
	if err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			m.Stop()
		}
	}()
	m.logf("starting alertmanager (log %s)", filepath.Join(m.Dir, "logs", "alertmanager.log"))
	if m.alertmanager, m.AlertmanagerURL, err = m.startAlertmanager(ctx); err != nil {
		return nil, err
	}
	m.logf("alertmanager ready at %s", m.AlertmanagerURL)
	m.logf("starting prometheus (log %s)", filepath.Join(m.Dir, "logs", "prometheus.log"))
	if m.prometheus, m.PrometheusURL, err = m.startPrometheus(ctx); err != nil {
		return nil, err
	}
	m.logf("prometheus ready at %s, scraping %s", m.PrometheusURL, m.TargetURL)
	return m, nil
}

// newMonitoring resolves defaults, checks the binaries and serves the
// scrape target.
func newMonitoring(o MonitoringOptions) (*Monitoring, error) {
	if o.Log == nil {
		o.Log = io.Discard
	}
	if o.Interval <= 0 {
		o.Interval = DefaultMonitoringInterval
	}
	if o.BinDir == "" {
		root, err := findRepoRoot()
		if err != nil {
			return nil, err
		}
		o.BinDir = filepath.Join(root, "_output", "bin")
	}
	if err := checkMonitoringBinaries(o.BinDir); err != nil {
		return nil, err
	}
	m := &Monitoring{opts: o, Dir: o.Dir, metrics: &metricSet{}}
	if m.Dir == "" {
		dir, err := os.MkdirTemp("", "virt-advisor-monitoring-")
		if err != nil {
			return nil, fmt.Errorf("creating a monitoring directory: %w", err)
		}
		m.Dir, m.ownDir = dir, true
	}
	if err := os.MkdirAll(filepath.Join(m.Dir, "logs"), 0o755); err != nil {
		return nil, fmt.Errorf("creating the monitoring directory: %w", err)
	}
	if err := os.WriteFile(filepath.Join(m.Dir, rulesFileName), []byte(o.Rules), 0o644); err != nil {
		return nil, fmt.Errorf("writing the rules file: %w", err)
	}
	m.target = httptest.NewServer(m.metrics)
	m.TargetURL = m.target.URL + "/metrics"
	return m, nil
}

// checkMonitoringBinaries fails early, naming the make target that builds
// what is missing.
func checkMonitoringBinaries(binDir string) error {
	var missing []string
	for _, name := range []string{PrometheusBinary, AlertmanagerBinary} {
		path := filepath.Join(binDir, name)
		fi, err := os.Stat(path)
		if err != nil || fi.IsDir() || fi.Mode()&0o111 == 0 {
			missing = append(missing, path)
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("missing binaries: %s (run `make tools` first: it builds Prometheus and Alertmanager from their Go modules)",
			strings.Join(missing, ", "))
	}
	return nil
}

func (m *Monitoring) logf(format string, args ...any) {
	fmt.Fprintf(m.opts.Log, format+"\n", args...)
}

func (m *Monitoring) bin(name string) string { return filepath.Join(m.opts.BinDir, name) }

// alertmanagerConfig routes every alert to a receiver that sends nothing:
// the tests read the alerts through the API.
const alertmanagerConfig = `route:
  receiver: "null"
  group_wait: 1s
  group_interval: 1s
  repeat_interval: 1h
receivers:
- name: "null"
`

// startAlertmanager runs a single Alertmanager (clustering off) on a free
// port, retrying with another when the port was taken meanwhile.
func (m *Monitoring) startAlertmanager(ctx context.Context) (*process, string, error) {
	dir := filepath.Join(m.Dir, "alertmanager")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, "", err
	}
	cfg := filepath.Join(dir, "alertmanager.yaml")
	if err := os.WriteFile(cfg, []byte(alertmanagerConfig), 0o644); err != nil {
		return nil, "", fmt.Errorf("writing the alertmanager configuration: %w", err)
	}
	return m.startOnFreePort(ctx, AlertmanagerBinary, func(addr string) []string {
		return []string{
			"--config.file=" + cfg,
			"--storage.path=" + filepath.Join(dir, "data"),
			"--web.listen-address=" + addr,
			"--cluster.listen-address=", // a single instance: no gossip port
			"--log.level=info",
		}
	})
}

// startPrometheus runs Prometheus on a free port with a configuration that
// scrapes the target, loads the rules file and alerts the Alertmanager.
func (m *Monitoring) startPrometheus(ctx context.Context) (*process, string, error) {
	dir := filepath.Join(m.Dir, "prometheus")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, "", err
	}
	cfg := filepath.Join(dir, "prometheus.yaml")
	if err := os.WriteFile(cfg, []byte(m.prometheusConfig()), 0o644); err != nil {
		return nil, "", fmt.Errorf("writing the prometheus configuration: %w", err)
	}
	return m.startOnFreePort(ctx, PrometheusBinary, func(addr string) []string {
		return []string{
			"--config.file=" + cfg,
			"--storage.tsdb.path=" + filepath.Join(dir, "data"),
			"--web.listen-address=" + addr,
			"--web.enable-lifecycle", // POST /-/reload rereads the rules
			// Resend firing alerts every interval, so that the
			// Alertmanager sees a change of their annotations quickly.
			"--rules.alert.resend-delay=" + m.opts.Interval.String(),
			"--log.level=info",
		}
	})
}

// prometheusConfig scrapes the target and evaluates the rules file every
// Interval, sending alerts to the Alertmanager.
func (m *Monitoring) prometheusConfig() string {
	iv := m.opts.Interval.String()
	return fmt.Sprintf(`global:
  scrape_interval: %s
  scrape_timeout: %s
  evaluation_interval: %s
rule_files:
- %s
scrape_configs:
- job_name: test
  static_configs:
  - targets: [%q]
alerting:
  alertmanagers:
  - static_configs:
    - targets: [%q]
`, iv, iv, iv, filepath.Join(m.Dir, rulesFileName), strings.TrimPrefix(m.target.URL, "http://"), strings.TrimPrefix(m.AlertmanagerURL, "http://"))
}

// startOnFreePort starts bin with args(addr) on a free loopback port and
// waits for its /-/ready; a port taken between the probe and the bind is
// retried with another.
func (m *Monitoring) startOnFreePort(ctx context.Context, name string, args func(addr string) []string) (*process, string, error) {
	for attempt := 1; ; attempt++ {
		ports, err := freePorts(1)
		if err != nil {
			return nil, "", err
		}
		addr := fmt.Sprintf("127.0.0.1:%d", ports[0])
		url := "http://" + addr
		p, err := startProcess(name, m.bin(name), m.Dir, filepath.Join(m.Dir, "logs", name+".log"), args(addr), nil)
		if err != nil {
			return nil, "", err
		}
		err = poll(ctx, name+" ready", 100*time.Millisecond, monitoringReadyTimeout, p, func(ctx context.Context) (bool, error) {
			return httpOK(ctx, url+"/-/ready")
		})
		if err == nil {
			return p, url, nil
		}
		_ = p.stop(syscall.SIGKILL)
		if !p.addrInUse() || attempt == portAttempts {
			return nil, "", err
		}
	}
}

// httpOK reports whether GET url answers 200.
func httpOK(ctx context.Context, url string) (bool, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return false, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return false, err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	if resp.StatusCode != http.StatusOK {
		return false, fmt.Errorf("GET %s: %s: %s", url, resp.Status, strings.TrimSpace(string(body)))
	}
	return true, nil
}

// Stop stops Prometheus, then the Alertmanager and the scrape target, and
// removes Dir if StartMonitoring created it.
func (m *Monitoring) Stop() {
	m.stopOnce.Do(func() {
		for _, p := range []*process{m.prometheus, m.alertmanager} {
			if p == nil {
				continue
			}
			if err := p.stop(syscall.SIGTERM); err != nil {
				m.logf("stopping %s: %v", p.name, err)
			}
		}
		if m.target != nil {
			m.target.Close()
		}
		if m.ownDir {
			if err := os.RemoveAll(m.Dir); err != nil {
				m.logf("removing %s: %v", m.Dir, err)
			}
		}
	})
}

// Pids are the process IDs of Prometheus and the Alertmanager running now.
func (m *Monitoring) Pids() []int {
	var out []int
	for _, p := range []*process{m.prometheus, m.alertmanager} {
		if p != nil && !p.exited() {
			out = append(out, p.cmd.Process.Pid)
		}
	}
	return out
}

// StartMonitoring starts a Prometheus and an Alertmanager beside the
// environment: in a directory under Dir unless o.Dir is set, with the
// environment's binaries and log. Stop stops them too, if the test did not.
func (e *Env) StartMonitoring(ctx context.Context, o MonitoringOptions) (*Monitoring, error) {
	if o.BinDir == "" {
		o.BinDir = e.BinDir
	}
	if o.Log == nil {
		o.Log = e.opts.Log
	}
	if o.Dir == "" {
		dir, err := os.MkdirTemp(e.Dir, "monitoring-")
		if err != nil {
			return nil, fmt.Errorf("creating a monitoring directory: %w", err)
		}
		o.Dir = dir
	}
	m, err := StartMonitoring(ctx, o)
	if err != nil {
		return nil, err
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.stopped {
		m.Stop()
		return nil, fmt.Errorf("the environment is stopping")
	}
	e.monitorings = append(e.monitorings, m)
	return m, nil
}
