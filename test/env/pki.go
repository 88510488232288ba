package env

import (
	"bytes"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"slices"
	"time"

	certutil "k8s.io/client-go/util/cert"
	"k8s.io/client-go/util/keyutil"
)

const (
	caValidity   = 10 * 365 * 24 * time.Hour
	leafValidity = 365 * 24 * time.Hour
	// A certificate closer than this to expiry is regenerated instead of reused.
	renewBefore = 24 * time.Hour

	// The aggregator's client identity; must match --requestheader-allowed-names.
	frontProxyClientCN = "front-proxy-client"
)

var (
	clientUsages = []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}
	serverUsages = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}
)

// keyPair is a certificate with its private key, both also stored as PEM files.
type keyPair struct {
	Cert     *x509.Certificate
	Key      crypto.Signer
	CertPEM  []byte
	KeyPEM   []byte
	CertFile string
	KeyFile  string
}

// certSpec is what a leaf certificate must contain; a stored certificate that
// differs in any of these is regenerated.
type certSpec struct {
	name   string // file base name: <name>.crt, <name>.key
	cn     string
	orgs   []string
	dns    []string
	ips    []net.IP
	usages []x509.ExtKeyUsage
}

// pki holds every credential of one environment.
type pki struct {
	dir string
	// namespace the advisor is installed in: its serving certificate
	// names its Service there.
	namespace string

	clusterCA    *keyPair // signs the kube-apiserver serving cert
	clientCA     *keyPair // --client-ca-file: admin, advisor identity, test users
	frontProxyCA *keyPair // --requestheader-client-ca-file
	servingCA    *keyPair // the APIService caBundle

	apiserver        *keyPair
	admin            *keyPair
	frontProxyClient *keyPair
	advisorServing   *keyPair

	saKeyFile    string // service-account signing key (private)
	saPubKeyFile string // service-account verification key (public)
}

// leaf is one certificate of the environment: its issuer, content and
// where ensurePKI stores it.
type leaf struct {
	ca   *keyPair
	spec certSpec
	dst  **keyPair
}

// leaves lists the leaf certificates; the CAs must be loaded first.
func (p *pki) leaves() []leaf {
	return []leaf{
		{p.clusterCA, certSpec{
			name: "kube-apiserver", cn: "kube-apiserver",
			dns:    []string{"localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc", "kubernetes.default.svc.cluster.local"},
			ips:    []net.IP{net.ParseIP("127.0.0.1"), net.ParseIP("10.0.0.1")},
			usages: serverUsages,
		}, &p.apiserver},
		{p.clientCA, certSpec{
			name: "admin", cn: "admin", orgs: []string{"system:masters"}, usages: clientUsages,
		}, &p.admin},
		{p.frontProxyCA, certSpec{
			name: "front-proxy-client", cn: frontProxyClientCN, usages: clientUsages,
		}, &p.frontProxyClient},
		{p.servingCA, certSpec{
			name: "virt-advisor-serving", cn: ServiceName + "." + p.namespace + ".svc",
			dns:    []string{ServiceName + "." + p.namespace + ".svc", ServiceName + "." + p.namespace + ".svc.cluster.local", "localhost"},
			ips:    []net.IP{net.ParseIP("127.0.0.1")},
			usages: serverUsages,
		}, &p.advisorServing},
	}
}

// ensurePKI loads the credentials in dir, creating whatever is missing,
// expiring, or no longer matching its CA or spec. Reuse keeps `make run`
// restarts fast and kubeconfigs stable.
func ensurePKI(dir string) (*pki, error) { return ensurePKIFor(dir, Namespace) }

// ensurePKIFor is ensurePKI for an advisor installed in namespace.
func ensurePKIFor(dir, namespace string) (*pki, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("creating PKI directory: %w", err)
	}
	p := &pki{dir: dir, namespace: namespace}
	var err error
	for _, ca := range []struct {
		name, cn string
		dst      **keyPair
	}{
		{"cluster-ca", "virt-advisor-testenv-cluster-ca", &p.clusterCA},
		{"client-ca", "virt-advisor-testenv-client-ca", &p.clientCA},
		{"front-proxy-ca", "virt-advisor-testenv-front-proxy-ca", &p.frontProxyCA},
		{"serving-ca", "virt-advisor-testenv-serving-ca", &p.servingCA},
	} {
		if *ca.dst, err = loadOrCreateCA(dir, ca.name, ca.cn); err != nil {
			return nil, err
		}
	}
	for _, l := range p.leaves() {
		if *l.dst, err = loadOrIssue(dir, l.ca, l.spec); err != nil {
			return nil, err
		}
	}
	if p.saKeyFile, p.saPubKeyFile, err = loadOrCreateSAKey(dir); err != nil {
		return nil, err
	}
	return p, nil
}

