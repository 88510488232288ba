package embeddedetcd

import (
	"bufio"
	"context"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/server/v3/embed"
)

// tcpListeners counts the listening TCP sockets of this process.
func tcpListeners(t *testing.T) int {
	t.Helper()
	n := 0
	for _, f := range []string{"/proc/self/net/tcp", "/proc/self/net/tcp6"} {
		file, err := os.Open(f)
		if os.IsNotExist(err) {
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		s := bufio.NewScanner(file)
		for s.Scan() {
			if fields := strings.Fields(s.Text()); len(fields) > 3 && fields[3] == "0A" { // TCP_LISTEN
				n++
			}
		}
		_ = file.Close()
	}
	return n
}

func startT(t *testing.T, dir string) *Etcd {
	t.Helper()
	e, err := Start(dir, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func client(t *testing.T, endpoint string) *clientv3.Client {
	t.Helper()
	c, err := clientv3.New(clientv3.Config{Endpoints: []string{endpoint}, DialTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

func TestServesOnlyThroughAPrivateSocket(t *testing.T) {
	if _, err := os.Stat("/proc/self/net/tcp"); err != nil {
		t.Fatalf("no /proc/self/net/tcp to count TCP listeners (the server runs on Linux): %v", err)
	}
	before := tcpListeners(t)
	dir := filepath.Join(t.TempDir(), "etcd")
	e := startT(t, dir)
	defer e.Close()

	if e.ClientURL != ClientURL(dir) {
		t.Errorf("ClientURL = %q, want %q (known before start, for --etcd-servers)", e.ClientURL, ClientURL(dir))
	}
	if got := tcpListeners(t); got != before {
		t.Errorf("listening TCP sockets: %d before start, %d after: the embedded etcd must open no TCP port", before, got)
	}
	fi, err := os.Stat(SocketPath(dir))
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode()&os.ModeSocket == 0 || fi.Mode().Perm() != 0o600 {
		t.Errorf("socket %s: mode %v, want a socket with mode 0600", SocketPath(dir), fi.Mode())
	}
	di, err := os.Stat(dir)
	if err != nil {
		t.Fatal(err)
	}
	if di.Mode().Perm() != 0o700 {
		t.Errorf("data dir mode %v, want 0700", di.Mode().Perm())
	}

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c := client(t, e.ClientURL)
	if _, err := c.Put(ctx, "/k", "v"); err != nil {
		t.Fatalf("writing through the socket: %v", err)
	}
	resp, err := c.MemberList(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got := e.ClusterID(); got != strconv.FormatUint(resp.Header.ClusterId, 16) {
		t.Errorf("ClusterID() = %s, a client reads %x", got, resp.Header.ClusterId)
	}
}

func TestMakesAnExistingDirPrivate(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "etcd")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o755); err != nil { // regardless of umask
		t.Fatal(err)
	}
	e := startT(t, dir)
	defer e.Close()
	di, err := os.Stat(dir)
	if err != nil {
		t.Fatal(err)
	}
	if di.Mode().Perm() != 0o700 {
		t.Errorf("data dir mode %v, want 0700", di.Mode().Perm())
	}
}

func TestOneServerPerDir(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "etcd")
	e := startT(t, dir)
	defer e.Close()
	if second, err := Start(dir, 10*time.Second); err == nil {
		second.Close()
		t.Fatal("a second server started on the same data dir")
	} else if !strings.Contains(err.Error(), "in use by another process") {
		t.Errorf("error %q does not say the dir is in use", err)
	}
	// The first one still serves: its socket was not replaced.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := client(t, e.ClientURL).Put(ctx, "/k", "v"); err != nil {
		t.Errorf("the first server no longer serves: %v", err)
	}
}

func TestClusterIDPerStore(t *testing.T) {
	base := t.TempDir()
	a := startT(t, filepath.Join(base, "a"))
	idA := a.ClusterID()
	a.Close()
	b := startT(t, filepath.Join(base, "b"))
	idB := b.ClusterID()
	b.Close()
	if idA == idB {
		t.Errorf("two new stores have the same cluster ID %s: replicas on different stores could not be told apart", idA)
	}
	again := startT(t, filepath.Join(base, "a"))
	defer again.Close()
	if got := again.ClusterID(); got != idA {
		t.Errorf("cluster ID after a restart = %s, want %s (the store's identity is kept)", got, idA)
	}
}

// A data dir of an earlier version (TCP listeners on loopback) is reused
// with its data.
func TestReusesADataDirOfTheTCPListener(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "etcd")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	clientURL := url.URL{Scheme: "http", Host: "127.0.0.1:0"}
	peerURL := url.URL{Scheme: "http", Host: "127.0.0.1:0"}
	cfg := embed.NewConfig()
	cfg.Name, cfg.Dir = "virt-advisor", dir
	cfg.ListenClientUrls, cfg.AdvertiseClientUrls = []url.URL{clientURL}, []url.URL{clientURL}
	cfg.ListenPeerUrls, cfg.AdvertisePeerUrls = []url.URL{peerURL}, []url.URL{peerURL}
	cfg.InitialCluster = cfg.InitialClusterFromName(cfg.Name)
	cfg.LogLevel = "error"
	listeners := tcpListeners(t)
	old, err := embed.StartEtcd(cfg)
	if err != nil {
		t.Fatal(err)
	}
	<-old.Server.ReadyNotify()
	// The control of TestServesOnlyThroughAPrivateSocket: the earlier
	// listeners are seen.
	if got := tcpListeners(t); got < listeners+2 {
		t.Errorf("listening TCP sockets with the earlier client and peer listeners: %d, want at least %d", got, listeners+2)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := client(t, "http://"+old.Clients[0].Addr().String()).Put(ctx, "/kept", "yes"); err != nil {
		t.Fatal(err)
	}
	id := old.Server.Cluster().ID().String()
	old.Close()

	e := startT(t, dir)
	defer e.Close()
	resp, err := client(t, e.ClientURL).Get(ctx, "/kept")
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Kvs) != 1 || string(resp.Kvs[0].Value) != "yes" {
		t.Errorf("data of the earlier listener lost: %v", resp.Kvs)
	}
	if e.ClusterID() != id {
		t.Errorf("cluster ID %s, want the store's %s", e.ClusterID(), id)
	}
}

func TestValidateDir(t *testing.T) {
	for _, tc := range []struct {
		dir, wantErr string
	}{
		{dir: "/var/lib/virt-advisor/etcd"},
		{dir: "", wantErr: "must not be empty"},
		{dir: "relative/etcd", wantErr: "absolute"},
		{dir: "/" + strings.Repeat("d", 100), wantErr: "too long"},
	} {
		err := ValidateDir(tc.dir)
		switch {
		case tc.wantErr == "" && err != nil:
			t.Errorf("%q: %v", tc.dir, err)
		case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
			t.Errorf("%q: error %v, want one containing %q", tc.dir, err, tc.wantErr)
		}
	}
}

// The raft log kept in memory is bounded by a snapshot every
// snapshotCount writes: 3 000 writes of 8 KiB (as many status writes of a
// config) leave a few MiB on the heap, not the 24 MiB they carry (about
// 30 MiB with etcd's defaults, and growing up to 10 000 writes).
func TestRaftLogInMemoryIsBounded(t *testing.T) {
	e := startT(t, t.TempDir())
	defer e.Close()
	c := client(t, e.ClientURL)
	heap := func() int64 {
		runtime.GC()
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		return int64(m.HeapAlloc)
	}
	value := strings.Repeat("x", 8<<10)
	before := heap()
	for i := 0; i < 3*snapshotCount; i++ {
		if _, err := c.Put(context.Background(), "/registry/advisor.kubevirt.io/virtplatformconfigs/example", value); err != nil {
			t.Fatal(err)
		}
	}
	if grown := heap() - before; grown > 10<<20 {
		t.Errorf("the heap grew by %d MiB over %d writes of 8 KiB: the raft log is not bounded", grown>>20, 3*snapshotCount)
	}
}
