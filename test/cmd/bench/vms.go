package main

import (
	"flag"
	"fmt"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/kubevirt/virt-advisor/test/env"
)

var (
	vmNodes         = flag.Int("vm-nodes", 50, "worker Nodes for the VM impact figure")
	vmCount         = flag.Int("vms", 2000, "VirtualMachineInstances spread over those nodes for the VM impact figure; 0 skips it")
	vmPlanP50Factor = flag.Float64("vm-plan-p50-factor", 1.5, "target: plan GET p50 with the VMs at most this many times the same plan without them")
)

// vmImpact: the plan of a profile that writes a MachineConfig reads one
// list of Nodes and one of VirtualMachineInstances, whatever their number,
// to say what draining each node does to each VM. Its p50 with 2 000 VMIs
// on 50 nodes is compared with the same plan on the same nodes without
// VMIs.
func (b *bench) vmImpact() error {
	if *vmCount == 0 {
		return nil
	}
	const profile = "load-aware-rebalancing"
	b.printf("\n== plan GET latency of %s (a MachineConfig item) with %d VMIs on %d worker nodes vs. without VMIs\n", profile, *vmCount, *vmNodes)
	nodes, err := b.e.CreateWorkerNodes(b.ctx, "bench-worker", *vmNodes)
	if err != nil {
		return err
	}
	if err := b.createConfig(profile, fmt.Sprintf(`{"profile":%q,"action":"Ignore"}`, profile)); err != nil {
		return err
	}
	without, err := b.planTimes(profile)
	if err != nil {
		return err
	}
	start := time.Now()
	if err := b.createVMIs(nodes); err != nil {
		return err
	}
	b.printf("created %d VMIs in %v\n", *vmCount, time.Since(start).Round(time.Second))
	p, err := b.adv.AdvisorV1alpha1().VirtPlatformConfigs().GetPlan(b.ctx, profile, metav1.GetOptions{})
	if err != nil {
		return err
	}
	seen := 0
	for _, it := range p.Status.Items {
		for _, r := range it.Reboots {
			seen += len(r.VMImpacts)
		}
	}
	if seen != *vmCount {
		return fmt.Errorf("the plan of %s lists %d VMs, want the %d created", profile, seen, *vmCount)
	}
	with, err := b.planTimes(profile)
	if err != nil {
		return err
	}
	// What the one list costs by itself: the same GET straight to
	// kube-apiserver, read but not decoded.
	rawClient, err := kubernetes.NewForConfig(b.e.AdminConfig)
	if err != nil {
		return err
	}
	raw := rawClient.Discovery().RESTClient()
	var lists []time.Duration
	for i := 0; i < *planRuns/4+2; i++ {
		start := time.Now()
		if _, err := raw.Get().AbsPath("/apis/kubevirt.io/v1/virtualmachineinstances").DoRaw(b.ctx); err != nil {
			return fmt.Errorf("listing the VMIs: %w", err)
		}
		if i >= 2 {
			lists = append(lists, time.Since(start))
		}
	}
	l50, _ := percentiles(lists)
	b.report.add(fmt.Sprintf("VMI list of %d straight from kube-apiserver p50", *vmCount), "ms", ms(l50))
	w50, w95 := percentiles(without)
	v50, v95 := percentiles(with)
	b.report.add("plan GET p50 without VMIs", "ms", ms(w50))
	b.report.add(fmt.Sprintf("plan GET p50 with %d VMIs on %d nodes", *vmCount, *vmNodes), "ms", ms(v50))
	factor := float64(v50) / float64(w50)
	met := b.report.check(fmt.Sprintf("plan GET p50 with %d VMIs / without", *vmCount), "x", factor, *vmPlanP50Factor)
	mean, err := b.serverPlanMean(profile)
	if err != nil {
		return err
	}
	b.printf("%-24s without VMIs p50 %6.1fms p95 %6.1fms   with %d VMIs p50 %6.1fms p95 %6.1fms   ratio %.2f (target <= %.2f: %s)\n",
		profile, ms(w50), ms(w95), *vmCount, ms(v50), ms(v95), factor, *vmPlanP50Factor, verdict(met))
	b.printf("%-24s the VMI list alone, straight from kube-apiserver (not decoded): p50 %.1fms; plan computation inside the server, mean of both series: %.1fms\n",
		profile, ms(l50), mean)
	return nil
}

// planTimes measures planRuns GETs of a plan after 5 to warm up.
func (b *bench) planTimes(profile string) ([]time.Duration, error) {
	var times []time.Duration
	for i := 0; i < *planRuns+5; i++ {
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

// createVMIs spreads vmCount running VMIs over the nodes: most migrate
// (LiveMigrate), one in 50 has strategy None, one in 100 cannot migrate.
func (b *bench) createVMIs(nodes []string) error {
	work := make(chan int)
	errs := make(chan error, 16)
	var wg sync.WaitGroup
	for w := 0; w < 16; w++ {
		wg.Go(func() {
			for i := range work {
				v := env.VMI{Namespace: "default", Name: fmt.Sprintf("bench-vm-%04d", i), Node: nodes[i%len(nodes)],
					EvictionStrategy: "LiveMigrate", Migratable: true}
				switch {
				case i%50 == 0:
					v.EvictionStrategy = "None"
				case i%100 == 1:
					v.Migratable, v.Reason = false, "HostDeviceNotLiveMigratable"
				}
				if err := b.e.CreateVMI(b.ctx, v); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	for i := 0; i < *vmCount; i++ {
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
