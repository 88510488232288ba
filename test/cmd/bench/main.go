// Command bench measures virt-advisor on the real local control plane and
// prints the figures: plan GET latency against the floor of the same
// requests sent straight to kube-apiserver, approval-to-write and
// approval-to-Completed times, drift detection latency, and the server's
// memory with and without many unrelated objects in the cluster.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"

	"github.com/kubevirt/virt-advisor/pkg/apis/advisor/v1alpha1"
	"github.com/kubevirt/virt-advisor/pkg/generated/clientset/versioned"
	"github.com/kubevirt/virt-advisor/test/env"
)

var (
	planRuns  = flag.Int("plan-runs", 60, "plan GETs per profile")
	applyRuns = flag.Int("apply-runs", 20, "approvals measured")
	driftRuns = flag.Int("drift-runs", 60, "external edits measured")
	objects   = flag.Int("objects", 10000, "unrelated MachineConfigs and ConfigMaps (each) for the memory figure; 0 skips it")
	dir       = flag.String("dir", "", "environment directory (default: a temporary one)")
)

var (
	mcGVR  = schema.GroupVersionResource{Group: "machineconfiguration.openshift.io", Version: "v1", Resource: "machineconfigs"}
	kdGVR  = schema.GroupVersionResource{Group: "operator.openshift.io", Version: "v1", Resource: "kubedeschedulers"}
	cmGVR  = schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
	kdNS   = "openshift-kube-descheduler-operator"
	budget = 10 * time.Minute
)

type bench struct {
	ctx context.Context
	e   *env.Env
	adv versioned.Interface
	dyn dynamic.Interface
}

func main() {
	flag.Parse()
	if err := run(); err != nil {
		fmt.Fprintf(os.Stderr, "bench: %v\n", err)
		os.Exit(1)
	}
}