// userCert issues a client certificate for a test user, signed by the
// cluster's client CA; kept in memory only (callers write kubeconfigs).
func (p *pki) userCert(user string, groups []string) (*keyPair, error) {
	kp, err := p.clientCA.issue(certSpec{name: "user", cn: user, orgs: groups, usages: clientUsages})
	if err != nil {
		return nil, fmt.Errorf("issuing client certificate for %q: %w", user, err)
	}
	return kp, nil
}

// loadOrCreateCA returns the CA stored as <name>.crt/.key, or a new one.
func loadOrCreateCA(dir, name, cn string) (*keyPair, error) {
	certFile, keyFile := filepath.Join(dir, name+".crt"), filepath.Join(dir, name+".key")
	if kp, err := loadKeyPair(certFile, keyFile); err == nil &&
		kp.Cert.IsCA && kp.Cert.Subject.CommonName == cn && fresh(kp.Cert) {
		return kp, nil
	}
	kp, err := newCA(cn)
	if err != nil {
		return nil, fmt.Errorf("generating CA %s: %w", name, err)
	}
	return kp, kp.write(certFile, keyFile)
}

// loadOrIssue returns the leaf stored as <spec.name>.crt/.key if it still
// chains to ca and matches spec, or issues a new one.
func loadOrIssue(dir string, ca *keyPair, spec certSpec) (*keyPair, error) {
	certFile, keyFile := filepath.Join(dir, spec.name+".crt"), filepath.Join(dir, spec.name+".key")
	if kp, err := loadKeyPair(certFile, keyFile); err == nil && fresh(kp.Cert) &&
		matchesSpec(kp.Cert, spec) && verifyChain(kp.Cert, ca.Cert, spec.usages) == nil {
		return kp, nil
	}
	kp, err := ca.issue(spec)
	if err != nil {
		return nil, fmt.Errorf("issuing certificate %s: %w", spec.name, err)
	}
	return kp, kp.write(certFile, keyFile)
}

// newCA creates a self-signed CA.
func newCA(cn string) (*keyPair, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	serial, err := randomSerial()
	if err != nil {
		return nil, err
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: cn},
		NotBefore:             now.Add(-time.Hour), // tolerate clock skew
		NotAfter:              now.Add(caValidity),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		return nil, err
	}
	return newKeyPair(der, key)
}

// issue signs a new leaf certificate for spec with a fresh key.
func (ca *keyPair) issue(spec certSpec) (*keyPair, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	serial, err := randomSerial()
	if err != nil {
		return nil, err
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: spec.cn, Organization: spec.orgs},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(leafValidity),
		KeyUsage:              x509.KeyUsageDigitalSignature,
		ExtKeyUsage:           spec.usages,
		BasicConstraintsValid: true,
		DNSNames:              spec.dns,
		IPAddresses:           spec.ips,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.Cert, key.Public(), ca.Key)
	if err != nil {
		return nil, err
	}
	return newKeyPair(der, key)
}

func newKeyPair(der []byte, key crypto.Signer) (*keyPair, error) {
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, err
	}
	keyPEM, err := keyutil.MarshalPrivateKeyToPEM(key)
	if err != nil {
		return nil, err
	}
	return &keyPair{
		Cert:    cert,
		Key:     key,
		CertPEM: pem.EncodeToMemory(&pem.Block{Type: certutil.CertificateBlockType, Bytes: der}),
		KeyPEM:  keyPEM,
	}, nil
}

// write stores the pair; the key is written first and private.
func (kp *keyPair) write(certFile, keyFile string) error {
	if err := writeFileAtomic(keyFile, kp.KeyPEM, 0o600); err != nil {
		return fmt.Errorf("writing %s: %w", keyFile, err)
	}
	if err := writeFileAtomic(certFile, kp.CertPEM, 0o644); err != nil {
		return fmt.Errorf("writing %s: %w", certFile, err)
	}
	kp.CertFile, kp.KeyFile = certFile, keyFile
	return nil
}

