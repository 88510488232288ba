package main

import (
	"flag"
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
	admissionRounds = flag.Int("admission-rounds", 8, "rounds of KubeDescheduler dry-runs per policy measured (each round: a block of dry-runs as the server with the policy as shipped, as an administrator, as the server with the policy unguarded)")
	admissionBlock  = flag.Int("admission-block", 40, "dry-runs per block")
	admissionSaving = flag.Duration("admission-saving", time.Millisecond, "target: kube-apiserver CPU the shipped KubeDescheduler policy saves per dry-run of the server against the same policy unguarded")
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
	var guarded, admin, unguarded float64
	for round := 0; round < *admissionRounds; round++ {
		for _, block := range []struct {
			sum        *float64
			client     dynamic.ResourceInterface
			conditions []admissionv1.MatchCondition
		}{
			{&guarded, asServer, shipped.Spec.MatchConditions},
			{&admin, asAdmin, nil},
			{&unguarded, asServer, main.Spec.MatchConditions},
		} {
			if block.conditions != nil {
				if err := setGuard(block.conditions); err != nil {
					return err
				}
			}
			per, err := b.kubeCPU(*admissionBlock, func(i int) error { return b.dryRunKD(block.client, int64(60+i)) })
			if err != nil {
				return err
			}
			*block.sum += per / float64(*admissionRounds)
		}
	}
	b.report.add("kube-apiserver CPU per KubeDescheduler dry-run as an administrator (no policy)", "ms", admin)
	b.report.add("kube-apiserver CPU per KubeDescheduler dry-run of the server, policy unguarded", "ms", unguarded)
	b.report.add("kube-apiserver CPU per KubeDescheduler dry-run of the server, policy as shipped", "ms", guarded)
	saving := unguarded - guarded
	met := b.report.atLeast("KubeDescheduler policy: kube-apiserver CPU saved per dry-run", "ms", saving, ms(*admissionSaving))
	b.printf("per dry-run: administrator %.2fms, server with the policy unguarded %.2fms (policy %.2fms), as shipped %.2fms (policy %.2fms): saves %.2fms (target >= %v: %s)\n",
		admin, unguarded, unguarded-admin, guarded, guarded-admin, saving, *admissionSaving, verdict(met))
	return nil
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
