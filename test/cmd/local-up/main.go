// Command local-up runs the local virt-advisor control plane (`make run`):
// etcd, kube-apiserver, the test CRDs and baseline objects, and
// virt-advisor-apiserver behind its APIService, until interrupted.
//
// Flags after "--" are passed to virt-advisor-apiserver:
//
//	go run ./test/cmd/local-up -- --v=4 --leader-elect=true
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/kubevirt/virt-advisor/test/env"
	"github.com/kubevirt/virt-advisor/test/env/fakemco"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "local-up:", err)
		os.Exit(1)
	}
}

func run() error {
	dir := flag.String("dir", "_output/local", "data directory: PKI, etcd data, kubeconfigs, logs (kept across runs)")
	binDir := flag.String("bin-dir", "_output/bin", "directory with kube-apiserver, kubectl, etcd and virt-advisor-apiserver")
	mcoRenderDelay := flag.Duration("mco-render-delay", fakemco.DefaultRenderDelay, "fake MachineConfig operator: delay before a MachineConfig change is rendered into the pool's spec.configuration")
	mcoStep := flag.Duration("mco-step", fakemco.DefaultStepTime, "fake MachineConfig operator: time each pool node takes to update")
	sampleVMs := flag.Bool("sample-vms", false, "give the worker pool its 3 Nodes and run 4 sample VirtualMachineInstances on them (one migrates, two are shut down, one blocks the drain; see docs/disruption.md)")
	fleet := flag.Bool("fleet", false, "also run two spoke clusters (spoke-a, spoke-b, each with virt-advisor and the fake MCO) joined to this one as their hub by Open Cluster Management (built by make tools; see docs/fleet.md)")
	hardwareClasses := flag.Bool("hardware-classes", false, "create two classes of Nodes: pool worker, 3 Intel Nodes with 32 CPUs in 1 NUMA zone; pool worker-cnv (created, selecting the worker MachineConfigs too), 3 AMD Nodes with 64 CPUs in 2 NUMA zones and 32Gi of hugepages-1Gi; with node-feature-discovery's vendor label and NodeResourceTopologies")
	flag.Usage = func() {
		fmt.Fprintf(flag.CommandLine.Output(), "usage: %s [flags] [-- virt-advisor-apiserver flags]\n", os.Args[0])
		flag.PrintDefaults()
	}
	flag.Parse()

	// Interrupts during startup cancel it; Start then cleans up itself.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	e, err := env.Start(ctx, env.Options{
		Dir:         *dir,
		BinDir:      *binDir,
		Log:         os.Stdout,
		AdvisorArgs: flag.Args(),
		FakeMCO:     fakemco.Options{RenderDelay: *mcoRenderDelay, StepTime: *mcoStep},
	})
	if err != nil {
		return err
	}
	defer e.Stop()
	// Two classes of nodes, so that what the profiles derive from hardware
	// (CPUs, NUMA zones, huge pages, CPU vendor) shows. Off by default:
	// the worker-cnv pool also rolls out the worker MachineConfigs, which
	// changes the plans the docs show.
	if *hardwareClasses {
		if err := e.CreateHardware(ctx, env.LocalHardware); err != nil {
			return err
		}
		fmt.Println(describeHardware(env.LocalHardware))
	}
	if *sampleVMs {
		if err := runSampleVMs(ctx, e); err != nil {
			return err
		}
	}

	stopFleet := func() {}
	if *fleet {
		if stopFleet, err = runFleet(ctx, e, *dir, *binDir); err != nil {
			return err
		}
		defer stopFleet()
	}

	kubectl := filepath.Join(e.BinDir, "kubectl")
	fmt.Printf(`
virt-advisor is running. Logs: %s
In another shell:

export KUBECONFIG=%s
alias kubectl=%s
kubectl get apiservice v1alpha1.advisor.kubevirt.io
kubectl get virtplatformconfigs
kubectl apply -f artifacts/samples/load-aware-rebalancing.yaml
kubectl get virtplatformconfig load-aware-rebalancing --subresource=plan
HASH=$(kubectl get virtplatformconfig load-aware-rebalancing --subresource=plan -o jsonpath='{.status.planHash}')
sed "s/<paste status.planHash from the plan>/$HASH/" artifacts/samples/approval.json > /tmp/approval.json
kubectl create --raw /apis/advisor.kubevirt.io/v1alpha1/virtplatformconfigs/load-aware-rebalancing/approve -f /tmp/approval.json
kubectl get vpc -w
kubectl auth can-i create virtplatformconfigs --subresource=approve

Or with the kubectl plugin (kubectl-advisor, built next to kubectl):

export PATH=%s:$PATH
kubectl advisor plan load-aware-rebalancing
kubectl advisor approve load-aware-rebalancing
kubectl advisor status load-aware-rebalancing -w

Or in a web page on this computer (review, approve, follow the rollout;
it prints the address to open, with a launch code that works once):

kubectl advisor dashboard

Press Ctrl-C to stop (data stays in %s; make reset removes it).
`, filepath.Join(e.Dir, "logs"), e.Kubeconfig, kubectl, e.BinDir, e.Dir)

	<-ctx.Done()
	fmt.Println("\nstopping…")
	stopFleet() // OCM and the spokes, before their hub
	e.Stop()
	fmt.Println("stopped: etcd, kube-apiserver and virt-advisor have exited")
	return nil
}

