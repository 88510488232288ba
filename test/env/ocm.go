package env

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"github.com/kubevirt/virt-advisor/test/env/fakemco"
)

// Open Cluster Management (OCM) runs as processes built from its Go module
// (hack/tools/ocm, `make tools`), on environments of their own: a hub and
// its spokes, each an Env (etcd, kube-apiserver, virt-advisor, the fake
// MCO).
//
// On the hub: kube-controller-manager with its csrsigning controller only,
// which signs the agents' client certificates with the hub's client CA as
// in production (OCM approves certificate requests but signs none); OCM's
// registration controller, work manager (with ManifestWorkReplicaSet) and
// placement controller. On each spoke: the klusterlet agent (registration
// and work agents in one process). It joins the hub with a bootstrap
// identity that may only ask to join, and applies ManifestWorks on its
// spoke as an identity of its own (OCMAgentUser), not as an administrator,
// so that RBAC on the spoke can tell its writes apart.
//
// A cluster joins as `clusteradm accept` accepts it: the hub's
// administrator approves its certificate request and sets
// hubAcceptsClient (AcceptCluster); StartOCM does that for every spoke.

const (
	// OCMBinDir holds the OCM binaries and CRDs under BinDir.
	OCMBinDir = "ocm"
	// KubeControllerManagerBinary signs certificate requests on the hub.
	KubeControllerManagerBinary = "kube-controller-manager"

	// OCMHubNamespace is where the hub's OCM controllers record events.
	OCMHubNamespace = "open-cluster-management-hub"
	// OCMAgentNamespace is the klusterlet agent's namespace on a spoke,
	// where it keeps its hub kubeconfig Secret.
	OCMAgentNamespace = "open-cluster-management-agent"
	// OCMAgentUser is the identity the klusterlet agent acts as on its
	// spoke: the ServiceAccount it runs as in production.
	OCMAgentUser = "system:serviceaccount:" + OCMAgentNamespace + ":klusterlet-agent-sa"
	// ocmBootstrapUser is the identity an agent joins the hub with.
	ocmBootstrapUser = "system:open-cluster-management:bootstrap"

	ocmJoinTimeout = 3 * time.Minute
)

var (
	ocmBinaries       = []string{"registration", "work", "placement", "registration-operator"}
	managedClusterGVR = schema.GroupVersionResource{Group: "cluster.open-cluster-management.io", Version: "v1", Resource: "managedclusters"}
)

// OCM is Open Cluster Management running on a hub and its spokes.
type OCM struct {
	Hub *Env
	// Spokes by cluster name (the ManagedCluster's name on the hub).
	Spokes map[string]*Env
	// Dir holds the agents' hub kubeconfigs and the processes' logs
	// (Dir/logs), under the hub's Dir.
	Dir string

	bin      string // BinDir/ocm
	hubProcs []*process
	agents   map[string]*process
	stopOnce sync.Once
}

// StartOCM starts OCM's hub controllers on hub and its agent on each
// spoke, accepts every spoke, and returns once each is a ManagedCluster
// Available on the hub with no taint (placements skip tainted clusters).
// On error what started is stopped again; Stop stops it all (not the
// environments).
func StartOCM(ctx context.Context, hub *Env, spokes map[string]*Env) (_ *OCM, err error) {
	o := &OCM{Hub: hub, Spokes: spokes, bin: filepath.Join(hub.BinDir, OCMBinDir), agents: map[string]*process{}}
	if err := o.checkBinaries(); err != nil {
		return nil, err
	}
	if o.Dir, err = os.MkdirTemp(hub.Dir, "ocm-"); err != nil {
		return nil, fmt.Errorf("creating the OCM directory: %w", err)
	}
	defer func() {
		if err != nil {
			o.Stop()
		}
	}()
	o.logf("installing OCM's hub CRDs and the bootstrap identity's RBAC")
	if err := o.installHub(ctx); err != nil {
		return nil, err
	}
	if err := o.startHub(); err != nil {
		return nil, err
	}
	for _, name := range o.clusterNames() {
		if err := o.startAgent(ctx, name); err != nil {
			return nil, err
		}
	}
	for _, name := range o.clusterNames() {
		if err := o.AcceptCluster(ctx, name); err != nil {
			return nil, err
		}
	}
	for _, name := range o.clusterNames() {
		if err := o.waitAvailable(ctx, name); err != nil {
			return nil, err
		}
		o.logf("ManagedCluster %s Available", name)
	}
	return o, nil
}

