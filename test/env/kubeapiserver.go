package env

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

const kubeAPIServerReadyTimeout = 2 * time.Minute

// kubeAPIServerArgs is the command line of the main cluster's API server.
func kubeAPIServerArgs(p *pki, dir, etcdURL string, port int) []string {
	return []string{
		"--etcd-servers=" + etcdURL,
		fmt.Sprintf("--secure-port=%d", port),
		"--bind-address=127.0.0.1",
		"--advertise-address=127.0.0.1",
		// Never used with explicit cert files, but keeps the default
		// (/var/run/kubernetes) from being touched.
		"--cert-dir=" + filepath.Join(dir, "pki", "kube-apiserver"),
		"--tls-cert-file=" + p.apiserver.CertFile,
		"--tls-private-key-file=" + p.apiserver.KeyFile,
		"--client-ca-file=" + p.clientCA.CertFile,
		"--service-account-key-file=" + p.saPubKeyFile,
		"--service-account-signing-key-file=" + p.saKeyFile,
		"--service-account-issuer=https://kubernetes.default.svc",
		"--authorization-mode=Node,RBAC",
		"--service-cluster-ip-range=10.0.0.0/24",
		// Service routing resolves the ExternalName Service of the
		// APIService to localhost:<port>; endpoint routing rejects it.
		"--enable-aggregator-routing=false",
		// Aggregation: how the aggregator authenticates to virt-advisor and
		// how virt-advisor trusts the forwarded user (published in
		// kube-system/extension-apiserver-authentication).
		"--requestheader-client-ca-file=" + p.frontProxyCA.CertFile,
		"--requestheader-allowed-names=" + frontProxyClientCN,
		"--requestheader-extra-headers-prefix=X-Remote-Extra-",
		"--requestheader-group-headers=X-Remote-Group",
		"--requestheader-username-headers=X-Remote-User",
		"--proxy-client-cert-file=" + p.frontProxyClient.CertFile,
		"--proxy-client-key-file=" + p.frontProxyClient.KeyFile,
		// No kube-controller-manager runs, so nothing would create the
		// default ServiceAccounts this plugin requires for pods.
		"--disable-admission-plugins=ServiceAccount",
		"--v=1",
	}
}

// startKubeAPIServer runs kube-apiserver and waits until /readyz passes and
// the aggregation configuration is published for extension API servers.
func startKubeAPIServer(ctx context.Context, bin, dir string, p *pki, etcdURL string) (*process, *rest.Config, error) {
	for attempt := 1; ; attempt++ {
		ports, err := freePorts(1)
		if err != nil {
			return nil, nil, err
		}
		url := fmt.Sprintf("https://127.0.0.1:%d", ports[0])
		audit, err := writeAuditPolicy(dir)
		if err != nil {
			return nil, nil, err
		}
		proc, err := startProcess("kube-apiserver", bin, dir, filepath.Join(dir, "logs", "kube-apiserver.log"),
			append(kubeAPIServerArgs(p, dir, etcdURL, ports[0]), audit...), nil)
		if err != nil {
			return nil, nil, err
		}
		cfg := restConfig(url, p.clusterCA.CertPEM, p.admin)
		err = waitKubeAPIServerReady(ctx, proc, cfg)
		if err == nil {
			return proc, cfg, nil
		}
		_ = proc.stop(syscall.SIGKILL)
		if !proc.addrInUse() || attempt == portAttempts {
			return nil, nil, err
		}
	}
}

func waitKubeAPIServerReady(ctx context.Context, proc *process, cfg *rest.Config) error {
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return fmt.Errorf("kube-apiserver client: %w", err)
	}
	err = poll(ctx, "kube-apiserver /readyz", 250*time.Millisecond, kubeAPIServerReadyTimeout, proc, func(ctx context.Context) (bool, error) {
		body, err := cs.Discovery().RESTClient().Get().AbsPath("/readyz").Param("verbose", "1").DoRaw(ctx)
		if err != nil {
			return false, fmt.Errorf("%w: %s", err, failedChecks(body))
		}
		return true, nil
	})
	if err != nil {
		return err
	}
	// virt-advisor reads its client CA and requestheader config from here at
	// startup; a post-start hook writes it shortly after /readyz may pass.
	return poll(ctx, "kube-system/extension-apiserver-authentication", 250*time.Millisecond, 30*time.Second, proc, func(ctx context.Context) (bool, error) {
		cm, err := cs.CoreV1().ConfigMaps("kube-system").Get(ctx, "extension-apiserver-authentication", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		if _, ok := cm.Data["requestheader-client-ca-file"]; !ok {
			return false, errors.New("requestheader-client-ca-file not published yet")
		}
		return true, nil
	})
}

// stopKubeAPIServer shuts kube-apiserver down gracefully up to the point
// where it has stopped listening and answered its last ordinary request.
// After that it would wait up to its request timeout (60 s) for watches
// that never end on their own; it is killed instead, which its watchers
// see as the connection closing, as they would at the end of that wait.
func stopKubeAPIServer(p *process) error {
	return p.drain(func() bool {
		return p.logContains(`name="InFlightRequestsDrained"`) && p.logContains(`name="HTTPServerStoppedListening"`)
	})
}

// failedChecks extracts the "[-]check failed" lines of a verbose /readyz.
func failedChecks(body []byte) string {
	var failed []string
	for _, l := range strings.Split(string(body), "\n") {
		if strings.HasPrefix(l, "[-]") {
			failed = append(failed, l)
		}
	}
	return strings.Join(failed, "; ")
}
