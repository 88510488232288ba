// Command bench measures virt-advisor on the real local control plane and
// checks each figure against its target: plan GET latency against the
// floor of the same requests sent straight to kube-apiserver, concurrent
// plan GETs and the dry-runs they cost kube-apiserver, approval-to-write
// and approval-to-Completed times, drift detection latency, and the
// server's memory with and without many unrelated objects in the cluster.
// It exits 1 when a figure misses its target, 2 when it cannot measure.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"

	"github.com/kubevirt/virt-advisor/pkg/apis/advisor/v1alpha1"
	"github.com/kubevirt/virt-advisor/pkg/generated/clientset/versioned"
	"github.com/kubevirt/virt-advisor/pkg/hardware"
	"github.com/kubevirt/virt-advisor/pkg/profiles"
	"github.com/kubevirt/virt-advisor/pkg/profiles/catalog"
	"github.com/kubevirt/virt-advisor/test/env"
	"github.com/kubevirt/virt-advisor/test/env/fakemco"
	"github.com/kubevirt/virt-advisor/test/names"
)

var (
	planRuns    = flag.Int("plan-runs", 100, "plan GETs per profile")
	burstSize   = flag.Int("burst-requests", 50, "plan GETs sent at once in each burst")
	burstRounds = flag.Int("burst-rounds", 5, "bursts measured")
	applyRuns   = flag.Int("apply-runs", 40, "approvals measured (20 before 2026-12-03)")
	driftRuns   = flag.Int("drift-runs", 120, "external edits measured (60 before 2026-12-03)")
	objects     = flag.Int("objects", 10000, "unrelated MachineConfigs and ConfigMaps (each) for the memory figure; 0 skips it")
	dir         = flag.String("dir", "", "environment directory (default: a temporary one in /dev/shm, when there is one)")
	asJSON      = flag.Bool("json", false, "print the figures as JSON on stdout (progress goes to stderr)")
	readme      = flag.String("readme", "", "measure nothing: record the run of the -figures-json file in this Markdown file, between its markers, as the newest of the latest five runs (make bench-figures)")
	figuresJSON = flag.String("figures-json", "", "with -readme: the -json output of a run")
	steps       = flag.String("steps", strings.Join(stepNames, ","), "the measurements to run, comma-separated")

	// Targets.
	planP50Factor       = flag.Float64("plan-p50-factor", 1.5, "target: plan GET p50 at most this many times the floor p50, per profile")
	burstP95            = flag.Duration("burst-p95", time.Second, "target: p95 of the answers to a burst of concurrent plan GETs")
	burstDryRunShare    = flag.Float64("burst-dry-run-share", 0.1, "target: dry-runs kube-apiserver receives in a burst, at most this share of what one computation per GET would send")
	approvalFloorFactor = flag.Float64("approval-floor-factor", 1.3, "target: approval (201) to target written, p50, at most this many times the approval floor measured in the same run")
	driftFloorFactor    = flag.Float64("drift-floor-factor", 1.5, "target: external edit to Drifted seen by a watch, p95, at most this many times the drift floor measured in the same run")
	rssGrowthMiB        = flag.Float64("rss-growth-mib", 1, "target: server RSS growth with the unrelated objects, MiB")
)

const (
	kdNS = names.DeschedulerNamespace
	// budget bounds every wait for an event: a figure that does not come
	// within it is an error, not a sample.
	budget = 2 * time.Minute
)

var (
	mcGVK = schema.GroupVersionKind{Group: "machineconfiguration.openshift.io", Version: "v1", Kind: "MachineConfig"}
	kdGVK = schema.GroupVersionKind{Group: "operator.openshift.io", Version: "v1", Kind: "KubeDescheduler"}
	cmGVK = schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}
)

type bench struct {
	ctx    context.Context
	e      *env.Env
	adv    versioned.Interface
	dyn    dynamic.Interface
	mapper meta.RESTMapper
	out    io.Writer // progress and figures, for people
	report report
	// approved counts the approvals of the run so far.
	approved int
}

func main() {
	flag.Parse()
	if *readme != "" || *figuresJSON != "" {
		if *readme == "" || *figuresJSON == "" {
			fmt.Fprintln(os.Stderr, "bench: -readme and -figures-json go together: -figures-json names the -json output to write into -readme")
			os.Exit(2)
		}
		if err := writeReadme(*figuresJSON, *readme); err != nil {
			fmt.Fprintf(os.Stderr, "bench: %v\n", err)
			os.Exit(2)
		}
		return
	}
	started := time.Now()
	out := io.Writer(os.Stdout)
	if *asJSON {
		out = os.Stderr
	}
	b, err := run(out)
	if err != nil {
		fmt.Fprintf(os.Stderr, "bench: %v\n", err)
		os.Exit(2)
	}
	b.report.Run = newRunInfo(started)
	if *asJSON {
		if err := b.report.writeJSON(os.Stdout); err != nil {
			fmt.Fprintf(os.Stderr, "bench: %v\n", err)
			os.Exit(2)
		}
	}
	if len(b.report.Missed) > 0 {
		fmt.Fprintf(os.Stderr, "\nbench: %d of the figures missed their target:\n", len(b.report.Missed))
		for _, m := range b.report.Missed {
			fmt.Fprintf(os.Stderr, "  %s\n", m)
		}
		os.Exit(1)
	}
	fmt.Fprintln(out, "\nevery figure met its target")
}

