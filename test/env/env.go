// Package env runs a local control plane for virt-advisor: etcd,
// kube-apiserver with aggregation, the test CRDs and baseline objects, and
// virt-advisor-apiserver registered as an APIService. It is the one
// implementation behind `make run` (test/cmd/local-up) and the e2e suite.
package env

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubevirt/virt-advisor/test/env/fakemco"
	"github.com/kubevirt/virt-advisor/test/names"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

const (
	// AdvisorBinary is the server's file in BinDir (make build).
	AdvisorBinary = "virt-advisor-apiserver"
	modulePath    = "github.com/kubevirt/virt-advisor"
)

// Options configures Start.
type Options struct {
	// Dir holds PKI, etcd data, kubeconfigs and logs. Reused when it exists
	// (PKI and data survive restarts). Empty: a temporary directory that
	// Stop removes.
	Dir string
	// BinDir holds kube-apiserver, kubectl, etcd and virt-advisor-apiserver
	// (default <RepoRoot>/_output/bin).
	BinDir string
	// RepoRoot is where artifacts/ is found (default: the directory of the
	// virt-advisor go.mod above the working directory).
	RepoRoot string
	// Log receives progress lines; nil discards them.
	Log io.Writer
	// AdvisorArgs are extra flags for every virt-advisor-apiserver instance
	// (e.g. --leader-elect=true, --etcd-servers=…, --v=4).
	AdvisorArgs []string
	// AdvisorSharedEtcd runs every advisor instance on the main cluster's
	// etcd (--etcd-servers=Env.EtcdURL, under the advisor's own key prefix)
	// instead of an embedded etcd each: the HA layout, where replicas share
	// their storage. An explicit --etcd-servers in the args wins.
	AdvisorSharedEtcd bool
	// FakeMCO tunes the fake MachineConfig operator that renders
	// MachineConfigPools and walks their status through rollouts (see
	// fakemco.go); zero durations select the `make run` timings (5 s render
	// delay, 2 s per node). It logs to Dir/logs/fake-mco.log.
	FakeMCO fakemco.Options
	// DisableFakeMCO leaves MachineConfigPools alone: nothing is rendered
	// or rolled out, the seeded status stays as it is.
	DisableFakeMCO bool
	// Namespace installs the server into another namespace than that of
	// artifacts/deploy (Namespace), as an administrator would: every
	// object of the manifests there is moved, and every reference to it
	// (ServiceAccount subjects, the APIService's Service) follows.
	Namespace string
}

// Env is a running control plane.
type Env struct {
	Dir string
	// Kubeconfig is the admin kubeconfig (client cert in system:masters).
	Kubeconfig  string
	AdminConfig *rest.Config
	// AdvisorKubeconfig is the identity virt-advisor-apiserver runs with:
	// the service account <AdvisorNamespace>/virt-advisor-apiserver.
	AdvisorKubeconfig string
	// AdvisorNamespace is the namespace the server is installed in
	// (Options.Namespace, by default Namespace), AdvisorUser its
	// ServiceAccount's user name.
	AdvisorNamespace, AdvisorUser string
	KubeAPIServerURL              string
	// EtcdURL is the main cluster's etcd; tests may also point an advisor at
	// it with --etcd-servers (the advisor uses its own key prefix).
	EtcdURL string
	// ServingCAFile is the CA of the advisor's serving certificate (the
	// APIService caBundle).
	ServingCAFile string
	BinDir        string
	RepoRoot      string

	opts      Options
	ownDir    bool     // Dir was created by Start and is removed by Stop
	lock      *os.File // held while running; see lockDir
	pki       *pki
	applier   *applier
	etcd      *process // the current run (restart.go); under mu after Start
	apiserver *process // likewise

	stopFakeMCO func() // nil unless the fake MCO runs
	fakeMCO     *fakemco.Operator

	deploy []*unstructured.Unstructured // artifacts/deploy, for register

	mu          sync.Mutex
	advisors    map[string]*Advisor // latest instance of each name
	monitorings []*Monitoring       // started by StartMonitoring, stopped by Stop
	registered  string              // name of the instance behind the APIService
	stopped     bool                // Stop began: components stay down
	stopOnce    sync.Once
}

