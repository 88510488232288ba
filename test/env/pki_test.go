package env

import (
	"crypto/tls"
	"crypto/x509"
	"net"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

func TestEnsurePKICertificates(t *testing.T) {
	p, err := ensurePKI(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name   string
		cert   *keyPair
		ca     *keyPair
		usage  x509.ExtKeyUsage
		cn     string
		orgs   []string
		dns    []string
		ips    []string
		notFor []*keyPair // CAs that must not verify it
	}{
		{
			name: "kube-apiserver serving", cert: p.apiserver, ca: p.clusterCA, usage: x509.ExtKeyUsageServerAuth,
			cn:     "kube-apiserver",
			dns:    []string{"localhost", "kubernetes.default.svc"},
			ips:    []string{"127.0.0.1"},
			notFor: []*keyPair{p.clientCA, p.servingCA},
		},
		{
			name: "admin client", cert: p.admin, ca: p.clientCA, usage: x509.ExtKeyUsageClientAuth,
			cn: "admin", orgs: []string{"system:masters"},
			notFor: []*keyPair{p.frontProxyCA, p.clusterCA},
		},
		{
			name: "front-proxy client", cert: p.frontProxyClient, ca: p.frontProxyCA, usage: x509.ExtKeyUsageClientAuth,
			cn:     "front-proxy-client",
			notFor: []*keyPair{p.clientCA},
		},
		{
			name: "virt-advisor serving", cert: p.advisorServing, ca: p.servingCA, usage: x509.ExtKeyUsageServerAuth,
			cn:     "virt-advisor.virt-advisor.svc",
			dns:    []string{"virt-advisor.virt-advisor.svc", "localhost"},
			ips:    []string{"127.0.0.1"},
			notFor: []*keyPair{p.clusterCA},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := tc.cert.Cert
			if err := verifyChain(c, tc.ca.Cert, []x509.ExtKeyUsage{tc.usage}); err != nil {
				t.Errorf("does not chain to its CA for %v: %v", tc.usage, err)
			}
			other := x509.ExtKeyUsageServerAuth
			if tc.usage == x509.ExtKeyUsageServerAuth {
				other = x509.ExtKeyUsageClientAuth
			}
			if err := verifyChain(c, tc.ca.Cert, []x509.ExtKeyUsage{other}); err == nil {
				t.Errorf("unexpectedly valid for %v", other)
			}
			for _, ca := range tc.notFor {
				if verifyChain(c, ca.Cert, []x509.ExtKeyUsage{tc.usage}) == nil {
					t.Errorf("unexpectedly verified by %s", ca.Cert.Subject.CommonName)
				}
			}
			if c.IsCA {
				t.Error("leaf certificate is a CA")
			}
			if c.Subject.CommonName != tc.cn {
				t.Errorf("CN = %q, want %q", c.Subject.CommonName, tc.cn)
			}
			if !sameSet(c.Subject.Organization, tc.orgs) {
				t.Errorf("O = %v, want %v", c.Subject.Organization, tc.orgs)
			}
			for _, host := range append(slices.Clone(tc.dns), tc.ips...) {
				if err := c.VerifyHostname(host); err != nil {
					t.Errorf("SAN %s: %v", host, err)
				}
			}
			if len(tc.dns) == 0 && len(tc.ips) == 0 && (len(c.DNSNames) > 0 || len(c.IPAddresses) > 0) {
				t.Errorf("client certificate has SANs %v %v", c.DNSNames, c.IPAddresses)
			}
			if _, err := tls.LoadX509KeyPair(tc.cert.CertFile, tc.cert.KeyFile); err != nil {
				t.Errorf("files are not a usable TLS key pair: %v", err)
			}
		})
	}
}

func TestEnsurePKICAs(t *testing.T) {
	p, err := ensurePKI(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	cas := map[string]*keyPair{"cluster": p.clusterCA, "client": p.clientCA, "front-proxy": p.frontProxyCA, "serving": p.servingCA}
	seen := map[string]string{}
	for name, ca := range cas {
		if !ca.Cert.IsCA || ca.Cert.KeyUsage&x509.KeyUsageCertSign == 0 {
			t.Errorf("%s CA cannot sign certificates", name)
		}
		key := string(ca.Cert.RawSubjectPublicKeyInfo)
		if other, dup := seen[key]; dup {
			t.Errorf("%s and %s CAs share a key: trust domains must be separate", name, other)
		}
		seen[key] = name
	}
	for _, f := range []string{p.saKeyFile, p.saPubKeyFile} {
		if _, err := os.Stat(f); err != nil {
			t.Errorf("service-account key: %v", err)
		}
	}
	if fi, err := os.Stat(p.admin.KeyFile); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("admin key file mode: %v %v, want 0600", fi.Mode().Perm(), err)
	}
}

