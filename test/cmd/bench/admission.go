package main

import (
	"flag"
	"fmt"
	"sort"
	"time"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"github.com/kubevirt/virt-advisor/pkg/cluster"
)

var (
	admissionRuns   = flag.Int("admission-runs", 40, "approval cycles whose kube-apiserver CPU is measured")
	admissionRounds = flag.Int("admission-rounds", 6, "rounds of KubeDescheduler dry-runs per policy measured (each round: a block of dry-runs as the server with the policy as shipped, as an administrator, as the server with the policy unguarded)")
	admissionBlock  = flag.Int("admission-block", 150, "dry-runs per block")
	admissionShare  = flag.Float64("admission-plugin-share", 0.5, "target: kube-apiserver's policy plugin time per KubeDescheduler dry-run of the server with the policy as shipped, as a share of the same with the policy unguarded (median of the rounds), at most")
)

// The policies of the KubeDescheduler and of every other write
// (artifacts/deploy/05-admission-policy.yaml).
const (
	kdPolicy   = "virt-advisor-apiserver-writes-kubedeschedulers"
	mainPolicy = "virt-advisor-apiserver-writes"
)

// admissionCost measures what the admission policies cost kube-apiserver
// (its own process_cpu_seconds_total). Per approval cycle of
// load-aware-rebalancing without PSI (the config created, its plan
// computed and read, approved, applied and Completed), reported. And per
// server-side apply dry-run of the KubeDescheduler by the server's
// ServiceAccount, with the policy as shipped (guarded: its match
// condition is its rules' conjunction, so a write that keeps them runs
// one program) and the same policy unguarded (its match condition the
// server's identity only, so that every rule, variable and message runs),
// beside the same dry-run by an administrator (no policy applies): each
// policy's cost is its block's CPU less the administrator's, the blocks
// taking turns so that the machine's slow spells fall on all three.
func (b *bench) admissionCost() error {
	if err := b.approvalCycleCost(); err != nil {
		return err
	}
	return b.dryRunCost()
}

func (b *bench) approvalCycleCost() error {
	b.printf("\n== kube-apiserver CPU per approval cycle (load-aware-rebalancing without PSI, %d cycles)\n", *admissionRuns)
	// One cycle first: the caches of a first approval are not what each
	// costs.
	if _, err := b.approvals(1, false); err != nil {
		return err
	}
	if _, _, err := b.quiet(floorQuietWindow, floorQuietBudget); err != nil {
		return err
	}
	perCycle, err := b.kubeCPU(*admissionRuns, func(int) error {
		_, err := b.approvals(1, false)
		return err
	})
	if err != nil {
		return err
	}
	b.report.add("kube-apiserver CPU per approval cycle", "ms", perCycle)
	b.printf("kube-apiserver CPU per approval cycle %.1fms\n", perCycle)
	return b.deleteConfig("load-aware-rebalancing")
}

