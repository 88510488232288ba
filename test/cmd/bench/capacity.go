package main

import (
	"context"
	"flag"
	"fmt"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/kubevirt/virt-advisor/pkg/apis/advisor/v1alpha1"
	"github.com/kubevirt/virt-advisor/pkg/machineconfig"
	"github.com/kubevirt/virt-advisor/test/env"
)

var vmCapacityCPUShare = flag.Float64("vm-capacity-cpu-share", 0.2, "target: the capacity check's own computation per plan (virt_advisor_capacity_check_duration_seconds, at least its CPU), at most this share of the plan GET p50 with it")

var vmCapacityFactor = flag.Float64("vm-capacity-factor", 1.2, "target: plan GET p50 per its floor, that runs the capacity check on the VMs' launcher pods, at most this many times the same plan per its floor without launchers (both right after another pod changed, so that neither reuses an earlier assessment)")

// capacityCheck: what the capacity check (will the migrating VMs fit)
// adds to the plan of the VM figures. Each Node gets resources and each
// migrating VMI its virt-launcher pod; then plans are timed right after
// another pod of the cluster changed (a pod of the bench's own, asking 1
// or 2 GiB in turn, replaced on the first node), which makes every plan
// assess the drains again rather than reuse the last assessment, as a
// busy cluster does, without the launchers and with them.
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
	if err := b.settle("plans without launchers"); err != nil {
		return err
	}
	t0, err := b.serverPlanTotals(profile)
	if err != nil {
		return err
	}
	cpu0, err := b.serverCPU()
	if err != nil {
		return err
	}
	without, _, err := b.planTimesAfterPodChange(profile, nodes[0])
	if err != nil {
		return err
	}
	cpu1, err := b.serverCPU()
	if err != nil {
		return err
	}
	t1, err := b.serverPlanTotals(profile)
	if err != nil {
		return err
	}
	// What the plan says of the capacity without the launchers, to know
	// when it says it again once they are deleted.
	p, err := b.adv.AdvisorV1alpha1().VirtPlatformConfigs().GetPlan(b.ctx, profile, metav1.GetOptions{})
	if err != nil {
		return err
	}
	withoutCapacity := workerCapacity(p)
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
	if err := b.settle(fmt.Sprintf("plans with %d launchers", launchers)); err != nil {
		return err
	}
	t2, err := b.serverPlanTotals(profile)
	if err != nil {
		return err
	}
	cpu2, err := b.serverCPU()
	if err != nil {
		return err
	}
	checked2, err := b.capacityCheckSeconds()
	if err != nil {
		return err
	}
	with, stale, err := b.planTimesAfterPodChange(profile, nodes[0])
	if err != nil {
		return err
	}
	cpu3, err := b.serverCPU()
	if err != nil {
		return err
	}
	checked3, err := b.capacityCheckSeconds()
	if err != nil {
		return err
	}
	t3, err := b.serverPlanTotals(profile)
	if err != nil {
		return err
	}
	if stale > len(with.times)/10 {
		return fmt.Errorf("%d of %d plans did not see the pod changed before them: the capacity check was not measured", stale, len(with.times))
	}
	after, err := b.plansWithoutLaunchersAgain(profile, nodes[0], withoutCapacity)
	if err != nil {
		return err
	}
	w50, wf := without.p50()
	c50, cf := with.p50()
	_, c95 := percentiles(with.times)
	a50, af := after.p50()
	b.report.add("plan GET p50 after a pod change, without launchers", "ms", w50)
	b.report.add(fmt.Sprintf("plan GET p50 after a pod change, with %d launchers (capacity checked)", launchers), "ms", c50)
	b.report.add("plan GET p50 after a pod change, without launchers, after them", "ms", a50)
	b.report.add("plan GET p50 with the capacity check / without (mean of before and after), each as measured", "x", c50/((w50+a50)/2))
	for _, side := range []struct {
		name string
		t    timesAndFloor
	}{{"without launchers", without}, {fmt.Sprintf("with %d launchers", launchers), with}, {"without launchers, after them", after}} {
		b.report.add("plan GET after a pod change floor, "+side.name, "ms", side.t.floor)
	}
	factor := cf / ((wf + af) / 2)
	met := b.report.check("plan GET p50 / its floor, with the capacity check / without (mean of before and after)", "x", factor, *vmCapacityFactor)
	b.printf("%-24s after a pod change: without launchers p50 %6.1fms (floor %.1fms), with %d launchers p50 %6.1fms p95 %6.1fms (floor %.1fms), without them after %6.1fms (floor %.1fms): ratio of the p50s per floor %.2f (target <= %.2f: %s), as measured %.2f\n",
		profile, w50, without.floor, launchers, c50, ms(c95), with.floor, a50, after.floor, factor, *vmCapacityFactor, verdict(met), c50/((w50+a50)/2))
	b.printf("%-24s plan computation inside the server (mean): without launchers %.1fms, with them %.1fms\n", profile, t1.meanSince(t0), t3.meanSince(t2))
	// The capacity check's own computation per plan, as the server times
	// it (CPU-bound: its wall time bounds its CPU from above), against the
	// plan's p50 with it. The server's whole CPU per plan is reported
	// beside it: with and without the launchers it differs by more than
	// the check (the pod informer's events, the collector on a larger
	// heap), in either direction from run to run.
	runs := float64(len(with.times) + 5)
	checked := (checked3 - checked2) / runs * 1000
	b.report.add("server CPU per plan GET after a pod change, without launchers", "ms", (cpu1-cpu0)/runs*1000)
	b.report.add(fmt.Sprintf("server CPU per plan GET after a pod change, with %d launchers", launchers), "ms", (cpu3-cpu2)/runs*1000)
	b.report.add("capacity check's own computation per plan", "ms", checked)
	share := checked / c50
	met = b.report.check("capacity check per plan / plan GET p50 with it", "share", share, *vmCapacityCPUShare)
	b.printf("%-24s the capacity check's own computation per plan %.1fms (virt_advisor_capacity_check_duration_seconds), %.0f%% of the plan's p50 (target <= %.0f%%: %s)\n",
		profile, checked, share*100, *vmCapacityCPUShare*100, verdict(met))
	return nil
}