// Start brings up the whole environment and returns once the APIService
// v1alpha1.advisor.kubevirt.io is Available. On error everything already
// started is stopped again.
func Start(ctx context.Context, o Options) (_ *Env, err error) {
	e, err := newEnv(o)
	if err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			e.Stop()
		}
	}()

	e.logf("preparing PKI in %s", filepath.Join(e.Dir, "pki"))
	if e.pki, err = ensurePKIFor(filepath.Join(e.Dir, "pki"), e.AdvisorNamespace); err != nil {
		return nil, err
	}
	e.ServingCAFile = e.pki.servingCA.CertFile

	e.logf("starting etcd (log %s)", filepath.Join(e.Dir, "logs", "etcd.log"))
	if e.etcd, e.EtcdURL, err = startEtcd(ctx, e.bin("etcd"), e.Dir); err != nil {
		return nil, err
	}
	e.logf("etcd ready at %s", e.EtcdURL)

	e.logf("starting kube-apiserver (log %s)", filepath.Join(e.Dir, "logs", "kube-apiserver.log"))
	if e.apiserver, e.AdminConfig, err = startKubeAPIServer(ctx, e.bin("kube-apiserver"), e.Dir, e.pki, e.EtcdURL); err != nil {
		return nil, err
	}
	e.KubeAPIServerURL = e.AdminConfig.Host
	e.logf("kube-apiserver ready at %s", e.KubeAPIServerURL)

	if err := e.writeKubeconfigs(); err != nil {
		return nil, err
	}
	if e.applier, err = newApplier(e.AdminConfig); err != nil {
		return nil, err
	}

	if e.deploy, err = e.install(ctx); err != nil {
		return nil, err
	}
	if err := e.writeAdvisorKubeconfig(ctx); err != nil {
		return nil, err
	}
	if err := e.waitAdmissionPolicies(ctx, e.deploy); err != nil {
		return nil, err
	}
	// After install: the baseline pool and its seeded status are in place.
	if !o.DisableFakeMCO {
		if err := e.runFakeMCO(ctx); err != nil {
			return nil, err
		}
	}

	adv, err := e.startAdvisor(ctx, MainAdvisorName, AdvisorBinary, 0, launch{}, "/readyz")
	if err != nil {
		return nil, err
	}
	if err := e.register(ctx, adv.Port); err != nil {
		return nil, err
	}
	e.logf("waiting for APIService %s to become Available", APIServiceName)
	if err := waitAPIServiceAvailable(ctx, e.applier, adv); err != nil {
		return nil, err
	}
	e.logf("APIService %s Available", APIServiceName)
	return e, nil
}

// newEnv resolves defaults and checks the binaries before anything starts.
func newEnv(o Options) (*Env, error) {
	if o.Log == nil {
		o.Log = io.Discard
	}
	e := &Env{opts: o, advisors: map[string]*Advisor{}, registered: MainAdvisorName, AdvisorNamespace: o.Namespace}
	if e.AdvisorNamespace == "" {
		e.AdvisorNamespace = Namespace
	}
	e.AdvisorUser = "system:serviceaccount:" + e.AdvisorNamespace + ":" + AdvisorServiceAccount
	var err error
	if e.RepoRoot = o.RepoRoot; e.RepoRoot == "" {
		if e.RepoRoot, err = findRepoRoot(); err != nil {
			return nil, err
		}
	}
	if e.RepoRoot, err = filepath.Abs(e.RepoRoot); err != nil {
		return nil, fmt.Errorf("repository root: %w", err)
	}
	if e.BinDir = o.BinDir; e.BinDir == "" {
		e.BinDir = filepath.Join(e.RepoRoot, "_output", "bin")
	}
	if e.BinDir, err = filepath.Abs(e.BinDir); err != nil {
		return nil, fmt.Errorf("binary directory: %w", err)
	}
	if err := e.checkBinaries(); err != nil {
		return nil, err
	}
	if o.Dir == "" {
		if e.Dir, err = os.MkdirTemp("", "virt-advisor-env-"); err != nil {
			return nil, fmt.Errorf("creating a data directory: %w", err)
		}
		e.ownDir = true
	} else if e.Dir, err = filepath.Abs(o.Dir); err != nil {
		return nil, fmt.Errorf("data directory: %w", err)
	}
	if err := os.MkdirAll(filepath.Join(e.Dir, "logs"), 0o755); err != nil {
		return nil, fmt.Errorf("creating data directory: %w", err)
	}
	if e.lock, err = lockDir(e.Dir); err != nil {
		return nil, err
	}
	return e, nil
}