func TestEnsurePKIReuse(t *testing.T) {
	dir := t.TempDir()
	first, err := ensurePKI(dir)
	if err != nil {
		t.Fatal(err)
	}
	readSA := func() string {
		b, err := os.ReadFile(filepath.Join(dir, "sa.key"))
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	sa := readSA()

	tests := []struct {
		name        string
		mutate      func(t *testing.T)
		wantNewCA   bool // client CA regenerated
		wantNewLeaf bool // admin cert regenerated
	}{
		{name: "unchanged files are reused", mutate: func(*testing.T) {}},
		{
			name: "a missing leaf is reissued by the same CA",
			mutate: func(t *testing.T) {
				if err := os.Remove(filepath.Join(dir, "admin.crt")); err != nil {
					t.Fatal(err)
				}
			},
			wantNewLeaf: true,
		},
		{
			name: "a new CA reissues its leaves",
			mutate: func(t *testing.T) {
				if err := os.Remove(filepath.Join(dir, "client-ca.key")); err != nil {
					t.Fatal(err)
				}
			},
			wantNewCA: true, wantNewLeaf: true,
		},
		{
			name: "a key not matching its certificate is replaced",
			mutate: func(t *testing.T) {
				other, err := os.ReadFile(filepath.Join(dir, "front-proxy-client.key"))
				if err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(filepath.Join(dir, "admin.key"), other, 0o600); err != nil {
					t.Fatal(err)
				}
			},
			wantNewLeaf: true,
		},
	}
	prev := first
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tc.mutate(t)
			next, err := ensurePKI(dir)
			if err != nil {
				t.Fatal(err)
			}
			if got := !next.clientCA.Cert.Equal(prev.clientCA.Cert); got != tc.wantNewCA {
				t.Errorf("client CA regenerated = %v, want %v", got, tc.wantNewCA)
			}
			if got := !next.admin.Cert.Equal(prev.admin.Cert); got != tc.wantNewLeaf {
				t.Errorf("admin cert regenerated = %v, want %v", got, tc.wantNewLeaf)
			}
			if !next.apiserver.Cert.Equal(prev.apiserver.Cert) {
				t.Error("unrelated kube-apiserver cert was regenerated")
			}
			if err := verifyChain(next.admin.Cert, next.clientCA.Cert, clientUsages); err != nil {
				t.Errorf("admin cert does not chain to the current client CA: %v", err)
			}
			if readSA() != sa {
				t.Error("service-account key was regenerated")
			}
			prev = next
		})
	}
}

func TestUserCert(t *testing.T) {
	p, err := ensurePKI(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		user   string
		groups []string
	}{
		{user: "alice"},
		{user: "bob", groups: []string{"approvers", "system:authenticated"}},
	}
	for _, tc := range tests {
		t.Run(tc.user, func(t *testing.T) {
			kp, err := p.userCert(tc.user, tc.groups)
			if err != nil {
				t.Fatal(err)
			}
			if err := verifyChain(kp.Cert, p.clientCA.Cert, clientUsages); err != nil {
				t.Errorf("does not chain to the client CA: %v", err)
			}
			if kp.Cert.Subject.CommonName != tc.user || !sameSet(kp.Cert.Subject.Organization, tc.groups) {
				t.Errorf("subject = %v, want CN=%s O=%v", kp.Cert.Subject, tc.user, tc.groups)
			}
			if _, err := tls.X509KeyPair(kp.CertPEM, kp.KeyPEM); err != nil {
				t.Errorf("not a usable TLS key pair: %v", err)
			}
		})
	}
}

func TestMatchesSpec(t *testing.T) {
	ca, err := newCA("test-ca")
	if err != nil {
		t.Fatal(err)
	}
	base := certSpec{name: "x", cn: "x", orgs: []string{"a", "b"}, dns: []string{"localhost"},
		ips: []net.IP{net.ParseIP("127.0.0.1")}, usages: serverUsages}
	kp, err := ca.issue(base)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name   string
		modify func(s *certSpec)
		want   bool
	}{
		{"same", func(*certSpec) {}, true},
		{"orgs in another order", func(s *certSpec) { s.orgs = []string{"b", "a"} }, true},
		{"other CN", func(s *certSpec) { s.cn = "y" }, false},
		{"extra DNS SAN", func(s *certSpec) { s.dns = append(s.dns, "kubernetes") }, false},
		{"other IP", func(s *certSpec) { s.ips = []net.IP{net.ParseIP("10.0.0.1")} }, false},
		{"other usage", func(s *certSpec) { s.usages = clientUsages }, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := base
			s.orgs, s.dns, s.ips = slices.Clone(base.orgs), slices.Clone(base.dns), slices.Clone(base.ips)
			tc.modify(&s)
			if got := matchesSpec(kp.Cert, s); got != tc.want {
				t.Errorf("matchesSpec = %v, want %v", got, tc.want)
			}
		})
	}
}