// plansWithoutLaunchersAgain deletes the launchers and times the plans
// after a pod change without them again, once the plan says of the
// pool's capacity what it said before they were created: the side
// without launchers then brackets the side with them in time, so that
// the machine's drift over the step (its load, the heaps' growth with
// 9 700 pods created and deleted) falls on both sides of the ratio, as
// in the VM ratios.
func (b *bench) plansWithoutLaunchersAgain(profile, node, withoutCapacity string) (timesAndFloor, error) {
	start := time.Now()
	if err := b.parallel(*vmCount, func(i int) error {
		if !benchVMMigrates(i) {
			return nil
		}
		return b.e.DeleteLauncherPod(b.ctx, "default", benchVMName(i))
	}); err != nil {
		return timesAndFloor{}, err
	}
	b.printf("deleted the virt-launcher pods in %v\n", time.Since(start).Round(time.Second))
	var capacity string
	if err := wait.PollUntilContextTimeout(b.ctx, 500*time.Millisecond, budget, true, func(ctx context.Context) (bool, error) {
		p, err := b.adv.AdvisorV1alpha1().VirtPlatformConfigs().GetPlan(ctx, profile, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		capacity = workerCapacity(p)
		return capacity == withoutCapacity, nil
	}); err != nil {
		return timesAndFloor{}, fmt.Errorf("the plan of %s does not say again what it said before the launchers once they are deleted (worker pool capacity %q, before them %q): %w", profile, capacity, withoutCapacity, err)
	}
	if err := b.settle("plans without launchers, again"); err != nil {
		return timesAndFloor{}, err
	}
	times, _, err := b.planTimesAfterPodChange(profile, node)
	return times, err
}

// capacityCheckSeconds is the time the server's capacity checks have
// computed so far.
func (b *bench) capacityCheckSeconds() (float64, error) {
	m, err := b.serverMetrics()
	if err != nil {
		return 0, err
	}
	return m.Sum("virt_advisor_capacity_check_duration_seconds", nil), nil
}

// serverCPU is the CPU time the server has used so far, in seconds.
func (b *bench) serverCPU() (float64, error) {
	m, err := b.serverMetrics()
	if err != nil {
		return 0, err
	}
	return m.Sum("process_cpu_seconds_total", nil), nil
}

// planTimesAfterPodChange times plan GETs, each 200 ms after a pod of
// the bench's own on node replaced the one before (asking 1 or 2 GiB in
// turn): the server's pod cache has changed, and the plan assesses the
// drains again. Each GET is followed by its floor (as in the plan step),
// whose p50 is the result's floor. stale counts the plans whose capacity
// says the same as the plan before (none expected with launchers: the
// memory free changes).
func (b *bench) planTimesAfterPodChange(profile, node string) (_ timesAndFloor, stale int, err error) {
	kube, err := kubernetes.NewForConfig(b.e.AdminConfig)
	if err != nil {
		return timesAndFloor{}, 0, err
	}
	lists, err := b.listedReads(profile)
	if err != nil {
		return timesAndFloor{}, 0, err
	}
	var times, floors []time.Duration
	pods := kube.CoreV1().Pods("default")
	var last string
	for i := 0; i < *planRuns+5; i++ {
		pod := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("bench-churn-%d", i)},
			Spec: corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "c", Image: "churn",
				Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse(fmt.Sprintf("%dGi", 1+i%2))}}}}},
		}
		if _, err := pods.Create(b.ctx, pod, metav1.CreateOptions{}); err != nil {
			return timesAndFloor{}, 0, fmt.Errorf("creating pod %s: %w", pod.Name, err)
		}
		if i > 0 {
			if err := pods.Delete(b.ctx, fmt.Sprintf("bench-churn-%d", i-1), metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)}); err != nil {
				return timesAndFloor{}, 0, err
			}
		}
		time.Sleep(200 * time.Millisecond)
		start := time.Now()
		p, err := b.adv.AdvisorV1alpha1().VirtPlatformConfigs().GetPlan(b.ctx, profile, metav1.GetOptions{})
		if err != nil {
			return timesAndFloor{}, 0, fmt.Errorf("plan of %s: %w", profile, err)
		}
		took := time.Since(start)
		floor, err := b.floor(p, lists)
		if err != nil {
			return timesAndFloor{}, 0, err
		}
		now := workerCapacity(p)
		if i >= 5 {
			times, floors = append(times, took), append(floors, floor)
			if now == last {
				stale++
			}
		}
		last = now
	}
	f50, _ := percentiles(floors)
	return timesAndFloor{times: times, floor: ms(f50)}, stale, pods.Delete(b.ctx, fmt.Sprintf("bench-churn-%d", *planRuns+4), metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)})
}

// workerCapacity is what a plan says of the worker pool's capacity.
func workerCapacity(p *v1alpha1.Plan) string {
	for _, it := range p.Status.Items {
		for _, r := range it.Reboots {
			if r.Pool == machineconfig.WorkerPool {
				return r.Capacity
			}
		}
	}
	return ""
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