// memoryDir is where the control plane's files go by default: /dev/shm
// when the machine has it, so that etcd's writes (tens of thousands of
// objects in the memory and vms steps) never wait for the disk's
// writeback, which put up to a third of the CPU time in I/O wait under
// the figures; else the temporary directory.
func memoryDir() string {
	if fi, err := os.Stat("/dev/shm"); err == nil && fi.IsDir() {
		return "/dev/shm"
	}
	return ""
}

func run(out io.Writer) (_ *bench, err error) {
	ctx, cancel := context.WithTimeout(context.Background(), 40*time.Minute)
	defer cancel()
	d := *dir
	if d == "" {
		tmp, err := os.MkdirTemp(memoryDir(), "virt-advisor-bench-")
		if err != nil {
			return nil, err
		}
		// A run that cannot measure keeps its logs to say why.
		defer func() {
			if err != nil {
				fmt.Fprintf(os.Stderr, "bench: the logs of the control plane are kept in %s\n", filepath.Join(tmp, "logs"))
				return
			}
			os.RemoveAll(tmp)
		}()
		d = tmp
	}
	fmt.Fprintln(out, "starting the local control plane…")
	e, err := env.Start(ctx, env.Options{Dir: d,
		FakeMCO:     fakemco.Options{RenderDelay: 100 * time.Millisecond, StepTime: 100 * time.Millisecond},
		AdvisorArgs: []string{"--leader-elect=false"}})
	if err != nil {
		return nil, err
	}
	defer e.Stop()
	cfg := rest.CopyConfig(e.AdminConfig)
	cfg.QPS, cfg.Burst = 500, 1000
	// The plans' warnings (VMs a drain would shut down) are expected.
	cfg.WarningHandler = rest.NoWarnings{}
	disc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return nil, err
	}
	b := &bench{ctx: ctx, e: e, out: out,
		adv: versioned.NewForConfigOrDie(cfg), dyn: dynamic.NewForConfigOrDie(cfg),
		mapper: restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(disc)),
	}
	all := map[string]func() error{"plan": b.planLatency, "burst": b.planBurst, "apply": b.applyLatency, "drift": b.driftLatency,
		"memory": b.memory, "vms": b.vmImpact, "stepping": b.stepping, "admission": b.admissionCost, "fleet": b.fleetPlan}
	chosen, err := chooseSteps(*steps)
	if err != nil {
		return nil, err
	}
	for _, name := range chosen {
		before, err := readStolen()
		if err != nil {
			return nil, err
		}
		if err := all[name](); err != nil {
			return nil, err
		}
		after, err := readStolen()
		if err != nil {
			return nil, err
		}
		// A step's figures are only as steady as the machine under it: on
		// a virtual machine the host may take CPU time away (steal).
		b.report.add(fmt.Sprintf("CPU time the host took (steal) during step %s", name), "share", after.shareSince(before))
	}
	return b, nil
}

// stepNames are the measurements, in the order they run.
var stepNames = []string{"plan", "burst", "apply", "admission", "drift", "memory", "vms", "stepping", "fleet"}

// chooseSteps parses --steps: known names, run in their own order.
func chooseSteps(list string) ([]string, error) {
	want := map[string]bool{}
	for _, s := range strings.Split(list, ",") {
		if s = strings.TrimSpace(s); s == "" {
			continue
		}
		if !slices.Contains(stepNames, s) {
			return nil, fmt.Errorf("--steps: unknown measurement %q; the measurements are %s", s, strings.Join(stepNames, ", "))
		}
		want[s] = true
	}
	if len(want) == 0 {
		return nil, fmt.Errorf("--steps: no measurement chosen; the measurements are %s", strings.Join(stepNames, ", "))
	}
	var out []string
	for _, s := range stepNames {
		if want[s] {
			out = append(out, s)
		}
	}
	return out, nil
}

func (b *bench) printf(format string, args ...any) { fmt.Fprintf(b.out, format, args...) }

// resource returns the client of a kind's resource, found through
// discovery.
func (b *bench) resource(gvk schema.GroupVersionKind, namespace string) (dynamic.ResourceInterface, error) {
	m, err := b.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if err != nil {
		return nil, fmt.Errorf("resolving %s: %w", gvk.Kind, err)
	}
	if m.Scope.Name() == meta.RESTScopeNameRoot {
		return b.dyn.Resource(m.Resource), nil
	}
	return b.dyn.Resource(m.Resource).Namespace(namespace), nil
}

// createConfig (re)creates a config with a spec.
func (b *bench) createConfig(profile, spec string) error {
	if err := b.deleteConfig(profile); err != nil {
		return err
	}
	body := fmt.Sprintf(`{"apiVersion":"advisor.kubevirt.io/v1alpha1","kind":"VirtPlatformConfig","metadata":{"name":%q},"spec":%s}`, profile, spec)
	return b.adv.AdvisorV1alpha1().RESTClient().Post().Resource("virtplatformconfigs").
		SetHeader("Content-Type", "application/json").Body([]byte(body)).Do(b.ctx).Error()
}

// deleteConfig deletes config name, if it exists, and waits until it is
// gone.
func (b *bench) deleteConfig(name string) error {
	_ = b.adv.AdvisorV1alpha1().VirtPlatformConfigs().Delete(b.ctx, name, metav1.DeleteOptions{})
	if err := wait.PollUntilContextTimeout(b.ctx, 50*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		_, err := b.adv.AdvisorV1alpha1().VirtPlatformConfigs().Get(ctx, name, metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	}); err != nil {
		return fmt.Errorf("waiting for %s to be deleted: %w", name, err)
	}
	return nil
}