// SampleVMs are the VMs --sample-vms runs on the worker nodes: what a
// drain does to each is in every plan that reboots the worker pool.
var SampleVMs = []env.VMI{
	{Namespace: "default", Name: "vm-migratable", Node: "worker-0", EvictionStrategy: "LiveMigrate", Migratable: true},
	{Namespace: "default", Name: "vm-none", Node: "worker-1", EvictionStrategy: "None", Migratable: true},
	{Namespace: "default", Name: "vm-disk", Node: "worker-1", EvictionStrategy: "LiveMigrateIfPossible", Reason: "DisksNotLiveMigratable"},
	{Namespace: "default", Name: "vm-gpu", Node: "worker-2", EvictionStrategy: "LiveMigrate", Reason: "HostDeviceNotLiveMigratable"},
}

// describeHardware says which Nodes the run created, one line per class.
func describeHardware(classes []env.HardwareClass) string {
	var lines []string
	for _, h := range classes {
		names := h.NodeNames()
		line := fmt.Sprintf("pool %s: Nodes %s..%s, %s, %d CPUs, %s, %d NUMA zone(s)", h.Pool, names[0], names[len(names)-1], h.Vendor, h.CPUs, h.Memory, h.NUMAZones)
		if h.HugePages1Gi != "" {
			line += ", hugepages-1Gi " + h.HugePages1Gi
		}
		lines = append(lines, line)
	}
	return strings.Join(lines, "\n")
}

func runSampleVMs(ctx context.Context, e *env.Env) error {
	if _, err := e.CreateWorkerNodes(ctx, "worker", 3); err != nil {
		return err
	}
	for _, v := range SampleVMs {
		if err := e.CreateVMI(ctx, v); err != nil && !apierrors.IsAlreadyExists(errors.Unwrap(err)) {
			return err
		}
	}
	fmt.Printf("worker Nodes worker-0..2 run %d sample VMIs (kubectl get virtualmachineinstances -A)\n", len(SampleVMs))
	return nil
}

// fleetSpokes are the spokes --fleet runs, in directories of their own
// under --dir (kept across runs, as the hub's).
var fleetSpokes = []string{"spoke-a", "spoke-b"}

// runFleet starts the spokes and Open Cluster Management with e as the
// hub, says how to look at them, and returns what stops them (OCM first).
func runFleet(ctx context.Context, hub *env.Env, dir, binDir string) (stop func(), err error) {
	spokes := map[string]*env.Env{}
	stopSpokes := func() {
		for _, s := range spokes {
			s.Stop()
		}
	}
	defer func() {
		if err != nil {
			stopSpokes()
		}
	}()
	for _, name := range fleetSpokes {
		fmt.Printf("starting spoke %s\n", name)
		spoke, err := env.Start(ctx, env.Options{Dir: filepath.Join(dir, name), BinDir: binDir, Log: os.Stdout,
			AdvisorArgs: []string{"--cluster-name=" + name}})
		if err != nil {
			return nil, fmt.Errorf("spoke %s: %w", name, err)
		}
		spokes[name] = spoke
	}
	ocm, err := env.StartOCM(ctx, hub, spokes)
	if err != nil {
		return nil, err
	}
	// The hub serves FleetConfigs once OCM's CRDs are there.
	fmt.Println("restarting the hub's virt-advisor with --fleet-hub")
	if err := hub.RestartAdvisorWith(ctx, nil, map[string]string{"--fleet-hub": "true"}); err != nil {
		ocm.Stop()
		return nil, err
	}
	fmt.Printf(`
Open Cluster Management runs with this cluster as the hub (OCM logs: %s),
and this cluster's virt-advisor serves FleetConfigs. Its managed clusters,
and each spoke's own API:

KUBECONFIG=%[2]s kubectl get managedclusters
KUBECONFIG=%[3]s kubectl get virtplatformconfigs
KUBECONFIG=%[4]s kubectl get virtplatformconfigs

One reviewed plan for both spokes, spoke-a first (docs/fleet.md):

export KUBECONFIG=%[2]s
kubectl label managedcluster spoke-a virt-advisor.kubevirt.io/wave=canary
kubectl apply -f artifacts/samples/fleet.yaml
_output/bin/kubectl-advisor fleet plan load-aware -n virt-fleet
_output/bin/kubectl-advisor fleet approve load-aware -n virt-fleet
_output/bin/kubectl-advisor fleet status load-aware -n virt-fleet
`, filepath.Join(ocm.Dir, "logs"), hub.Kubeconfig, spokes["spoke-a"].Kubeconfig, spokes["spoke-b"].Kubeconfig)
	return func() { ocm.Stop(); stopSpokes() }, nil
}