func loadKeyPair(certFile, keyFile string) (*keyPair, error) {
	certPEM, err := os.ReadFile(certFile)
	if err != nil {
		return nil, err
	}
	keyPEM, err := os.ReadFile(keyFile)
	if err != nil {
		return nil, err
	}
	certs, err := certutil.ParseCertsPEM(certPEM)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", certFile, err)
	}
	k, err := keyutil.ParsePrivateKeyPEM(keyPEM)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", keyFile, err)
	}
	key, ok := k.(crypto.Signer)
	if !ok {
		return nil, fmt.Errorf("%s: unsupported key type %T", keyFile, k)
	}
	pub, ok := certs[0].PublicKey.(interface{ Equal(crypto.PublicKey) bool })
	if !ok || !pub.Equal(key.Public()) {
		return nil, fmt.Errorf("%s does not match %s", keyFile, certFile)
	}
	return &keyPair{Cert: certs[0], Key: key, CertPEM: certPEM, KeyPEM: keyPEM, CertFile: certFile, KeyFile: keyFile}, nil
}

// loadOrCreateSAKey returns the service-account key files, creating an RSA
// key pair if missing (RSA because every token consumer supports RS256).
func loadOrCreateSAKey(dir string) (keyFile, pubFile string, err error) {
	keyFile, pubFile = filepath.Join(dir, "sa.key"), filepath.Join(dir, "sa.pub")
	if priv, err := keyutil.PrivateKeyFromFile(keyFile); err == nil {
		if pubs, err := keyutil.PublicKeysFromFile(pubFile); err == nil && len(pubs) == 1 {
			if s, ok := priv.(crypto.Signer); ok {
				if p, ok := pubs[0].(interface{ Equal(crypto.PublicKey) bool }); ok && p.Equal(s.Public()) {
					return keyFile, pubFile, nil
				}
			}
		}
	}
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return "", "", fmt.Errorf("generating service-account key: %w", err)
	}
	pubDER, err := x509.MarshalPKIXPublicKey(key.Public())
	if err != nil {
		return "", "", fmt.Errorf("encoding service-account public key: %w", err)
	}
	keyPEM := pem.EncodeToMemory(&pem.Block{Type: keyutil.RSAPrivateKeyBlockType, Bytes: x509.MarshalPKCS1PrivateKey(key)})
	if err := writeFileAtomic(keyFile, keyPEM, 0o600); err != nil {
		return "", "", fmt.Errorf("writing %s: %w", keyFile, err)
	}
	pubPEM := pem.EncodeToMemory(&pem.Block{Type: keyutil.PublicKeyBlockType, Bytes: pubDER})
	if err := writeFileAtomic(pubFile, pubPEM, 0o644); err != nil {
		return "", "", fmt.Errorf("writing %s: %w", pubFile, err)
	}
	return keyFile, pubFile, nil
}

// fresh reports whether cert is valid now and for a while longer.
func fresh(cert *x509.Certificate) bool {
	now := time.Now()
	return now.After(cert.NotBefore) && now.Add(renewBefore).Before(cert.NotAfter)
}

// matchesSpec compares subject, SANs and usages with what the environment needs.
func matchesSpec(cert *x509.Certificate, spec certSpec) bool {
	ipStrings := func(ips []net.IP) []string {
		s := make([]string, 0, len(ips))
		for _, ip := range ips {
			s = append(s, ip.String())
		}
		return s
	}
	return cert.Subject.CommonName == spec.cn &&
		sameSet(cert.Subject.Organization, spec.orgs) &&
		sameSet(cert.DNSNames, spec.dns) &&
		sameSet(ipStrings(cert.IPAddresses), ipStrings(spec.ips)) &&
		slices.Equal(cert.ExtKeyUsage, spec.usages)
}

func sameSet(a, b []string) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(a, b)
}

// verifyChain checks that cert is signed by ca and valid for usages.
func verifyChain(cert, ca *x509.Certificate, usages []x509.ExtKeyUsage) error {
	roots := x509.NewCertPool()
	roots.AddCert(ca)
	_, err := cert.Verify(x509.VerifyOptions{Roots: roots, KeyUsages: usages})
	return err
}

func randomSerial() (*big.Int, error) {
	return rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
}

// writeFileAtomic replaces path in one step so a crash never leaves a
// truncated certificate that would be "reused" next time.
func writeFileAtomic(path string, data []byte, mode os.FileMode) error {
	if cur, err := os.ReadFile(path); err == nil && bytes.Equal(cur, data) {
		return nil
	}
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return err
	}
	_, werr := f.Write(data)
	cerr := f.Close()
	if err := errors.Join(werr, cerr, os.Chmod(f.Name(), mode)); err != nil {
		_ = os.Remove(f.Name())
		return err
	}
	return os.Rename(f.Name(), path)
}