func (b *bench) waitPhase(name string, phase v1alpha1.ConfigPhase) error {
	var last *v1alpha1.VirtPlatformConfig
	err := wait.PollUntilContextTimeout(b.ctx, 20*time.Millisecond, budget, true, func(ctx context.Context) (bool, error) {
		c, err := b.adv.AdvisorV1alpha1().VirtPlatformConfigs().Get(ctx, name, metav1.GetOptions{})
		if err == nil {
			last = c
		}
		return err == nil && c.Status.Phase == phase, nil
	})
	if err != nil {
		return fmt.Errorf("%s did not reach phase %s within %v (%s): %w", name, phase, budget, lastSeen(last), err)
	}
	return nil
}

// lastSeen says what a config that did not reach a phase last showed:
// its phase with the reason and message, and each item's state.
func lastSeen(c *v1alpha1.VirtPlatformConfig) string {
	if c == nil {
		return "never read"
	}
	seen := fmt.Sprintf("last seen %q", c.Status.Phase)
	if cond := meta.FindStatusCondition(c.Status.Conditions, string(c.Status.Phase)); cond != nil {
		seen += fmt.Sprintf(", %s: %s", cond.Reason, cond.Message)
	}
	for _, it := range c.Status.Items {
		seen += fmt.Sprintf("; item %s %s %s: %s", it.Name, it.Operation, it.State, it.Message)
	}
	return seen
}

// planSpecs are the configs whose plans planLatency measures, one per
// profile of the catalogue (Ignore: nothing is written), on the nodes of
// env.LocalHardware.
var planSpecs = map[string]string{
	"load-aware-rebalancing": `{"profile":"load-aware-rebalancing","action":"Ignore"}`,
	"virt-higher-density":    `{"profile":"virt-higher-density","action":"Ignore"}`,
	"example-profile":        `{"profile":"example-profile","action":"Ignore"}`,
	"live-migration-limits":  `{"profile":"live-migration-limits","action":"Ignore"}`,
	"hugepages":              `{"profile":"hugepages","action":"Ignore","options":{"hugepages":{"pool":"worker-cnv","pageSize":"1G","memoryPercent":25}}}`,
	"pci-passthrough":        `{"profile":"pci-passthrough","action":"Ignore","options":{"pciPassthrough":{"pool":"worker"}}}`,
	"dedicated-cpus":         `{"profile":"dedicated-cpus","action":"Ignore","options":{"dedicatedCPUs":{"pool":"worker-cnv"}}}`,
	"vm-eviction-strategy":   `{"profile":"vm-eviction-strategy","action":"Ignore","options":{"vmEvictionStrategy":{"strategy":"LiveMigrateIfPossible"}}}`,
}

// planLatency: GET …/plan through the aggregator vs. the floor, the same
// GET and SSA dry-run PATCH per item sent straight to kube-apiserver, items
// in parallel.
func (b *bench) planLatency() error {
	b.printf("\n== plan GET latency (through the aggregator) vs. floor (a GET of the config through the aggregator, then the same GETs + SSA dry-run PATCHes straight to kube-apiserver, in parallel)\n")
	// The profiles that derive their values from the nodes' hardware
	// read it from the nodes `make run` creates.
	if err := b.e.CreateHardware(b.ctx, env.LocalHardware); err != nil {
		return err
	}
	for _, profile := range catalog.Default().Names() {
		spec, ok := planSpecs[profile]
		if !ok {
			return fmt.Errorf("the bench has no spec for profile %s of the catalogue: add it to planSpecs", profile)
		}
		if err := b.createConfig(profile, spec); err != nil {
			return err
		}
		lists, err := b.listedReads(profile)
		if err != nil {
			return err
		}
		plan, planTimes, floorTimes, err := b.plansWithFloor(profile, lists)
		if err != nil {
			return err
		}
		var getTimes []time.Duration
		for i := 0; i < *planRuns; i++ {
			start := time.Now()
			if _, err := b.adv.AdvisorV1alpha1().VirtPlatformConfigs().Get(b.ctx, profile, metav1.GetOptions{}); err != nil {
				return err
			}
			getTimes = append(getTimes, time.Since(start))
		}
		g50, _ := percentiles(getTimes)
		b.printf("%-24s GET of the config itself through the aggregator: p50 %.1fms\n", profile, ms(g50))
		mean, err := b.serverPlanMean(profile)
		if err != nil {
			return err
		}
		b.printf("%-24s plan computation inside the server (mean of virt_advisor_plan_duration_seconds): %.1fms\n", profile, mean)
		p50, p95 := percentiles(planTimes)
		f50, f95 := percentiles(floorTimes)
		b.report.add(profile+" plan GET p50", "ms", ms(p50))
		b.report.add(profile+" plan GET p95", "ms", ms(p95))
		b.report.add(profile+" floor p50", "ms", ms(f50))
		b.report.add(profile+" floor p95", "ms", ms(f95))
		factor := float64(p50) / float64(f50)
		met := b.report.check(profile+" plan GET p50 / floor p50", "x", factor, *planP50Factor)
		b.printf("%-24s items %d  plan p50 %6.1fms p95 %6.1fms   floor p50 %6.1fms p95 %6.1fms   p50/floor %.2f (target <= %.2f: %s)\n",
			profile, len(plan.Status.Items), ms(p50), ms(p95), ms(f50), ms(f95), factor, *planP50Factor, verdict(met))
	}
	return nil
}

