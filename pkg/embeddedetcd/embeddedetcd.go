// Package embeddedetcd runs a single-member etcd inside the server process,
// the default storage of a one-replica deployment.
//
// Only the server reaches it: clients connect through a unix socket in the
// data directory (socket mode 0600, directory 0700), and a single member
// has no peers, so no peer listener is opened. No TCP port is opened at
// all: nothing else on the node or in the pod's network namespace (a
// sidecar, say) can connect, let alone write an approval.
package embeddedetcd

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"go.etcd.io/etcd/server/v3/embed"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

const (
	// SocketName is the client socket's file in the data directory.
	SocketName = "etcd.sock"
	// lockName is held (flock) while a server uses the data directory.
	lockName = "virt-advisor.lock"
	// maxSocketPath is the longest path a unix socket address holds
	// (sun_path, 108 bytes on Linux, NUL included).
	maxSocketPath = 107
	// etcd keeps its raft log in memory up to a snapshot, every
	// snapshotCount writes (etcd's default: 10 000), and then keeps
	// catchUpEntries of it (5 000) for slow followers. Each entry holds a
	// whole config (several KiB): with the defaults the server's memory
	// grows by tens of MiB before the first snapshot. A single member has
	// no followers, and snapshots of its few objects are cheap.
	snapshotCount  = 1000
	catchUpEntries = 100
)

// Etcd is a running embedded etcd.
type Etcd struct {
	etcd *embed.Etcd
	lock *os.File
	// ClientURL is where the API server's storage connects.
	ClientURL string
}

// SocketPath is the client socket of an embedded etcd with its data in dir.
func SocketPath(dir string) string { return filepath.Join(dir, SocketName) }

// ClientURL is the endpoint of an embedded etcd with its data in dir,
// known before it starts.
func ClientURL(dir string) string { return "unix://" + SocketPath(dir) }

// ValidateDir says why dir cannot hold an embedded etcd: it must be
// absolute, and the socket's path must fit in a unix socket address.
func ValidateDir(dir string) error {
	if dir == "" {
		return errors.New("--embedded-etcd-dir must not be empty when --etcd-servers is not set")
	}
	if !filepath.IsAbs(dir) {
		return fmt.Errorf("--embedded-etcd-dir must be an absolute path, got %q", dir)
	}
	if p := SocketPath(filepath.Clean(dir)); len(p) > maxSocketPath {
		return fmt.Errorf("--embedded-etcd-dir %q is too long: the embedded etcd's socket %s must be at most %d bytes (a unix socket address)", dir, p, maxSocketPath)
	}
	return nil
}

// Start starts etcd with its data in dir and waits until it serves.
func Start(dir string, readyTimeout time.Duration) (*Etcd, error) {
	if err := ValidateDir(dir); err != nil {
		return nil, err
	}
	dir = filepath.Clean(dir)
	if err := privateDir(dir); err != nil {
		return nil, err
	}
	lock, err := lockDir(dir)
	if err != nil {
		return nil, err
	}
	e, err := start(dir, readyTimeout)
	if err != nil {
		_ = lock.Close()
		return nil, fmt.Errorf("starting embedded etcd in %s: %w", dir, err)
	}
	e.lock = lock
	return e, nil
}

// privateDir makes dir, or makes sure it is, accessible to its owner only:
// the socket is created before it can be restricted to mode 0600, and the
// directory is what keeps other users away meanwhile.
func privateDir(dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("creating embedded etcd dir: %w", err)
	}
	fi, err := os.Stat(dir)
	if err != nil {
		return fmt.Errorf("embedded etcd dir: %w", err)
	}
	if fi.Mode().Perm()&0o077 == 0 {
		return nil
	}
	if err := os.Chmod(dir, 0o700); err != nil {
		return fmt.Errorf("embedded etcd dir %s is accessible to other users (mode %v) and cannot be made private: %w", dir, fi.Mode().Perm(), err)
	}
	return nil
}

// lockDir takes an exclusive lock on the data directory: a second server
// on the same directory would replace the first one's socket.
func lockDir(dir string) (*os.File, error) {
	f, err := os.OpenFile(filepath.Join(dir, lockName), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, fmt.Errorf("embedded etcd dir: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		_ = f.Close()
		return nil, fmt.Errorf("embedded etcd dir %s is in use by another process (%w); each replica needs a store of its own, or use --etcd-servers", dir, err)
	}
	return f, nil
}

func start(dir string, readyTimeout time.Duration) (*Etcd, error) {
	socket := SocketPath(dir)
	clientURL := url.URL{Scheme: "unix", Path: socket}

	cfg := embed.NewConfig()
	cfg.Name = "virt-advisor"
	cfg.Dir = dir
	cfg.ListenClientUrls = []url.URL{clientURL}
	// etcd wants host:port in advertised URLs, which a socket path is
	// not; nobody reads them anyway: there are no other members to tell.
	cfg.AdvertiseClientUrls = []url.URL{}
	// One member has no peers: no peer listener. The advertised peer URL
	// only names the member in the initial cluster.
	cfg.ListenPeerUrls = []url.URL{}
	cfg.AdvertisePeerUrls = []url.URL{{Scheme: "http", Host: "localhost:0"}}
	cfg.InitialCluster = cfg.InitialClusterFromName(cfg.Name)
	// A random token makes the cluster ID of every new store unique (it
	// is derived from the token and the peer URL), so that replicas on
	// different stores can tell them apart. It is read only when the
	// store is created.
	token, err := randomToken()
	if err != nil {
		return nil, err
	}
	cfg.InitialClusterToken = "virt-advisor-" + token
	// A data dir of an earlier version was created with a TCP peer URL: a
	// single member has no peers to tell, so it does not matter.
	cfg.StrictReconfigCheck = false
	cfg.SnapshotCount = snapshotCount
	cfg.SnapshotCatchUpEntries = catchUpEntries
	cfg.AutoCompactionMode = "periodic"
	cfg.AutoCompactionRetention = "1h"
	cfg.ZapLoggerBuilder = embed.NewZapLoggerBuilder(zap.New(zapcore.NewCore(
		zapcore.NewJSONEncoder(zap.NewProductionEncoderConfig()), zapcore.Lock(os.Stderr), zapcore.ErrorLevel)))

	e, err := embed.StartEtcd(cfg)
	if err != nil {
		return nil, err
	}
	// The listener is bound before StartEtcd returns; the private
	// directory keeps others out until the socket itself is restricted.
	if err := os.Chmod(socket, 0o600); err != nil {
		e.Close()
		return nil, fmt.Errorf("restricting %s to its owner: %w", socket, err)
	}
	select {
	case <-e.Server.ReadyNotify():
		return &Etcd{etcd: e, ClientURL: "unix://" + socket}, nil
	case err := <-e.Err():
		e.Close()
		return nil, err
	case <-time.After(readyTimeout):
		e.Close()
		return nil, fmt.Errorf("embedded etcd not ready after %v", readyTimeout)
	}
}

func randomToken() (string, error) {
	b := make([]byte, 8)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("generating the embedded etcd cluster token: %w", err)
	}
	return hex.EncodeToString(b), nil
}

// ClusterID identifies the store: the etcd cluster ID, fixed when the data
// directory was created.
func (e *Etcd) ClusterID() string { return e.etcd.Server.Cluster().ID().String() }

// Err reports a fatal etcd error after start.
func (e *Etcd) Err() <-chan error { return e.etcd.Err() }

// Close stops etcd gracefully and releases the data directory.
func (e *Etcd) Close() {
	e.etcd.Close()
	if e.lock != nil {
		_ = e.lock.Close()
	}
}
