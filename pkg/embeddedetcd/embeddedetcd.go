// Package embeddedetcd runs a single-member etcd inside the server process,
// the default storage of a one-replica deployment. It listens on loopback
// ports chosen at start, so several servers and test runs share a machine.
package embeddedetcd

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"strconv"
	"syscall"
	"time"

	"go.etcd.io/etcd/server/v3/embed"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

// Etcd is a running embedded etcd.
type Etcd struct {
	etcd *embed.Etcd
	// ClientURL is where the API server's storage connects.
	ClientURL string
}

// Start starts etcd with its data in dir and waits until it serves.
// Ports are picked free and retried, since another process may take a
// port between picking and binding.
func Start(dir string, readyTimeout time.Duration) (*Etcd, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("creating embedded etcd dir: %w", err)
	}
	var lastErr error
	for attempt := 0; attempt < 5; attempt++ {
		e, err := start(dir, readyTimeout)
		if err == nil {
			return e, nil
		}
		lastErr = err
		if !isAddrInUse(err) {
			break
		}
	}
	return nil, fmt.Errorf("starting embedded etcd in %s: %w", dir, lastErr)
}

func start(dir string, readyTimeout time.Duration) (*Etcd, error) {
	ports, err := freePorts(2)
	if err != nil {
		return nil, err
	}
	clientURL := url.URL{Scheme: "http", Host: net.JoinHostPort("127.0.0.1", strconv.Itoa(ports[0]))}
	peerURL := url.URL{Scheme: "http", Host: net.JoinHostPort("127.0.0.1", strconv.Itoa(ports[1]))}

	cfg := embed.NewConfig()
	cfg.Name = "virt-advisor"
	cfg.Dir = dir
	cfg.ListenClientUrls = []url.URL{clientURL}
	cfg.AdvertiseClientUrls = []url.URL{clientURL}
	cfg.ListenPeerUrls = []url.URL{peerURL}
	cfg.AdvertisePeerUrls = []url.URL{peerURL}
	cfg.InitialCluster = cfg.InitialClusterFromName(cfg.Name)
	// A restart reuses the data dir with new ports: a single member has no
	// peers to tell, so the stored peer URL does not matter.
	cfg.StrictReconfigCheck = false
	cfg.AutoCompactionMode = "periodic"
	cfg.AutoCompactionRetention = "1h"
	cfg.ZapLoggerBuilder = embed.NewZapLoggerBuilder(zap.New(zapcore.NewCore(
		zapcore.NewJSONEncoder(zap.NewProductionEncoderConfig()), zapcore.Lock(os.Stderr), zapcore.ErrorLevel)))

	e, err := embed.StartEtcd(cfg)
	if err != nil {
		return nil, err
	}
	select {
	case <-e.Server.ReadyNotify():
		return &Etcd{etcd: e, ClientURL: clientURL.String()}, nil
	case err := <-e.Err():
		e.Close()
		return nil, err
	case <-time.After(readyTimeout):
		e.Close()
		return nil, fmt.Errorf("embedded etcd not ready after %v", readyTimeout)
	}
}

// Err reports a fatal etcd error after start.
func (e *Etcd) Err() <-chan error { return e.etcd.Err() }

// Close stops etcd gracefully.
func (e *Etcd) Close() { e.etcd.Close() }

func freePorts(n int) ([]int, error) {
	var ports []int
	for i := 0; i < n; i++ {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("finding a free loopback port: %w", err)
		}
		defer l.Close()
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

func isAddrInUse(err error) bool {
	return errors.Is(err, syscall.EADDRINUSE)
}
