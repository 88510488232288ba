package env

import (
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"testing"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// A kubeconfig via a proxy reaches the server through it with TLS verified
// against the server's own name, whether that is an IP or a DNS name.
func TestKubeconfigVia(t *testing.T) {
	dir := t.TempDir()
	p, err := ensurePKI(dir + "/pki")
	if err != nil {
		t.Fatal(err)
	}
	cert, err := tls.X509KeyPair(p.apiserver.CertPEM, p.apiserver.KeyPEM)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{Certificates: []tls.Certificate{cert}})
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { fmt.Fprint(w, "ok") })}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { srv.Close() })
	_, port, _ := net.SplitHostPort(ln.Addr().String())

	proxy, err := NewProxy(ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { proxy.Close() })
	e := &Env{Dir: dir}

	tests := []struct {
		name, server, wantServerName string
	}{
		{"IP address", "https://127.0.0.1:" + port, ""},
		{"host name", "https://localhost:" + port, "localhost"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			orig := dir + "/" + strings.ReplaceAll(tc.name, " ", "-") + ".kubeconfig"
			cfg := restConfig(tc.server, p.clusterCA.CertPEM, p.admin)
			if err := writeKubeconfig(orig, "admin", cfg); err != nil {
				t.Fatal(err)
			}
			via, err := e.KubeconfigVia(orig, proxy.Addr())
			if err != nil {
				t.Fatal(err)
			}
			if !strings.HasPrefix(via, dir+"/") {
				t.Errorf("written to %s, outside the environment's directory", via)
			}
			got, err := clientcmd.BuildConfigFromFlags("", via)
			if err != nil {
				t.Fatal(err)
			}
			if got.Host != "https://"+proxy.Addr() || got.ServerName != tc.wantServerName {
				t.Errorf("host %q server name %q, want https://%s and %q", got.Host, got.ServerName, proxy.Addr(), tc.wantServerName)
			}
			if get(t, got) != "ok" {
				t.Error("no answer through the proxy")
			}
			if orig, _ := os.ReadFile(orig); strings.Contains(string(orig), proxy.Addr()) {
				t.Error("the original kubeconfig was changed")
			}
		})
	}

	// The proxy cannot stand in for another server: a name the certificate
	// does not carry fails verification.
	orig := dir + "/wrong-name.kubeconfig"
	if err := writeKubeconfig(orig, "admin", restConfig("https://wrong.example:"+port, p.clusterCA.CertPEM, p.admin)); err != nil {
		t.Fatal(err)
	}
	via, err := e.KubeconfigVia(orig, proxy.Addr())
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", via)
	if err != nil {
		t.Fatal(err)
	}
	client, err := rest.HTTPClientFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if resp, err := client.Get(cfg.Host); err == nil || !strings.Contains(err.Error(), "certificate") {
		if resp != nil {
			resp.Body.Close()
		}
		t.Errorf("GET with a name the certificate lacks: %v, want a certificate error", err)
	}

	if _, err := e.KubeconfigVia(orig, "no-port"); err == nil {
		t.Error("KubeconfigVia accepted an address without a port")
	}
}

func get(t *testing.T, cfg *rest.Config) string {
	t.Helper()
	client, err := rest.HTTPClientFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := client.Get(cfg.Host)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return string(body)
}
