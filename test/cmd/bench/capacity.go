package main

import (
	"context"
	"flag"
	"fmt"
	"strings"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/kubevirt/virt-advisor/pkg/machineconfig"
	"github.com/kubevirt/virt-advisor/test/env"
)

var vmCapacityFactor = flag.Float64("vm-capacity-factor", 1.2, "target: plan GET p50 that runs the capacity check on the VMs' launcher pods at most this many times the same plan without launchers (both after a pool change, so that neither reuses an earlier assessment)")

// capacityCheck: what the capacity check (will the migrating VMs fit)
// adds to the plan of the VM figures. Each Node gets resources and each
// migrating VMI its virt-launcher pod; then plans are timed right after a
// change of the worker pool (its maxUnavailable, 1 and 2 in turn), which
// makes every plan assess the drains again rather than reuse the last
// assessment, without launchers and with them.
func (b *bench) capacityCheck(profile string, nodes []string) error {
	b.printf("\n== the capacity check of %s: %d VMIs on %d nodes, with and without their virt-launcher pods\n", profile, *vmCount, *vmNodes)
	// The approvals before left a config without the MachineConfig item.
	if err := b.createConfig(profile, fmt.Sprintf(`{"profile":%q,"action":"Ignore"}`, profile)); err != nil {
		return err
	}
	if err := b.parallel(len(nodes), func(i int) error {
		return b.e.SetNodeResources(b.ctx, nodes[i], map[string]string{"memory": "512Gi", "cpu": "128", "pods": "250"}, nil)
	}); err != nil {
		return err
	}
	without, err := b.planTimesAfterPoolChange(profile)
	if err != nil {
		return err
	}
	start := time.Now()
	launchers := 0
	if err := b.parallel(*vmCount, func(i int) error {
		if !benchVMMigrates(i) {
			return nil
		}
		return b.e.CreateLauncherPod(b.ctx, env.LauncherPod{Namespace: "default", VMI: benchVMName(i), Node: nodes[i%len(nodes)],
			Requests: map[string]string{"memory": "16Gi", "cpu": "1"}})
	}); err != nil {
		return err
	}
	for i := 0; i < *vmCount; i++ {
		if benchVMMigrates(i) {
			launchers++
		}
	}
	b.printf("created %d virt-launcher pods in %v\n", launchers, time.Since(start).Round(time.Second))
	// The plan places every migrating VM once the pod cache holds them.
	var capacity, seen string
	if err := wait.PollUntilContextTimeout(b.ctx, 500*time.Millisecond, budget, true, func(ctx context.Context) (bool, error) {
		p, err := b.adv.AdvisorV1alpha1().VirtPlatformConfigs().GetPlan(ctx, profile, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		capacity, seen = "", "items:"
		for _, it := range p.Status.Items {
			seen += fmt.Sprintf(" %s (%s, pools %d)", it.Name, it.Operation, len(it.Reboots))
			for _, r := range it.Reboots {
				if r.Pool == machineconfig.WorkerPool {
					capacity = r.Capacity
				}
			}
		}
		return strings.HasPrefix(capacity, "fits:") && !strings.Contains(capacity, "not counted"), nil
	}); err != nil {
		return fmt.Errorf("the plan of %s does not place the %d launchers (worker pool capacity %q; %s): %w", profile, launchers, capacity, seen, err)
	}
	b.printf("capacity: %s\n", capacity)
	with, err := b.planTimesAfterPoolChange(profile)
	if err != nil {
		return err
	}
	w50, _ := percentiles(without)
	c50, c95 := percentiles(with)
	b.report.add("plan GET p50 after a pool change, without launchers", "ms", ms(w50))
	b.report.add(fmt.Sprintf("plan GET p50 after a pool change, with %d launchers (capacity checked)", launchers), "ms", ms(c50))
	factor := float64(c50) / float64(w50)
	met := b.report.check("plan GET p50 with the capacity check / without", "x", factor, *vmCapacityFactor)
	b.printf("%-24s after a pool change: without launchers p50 %6.1fms, with %d launchers p50 %6.1fms p95 %6.1fms: ratio %.2f (target <= %.2f: %s)\n",
		profile, ms(w50), launchers, ms(c50), ms(c95), factor, *vmCapacityFactor, verdict(met))
	return nil
}

// planTimesAfterPoolChange times plan GETs, each right after the worker
// pool's maxUnavailable changed (1 and 2 in turn) and the server's pool
// reads see it.
func (b *bench) planTimesAfterPoolChange(profile string) ([]time.Duration, error) {
	pools, err := b.resource(machineconfig.MachineConfigPoolGVK, "")
	if err != nil {
		return nil, err
	}
	var times []time.Duration
	for i := 0; i < *planRuns+5; i++ {
		patch := fmt.Sprintf(`{"spec":{"maxUnavailable":%d}}`, 1+i%2)
		if _, err := pools.Patch(b.ctx, machineconfig.WorkerPool, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
			return nil, fmt.Errorf("changing the worker pool: %w", err)
		}
		start := time.Now()
		if _, err := b.adv.AdvisorV1alpha1().VirtPlatformConfigs().GetPlan(b.ctx, profile, metav1.GetOptions{}); err != nil {
			return nil, fmt.Errorf("plan of %s: %w", profile, err)
		}
		if i >= 5 {
			times = append(times, time.Since(start))
		}
	}
	return times, nil
}

// parallel runs f for 0..n-1 on 16 workers and returns the first error.
func (b *bench) parallel(n int, f func(i int) error) error {
	work := make(chan int)
	errs := make(chan error, 16)
	var wg sync.WaitGroup
	for w := 0; w < 16; w++ {
		wg.Go(func() {
			for i := range work {
				if err := f(i); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	var err error
	for i := 0; i < n && err == nil; i++ {
		select {
		case work <- i:
		case err = <-errs:
		}
	}
	close(work)
	wg.Wait()
	if err != nil {
		return err
	}
	select {
	case err = <-errs:
	default:
	}
	return err
}
