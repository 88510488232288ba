package env

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"syscall"
	"time"
)

const (
	etcdReadyTimeout = 60 * time.Second
	// portAttempts bounds retries when another environment grabbed a port
	// between the free-port probe and the bind.
	portAttempts = 3
)

// startEtcd runs the main cluster's single-member etcd with its data in
// dir/etcd (reused across runs) and waits until it reports healthy.
func startEtcd(ctx context.Context, bin, dir string) (*process, string, error) {
	for attempt := 1; ; attempt++ {
		ports, err := freePorts(2)
		if err != nil {
			return nil, "", err
		}
		clientURL := fmt.Sprintf("http://127.0.0.1:%d", ports[0])
		peerURL := fmt.Sprintf("http://127.0.0.1:%d", ports[1])
		args := []string{
			"--name=default",
			"--data-dir=" + filepath.Join(dir, "etcd"),
			"--listen-client-urls=" + clientURL,
			"--advertise-client-urls=" + clientURL,
			"--listen-peer-urls=" + peerURL,
			"--initial-advertise-peer-urls=" + peerURL,
			"--initial-cluster=default=" + peerURL,
			"--log-level=warn",
			// A throwaway dev/test cluster: durability across power loss is
			// not worth the fsync latency on a small machine.
			"--unsafe-no-fsync=true",
		}
		p, err := startProcess("etcd", bin, dir, filepath.Join(dir, "logs", "etcd.log"), args, nil)
		if err != nil {
			return nil, "", err
		}
		err = poll(ctx, "etcd healthy", 100*time.Millisecond, etcdReadyTimeout, p, func(ctx context.Context) (bool, error) {
			return etcdHealthy(ctx, clientURL)
		})
		if err == nil {
			return p, clientURL, nil
		}
		_ = p.stop(syscall.SIGKILL)
		if !p.addrInUse() || attempt == portAttempts {
			return nil, "", err
		}
	}
}

// etcdDrainTime is how long a stopping etcd may finish its requests in
// flight before it is killed.
const etcdDrainTime = time.Second

// stopEtcd stops etcd with SIGTERM and kills it etcdDrainTime later: after
// closing its HTTP server it would keep the client port open for its
// request timeout (7 s) waiting for watch streams that end only when it
// closes them, so a stop would take 7 s more than the outage a test asks
// for. Its data survives the kill: etcd is crash-safe, and what it wrote
// is in the page cache (--unsafe-no-fsync only risks a power loss).
func stopEtcd(p *process) error {
	start := time.Now()
	return p.drain(func() bool { return time.Since(start) >= etcdDrainTime })
}

// etcdHealthy asks etcd's /health endpoint (true once it has a leader).
func etcdHealthy(ctx context.Context, clientURL string) (bool, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, clientURL+"/health", nil)
	if err != nil {
		return false, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return false, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return false, err
	}
	var h struct {
		Health string `json:"health"`
		Reason string `json:"reason"`
	}
	if err := json.Unmarshal(body, &h); err != nil {
		return false, fmt.Errorf("etcd /health: %s: %w", body, err)
	}
	if h.Health != "true" {
		return false, fmt.Errorf("etcd /health: %s", body)
	}
	return true, nil
}