// checkBinaries fails early, saying which make target builds what is missing.
func (e *Env) checkBinaries() error {
	var missing []string
	for _, b := range []struct{ name, target string }{
		{"etcd", "make tools"},
		{"kube-apiserver", "make tools"},
		{"kubectl", "make tools"},
		{AdvisorBinary, "make build"},
	} {
		fi, err := os.Stat(e.bin(b.name))
		if err != nil || fi.IsDir() || fi.Mode()&0o111 == 0 {
			missing = append(missing, fmt.Sprintf("%s (run `%s` first)", e.bin(b.name), b.target))
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("missing binaries: %s", strings.Join(missing, ", "))
	}
	return nil
}

func (e *Env) bin(name string) string { return filepath.Join(e.BinDir, name) }

func (e *Env) logf(format string, args ...any) {
	fmt.Fprintf(e.opts.Log, format+"\n", args...)
}

// writeKubeconfigs writes Dir/kubeconfig (admin).
func (e *Env) writeKubeconfigs() error {
	e.Kubeconfig = filepath.Join(e.Dir, "kubeconfig")
	return writeKubeconfig(e.Kubeconfig, "admin", e.AdminConfig)
}

// writeAdvisorKubeconfig writes Dir/advisor.kubeconfig with a token of the
// deployment's ServiceAccount from the TokenRequest API, as a pod would
// mount it: the server authenticates as that ServiceAccount and holds
// exactly the RBAC of artifacts/deploy, nothing of the admin's.
func (e *Env) writeAdvisorKubeconfig(ctx context.Context) error {
	cs, err := kubernetes.NewForConfig(e.AdminConfig)
	if err != nil {
		return err
	}
	expiration := int64(advisorTokenLifetime / time.Second)
	tr, err := cs.CoreV1().ServiceAccounts(e.AdvisorNamespace).CreateToken(ctx, AdvisorServiceAccount,
		&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: &expiration}}, metav1.CreateOptions{})
	if err != nil {
		return fmt.Errorf("requesting a token of ServiceAccount %s/%s: %w", e.AdvisorNamespace, AdvisorServiceAccount, err)
	}
	e.AdvisorKubeconfig = filepath.Join(e.Dir, "advisor.kubeconfig")
	cfg := &rest.Config{Host: e.KubeAPIServerURL, BearerToken: tr.Status.Token,
		TLSClientConfig: rest.TLSClientConfig{CAData: e.pki.clusterCA.CertPEM}}
	return writeKubeconfig(e.AdvisorKubeconfig, e.AdvisorUser, cfg)
}