// plansWithFloor measures planRuns GETs of profile's plan and as many
// floors (lists: the profile's listedReads), after five of each to warm
// up, and returns the last plan. The plan GETs and the floors take turns,
// so that both see the same machine: a slow spell (a GC, a compaction,
// other work) falls on both rather than on one of two blocks.
func (b *bench) plansWithFloor(profile string, lists []dynamic.ResourceInterface) (plan *v1alpha1.Plan, plans, floors []time.Duration, err error) {
	for i := 0; i < *planRuns+5; i++ {
		start := time.Now()
		p, err := b.adv.AdvisorV1alpha1().VirtPlatformConfigs().GetPlan(b.ctx, profile, metav1.GetOptions{})
		if err != nil {
			return nil, nil, nil, fmt.Errorf("plan of %s: %w", profile, err)
		}
		took := time.Since(start)
		plan = p
		floor, err := b.floor(plan, lists)
		if err != nil {
			return nil, nil, nil, err
		}
		if i >= 5 { // warm-up
			plans = append(plans, took)
			floors = append(floors, floor)
		}
	}
	return plan, plans, floors, nil
}

// serverPlanMean reads the mean plan computation time of a profile from
// the server's own metrics, to tell it apart from the aggregator hop.
func (b *bench) serverPlanMean(profile string) (float64, error) {
	t, err := b.serverPlanTotals(profile)
	if err != nil {
		return 0, err
	}
	if t.count == 0 {
		return 0, fmt.Errorf("virt-advisor-apiserver /metrics has no virt_advisor_plan_duration_seconds sample for %s after its plan GETs", profile)
	}
	return t.sum / t.count * 1000, nil
}

// serverMetrics scrapes virt-advisor-apiserver's /metrics directly.
func (b *bench) serverMetrics() (env.Metrics, error) {
	cfg := rest.CopyConfig(b.e.AdminConfig)
	cfg.Host = b.e.Advisor().URL
	cfg.TLSClientConfig.CAData, cfg.TLSClientConfig.CAFile = nil, b.e.ServingCAFile
	c, err := versioned.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	m, err := env.ScrapeMetrics(b.ctx, c.AdvisorV1alpha1().RESTClient())
	if err != nil {
		return nil, fmt.Errorf("virt-advisor-apiserver: %w", err)
	}
	return m, nil
}

// goHeap says what the server's Go heap holds (MiB): in use (the spans
// that hold at least one object), of that the objects themselves (right
// after a collection: the live heap; the rest of in use is room between
// them), and kept from the OS though free, which RSS counts too.
func (b *bench) goHeap() (inUse, objects, kept float64, err error) {
	m, err := b.serverMetrics()
	if err != nil {
		return 0, 0, 0, err
	}
	const mib = 1 << 20
	return m.Sum("go_memstats_heap_inuse_bytes", nil) / mib, m.Sum("go_memstats_heap_alloc_bytes", nil) / mib,
		(m.Sum("go_memstats_heap_idle_bytes", nil) - m.Sum("go_memstats_heap_released_bytes", nil)) / mib, nil
}

// metricTotals are the sum (seconds) and count of a histogram of the
// server's so far (its plan computations of a profile, its storage
// updates).
type metricTotals struct{ sum, count float64 }

// meanSince is the mean observation in ms between before and t.
func (t metricTotals) meanSince(before metricTotals) float64 {
	if t.count == before.count {
		return 0
	}
	return (t.sum - before.sum) / (t.count - before.count) * 1000
}

func (b *bench) serverPlanTotals(profile string) (metricTotals, error) {
	m, err := b.serverMetrics()
	if err != nil {
		return metricTotals{}, err
	}
	labels := map[string]string{"profile": profile}
	return metricTotals{sum: m.Sum("virt_advisor_plan_duration_seconds", labels), count: float64(m.Count("virt_advisor_plan_duration_seconds", labels))}, nil
}

// floorLists are the kinds a plan lists whole from kube-apiserver before
// its desired state exists, when the profile reads them (its
// Metadata().Reads): the pools, and the nodes' NUMA zones. (The Nodes
// themselves come from the server's informer, not from a request.)
var floorLists = []schema.GroupResource{profiles.PoolsResource,
	{Group: hardware.NodeResourceTopologyGVK.Group, Resource: "noderesourcetopologies"}}

// listedReads are the resources of floorLists that profile reads.
func (b *bench) listedReads(profile string) ([]dynamic.ResourceInterface, error) {
	p, ok := catalog.Default().Get(profile)
	if !ok {
		return nil, fmt.Errorf("no profile %s in the catalogue", profile)
	}
	var lists []dynamic.ResourceInterface
	for _, r := range p.Metadata().Reads {
		if !slices.Contains(floorLists, r.Resource) {
			continue
		}
		gvr, err := b.mapper.ResourceFor(r.Resource.WithVersion(""))
		if err != nil {
			return nil, fmt.Errorf("resolving %s: %w", r.Resource, err)
		}
		lists = append(lists, b.dyn.Resource(gvr))
	}
	return lists, nil
}