func (b *bench) dryRunCost() error {
	b.printf("\n== kube-apiserver CPU per KubeDescheduler dry-run, by policy (%d rounds of %d each)\n", *admissionRounds, *admissionBlock)
	kc, err := kubernetes.NewForConfig(b.e.AdminConfig)
	if err != nil {
		return err
	}
	policies := kc.AdmissionregistrationV1().ValidatingAdmissionPolicies()
	shipped, err := policies.Get(b.ctx, kdPolicy, metav1.GetOptions{})
	if err != nil {
		return err
	}
	main, err := policies.Get(b.ctx, mainPolicy, metav1.GetOptions{})
	if err != nil {
		return err
	}
	asServer, err := b.serverKubeDeschedulers()
	if err != nil {
		return err
	}
	asAdmin, err := b.resource(kdGVK, kdNS)
	if err != nil {
		return err
	}
	// setGuard puts a match condition on the KubeDescheduler's policy
	// and waits until kube-apiserver has it (its policy source refreshes
	// on the informer's event).
	setGuard := func(conditions []admissionv1.MatchCondition) error {
		p, err := policies.Get(b.ctx, kdPolicy, metav1.GetOptions{})
		if err != nil {
			return err
		}
		p.Spec.MatchConditions = conditions
		if _, err := policies.Update(b.ctx, p, metav1.UpdateOptions{}); err != nil {
			return err
		}
		time.Sleep(2 * time.Second)
		_, _, err = b.quiet(floorQuietWindow, floorQuietBudget)
		return err
	}
	// The shipped policy back, whatever happens: the server writes
	// nothing while a policy is not the shipped one.
	defer func() {
		if err := setGuard(shipped.Spec.MatchConditions); err != nil {
			b.printf("restoring the policy %s: %v\n", kdPolicy, err)
		}
	}()
	rounds := make([]dryRunRound, 0, *admissionRounds)
	for attempt := 1; len(rounds) < *admissionRounds; attempt++ {
		if attempt > 2**admissionRounds {
			return fmt.Errorf("%d rounds of %d: in the others the unguarded policy's plugin time was not above the shipped policy's, so kube-apiserver was not applying the policy swapped in", len(rounds), attempt-1)
		}
		var r dryRunRound
		for i, block := range []struct {
			client     dynamic.ResourceInterface
			conditions []admissionv1.MatchCondition
		}{
			{asServer, shipped.Spec.MatchConditions},
			{asAdmin, nil},
			{asServer, main.Spec.MatchConditions},
		} {
			if block.conditions != nil {
				if err := setGuard(block.conditions); err != nil {
					return err
				}
			}
			cpu, admission, err := b.dryRunBlock(block.client)
			if err != nil {
				return err
			}
			r.cpu[i], r.plugin[i] = cpu, admission
		}
		b.printf("round %d: CPU per dry-run as shipped %.2fms, administrator %.2fms, unguarded %.2fms (policy plugin %.2f / %.2f / %.2fms): saves %.2fms\n",
			attempt, r.cpu[shippedBlock], r.cpu[adminBlock], r.cpu[unguardedBlock], r.plugin[shippedBlock], r.plugin[adminBlock], r.plugin[unguardedBlock], r.saving())
		if !r.policyInForce() {
			b.printf("round %d: not counted: the unguarded policy's plugin time is not above the shipped one's (the policy swapped in was not yet in force)\n", attempt)
			continue
		}
		rounds = append(rounds, r)
	}
	var cpu, plugin [3]float64
	for _, r := range rounds {
		for i := range cpu {
			cpu[i] += r.cpu[i] / float64(len(rounds))
			plugin[i] += r.plugin[i] / float64(len(rounds))
		}
	}
	guarded, admin, unguarded := cpu[shippedBlock], cpu[adminBlock], cpu[unguardedBlock]
	b.report.add("kube-apiserver CPU per KubeDescheduler dry-run as an administrator (no policy)", "ms", admin)
	b.report.add("kube-apiserver CPU per KubeDescheduler dry-run of the server, policy unguarded", "ms", unguarded)
	b.report.add("kube-apiserver CPU per KubeDescheduler dry-run of the server, policy as shipped", "ms", guarded)
	b.report.add("kube-apiserver's policy plugin per KubeDescheduler dry-run, policy unguarded", "ms", plugin[unguardedBlock])
	b.report.add("kube-apiserver's policy plugin per KubeDescheduler dry-run, policy as shipped", "ms", plugin[shippedBlock])
	saving := median(rounds, dryRunRound.saving)
	b.report.add("KubeDescheduler policy: kube-apiserver CPU saved per dry-run", "ms", saving)
	share := median(rounds, dryRunRound.pluginShare)
	met := b.report.check("KubeDescheduler policy: its plugin time per dry-run as shipped / unguarded", "x", share, *admissionShare)
	b.printf("per dry-run (mean of %d rounds): administrator %.2fms, server with the policy unguarded %.2fms, as shipped %.2fms; saves %.2fms of kube-apiserver's CPU (median of the rounds); the policy plugin's time as shipped / unguarded %.2f (median of the rounds; target <= %.2f: %s)\n",
		len(rounds), admin, unguarded, guarded, saving, share, *admissionShare, verdict(met))
	return nil
}

// The blocks of a round of dry-runs, in their order.
const (
	shippedBlock = iota
	adminBlock
	unguardedBlock
)

// A dryRunRound is kube-apiserver's CPU and its policy plugin's time per
// dry-run (ms) in each block of a round: as shipped, as an administrator,
// unguarded.
type dryRunRound struct {
	// indexed by block: shippedBlock, adminBlock, unguardedBlock
	cpu, plugin [3]float64
}

// saving is what the shipped policy saved against the unguarded one in
// this round, in kube-apiserver's CPU per dry-run (ms): the two blocks
// ran seconds apart, on the same machine, but it is the difference of
// two totals of the whole process, and moves with them.
func (r dryRunRound) saving() float64 { return r.cpu[unguardedBlock] - r.cpu[shippedBlock] }