// install applies the CRDs, the baseline objects and the deploy manifests
// (RBAC, the admission policy confining the server, etc.; after the
// baseline, whose namespaces hold some of its Roles);
// it returns the deploy manifests (for register).
func (e *Env) install(ctx context.Context) (deploy []*unstructured.Unstructured, err error) {
	artifacts := filepath.Join(e.RepoRoot, "artifacts")

	e.logf("installing CRDs from %s", filepath.Join(artifacts, "crds"))
	crds, err := e.readDir(filepath.Join(artifacts, "crds"))
	if err != nil {
		return nil, err
	}
	for _, obj := range crds {
		if err := e.applier.apply(ctx, obj); err != nil {
			return nil, err
		}
	}
	if err := e.applier.waitEstablished(ctx, crds); err != nil {
		return nil, err
	}

	e.logf("creating baseline objects from %s", filepath.Join(artifacts, "testdata", "baseline.yaml"))
	baseline, err := readManifests(filepath.Join(artifacts, "testdata", "baseline.yaml"))
	if err != nil {
		return nil, err
	}
	for _, obj := range baseline {
		if _, err := e.applier.applyIfAbsent(ctx, obj); err != nil {
			return nil, err
		}
	}
	e.logf("installing RBAC and admission policy from %s", filepath.Join(artifacts, "deploy"))
	deploy, err = e.readDir(filepath.Join(artifacts, "deploy"))
	if err != nil {
		return nil, err
	}
	if e.AdvisorNamespace != Namespace {
		e.logf("installing into namespace %s instead of %s", e.AdvisorNamespace, Namespace)
		relocate(deploy, Namespace, e.AdvisorNamespace)
	}
	for _, obj := range deploy {
		if skippedDeployKinds[obj.GetKind()] {
			continue
		}
		if err := e.applier.apply(ctx, obj); err != nil {
			return nil, err
		}
	}

	// The pool status is the MCO's: only seed it when nothing wrote it yet,
	// so a reused data dir keeps the rollout state of earlier runs.
	for _, obj := range baseline {
		if obj.GetKind() != "MachineConfigPool" {
			continue
		}
		has, err := e.applier.poolHasStatus(ctx, obj.GetName())
		if err != nil {
			return nil, err
		}
		if !has {
			if err := e.applier.seedPoolStatus(ctx, obj.GetName(), names.BaselinePoolMachines); err != nil {
				return nil, err
			}
		}
	}
	return deploy, nil
}

// register points the APIService at the advisor on port. It runs once the
// advisor is ready, so the aggregator's first check after the change
// succeeds instead of backing off on a process still starting.
func (e *Env) register(ctx context.Context, port int) error {
	e.logf("registering APIService %s (ExternalName Service %s/%s -> localhost:%d)", APIServiceName, e.AdvisorNamespace, ServiceName, port)
	svc, apiService := registration(e.deploy, e.AdvisorNamespace, port, e.pki.servingCA.CertPEM)
	for _, obj := range []*unstructured.Unstructured{svc, apiService} {
		if err := e.applier.apply(ctx, obj); err != nil {
			return err
		}
	}
	// An unchanged spec (reused data dir, same port by chance) sends the
	// aggregator no event; make it re-check now.
	return e.applier.touchAPIService(ctx)
}

func (e *Env) readDir(dir string) ([]*unstructured.Unstructured, error) {
	files, err := manifestFiles(dir)
	if err != nil {
		return nil, err
	}
	return readManifests(files...)
}

// Stop stops every process the environment started (advisors first, so
// they can release their Lease, then kube-apiserver, then etcd) and waits
// for them. It is idempotent; problems are reported to Options.Log.
func (e *Env) Stop() {
	e.stopOnce.Do(func() {
		if e.stopFakeMCO != nil {
			e.stopFakeMCO() // before kube-apiserver goes away under its watches
		}
		e.mu.Lock()
		e.stopped = true
		advisors := make([]*Advisor, 0, len(e.advisors))
		for _, a := range e.advisors {
			advisors = append(advisors, a)
		}
		apiserver, etcd := e.apiserver, e.etcd // after restarts: the current runs
		monitorings := e.monitorings
		e.mu.Unlock()
		for _, m := range monitorings {
			m.Stop()
		}
		var wg sync.WaitGroup
		for _, a := range advisors {
			wg.Go(func() {
				if err := a.Stop(syscall.SIGTERM); err != nil {
					e.logf("stopping %s: %v", a.Name, err)
				}
			})
		}
		wg.Wait()
		if apiserver != nil {
			if err := stopKubeAPIServer(apiserver); err != nil {
				e.logf("stopping %s: %v", apiserver.name, err)
			}
		}
		if etcd != nil {
			if err := etcd.stop(syscall.SIGTERM); err != nil {
				e.logf("stopping %s: %v", etcd.name, err)
			}
		}
		if e.lock != nil {
			_ = e.lock.Close() // releases the flock
		}
		if e.ownDir {
			if err := os.RemoveAll(e.Dir); err != nil {
				e.logf("removing %s: %v", e.Dir, err)
			}
		}
		e.logf("stopped")
	})
}