// floor is the least a plan GET can cost: one trip through the
// aggregator (a GET of the config itself, which every aggregated request
// pays), then the plan's own requests straight to kube-apiserver in the
// order they depend on each other: the lists its desired states derive
// from (listedReads) together with each item's GET, then each item's
// server-side apply dry-run, which needs the desired state. An item whose
// target is an input of its desired state (load-aware-rebalancing's
// KubeDescheduler) has its GET among the reads too.
func (b *bench) floor(p *v1alpha1.Plan, lists []dynamic.ResourceInterface) (time.Duration, error) {
	start := time.Now()
	if _, err := b.adv.AdvisorV1alpha1().VirtPlatformConfigs().Get(b.ctx, p.Name, metav1.GetOptions{}); err != nil {
		return 0, err
	}
	type target struct {
		ri  dynamic.ResourceInterface
		obj *unstructured.Unstructured
	}
	var targets []target
	for _, it := range p.Status.Items {
		if it.DesiredState == nil {
			continue
		}
		obj := &unstructured.Unstructured{}
		if err := json.Unmarshal(it.DesiredState.Raw, &obj.Object); err != nil {
			return 0, err
		}
		ri, err := b.resource(obj.GroupVersionKind(), it.TargetRef.Namespace)
		if err != nil {
			return 0, err
		}
		targets = append(targets, target{ri: ri, obj: obj})
	}
	var g errgroup.Group
	for _, l := range lists {
		g.Go(func() error {
			_, err := l.List(b.ctx, metav1.ListOptions{})
			return err
		})
	}
	for _, t := range targets {
		g.Go(func() error {
			if _, err := t.ri.Get(b.ctx, t.obj.GetName(), metav1.GetOptions{}); err != nil && !apierrors.IsNotFound(err) {
				return err
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return 0, err
	}
	for _, t := range targets {
		g.Go(func() error {
			_, err := t.ri.Apply(b.ctx, t.obj.GetName(), t.obj, metav1.ApplyOptions{FieldManager: "bench-floor", Force: true, DryRun: []string{metav1.DryRunAll}})
			return err
		})
	}
	if err := g.Wait(); err != nil {
		return 0, err
	}
	return time.Since(start), nil
}

// planBurst: many GETs of one plan at once through the aggregator, as
// clients without retries see them: every answer must be 200 or 429, and
// kube-apiserver must receive far fewer dry-runs than one computation per
// GET would send.
func (b *bench) planBurst() error {
	const name = "load-aware-rebalancing"
	b.printf("\n== %d concurrent plan GETs of %s through the aggregator, %d rounds\n", *burstSize, name, *burstRounds)
	if err := b.createConfig(name, fmt.Sprintf(`{"profile":%q,"action":"Ignore"}`, name)); err != nil {
		return err
	}
	p, err := b.adv.AdvisorV1alpha1().VirtPlatformConfigs().GetPlan(b.ctx, name, metav1.GetOptions{})
	if err != nil {
		return err
	}
	dryRunsPerPlan := 0
	for _, it := range p.Status.Items {
		if it.DesiredState != nil {
			dryRunsPerPlan++
		}
	}
	client, err := rest.HTTPClientFor(b.e.AdminConfig)
	if err != nil {
		return err
	}
	url := fmt.Sprintf("%s/apis/advisor.kubevirt.io/v1alpha1/virtplatformconfigs/%s/plan", b.e.AdminConfig.Host, name)
	var times []time.Duration
	var worstDryRuns float64
	codes := map[int]int{}
	for round := 0; round < *burstRounds; round++ {
		before, err := b.e.DryRunApplies(b.ctx)
		if err != nil {
			return err
		}
		answers, err := burst(b.ctx, client, url, *burstSize)
		if err != nil {
			return err
		}
		after, err := b.e.DryRunApplies(b.ctx)
		if err != nil {
			return err
		}
		for _, a := range answers {
			codes[a.code]++
			if a.code != http.StatusOK && a.code != http.StatusTooManyRequests {
				return fmt.Errorf("a plan GET of the burst was answered %d, want 200 or 429: %s", a.code, a.body)
			}
			times = append(times, a.took)
		}
		worstDryRuns = max(worstDryRuns, after-before)
	}
	p50, p95 := percentiles(times)
	separate := float64(*burstSize * dryRunsPerPlan)
	b.report.add("burst plan GET p50", "ms", ms(p50))
	p95Met := b.report.check("burst plan GET p95", "ms", ms(p95), ms(*burstP95))
	b.report.add("burst answers 429", "requests", float64(codes[http.StatusTooManyRequests]))
	b.report.add("burst dry-runs at kube-apiserver, worst round", "requests", worstDryRuns)
	shareMet := b.report.check("burst dry-runs / one computation per GET", "share", worstDryRuns/separate, *burstDryRunShare)
	b.printf("answers %v  p50 %6.1fms p95 %6.1fms (target p95 <= %v: %s)\n", codes, ms(p50), ms(p95), *burstP95, verdict(p95Met))
	b.printf("dry-runs received by kube-apiserver per burst: at most %.0f; %d separate computations would send %.0f: share %.2f (target <= %.2f: %s)\n",
		worstDryRuns, *burstSize, separate, worstDryRuns/separate, *burstDryRunShare, verdict(shareMet))
	return nil
}

type answer struct {
	code int
	body string
	took time.Duration
}

// burst sends n GETs of url at once, without retries.
func burst(ctx context.Context, client *http.Client, url string, n int) ([]answer, error) {
	answers := make([]answer, n)
	errs := make([]error, n)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
			if err != nil {
				errs[i] = err
				return
			}
			<-start
			t0 := time.Now()
			resp, err := client.Do(req)
			if err != nil {
				errs[i] = err
				return
			}
			defer resp.Body.Close()
			body, err := io.ReadAll(resp.Body)
			answers[i] = answer{code: resp.StatusCode, body: string(body), took: time.Since(t0)}
			errs[i] = err
		})
	}
	close(start)
	wg.Wait()
	return answers, errors.Join(errs...)
}