func run() error {
	ctx, cancel := context.WithTimeout(context.Background(), 40*time.Minute)
	defer cancel()
	d := *dir
	if d == "" {
		tmp, err := os.MkdirTemp("", "virt-advisor-bench-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(tmp)
		d = tmp
	}
	fmt.Println("starting the local control plane…")
	e, err := env.Start(ctx, env.Options{Dir: d,
		FakeMCO:     env.FakeMCOOptions{RenderDelay: 100 * time.Millisecond, StepTime: 100 * time.Millisecond},
		AdvisorArgs: []string{"--leader-elect=false"}})
	if err != nil {
		return err
	}
	defer e.Stop()
	cfg := rest.CopyConfig(e.AdminConfig)
	cfg.QPS, cfg.Burst = 500, 1000
	b := &bench{ctx: ctx, e: e, adv: versioned.NewForConfigOrDie(cfg), dyn: dynamic.NewForConfigOrDie(cfg)}

	for _, step := range []func() error{b.planLatency, b.applyLatency, b.driftLatency, b.memory} {
		if err := step(); err != nil {
			return err
		}
	}
	return nil
}

// createConfig (re)creates a config with a spec.
func (b *bench) createConfig(profile, spec string) error {
	_ = b.adv.AdvisorV1alpha1().VirtPlatformConfigs().Delete(b.ctx, profile, metav1.DeleteOptions{})
	if err := wait.PollUntilContextTimeout(b.ctx, 50*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		_, err := b.adv.AdvisorV1alpha1().VirtPlatformConfigs().Get(ctx, profile, metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	}); err != nil {
		return err
	}
	body := fmt.Sprintf(`{"apiVersion":"advisor.kubevirt.io/v1alpha1","kind":"VirtPlatformConfig","metadata":{"name":%q},"spec":%s}`, profile, spec)
	return b.adv.AdvisorV1alpha1().RESTClient().Post().Resource("virtplatformconfigs").
		SetHeader("Content-Type", "application/json").Body([]byte(body)).Do(b.ctx).Error()
}

func (b *bench) waitPhase(name string, phase v1alpha1.ConfigPhase) error {
	return wait.PollUntilContextTimeout(b.ctx, 20*time.Millisecond, budget, true, func(ctx context.Context) (bool, error) {
		c, err := b.adv.AdvisorV1alpha1().VirtPlatformConfigs().Get(ctx, name, metav1.GetOptions{})
		return err == nil && c.Status.Phase == phase, nil
	})
}

// planLatency: GET …/plan through the aggregator vs. the floor, the same
// GET and SSA dry-run PATCH per item sent straight to kube-apiserver, items
// in parallel.
func (b *bench) planLatency() error {
	fmt.Println("\n== plan GET latency (through the aggregator) vs. floor (same GETs + SSA dry-run PATCHes straight to kube-apiserver, in parallel)")
	for _, profile := range []string{"load-aware-rebalancing", "virt-higher-density", "example-profile"} {
		if err := b.createConfig(profile, fmt.Sprintf(`{"profile":%q,"action":"Ignore"}`, profile)); err != nil {
			return err
		}
		var plan *v1alpha1.Plan
		var planTimes, floorTimes []time.Duration
		for i := 0; i < *planRuns+5; i++ {
			start := time.Now()
			p, err := b.adv.AdvisorV1alpha1().VirtPlatformConfigs().GetPlan(b.ctx, profile, metav1.GetOptions{})
			if err != nil {
				return fmt.Errorf("plan of %s: %w", profile, err)
			}
			if i >= 5 { // warm-up
				planTimes = append(planTimes, time.Since(start))
			}
			plan = p
		}
		for i := 0; i < *planRuns+5; i++ {
			took, err := b.floor(plan)
			if err != nil {
				return err
			}
			if i >= 5 {
				floorTimes = append(floorTimes, took)
			}
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
		fmt.Printf("%-24s GET of the config itself through the aggregator: p50 %.1fms\n", profile, ms(g50))
		p50, p95 := percentiles(planTimes)
		f50, f95 := percentiles(floorTimes)
		if mean, err := b.serverPlanMean(profile); err == nil {
			fmt.Printf("%-24s plan computation inside the server (mean of virt_advisor_plan_duration_seconds): %.1fms\n", profile, mean)
		}
		fmt.Printf("%-24s items %d  plan p50 %6.1fms p95 %6.1fms   floor p50 %6.1fms p95 %6.1fms   p50/floor %.2f (target <= 1.5)\n",
			profile, len(plan.Status.Items), ms(p50), ms(p95), ms(f50), ms(f95), float64(p50)/float64(f50))
	}
	return nil
}

// serverPlanMean reads the mean plan computation time of a profile from
// the server's own metrics, to tell it apart from the aggregator hop.
func (b *bench) serverPlanMean(profile string) (float64, error) {
	cfg := rest.CopyConfig(b.e.AdminConfig)
	cfg.Host = b.e.Advisor().URL
	cfg.TLSClientConfig.CAData, cfg.TLSClientConfig.CAFile = nil, b.e.ServingCAFile
	c, err := versioned.NewForConfig(cfg)
	if err != nil {
		return 0, err
	}
	raw, err := c.AdvisorV1alpha1().RESTClient().Get().AbsPath("/metrics").DoRaw(b.ctx)
	if err != nil {
		return 0, err
	}
	var sum, count float64
	for _, line := range strings.Split(string(raw), "\n") {
		label := `{profile="` + profile + `"}`
		if v, ok := strings.CutPrefix(line, "virt_advisor_plan_duration_seconds_sum"+label+" "); ok {
			fmt.Sscan(v, &sum)
		}
		if v, ok := strings.CutPrefix(line, "virt_advisor_plan_duration_seconds_count"+label+" "); ok {
			fmt.Sscan(v, &count)
		}
	}
	if count == 0 {
		return 0, fmt.Errorf("no plan metrics")
	}
	return sum / count * 1000, nil
}

func (b *bench) floor(p *v1alpha1.Plan) (time.Duration, error) {
	start := time.Now()
	var wg sync.WaitGroup
	errs := make(chan error, len(p.Status.Items))
	for _, it := range p.Status.Items {
		if it.DesiredState == nil {
			continue
		}
		wg.Add(1)
		go func(it v1alpha1.PlanItem) {
			defer wg.Done()
			obj := &unstructured.Unstructured{}
			if err := json.Unmarshal(it.DesiredState.Raw, &obj.Object); err != nil {
				errs <- err
				return
			}
			gv, _ := schema.ParseGroupVersion(it.TargetRef.APIVersion)
			ri := b.dyn.Resource(gv.WithResource(resourceOf(it.TargetRef.Kind))).Namespace(it.TargetRef.Namespace)
			if _, err := ri.Get(b.ctx, it.TargetRef.Name, metav1.GetOptions{}); err != nil && !apierrors.IsNotFound(err) {
				errs <- err
				return
			}
			if _, err := ri.Apply(b.ctx, it.TargetRef.Name, obj, metav1.ApplyOptions{FieldManager: "bench-floor", Force: true, DryRun: []string{metav1.DryRunAll}}); err != nil {
				errs <- err
			}
		}(it)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		return 0, err
	}
	return time.Since(start), nil
}

func resourceOf(kind string) string {
	return map[string]string{"MachineConfig": "machineconfigs", "KubeDescheduler": "kubedeschedulers",
		"HyperConverged": "hyperconvergeds", "ConfigMap": "configmaps"}[kind]
}

// applyLatency: from the approval's 201 to the first write of the target
// (a KubeDescheduler, no MachineConfig) and to Completed.
func (b *bench) applyLatency() error {
	fmt.Println("\n== approval to apply (load-aware-rebalancing without PSI: one KubeDescheduler item)")
	name := "load-aware-rebalancing"
	var toWrite, toCompleted []time.Duration
	for i := 0; i < *applyRuns; i++ {
		interval := 120 + i
		spec := fmt.Sprintf(`{"profile":%q,"options":{"loadAware":{"enablePSIMetrics":false,"deschedulingIntervalSeconds":%d}}}`, name, interval)
		if err := b.createConfig(name, spec); err != nil {
			return err
		}
		if err := b.waitPhase(name, v1alpha1.PhaseReviewRequired); err != nil {
			return fmt.Errorf("waiting for ReviewRequired: %w", err)
		}
		p, err := b.adv.AdvisorV1alpha1().VirtPlatformConfigs().GetPlan(b.ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		w, err := b.dyn.Resource(kdGVR).Namespace(kdNS).Watch(b.ctx, metav1.ListOptions{FieldSelector: "metadata.name=cluster"})
		if err != nil {
			return err
		}
		cw, err := b.adv.AdvisorV1alpha1().VirtPlatformConfigs().Watch(b.ctx, metav1.ListOptions{FieldSelector: "metadata.name=" + name})
		if err != nil {
			return err
		}
		if _, err := b.adv.AdvisorV1alpha1().VirtPlatformConfigs().Approve(b.ctx, name,
			&v1alpha1.Approval{Spec: v1alpha1.ApprovalSpec{PlanHash: p.Status.PlanHash}}, metav1.CreateOptions{}); err != nil {
			return err
		}
		t0 := time.Now()
		written := waitFor(w, func(ev watch.Event) bool {
			u, ok := ev.Object.(*unstructured.Unstructured)
			v, _, _ := unstructured.NestedInt64(u.Object, "spec", "deschedulingIntervalSeconds")
			return ok && v == int64(interval)
		})
		toWrite = append(toWrite, written.Sub(t0))
		done := waitFor(cw, func(ev watch.Event) bool {
			c, ok := ev.Object.(*v1alpha1.VirtPlatformConfig)
			return ok && c.Status.Phase == v1alpha1.PhaseCompleted
		})
		toCompleted = append(toCompleted, done.Sub(t0))
		w.Stop()
		cw.Stop()
	}
	p50, p95 := percentiles(toWrite)
	c50, c95 := percentiles(toCompleted)
	fmt.Printf("approval -> target written   p50 %6.1fms p95 %6.1fms (n=%d, target p50 < 500ms)\n", ms(p50), ms(p95), len(toWrite))
	fmt.Printf("approval -> Completed        p50 %6.1fms p95 %6.1fms\n", ms(c50), ms(c95))
	return nil
}

// driftLatency: an external edit of a managed field until Drifted is seen
// through a watch on our API; the edit is reverted between runs.
func (b *bench) driftLatency() error {
	fmt.Println("\n== drift detection (external edit of KubeDescheduler spec.mode -> Drifted seen by a watch)")
	name := "load-aware-rebalancing"
	if err := b.createConfig(name, fmt.Sprintf(`{"profile":%q,"action":"Apply","options":{"loadAware":{"enablePSIMetrics":false}}}`, name)); err != nil {
		return err
	}
	if err := b.waitPhase(name, v1alpha1.PhaseCompleted); err != nil {
		return fmt.Errorf("waiting for Completed: %w", err)
	}
	var times []time.Duration
	for i := 0; i < *driftRuns; i++ {
		cw, err := b.adv.AdvisorV1alpha1().VirtPlatformConfigs().Watch(b.ctx, metav1.ListOptions{FieldSelector: "metadata.name=" + name})
		if err != nil {
			return err
		}
		if _, err := b.dyn.Resource(kdGVR).Namespace(kdNS).Patch(b.ctx, "cluster", types.MergePatchType,
			[]byte(`{"spec":{"mode":"Predictive"}}`), metav1.PatchOptions{FieldManager: "bench-editor"}); err != nil {
			return err
		}
		t0 := time.Now()
		seen := waitFor(cw, func(ev watch.Event) bool {
			c, ok := ev.Object.(*v1alpha1.VirtPlatformConfig)
			return ok && c.Status.Phase == v1alpha1.PhaseDrifted
		})
		times = append(times, seen.Sub(t0))
		cw.Stop()
		if _, err := b.dyn.Resource(kdGVR).Namespace(kdNS).Patch(b.ctx, "cluster", types.MergePatchType,
			[]byte(`{"spec":{"mode":"Automatic"}}`), metav1.PatchOptions{FieldManager: "bench-editor"}); err != nil {
			return err
		}
		if err := b.waitPhase(name, v1alpha1.PhaseCompleted); err != nil {
			return err
		}
	}
	p50, p95 := percentiles(times)
	fmt.Printf("edit -> Drifted              p50 %6.1fms p95 %6.1fms (n=%d, target p95 < 1s)\n", ms(p50), ms(p95), len(times))
	return nil
}

// memory: the server's RSS with two applied configs, before and after the
// cluster gains many MachineConfigs and ConfigMaps that are not ours.
func (b *bench) memory() error {
	if *objects == 0 {
		return nil
	}
	fmt.Printf("\n== memory of virt-advisor-apiserver (RSS) with 0 vs %d unrelated MachineConfigs + %d ConfigMaps\n", *objects, *objects)
	if err := b.createConfig("virt-higher-density", `{"profile":"virt-higher-density","action":"Apply"}`); err != nil {
		return err
	}
	if err := b.waitPhase("virt-higher-density", v1alpha1.PhaseCompleted); err != nil {
		return fmt.Errorf("waiting for virt-higher-density: %w", err)
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
	fmt.Printf("created %d objects in %v\n", 2**objects, time.Since(start).Round(time.Second))
	// Let watches and reconciles see the new world: edit a target.
	for i := 0; i < 3; i++ {
		_, _ = b.dyn.Resource(kdGVR).Namespace(kdNS).Patch(b.ctx, "cluster", types.MergePatchType,
			[]byte(fmt.Sprintf(`{"spec":{"logLevel":"%s"}}`, []string{"Debug", "Normal", "Trace"}[i])), metav1.PatchOptions{FieldManager: "bench-editor"})
		time.Sleep(time.Second)
	}
	time.Sleep(5 * time.Second)
	after, err := rss(b.e.Advisor().Pid())
	if err != nil {
		return err
	}
	fmt.Printf("RSS before %.1f MiB, after %.1f MiB, growth %.1f MiB (target < 20 MiB)\n",
		float64(before)/1024, float64(after)/1024, float64(after-before)/1024)
	return nil
}

func (b *bench) createMany() error {
	work := make(chan int)
	errs := make(chan error, 16)
	var wg sync.WaitGroup
	for w := 0; w < 16; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range work {
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
				if _, err := b.dyn.Resource(mcGVR).Create(b.ctx, mc, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
					errs <- err
					return
				}
				if _, err := b.dyn.Resource(cmGVR).Namespace("default").Create(b.ctx, cm, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
					errs <- err
					return
				}
			}
		}()
	}
	for i := 0; i < *objects; i++ {
		select {
		case work <- i:
		case err := <-errs:
			close(work)
			return err
		}
	}
	close(work)
	wg.Wait()
	select {
	case err := <-errs:
		return err
	default:
		return nil
	}
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

// waitFor returns when an event matches (or after the budget).
func waitFor(w watch.Interface, match func(watch.Event) bool) time.Time {
	timeout := time.After(budget)
	for {
		select {
		case ev, ok := <-w.ResultChan():
			if !ok {
				return time.Now()
			}
			if match(ev) {
				return time.Now()
			}
		case <-timeout:
			return time.Now()
		}
	}
}

func percentiles(d []time.Duration) (p50, p95 time.Duration) {
	s := append([]time.Duration(nil), d...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	at := func(q float64) time.Duration { return s[int(q*float64(len(s)-1)+0.5)] }
	return at(0.50), at(0.95)
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