// Pids are the process IDs of the control plane's processes running now:
// etcd, kube-apiserver and the advisors (the fake MCO runs in the test's
// own process).
func (e *Env) Pids() []int {
	e.mu.Lock()
	defer e.mu.Unlock()
	var pids []int
	for _, p := range []*process{e.etcd, e.apiserver} {
		if p != nil && !p.exited() {
			pids = append(pids, p.cmd.Process.Pid)
		}
	}
	for _, a := range e.advisors {
		if !a.proc.exited() {
			pids = append(pids, a.Pid())
		}
	}
	return pids
}

// UserConfig returns a client config and a kubeconfig file for user in
// groups, authenticated by a client certificate signed by the cluster's
// client CA. The user has no permissions until a test binds some.
func (e *Env) UserConfig(user string, groups ...string) (*rest.Config, string, error) {
	kp, err := e.pki.userCert(user, groups)
	if err != nil {
		return nil, "", err
	}
	cfg := restConfig(e.KubeAPIServerURL, e.pki.clusterCA.CertPEM, kp)
	sum := sha256.Sum256([]byte(user + "\x00" + strings.Join(groups, "\x00")))
	name := unsafeFileChars.ReplaceAllString(user, "_") + "-" + hex.EncodeToString(sum[:4]) + ".kubeconfig"
	path := filepath.Join(e.Dir, "users", name)
	if err := writeKubeconfig(path, user, cfg); err != nil {
		return nil, "", err
	}
	return cfg, path, nil
}

var unsafeFileChars = regexp.MustCompile(`[^A-Za-z0-9._-]`)

// Kubectl runs _output/bin/kubectl with kubeconfig (the admin one if empty)
// in the repository root, so relative paths such as
// artifacts/samples/approval.json work as in the README.
func (e *Env) Kubectl(ctx context.Context, kubeconfig string, args ...string) (string, string, error) {
	if kubeconfig == "" {
		kubeconfig = e.Kubeconfig
	}
	full := append([]string{
		"--kubeconfig=" + kubeconfig,
		// A cache per environment: discovery of one test cluster must not
		// leak into another that reuses the port.
		"--cache-dir=" + filepath.Join(e.Dir, "kubectl-cache"),
	}, args...)
	cmd := exec.CommandContext(ctx, e.bin("kubectl"), full...)
	cmd.Dir = e.RepoRoot
	cmd.SysProcAttr = sysProcAttr()
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return stdout.String(), stderr.String(), fmt.Errorf("kubectl %s: %w: %s",
			strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return stdout.String(), stderr.String(), nil
}

// findRepoRoot walks up from the working directory to the go.mod of this
// module (skipping nested modules such as hack/tools).
func findRepoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", fmt.Errorf("finding repository root: %w", err)
	}
	for {
		if isModuleRoot(filepath.Join(dir, "go.mod")) {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("finding repository root: no go.mod of " + modulePath +
				" above the working directory; set Options.RepoRoot")
		}
		dir = parent
	}
}

func isModuleRoot(gomod string) bool {
	f, err := os.Open(gomod)
	if err != nil {
		return false
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		if fields := strings.Fields(s.Text()); len(fields) == 2 && fields[0] == "module" {
			return fields[1] == modulePath
		}
	}
	return false
}