// applyLatency: from the approval's 201 to the first write of the target
// (a KubeDescheduler, no MachineConfig) and to Completed.
func (b *bench) applyLatency() error {
	b.printf("\n== approval to apply (load-aware-rebalancing without PSI: one KubeDescheduler item)\n")
	before, err := b.storageUpdates()
	if err != nil {
		return err
	}
	times, err := b.approvals(*applyRuns, true)
	if err != nil {
		return err
	}
	after, err := b.storageUpdates()
	if err != nil {
		return err
	}
	p50, p95 := percentiles(times.toWrite)
	c50, c95 := percentiles(times.toCompleted)
	b.report.add("approval to target written p50", "ms", ms(p50))
	b.report.add("approval to target written p95", "ms", ms(p95))
	b.report.add("approval to Completed p50", "ms", ms(c50))
	b.report.add("approval to Completed p95", "ms", ms(c95))
	b.printf("approval -> target written   p50 %6.1fms p95 %6.1fms (n=%d)\n", ms(p50), ms(p95), len(times.toWrite))
	b.printf("approval -> Completed        p50 %6.1fms p95 %6.1fms\n", ms(c50), ms(c95))
	b.reportApprovalFloor(p50, after.meanSince(before), times.floor)
	return nil
}

// approvalTimes are what approvals measured.
type approvalTimes struct {
	// toWrite and toCompleted: from the approval's 201 to the target
	// written (seen by a watch) and to Completed.
	toWrite, toCompleted []time.Duration
	// floor: the KubeDescheduler of the plan approved before applied again
	// as the server's ServiceAccount, straight to kube-apiserver (floorApply),
	// once between each two approvals.
	floor []time.Duration
}

// approvals measures n approvals of load-aware-rebalancing without PSI,
// each of a new plan. With floor, between two approvals, while no config
// exists (so that the server does not react) and once the control plane
// is quiet, it measures the floor's apply.
func (b *bench) approvals(n int, floor bool) (approvalTimes, error) {
	name := "load-aware-rebalancing"
	var times approvalTimes
	kd, err := b.resource(kdGVK, kdNS)
	if err != nil {
		return times, err
	}
	var asServer dynamic.ResourceInterface
	if floor {
		if asServer, err = b.serverKubeDeschedulers(); err != nil {
			return times, err
		}
	}
	var approved *unstructured.Unstructured
	for i := 0; i < n; i++ {
		if approved != nil {
			// createConfig deletes the config too; the floor needs it gone
			// before.
			if err := b.deleteConfig(name); err != nil {
				return times, err
			}
			if _, _, err := b.quiet(floorQuietWindow, floorQuietBudget); err != nil {
				return times, err
			}
			took, err := b.floorApply(kd, asServer, approved, int64(300+i))
			if err != nil {
				return times, fmt.Errorf("floor apply %d: %w", i, err)
			}
			times.floor = append(times.floor, took)
		}
		// Each approval of the run writes an interval of its own: one
		// equal to the last would write nothing.
		b.approved++
		written, done, p, err := b.approval(kd, name, 120+b.approved)
		if err != nil {
			return times, fmt.Errorf("approval %d: %w", i+1, err)
		}
		if floor {
			if approved, err = approvedKubeDescheduler(p.Status.Items); err != nil {
				return times, err
			}
		}
		times.toWrite = append(times.toWrite, written)
		times.toCompleted = append(times.toCompleted, done)
	}
	return times, nil
}

// approval creates config name with deschedulingIntervalSeconds interval,
// approves its plan and measures from the approval's 201 to the
// KubeDescheduler written (seen by a watch of kd) and to Completed.
func (b *bench) approval(kd dynamic.ResourceInterface, name string, interval int) (written, done time.Duration, p *v1alpha1.Plan, err error) {
	spec := fmt.Sprintf(`{"profile":%q,"options":{"loadAware":{"enablePSIMetrics":false,"deschedulingIntervalSeconds":%d}}}`, name, interval)
	if err := b.createConfig(name, spec); err != nil {
		return 0, 0, nil, err
	}
	if err := b.waitPhase(name, v1alpha1.PhaseReviewRequired); err != nil {
		return 0, 0, nil, err
	}
	if p, err = b.adv.AdvisorV1alpha1().VirtPlatformConfigs().GetPlan(b.ctx, name, metav1.GetOptions{}); err != nil {
		return 0, 0, nil, err
	}
	w, err := kd.Watch(b.ctx, metav1.ListOptions{FieldSelector: "metadata.name=cluster"})
	if err != nil {
		return 0, 0, nil, err
	}
	defer w.Stop()
	cw, err := b.adv.AdvisorV1alpha1().VirtPlatformConfigs().Watch(b.ctx, metav1.ListOptions{FieldSelector: "metadata.name=" + name})
	if err != nil {
		return 0, 0, nil, err
	}
	defer cw.Stop()
	// As before each floor apply: the approval starts on a quiet control
	// plane, not in the wake of the config's creation and first plans, so
	// that the approval and its floor see the same machine.
	if _, _, err := b.quiet(floorQuietWindow, floorQuietBudget); err != nil {
		return 0, 0, nil, err
	}
	if _, err := b.adv.AdvisorV1alpha1().VirtPlatformConfigs().Approve(b.ctx, name,
		&v1alpha1.Approval{Spec: v1alpha1.ApprovalSpec{PlanHash: p.Status.PlanHash}}, metav1.CreateOptions{}); err != nil {
		return 0, 0, nil, err
	}
	t0 := time.Now()
	seen, err := waitFor(w, budget, fmt.Sprintf("KubeDescheduler with deschedulingIntervalSeconds %d", interval), intervalIs(int64(interval)))
	if err != nil {
		return 0, 0, nil, err
	}
	completed, err := waitFor(cw, budget, name+" Completed", func(ev watch.Event) bool {
		c, ok := ev.Object.(*v1alpha1.VirtPlatformConfig)
		return ok && c.Status.Phase == v1alpha1.PhaseCompleted
	})
	return seen.Sub(t0), completed.Sub(t0), p, err
}

