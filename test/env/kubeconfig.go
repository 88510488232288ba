package env

import (
	"fmt"
	"os"
	"path/filepath"

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