// pluginShare is the shipped policy's time in kube-apiserver's policy
// plugin per dry-run as a share of the unguarded one's, in this round:
// the policy's own cost, measured on both sides by kube-apiserver, on
// the same machine seconds apart. The machine's speed moved more than
// 2x between runs (an administrator's dry-run cost 2.6 ms of CPU in
// one, 4.3-8.4 ms in the others), and an absolute saving with it; this
// share did not.
func (r dryRunRound) pluginShare() float64 {
	if r.plugin[unguardedBlock] <= 0 {
		return 0
	}
	return r.plugin[shippedBlock] / r.plugin[unguardedBlock]
}

// median is the median of f over the rounds: a slow spell of the
// machine during one block moves one round, not the figure.
func median(rounds []dryRunRound, f func(dryRunRound) float64) float64 {
	s := make([]float64, len(rounds))
	for i, r := range rounds {
		s[i] = f(r)
	}
	sort.Float64s(s)
	if len(s) == 0 {
		return 0
	}
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// policyInForce: the unguarded block took the policy plugin longer than
// the shipped one, the evidence that kube-apiserver evaluated the policy
// the bench had swapped in (the unguarded policy runs every rule,
// variable and message; the shipped one, for a write that keeps them,
// one match condition).
func (r dryRunRound) policyInForce() bool {
	return r.plugin[unguardedBlock] > r.plugin[shippedBlock]
}

// dryRunBlock runs a block of KubeDescheduler dry-runs through client
// and returns kube-apiserver's CPU per dry-run (its threads' schedstat:
// a scrape of /metrics costs it tens of milliseconds, which would fall
// partly inside the block) and its ValidatingAdmissionPolicy plugin's
// time per UPDATE admitted meanwhile (from /metrics, scraped outside).
func (b *bench) dryRunBlock(client dynamic.ResourceInterface) (cpu, plugin float64, err error) {
	pid := b.e.KubeAPIServerPid()
	if pid == 0 {
		return 0, 0, fmt.Errorf("kube-apiserver is not running")
	}
	sum0, n0, err := b.e.PolicyAdmissionTime(b.ctx, "UPDATE")
	if err != nil {
		return 0, 0, err
	}
	// The scrape's own work (and its garbage's collection) ends before
	// the block starts.
	if _, _, err := b.quiet(floorQuietWindow, floorQuietBudget); err != nil {
		return 0, 0, err
	}
	cpu0, err := threadsCPU(pid)
	if err != nil {
		return 0, 0, err
	}
	for i := 0; i < *admissionBlock; i++ {
		if err := b.dryRunKD(client, int64(60+i)); err != nil {
			return 0, 0, err
		}
	}
	cpu1, err := threadsCPU(pid)
	if err != nil {
		return 0, 0, err
	}
	sum1, n1, err := b.e.PolicyAdmissionTime(b.ctx, "UPDATE")
	if err != nil {
		return 0, 0, err
	}
	if n1 > n0 {
		plugin = (sum1 - sum0) / float64(n1-n0) * 1000
	}
	return float64(cpu1-cpu0) / float64(*admissionBlock) / 1e6, plugin, nil
}

// dryRunKD is a server-side apply dry-run of the KubeDescheduler's
// deschedulingIntervalSeconds as the server's field manager.
func (b *bench) dryRunKD(client dynamic.ResourceInterface, interval int64) error {
	obj := &unstructured.Unstructured{Object: map[string]interface{}{
		"apiVersion": kdGVK.GroupVersion().String(), "kind": kdGVK.Kind,
		"metadata": map[string]interface{}{"name": "cluster", "namespace": kdNS},
		"spec":     map[string]interface{}{"deschedulingIntervalSeconds": interval},
	}}
	_, err := client.Apply(b.ctx, "cluster", obj, metav1.ApplyOptions{FieldManager: cluster.FieldManager, Force: true, DryRun: []string{metav1.DryRunAll}})
	return err
}

// kubeCPU is kube-apiserver's CPU time (ms) per call of do, n calls.
func (b *bench) kubeCPU(n int, do func(i int) error) (float64, error) {
	before, err := b.e.KubeAPIServerCPU(b.ctx)
	if err != nil {
		return 0, err
	}
	for i := 0; i < n; i++ {
		if err := do(i); err != nil {
			return 0, err
		}
	}
	after, err := b.e.KubeAPIServerCPU(b.ctx)
	if err != nil {
		return 0, err
	}
	return (after - before) / float64(n) * 1000, nil
}