// intervalIs matches a watch event of a KubeDescheduler with that
// deschedulingIntervalSeconds.
func intervalIs(interval int64) func(watch.Event) bool {
	return func(ev watch.Event) bool {
		u, ok := ev.Object.(*unstructured.Unstructured)
		if !ok {
			return false
		}
		v, _, _ := unstructured.NestedInt64(u.Object, "spec", "deschedulingIntervalSeconds")
		return v == interval
	}
}

// driftLatency: an external edit of a managed field until Drifted is seen
// through a watch on our API, from the start of the edit's request; the
// edit is reverted between runs. Its floor, measured on the same edits:
// the edit's watch event delivered to a plain client watching the
// KubeDescheduler (from the same instant), plus one update of the
// config in the server's storage (the mean during the edits): the least
// any detection that records Drifted can take.
func (b *bench) driftLatency() error {
	b.printf("\n== drift detection (external edit of KubeDescheduler spec.mode -> Drifted seen by a watch)\n")
	name := "load-aware-rebalancing"
	kd, err := b.resource(kdGVK, kdNS)
	if err != nil {
		return err
	}
	if err := b.createConfig(name, fmt.Sprintf(`{"profile":%q,"action":"Apply","options":{"loadAware":{"enablePSIMetrics":false}}}`, name)); err != nil {
		return err
	}
	if err := b.waitPhase(name, v1alpha1.PhaseCompleted); err != nil {
		return err
	}
	before, err := b.storageUpdates()
	if err != nil {
		return err
	}
	var times, delivered []time.Duration
	for i := 0; i < *driftRuns; i++ {
		took, event, err := b.drift(kd, name)
		if err != nil {
			return fmt.Errorf("edit %d: %w", i+1, err)
		}
		times, delivered = append(times, took), append(delivered, event)
		if _, err := kd.Patch(b.ctx, "cluster", types.MergePatchType,
			[]byte(`{"spec":{"mode":"Automatic"}}`), metav1.PatchOptions{FieldManager: "bench-editor"}); err != nil {
			return err
		}
		if err := b.waitPhase(name, v1alpha1.PhaseCompleted); err != nil {
			return err
		}
	}
	after, err := b.storageUpdates()
	if err != nil {
		return err
	}
	p50, p95 := percentiles(times)
	d50, d95 := percentiles(delivered)
	storage := after.meanSince(before)
	floor := ms(d95) + storage
	b.report.add("edit to Drifted p50", "ms", ms(p50))
	b.report.add("edit to Drifted p95", "ms", ms(p95))
	b.report.add("edit's watch event delivered to a plain client p95", "ms", ms(d95))
	b.report.add("server storage update mean during the edits", "ms", storage)
	b.report.add("drift floor: that delivery p95 + storage update mean", "ms", floor)
	met := b.report.check("edit to Drifted p95 / drift floor", "x", ms(p95)/floor, *driftFloorFactor)
	b.printf("edit -> Drifted              p50 %6.1fms p95 %6.1fms (n=%d)\n", ms(p50), ms(p95), len(times))
	b.printf("drift floor                  %6.1fms: the edit's watch event delivered to a plain client (p50 %.1fms, p95 %.1fms) + a storage update of the server (mean %.1fms)\n",
		floor, ms(d50), ms(d95), storage)
	b.printf("edit -> Drifted p95 / floor %.2f (target <= %.2f: %s)\n", ms(p95)/floor, *driftFloorFactor, verdict(met))
	return nil
}

// drift edits the KubeDescheduler's mode and measures, from the start of
// the edit's request, until a watch of our API sees config name Drifted
// and until a plain watch of the KubeDescheduler sees the edit.
func (b *bench) drift(kd dynamic.ResourceInterface, name string) (toDrifted, delivered time.Duration, err error) {
	live, err := kd.Get(b.ctx, "cluster", metav1.GetOptions{})
	if err != nil {
		return 0, 0, err
	}
	kw, err := kd.Watch(b.ctx, metav1.ListOptions{FieldSelector: "metadata.name=cluster", ResourceVersion: live.GetResourceVersion()})
	if err != nil {
		return 0, 0, err
	}
	defer kw.Stop()
	cw, err := b.adv.AdvisorV1alpha1().VirtPlatformConfigs().Watch(b.ctx, metav1.ListOptions{FieldSelector: "metadata.name=" + name})
	if err != nil {
		return 0, 0, err
	}
	defer cw.Stop()
	// Both watches are read at once: an event read late would be timed
	// late.
	type seen struct {
		at  time.Time
		err error
	}
	// The edit is made on a quiet control plane, not in the wake of the
	// last edit's revert and its Completed, which the floor's plain watch
	// would not pay.
	if _, _, err := b.quiet(floorQuietWindow, floorQuietBudget); err != nil {
		return 0, 0, err
	}
	edited, drifted := make(chan seen, 1), make(chan seen, 1)
	go func() {
		at, err := waitFor(kw, budget, "the edited KubeDescheduler", func(ev watch.Event) bool {
			u, ok := ev.Object.(*unstructured.Unstructured)
			mode, _, _ := unstructured.NestedString(u.Object, "spec", "mode")
			return ok && mode == "Predictive"
		})
		edited <- seen{at, err}
	}()
	go func() {
		at, err := waitFor(cw, budget, name+" Drifted", func(ev watch.Event) bool {
			c, ok := ev.Object.(*v1alpha1.VirtPlatformConfig)
			return ok && c.Status.Phase == v1alpha1.PhaseDrifted
		})
		drifted <- seen{at, err}
	}()
	t0 := time.Now()
	if _, err := kd.Patch(b.ctx, "cluster", types.MergePatchType,
		[]byte(`{"spec":{"mode":"Predictive"}}`), metav1.PatchOptions{FieldManager: "bench-editor"}); err != nil {
		return 0, 0, err
	}
	e, d := <-edited, <-drifted
	if err := errors.Join(e.err, d.err); err != nil {
		return 0, 0, err
	}
	return d.at.Sub(t0), e.at.Sub(t0), nil
}