// checkBinaries fails early, naming the make target that builds what is
// missing.
func (o *OCM) checkBinaries() error {
	paths := []string{filepath.Join(o.Hub.BinDir, KubeControllerManagerBinary)}
	for _, b := range ocmBinaries {
		paths = append(paths, filepath.Join(o.bin, b))
	}
	var missing []string
	for _, p := range append(paths, filepath.Join(o.bin, "crds", "hub"), filepath.Join(o.bin, "crds", "spoke")) {
		if _, err := os.Stat(p); err != nil {
			missing = append(missing, p)
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("missing: %s (run `make tools` first: it builds OCM and kube-controller-manager from their Go modules)", strings.Join(missing, ", "))
	}
	return nil
}

func (o *OCM) logf(format string, args ...any) { o.Hub.logf("ocm: "+format, args...) }

// clusterNames are the spokes' names, sorted: the order things start in.
func (o *OCM) clusterNames() []string {
	names := make([]string, 0, len(o.Spokes))
	for n := range o.Spokes {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// InstallOCMHubCRDs installs Open Cluster Management's hub CRDs on e
// (from BinDir, built by make tools), without OCM's processes: a fleet's
// hub whose clusters the caller simulates (the bench).
func (e *Env) InstallOCMHubCRDs(ctx context.Context) error {
	return installCRDs(ctx, e, filepath.Join(e.BinDir, OCMBinDir, "crds", "hub"))
}

// installCRDs applies the CRDs in dir on e and waits until they are
// Established.
func installCRDs(ctx context.Context, e *Env, dir string) error {
	files, err := manifestFiles(dir)
	if err != nil {
		return err
	}
	crds, err := readManifests(files...)
	if err != nil {
		return err
	}
	for _, crd := range crds {
		if err := e.applier.apply(ctx, crd); err != nil {
			return err
		}
	}
	return e.applier.waitEstablished(ctx, crds)
}

// ocmBootstrapRBAC lets the bootstrap identity do what upstream's
// open-cluster-management:bootstrap ClusterRole allows: ask to join, and
// nothing else.
const ocmBootstrapRBAC = `apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: open-cluster-management:bootstrap
rules:
- apiGroups: [""]
  resources: [configmaps]
  verbs: [get]
- apiGroups: [certificates.k8s.io]
  resources: [certificatesigningrequests]
  verbs: [create, get, list, watch]
- apiGroups: [cluster.open-cluster-management.io]
  resources: [managedclusters]
  verbs: [get, create, list, watch]
- apiGroups: [cluster.open-cluster-management.io]
  resources: [managedclustersets/join]
  verbs: [create]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata:
  name: open-cluster-management:bootstrap
roleRef:
  apiGroup: rbac.authorization.k8s.io
  kind: ClusterRole
  name: open-cluster-management:bootstrap
subjects:
- apiGroup: rbac.authorization.k8s.io
  kind: User
  name: ` + ocmBootstrapUser + `
`

// ocmAgentRBAC gives the klusterlet agent on its spoke what the
// klusterlet's ServiceAccounts have in production to apply any
// ManifestWork: all of it. What virt-advisor lets only the agent do is
// granted beside it, by virt-advisor's own manifests.
const ocmAgentRBAC = `apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata:
  name: open-cluster-management:klusterlet-agent
roleRef:
  apiGroup: rbac.authorization.k8s.io
  kind: ClusterRole
  name: cluster-admin
subjects:
- kind: ServiceAccount
  name: klusterlet-agent-sa
  namespace: ` + OCMAgentNamespace + `
`

// ApplyYAML applies the objects of a YAML stream (server-side, as the
// administrator), mapping their kinds through discovery.
func (e *Env) ApplyYAML(ctx context.Context, doc string) error {
	objs, err := decodeManifests("inline manifests", strings.NewReader(doc))
	if err != nil {
		return err
	}
	for _, obj := range objs {
		if err := e.applier.apply(ctx, obj); err != nil {
			return err
		}
	}
	return nil
}

// DeleteYAML deletes the objects of a YAML stream, in reverse order; an
// object already gone is no error.
func (e *Env) DeleteYAML(ctx context.Context, doc string) error {
	objs, err := decodeManifests("inline manifests", strings.NewReader(doc))
	if err != nil {
		return err
	}
	for i := len(objs) - 1; i >= 0; i-- {
		r, err := e.applier.resource(ctx, objs[i])
		if err != nil {
			return err
		}
		if err := r.Delete(ctx, objs[i].GetName(), metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("deleting %s %s: %w", objs[i].GetKind(), objs[i].GetName(), err)
		}
	}
	return nil
}

// createNamespace creates namespace name on e unless it exists.
func createNamespace(ctx context.Context, e *Env, name string) error {
	c, err := kubernetes.NewForConfig(e.AdminConfig)
	if err != nil {
		return err
	}
	_, err = c.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating namespace %s: %w", name, err)
	}
	return nil
}

// installHub installs the hub's CRDs, namespace and bootstrap RBAC.
func (o *OCM) installHub(ctx context.Context) error {
	if err := installCRDs(ctx, o.Hub, filepath.Join(o.bin, "crds", "hub")); err != nil {
		return err
	}
	if err := createNamespace(ctx, o.Hub, OCMHubNamespace); err != nil {
		return err
	}
	return o.Hub.ApplyYAML(ctx, ocmBootstrapRBAC)
}

// startHub starts kube-controller-manager's csrsigning controller and
// OCM's three hub controllers, as the hub's administrator.
func (o *OCM) startHub() error {
	p := o.Hub.pki
	kcm, err := o.start(KubeControllerManagerBinary, filepath.Join(o.Hub.BinDir, KubeControllerManagerBinary), []string{
		"--kubeconfig=" + o.Hub.Kubeconfig,
		"--controllers=csrsigning",
		// Agents' client certificates, from the CA kube-apiserver trusts
		// (--client-ca-file).
		"--cluster-signing-kube-apiserver-client-cert-file=" + p.clientCA.CertFile,
		"--cluster-signing-kube-apiserver-client-key-file=" + p.clientCA.KeyFile,
		"--leader-elect=false",
		// Serves nothing: nothing reads its metrics here.
		"--secure-port=0",
		"--v=1",
	})
	if err != nil {
		return err
	}
	o.hubProcs = append(o.hubProcs, kcm)
	for _, c := range []struct {
		name string
		args []string
	}{
		{"registration", []string{"controller"}},
		{"work", []string{"manager", "--feature-gates=ManifestWorkReplicaSet=true"}},
		{"placement", []string{"controller"}},
	} {
		port, err := freePorts(1)
		if err != nil {
			return err
		}
		args := append(c.args, "--kubeconfig="+o.Hub.Kubeconfig, "--namespace="+OCMHubNamespace,
			"--disable-leader-election", fmt.Sprintf("--listen=127.0.0.1:%d", port[0]))
		proc, err := o.start("ocm-"+c.name, filepath.Join(o.bin, c.name), args)
		if err != nil {
			return err
		}
		o.hubProcs = append(o.hubProcs, proc)
	}
	return nil
}

// start runs a process logging to Dir/logs/NAME.log.
func (o *OCM) start(name, bin string, args []string) (*process, error) {
	o.logf("starting %s (log %s)", name, filepath.Join(o.Dir, "logs", name+".log"))
	return startProcess(name, bin, o.Dir, filepath.Join(o.Dir, "logs", name+".log"), args, nil)
}

// startAgent prepares spoke name (CRDs, the agent's namespace and RBAC)
// and starts its klusterlet agent with a bootstrap kubeconfig of the hub.
func (o *OCM) startAgent(ctx context.Context, name string) error {
	spoke := o.Spokes[name]
	if err := installCRDs(ctx, spoke, filepath.Join(o.bin, "crds", "spoke")); err != nil {
		return err
	}
	if err := createNamespace(ctx, spoke, OCMAgentNamespace); err != nil {
		return err
	}
	if err := spoke.ApplyYAML(ctx, ocmAgentRBAC); err != nil {
		return err
	}
	_, bootstrap, err := o.Hub.UserConfig(ocmBootstrapUser)
	if err != nil {
		return err
	}
	_, agent, err := spoke.UserConfig(OCMAgentUser, "system:serviceaccounts", "system:serviceaccounts:"+OCMAgentNamespace)
	if err != nil {
		return err
	}
	port, err := freePorts(1)
	if err != nil {
		return err
	}
	hubKubeconfigDir := filepath.Join(o.Dir, name, "hub-kubeconfig")
	proc, err := o.start("klusterlet-"+name, filepath.Join(o.bin, "registration-operator"), []string{"agent",
		"--kubeconfig=" + agent,
		"--spoke-cluster-name=" + name,
		"--agent-id=" + name + "-agent",
		"--bootstrap-kubeconfig=" + bootstrap,
		"--hub-kubeconfig-dir=" + hubKubeconfigDir,
		"--workload-source-config=" + filepath.Join(hubKubeconfigDir, "kubeconfig"),
		"--namespace=" + OCMAgentNamespace,
		"--disable-leader-election",
		fmt.Sprintf("--listen=127.0.0.1:%d", port[0]),
		// Status feedback and condition rules every second, not every 10.
		"--status-sync-interval=1s",
		// Feedback of lists and objects (as JSON).
		"--feature-gates=RawFeedbackJsonString=true",
	})
	if err != nil {
		return err
	}
	o.agents[name] = proc
	return nil
}

// AcceptCluster accepts spoke name on the hub as its administrator would
// (`clusteradm accept`): once the agent created its ManagedCluster,
// approves the agent's certificate request (which kube-controller-manager
// then signs) and sets the ManagedCluster's spec.hubAcceptsClient. (An
// approval before the ManagedCluster exists lets the agent leave its
// bootstrap while it still creates it: the creation is cancelled, and
// the agent, now without the bootstrap's permissions, never retries.)
func (o *OCM) AcceptCluster(ctx context.Context, name string) error {
	c, err := kubernetes.NewForConfig(o.Hub.AdminConfig)
	if err != nil {
		return err
	}
	agent := o.agents[name]
	err = poll(ctx, "ManagedCluster "+name+" created by its agent", 200*time.Millisecond, ocmJoinTimeout, agent, func(ctx context.Context) (bool, error) {
		_, err := o.Hub.applier.dyn.Resource(managedClusterGVR).Get(ctx, name, metav1.GetOptions{})
		return err == nil, err
	})
	if err != nil {
		return err
	}
	err = poll(ctx, "the certificate request of "+name, 200*time.Millisecond, ocmJoinTimeout, agent, func(ctx context.Context) (bool, error) {
		csrs, err := c.CertificatesV1().CertificateSigningRequests().List(ctx, metav1.ListOptions{
			LabelSelector: "open-cluster-management.io/cluster-name=" + name})
		if err != nil {
			return false, err
		}
		if len(csrs.Items) == 0 {
			return false, errors.New("none yet")
		}
		for i := range csrs.Items {
			csr := &csrs.Items[i]
			if approved(csr) {
				continue
			}
			csr.Status.Conditions = append(csr.Status.Conditions, certificatesv1.CertificateSigningRequestCondition{
				Type: certificatesv1.CertificateApproved, Status: corev1.ConditionTrue,
				Reason: "AcceptedByAdministrator", Message: "the test environment accepted cluster " + name,
			})
			if _, err := c.CertificatesV1().CertificateSigningRequests().UpdateApproval(ctx, csr.Name, csr, metav1.UpdateOptions{}); err != nil {
				return false, err
			}
		}
		return true, nil
	})
	if err != nil {
		return err
	}
	return poll(ctx, "ManagedCluster "+name+" accepted", 200*time.Millisecond, ocmJoinTimeout, agent, func(ctx context.Context) (bool, error) {
		_, err := o.Hub.applier.dyn.Resource(managedClusterGVR).Patch(ctx, name, types.MergePatchType,
			[]byte(`{"spec":{"hubAcceptsClient":true}}`), metav1.PatchOptions{})
		return err == nil, err
	})
}

// approved reports whether a certificate request was approved.
func approved(csr *certificatesv1.CertificateSigningRequest) bool {
	for _, c := range csr.Status.Conditions {
		if c.Type == certificatesv1.CertificateApproved {
			return true
		}
	}
	return false
}

// waitAvailable waits until ManagedCluster name is Available with no
// taint.
func (o *OCM) waitAvailable(ctx context.Context, name string) error {
	return poll(ctx, "ManagedCluster "+name+" Available", 200*time.Millisecond, ocmJoinTimeout, o.agents[name], func(ctx context.Context) (bool, error) {
		for _, p := range o.hubProcs {
			if p.exited() {
				return false, fmt.Errorf("%s exited: %v", p.name, p.exitError())
			}
		}
		mc, err := o.Hub.applier.dyn.Resource(managedClusterGVR).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		taints, _, _ := unstructured.NestedSlice(mc.Object, "spec", "taints")
		if status := fakemco.ConditionStatus(mc, "ManagedClusterConditionAvailable"); status != "True" || len(taints) > 0 {
			return false, fmt.Errorf("Available %q, taints %v; conditions: %s", status, taints, conditionsSummary(mc))
		}
		return true, nil
	})
}

// Stop stops the agents, then the hub's controllers. Idempotent.
func (o *OCM) Stop() {
	o.stopOnce.Do(func() {
		var wg sync.WaitGroup
		for _, p := range o.processes() {
			wg.Go(func() {
				if err := p.stop(syscall.SIGTERM); err != nil {
					o.logf("stopping %s: %v", p.name, err)
				}
			})
		}
		wg.Wait()
	})
}

// processes are the agents, then the hub's processes.
func (o *OCM) processes() []*process {
	var out []*process
	for _, n := range o.clusterNames() {
		if p := o.agents[n]; p != nil {
			out = append(out, p)
		}
	}
	return append(out, o.hubProcs...)
}

// Logs names the log file of every OCM process, for a failed test to
// show.
func (o *OCM) Logs() []string {
	var out []string
	for _, p := range o.processes() {
		out = append(out, p.logPath)
	}
	return out
}

// Tail is the last n lines of each OCM process's log, for a failed test.
func (o *OCM) Tail(w io.Writer, n int) {
	for _, p := range o.processes() {
		fmt.Fprintf(w, "=== %s (%s)\n%s\n", p.name, p.logPath, p.tail(n))
	}
}
