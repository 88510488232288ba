package env

import (
	"context"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"time"

	"k8s.io/client-go/kubernetes"
)

const (
	// MainAdvisorName is the instance registered behind the APIService.
	MainAdvisorName = "virt-advisor-apiserver"

	advisorReadyTimeout = 2 * time.Minute

	// AdmissionPoliciesCheck is the server's readyz check of the shipped
	// admission policies (artifacts/deploy/06-statefulset.yaml leaves it
	// out of the readinessProbe).
	AdmissionPoliciesCheck = "virt-advisor-admission-policies"
)

var validAdvisorName = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`)

// Advisor is one running virt-advisor-apiserver process.
type Advisor struct {
	Name    string
	Port    int
	URL     string   // https://127.0.0.1:<Port>
	LogPath string   // Dir/logs/<Name>.log, appended to across restarts
	EtcdDir string   // embedded etcd data, "" with --etcd-servers
	Args    []string // the full command line after the binary
	Env     []string // KEY=value added to its environment (RestartAdvisorWith)
	Binary  string   // the file in BinDir it runs

	launch launch // kept for restarts
	proc   *process
}

// launch is how an instance runs beyond the defaults, kept so that a
// restart runs it the same way.
type launch struct {
	extra   []string          // caller's flags, after the defaults and Options.AdvisorArgs
	env     []string          // KEY=value added to the environment
	replace map[string]string // flag ("--kubeconfig") -> value, see RestartAdvisorWith
}

// Stop sends sig (syscall.SIGTERM for a graceful shutdown, syscall.SIGKILL
// for a crash) to the instance and waits for it to exit; after SIGTERM it
// kills it if it takes longer than 10 s. Stopping a stopped instance is a
// no-op. A non-zero exit after SIGTERM is reported as an error.
func (a *Advisor) Stop(sig os.Signal) error {
	s, ok := sig.(syscall.Signal)
	if !ok {
		return fmt.Errorf("stopping %s: unsupported signal %v", a.Name, sig)
	}
	return a.proc.stop(s)
}

// Exited reports whether the process has terminated.
func (a *Advisor) Exited() bool { return a.proc.exited() }

// LogTail returns the last n lines this instance wrote to its log.
func (a *Advisor) LogTail(n int) string { return a.proc.tail(n) }

// Advisor returns the instance registered behind the APIService (the
// latest process of that name after a restart).
func (e *Env) Advisor() *Advisor {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.advisors[e.registered]
}

// RegisterAdvisor points the APIService at adv (e.g. a replica on a shared
// etcd, to fail over) and waits until it is Available through it.
// Advisor and RestartAdvisor then refer to adv's name.
func (e *Env) RegisterAdvisor(ctx context.Context, adv *Advisor) error {
	if adv.Exited() {
		return fmt.Errorf("registering %s: it is not running", adv.Name)
	}
	if err := e.register(ctx, adv.Port); err != nil {
		return err
	}
	if err := waitAPIServiceAvailable(ctx, e.applier, adv); err != nil {
		return err
	}
	e.mu.Lock()
	e.registered = adv.Name
	e.mu.Unlock()
	return nil
}

// StartAdvisor starts a virt-advisor-apiserver instance (e.g. a second
// replica) and waits until its /readyz passes. Its flags are the defaults,
// then Options.AdvisorArgs, then args (later flags win). Without
// --etcd-servers (or Options.AdvisorSharedEtcd) it gets its own embedded
// etcd in Dir/advisor-etcd-<name>: replicas sharing their store (HA) need
// one of those. name also picks the log
// file Dir/logs/<name>.log. Starting a name whose instance has stopped
// restarts it on the same port and data dir; if that name is the one
// behind the APIService, the new process serves it.
func (e *Env) StartAdvisor(ctx context.Context, name string, args ...string) (*Advisor, error) {
	return e.StartAdvisorBinary(ctx, name, AdvisorBinary, args...)
}

// RaceAdvisorBinary is virt-advisor-apiserver built with the race
// detector (make build-race), for StartAdvisorBinary.
const RaceAdvisorBinary = "virt-advisor-apiserver-race"

// StartAdvisorBinary is StartAdvisor with another build of the server,
// a file in BinDir such as RaceAdvisorBinary.
func (e *Env) StartAdvisorBinary(ctx context.Context, name, binary string, args ...string) (*Advisor, error) {
	if _, err := os.Stat(e.bin(binary)); err != nil {
		return nil, fmt.Errorf("%s is missing: run make build-race (or make build)", e.bin(binary))
	}
	if !validAdvisorName.MatchString(name) {
		return nil, fmt.Errorf("advisor name %q: use lower-case letters, digits and '-'", name)
	}
	e.mu.Lock()
	prev := e.advisors[name]
	e.mu.Unlock()
	port := 0
	if prev != nil {
		if !prev.Exited() {
			return nil, fmt.Errorf("advisor %q is already running on port %d", name, prev.Port)
		}
		port = prev.Port
	}
	return e.startAdvisor(ctx, name, binary, port, launch{extra: args}, "/readyz")
}

// StartAdvisorServing is StartAdvisor for an instance expected not to
// become ready (e.g. a second replica on a store of its own): it waits
// only until the instance serves /livez.
func (e *Env) StartAdvisorServing(ctx context.Context, name string, args ...string) (*Advisor, error) {
	e.mu.Lock()
	prev := e.advisors[name]
	e.mu.Unlock()
	if prev != nil && !prev.Exited() {
		return nil, fmt.Errorf("advisor %q is already running on port %d", name, prev.Port)
	}
	if !validAdvisorName.MatchString(name) {
		return nil, fmt.Errorf("advisor name %q: use lower-case letters, digits and '-'", name)
	}
	port := 0
	if prev != nil {
		port = prev.Port
	}
	return e.startAdvisor(ctx, name, AdvisorBinary, port, launch{extra: args}, "/livez")
}

// RestartAdvisor stops the registered instance gracefully and starts it
// again with the same flags, environment, port and embedded etcd data, then
// waits until the APIService is Available again. An instance that already
// exited (e.g. killed by a failpoint) is just started.
func (e *Env) RestartAdvisor(ctx context.Context) error {
	cur := e.Advisor()
	if cur == nil {
		return fmt.Errorf("no advisor instance is registered")
	}
	return e.restartAdvisor(ctx, cur, cur.launch)
}

// RestartAdvisorWith is RestartAdvisor with a changed command line: env
// (KEY=value, e.g. failpoint.EnvVar+"=name") is added to the server's
// environment, and each flag of replaceArgs ("--kubeconfig" -> path) takes
// that value wherever it appears on the command line (defaults,
// Options.AdvisorArgs, StartAdvisor args), or is appended. Both replace
// those of an earlier RestartAdvisorWith, so RestartAdvisorWith(ctx, nil,
// nil) restores the normal command line; RestartAdvisor keeps them.
func (e *Env) RestartAdvisorWith(ctx context.Context, env []string, replaceArgs map[string]string) error {
	cur := e.Advisor()
	if cur == nil {
		return fmt.Errorf("no advisor instance is registered")
	}
	for _, kv := range env {
		if k, _, ok := strings.Cut(kv, "="); !ok || k == "" {
			return fmt.Errorf("restarting %s: environment entry %q is not KEY=value", cur.Name, kv)
		}
	}
	for flag := range replaceArgs {
		if !strings.HasPrefix(flag, "--") || strings.Contains(flag, "=") {
			return fmt.Errorf("restarting %s: replaced flag %q must look like --name", cur.Name, flag)
		}
	}
	return e.restartAdvisor(ctx, cur, launch{extra: cur.launch.extra, env: env, replace: replaceArgs})
}

func (e *Env) restartAdvisor(ctx context.Context, cur *Advisor, l launch) error {
	if err := cur.Stop(syscall.SIGTERM); err != nil {
		return fmt.Errorf("restarting %s: %w", cur.Name, err)
	}
	adv, err := e.startAdvisor(ctx, cur.Name, cur.Binary, cur.Port, l, "/readyz")
	if err != nil {
		return fmt.Errorf("restarting %s: %w", cur.Name, err)
	}
	if err := e.applier.touchAPIService(ctx); err != nil {
		return fmt.Errorf("restarting %s: %w", cur.Name, err)
	}
	return waitAPIServiceAvailable(ctx, e.applier, adv)
}

// startAdvisor starts an instance on port (0: a free one, retried if
// another environment races for it) and waits until its probe at
// waitPath (/readyz, /livez) passes.
func (e *Env) startAdvisor(ctx context.Context, name, binary string, port int, l launch, waitPath string) (*Advisor, error) {
	for attempt := 1; ; attempt++ {
		p := port
		if p == 0 {
			ports, err := freePorts(1)
			if err != nil {
				return nil, err
			}
			p = ports[0]
		}
		adv := e.newAdvisor(name, p, l)
		adv.Binary = binary
		if adv.EtcdDir != "" {
			if err := os.MkdirAll(adv.EtcdDir, 0o700); err != nil {
				return nil, fmt.Errorf("creating %s: %w", adv.EtcdDir, err)
			}
		}
		e.logf("starting %s on %s (log %s)", name, adv.URL, adv.LogPath)
		proc, err := startProcess(name, e.bin(binary), e.Dir, adv.LogPath, adv.Args, adv.Env)
		if err != nil {
			return nil, err
		}
		adv.proc = proc
		e.mu.Lock()
		e.advisors[name] = adv // registered before waiting so Stop always reaches it
		e.mu.Unlock()
		err = e.waitAdvisorProbe(ctx, adv, waitPath)
		if err == nil {
			e.logf("%s ready", name)
			return adv, nil
		}
		_ = proc.stop(syscall.SIGKILL)
		if port != 0 || !proc.addrInUse() || attempt == portAttempts {
			return nil, err
		}
	}
}

// newAdvisor composes the command line of an instance.
func (e *Env) newAdvisor(name string, port int, l launch) *Advisor {
	adv := &Advisor{
		Name:    name,
		Port:    port,
		URL:     fmt.Sprintf("https://127.0.0.1:%d", port),
		LogPath: filepath.Join(e.Dir, "logs", name+".log"),
		Env:     l.env,
		launch:  l,
	}
	user := append(append([]string(nil), e.opts.AdvisorArgs...), l.extra...)
	if e.opts.AdvisorSharedEtcd && !hasFlag(user, "--etcd-servers") {
		user = append([]string{"--etcd-servers=" + e.EtcdURL}, user...)
	}
	if e.AdvisorNamespace != Namespace && !hasFlag(user, "--leader-elect-resource-namespace") {
		// The Lease is in the namespace the server is installed in (its
		// Role of 04-leader-election.yaml is there).
		user = append([]string{"--leader-elect-resource-namespace=" + e.AdvisorNamespace}, user...)
	}
	adv.Args = []string{
		fmt.Sprintf("--secure-port=%d", port),
		"--bind-address=127.0.0.1",
		"--tls-cert-file=" + e.pki.advisorServing.CertFile,
		"--tls-private-key-file=" + e.pki.advisorServing.KeyFile,
		// The service account's identity in the main cluster, so the server
		// runs with exactly the RBAC of artifacts/deploy.
		"--kubeconfig=" + e.AdvisorKubeconfig,
		"--authentication-kubeconfig=" + e.AdvisorKubeconfig,
		"--authorization-kubeconfig=" + e.AdvisorKubeconfig,
	}
	if !hasFlag(user, "--etcd-servers") && !hasFlag(user, "--embedded-etcd-dir") {
		adv.EtcdDir = filepath.Join(e.Dir, "advisor-etcd")
		if name != MainAdvisorName {
			adv.EtcdDir += "-" + name
		}
		adv.Args = append(adv.Args, "--embedded-etcd-dir="+adv.EtcdDir)
	}
	adv.Args = replaceFlags(append(adv.Args, user...), l.replace)
	return adv
}

// replaceFlags sets each flag of replace to its value: every occurrence in
// args (--flag=v, or --flag v) is rewritten as --flag=value, and a flag
// that does not occur is appended (in name order, for a stable command
// line).
func replaceFlags(args []string, replace map[string]string) []string {
	if len(replace) == 0 {
		return args
	}
	out := make([]string, 0, len(args)+len(replace))
	seen := map[string]bool{}
	for i := 0; i < len(args); i++ {
		a := args[i]
		name, _, hasValue := strings.Cut(a, "=")
		v, ok := replace[name]
		if !ok {
			out = append(out, a)
			continue
		}
		if !hasValue && i+1 < len(args) && !strings.HasPrefix(args[i+1], "-") {
			i++ // the separate value of "--flag v"
		}
		out = append(out, name+"="+v)
		seen[name] = true
	}
	for _, name := range slices.Sorted(maps.Keys(replace)) {
		if !seen[name] {
			out = append(out, name+"="+replace[name])
		}
	}
	return out
}

// waitAdvisorProbe polls the instance's own probe at path over TLS,
// verifying its serving certificate against the serving CA (what the
// aggregator will do).
func (e *Env) waitAdvisorProbe(ctx context.Context, adv *Advisor, path string) error {
	cfg := restConfig(adv.URL, e.pki.servingCA.CertPEM, e.pki.admin)
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return fmt.Errorf("%s client: %w", adv.Name, err)
	}
	return poll(ctx, adv.Name+" "+path, 250*time.Millisecond, advisorReadyTimeout, adv.proc, func(ctx context.Context) (bool, error) {
		req := cs.Discovery().RESTClient().Get().AbsPath(path).Param("verbose", "1")
		if path == "/readyz" {
			// As the StatefulSet's readinessProbe: the server serves while
			// the admission policies are not in force, and says so on the
			// configs that wait for them.
			req = req.Param("exclude", AdmissionPoliciesCheck)
		}
		body, err := req.DoRaw(ctx)
		if err != nil {
			return false, fmt.Errorf("%w: %s", err, failedChecks(body))
		}
		return true, nil
	})
}

// hasFlag reports whether args set flag (as --flag, --flag=v or --flag v).
func hasFlag(args []string, flag string) bool {
	for _, a := range args {
		if a == flag || strings.HasPrefix(a, flag+"=") {
			return true
		}
	}
	return false
}

// Pid is the process id of the instance, e.g. to read its memory use.
func (a *Advisor) Pid() int { return a.proc.cmd.Process.Pid }
