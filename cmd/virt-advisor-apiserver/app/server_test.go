package app

import (
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"

	"github.com/kubevirt/virt-advisor/pkg/embeddedetcd"
)

// kubeconfig writes a kubeconfig of a main cluster nobody serves: building
// the configuration reads it and contacts nobody.
func kubeconfig(t *testing.T, dir string) string {
	t.Helper()
	path := filepath.Join(dir, "kubeconfig")
	const cfg = `apiVersion: v1
kind: Config
clusters:
- name: main
  cluster: {server: "https://127.0.0.1:1", insecure-skip-tls-verify: true}
users:
- name: me
  user: {token: "not-a-token"}
contexts:
- name: main
  context: {cluster: main, user: me}
current-context: main
`
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

var errNotStarted = errors.New("the embedded etcd would start here")

// Flags are validated, and every file they name read, before the embedded
// etcd starts: a bad flag never touches the etcd data directory.
func TestInvalidFlagsFailBeforeTheEmbeddedEtcdStarts(t *testing.T) {
	tests := []struct {
		name string
		// flags are added to a valid command line; "$DIR" is a fresh
		// directory.
		flags []string
		// wantErr is a substring of the error; errNotStarted's message
		// when the flags are valid.
		wantErr string
	}{
		{name: "valid flags reach the start", wantErr: errNotStarted.Error()},
		{name: "no plan slots", flags: []string{"--max-concurrent-plans=0"},
			wantErr: "--max-concurrent-plans must be greater than zero"},
		{name: "lease shorter than the renew deadline", flags: []string{"--leader-elect-lease-duration=5s"},
			wantErr: "--leader-elect-lease-duration (5s) must be greater than --leader-elect-renew-deadline (10s)"},
		{name: "an etcd dir too long for a socket", flags: []string{"--embedded-etcd-dir=/" + strings.Repeat("x", 100)},
			wantErr: "is too long"},
		{name: "a kubeconfig that does not exist", flags: []string{"--kubeconfig=$DIR/missing"},
			wantErr: "$DIR/missing"},
		{name: "a serving certificate that does not exist", flags: []string{"--tls-cert-file=$DIR/missing.crt", "--tls-private-key-file=$DIR/missing.key"},
			wantErr: "$DIR/missing.crt"},
		{name: "an encryption configuration that does not exist", flags: []string{"--encryption-provider-config=$DIR/missing-encryption.yaml"},
			wantErr: "--encryption-provider-config: stat $DIR/missing-encryption.yaml: no such file or directory"},
		{name: "an audit policy that does not exist", flags: []string{"--audit-policy-file=$DIR/missing-policy.yaml", "--audit-log-path=-"},
			wantErr: "$DIR/missing-policy.yaml"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			etcdDir := filepath.Join(dir, "etcd")
			args := []string{
				"--embedded-etcd-dir=" + etcdDir,
				"--cert-dir=" + filepath.Join(dir, "certs"),
				"--bind-address=127.0.0.1",
				"--secure-port=" + strconv.Itoa(freePort(t)),
				"--kubeconfig=" + kubeconfig(t, dir),
				"--authentication-kubeconfig=" + kubeconfig(t, dir),
				"--authorization-kubeconfig=" + kubeconfig(t, dir),
				"--authentication-skip-lookup",
			}
			for _, f := range tt.flags {
				args = append(args, strings.ReplaceAll(f, "$DIR", dir))
			}
			o := NewOptions()
			fs := pflag.NewFlagSet("virt-advisor-apiserver", pflag.ContinueOnError)
			o.AddFlags(fs)
			if err := fs.Parse(args); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() {
				if l := o.Recommended.SecureServing.Listener; l != nil {
					_ = l.Close()
				}
			})

			started := false
			err := run(context.Background(), o, func(string, time.Duration) (*embeddedetcd.Etcd, error) {
				started = true
				return nil, errNotStarted
			})

			want := strings.ReplaceAll(tt.wantErr, "$DIR", dir)
			if err == nil || !strings.Contains(err.Error(), want) {
				t.Fatalf("run() = %v, want an error containing %q", err, want)
			}
			if valid := tt.wantErr == errNotStarted.Error(); started != valid {
				t.Errorf("embedded etcd started: %v, want %v", started, valid)
			}
			if _, err := os.Stat(etcdDir); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("the embedded etcd directory was touched: %v", err)
			}
		})
	}
}