// memory: the server's RSS with two applied configs, before and after the
// cluster gains many MachineConfigs and ConfigMaps that are not ours.
func (b *bench) memory() error {
	if *objects == 0 {
		return nil
	}
	b.printf("\n== memory of virt-advisor-apiserver (RSS) with 0 vs %d unrelated MachineConfigs + %d ConfigMaps\n", *objects, *objects)
	if err := b.createConfig("virt-higher-density", `{"profile":"virt-higher-density","action":"Apply"}`); err != nil {
		return err
	}
	if err := b.waitPhase("virt-higher-density", v1alpha1.PhaseCompleted); err != nil {
		return err
	}
	time.Sleep(5 * time.Second)
	before, err := rss(b.e.Advisor().Pid())
	if err != nil {
		return err
	}
	start := time.Now()
	if err := b.createMany(); err != nil {
		return err
	}
	b.printf("created %d objects in %v\n", 2**objects, time.Since(start).Round(time.Second))
	// Let watches and reconciles see the new world: edit a target.
	kd, err := b.resource(kdGVK, kdNS)
	if err != nil {
		return err
	}
	for i, level := range []string{"Debug", "Normal", "Trace"} {
		if _, err := kd.Patch(b.ctx, "cluster", types.MergePatchType,
			[]byte(fmt.Sprintf(`{"spec":{"logLevel":%q}}`, level)), metav1.PatchOptions{FieldManager: "bench-editor"}); err != nil {
			return fmt.Errorf("edit %d of the KubeDescheduler: %w", i+1, err)
		}
		time.Sleep(time.Second)
	}
	time.Sleep(5 * time.Second)
	after, err := rss(b.e.Advisor().Pid())
	if err != nil {
		return err
	}
	growth := float64(after-before) / 1024
	b.report.add("server RSS before", "MiB", float64(before)/1024)
	b.report.add("server RSS after", "MiB", float64(after)/1024)
	met := b.report.check("server RSS growth", "MiB", growth, *rssGrowthMiB)
	b.printf("RSS before %.1f MiB, after %.1f MiB, growth %.1f MiB (target <= %.0f MiB: %s)\n",
		float64(before)/1024, float64(after)/1024, growth, *rssGrowthMiB, verdict(met))
	return nil
}

func (b *bench) createMany() error {
	mcs, err := b.resource(mcGVK, "")
	if err != nil {
		return err
	}
	cms, err := b.resource(cmGVK, "default")
	if err != nil {
		return err
	}
	return b.parallel(*objects, func(i int) error {
		mc := &unstructured.Unstructured{Object: map[string]interface{}{
			"apiVersion": "machineconfiguration.openshift.io/v1", "kind": "MachineConfig",
			"metadata": map[string]interface{}{"name": fmt.Sprintf("bench-unrelated-%05d", i)},
			"spec":     map[string]interface{}{"kernelArguments": []interface{}{fmt.Sprintf("bench=%d", i)}},
		}}
		cm := &unstructured.Unstructured{Object: map[string]interface{}{
			"apiVersion": "v1", "kind": "ConfigMap",
			"metadata": map[string]interface{}{"name": fmt.Sprintf("bench-unrelated-%05d", i), "namespace": "default"},
			"data":     map[string]interface{}{"payload": strings.Repeat("x", 256)},
		}}
		if _, err := mcs.Create(b.ctx, mc, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return err
		}
		if _, err := cms.Create(b.ctx, cm, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return err
		}
		return nil
	})
}

// rss reads VmRSS (KiB) of a process.
func rss(pid int) (int64, error) {
	raw, err := os.ReadFile(filepath.Join("/proc", fmt.Sprint(pid), "status"))
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(raw), "\n") {
		if strings.HasPrefix(line, "VmRSS:") {
			var kb int64
			_, err := fmt.Sscanf(strings.TrimSpace(strings.TrimPrefix(line, "VmRSS:")), "%d kB", &kb)
			return kb, err
		}
	}
	return 0, fmt.Errorf("no VmRSS for pid %d", pid)
}

// waitFor returns when an event matches. A watch that closes, reports an
// error or stays silent for too long is an error: a missed event must
// fail the figure, not become a sample.
func waitFor(w watch.Interface, within time.Duration, what string, match func(watch.Event) bool) (time.Time, error) {
	timeout := time.NewTimer(within)
	defer timeout.Stop()
	for {
		select {
		case ev, ok := <-w.ResultChan():
			if !ok {
				return time.Time{}, fmt.Errorf("the watch closed before %s was seen", what)
			}
			if ev.Type == watch.Error {
				return time.Time{}, fmt.Errorf("the watch failed before %s was seen: %v", what, apierrors.FromObject(ev.Object))
			}
			if match(ev) {
				return time.Now(), nil
			}
		case <-timeout.C:
			return time.Time{}, fmt.Errorf("%s was not seen within %v", what, within)
		}
	}
}
