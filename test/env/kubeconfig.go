package env

import (
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strings"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// Client-side rate limits well above client-go's defaults (5/10): e2e tests
// poll a lot, and throttling there only slows tests down.
const (
	clientQPS   = 100
	clientBurst = 200
)

// restConfig returns a client config authenticating with a client certificate.
func restConfig(server string, caPEM []byte, client *keyPair) *rest.Config {
	return &rest.Config{
		Host: server,
		TLSClientConfig: rest.TLSClientConfig{
			CAData:   caPEM,
			CertData: client.CertPEM,
			KeyData:  client.KeyPEM,
		},
		QPS:   clientQPS,
		Burst: clientBurst,
	}
}

// writeKubeconfig stores cfg (certificates or token embedded, so the file is usable
// on its own) as a kubeconfig with a single context.
func writeKubeconfig(path, user string, cfg *rest.Config) error {
	kc := clientcmdapi.NewConfig()
	kc.Clusters["virt-advisor-testenv"] = &clientcmdapi.Cluster{
		Server:                   cfg.Host,
		CertificateAuthorityData: cfg.CAData,
	}
	kc.AuthInfos[user] = &clientcmdapi.AuthInfo{
		ClientCertificateData: cfg.CertData,
		ClientKeyData:         cfg.KeyData,
		Token:                 cfg.BearerToken,
	}
	kc.Contexts[user] = &clientcmdapi.Context{Cluster: "virt-advisor-testenv", AuthInfo: user}
	kc.CurrentContext = user
	data, err := clientcmd.Write(*kc)
	if err != nil {
		return fmt.Errorf("encoding kubeconfig %s: %w", path, err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return fmt.Errorf("writing kubeconfig %s: %w", path, err)
	}
	if err := writeFileAtomic(path, data, 0o600); err != nil {
		return fmt.Errorf("writing kubeconfig %s: %w", path, err)
	}
	return nil
}

// KubeconfigVia writes a copy of kubeconfig whose clusters are reached at
// hostPort (e.g. a Proxy's Addr) instead of their server's host and port,
// and returns its path (next to the environment's other kubeconfigs). TLS
// is still verified end to end against the original host name: the proxy
// only forwards bytes, so it cannot read or forge anything.
func (e *Env) KubeconfigVia(kubeconfig, hostPort string) (string, error) {
	host, port, err := net.SplitHostPort(hostPort)
	if err != nil || host == "" || port == "" {
		return "", fmt.Errorf("kubeconfig via %q: want host:port", hostPort)
	}
	kc, err := clientcmd.LoadFromFile(kubeconfig)
	if err != nil {
		return "", fmt.Errorf("reading kubeconfig %s: %w", kubeconfig, err)
	}
	// The copy lives elsewhere: file references must not be relative.
	if err := clientcmd.ResolveLocalPaths(kc); err != nil {
		return "", fmt.Errorf("reading kubeconfig %s: %w", kubeconfig, err)
	}
	for name, c := range kc.Clusters {
		u, err := url.Parse(c.Server)
		if err != nil || u.Host == "" {
			return "", fmt.Errorf("kubeconfig %s: cluster %q has no usable server URL %q", kubeconfig, name, c.Server)
		}
		if c.TLSServerName == "" && u.Hostname() != host {
			c.TLSServerName = u.Hostname() // the name the serving cert is checked against
		}
		u.Host = hostPort
		c.Server = u.String()
	}
	data, err := clientcmd.Write(*kc)
	if err != nil {
		return "", fmt.Errorf("encoding kubeconfig via %s: %w", hostPort, err)
	}
	base := strings.TrimSuffix(filepath.Base(kubeconfig), ".kubeconfig")
	path := filepath.Join(e.Dir, "via", fmt.Sprintf("%s-via-%s.kubeconfig", base, unsafeFileChars.ReplaceAllString(hostPort, "_")))
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return "", fmt.Errorf("writing kubeconfig %s: %w", path, err)
	}
	if err := writeFileAtomic(path, data, 0o600); err != nil {
		return "", fmt.Errorf("writing kubeconfig %s: %w", path, err)
	}
	return path, nil
}
