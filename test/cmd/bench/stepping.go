package main

import (
	"context"
	"flag"
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"

	"github.com/kubevirt/virt-advisor/pkg/apis/advisor/v1alpha1"
	"github.com/kubevirt/virt-advisor/pkg/hardware"
	"github.com/kubevirt/virt-advisor/test/env/fakemco"
)

var (
	stepNodes    = flag.Int("step-nodes", 5, "nodes of the pool whose rollout is stepped")
	stepOverhead = flag.Duration("step-overhead", 2*time.Second, "target: between two steps of a rollout (one node's update done to the next one's targeted), at most this, soak 0")
)

var mcpGVK = schema.GroupVersionKind{Group: "machineconfiguration.openshift.io", Version: "v1", Kind: "MachineConfigPool"}

// stepping: pci-passthrough approved for a pool of Intel nodes the fake MCO
// updates one at a time (maxUnavailable 1, 1 s per node), stepped by
// virt-advisor with the default gates and no soak. What stepping costs is
// the time between a node's update done and the next node targeted.
func (b *bench) stepping() error {
	const pool, mcName = "bench-steps", "50-bench-steps-virt-advisor-pci-passthrough"
	b.printf("\n== stepped rollout: %d nodes, one step each\n", *stepNodes)
	nodes, cleanup, err := b.steppedPool(pool)
	defer cleanup()
	if err != nil {
		return err
	}
	if err := b.createConfig("pci-passthrough", fmt.Sprintf(`{"profile":"pci-passthrough","options":{"pciPassthrough":{"pool":%q}}}`, pool)); err != nil {
		return err
	}
	defer func() {
		_ = b.deleteConfig("pci-passthrough")
		if mcs, err := b.resource(mcGVK, ""); err == nil {
			_ = mcs.Delete(b.ctx, mcName, metav1.DeleteOptions{})
		}
	}()
	if err := b.waitPhase("pci-passthrough", v1alpha1.PhaseReviewRequired); err != nil {
		return err
	}
	p, err := b.adv.AdvisorV1alpha1().VirtPlatformConfigs().GetPlan(b.ctx, "pci-passthrough", metav1.GetOptions{})
	if err != nil {
		return err
	}
	if _, err := b.adv.AdvisorV1alpha1().VirtPlatformConfigs().Approve(b.ctx, "pci-passthrough",
		&v1alpha1.Approval{Spec: v1alpha1.ApprovalSpec{PlanHash: p.Status.PlanHash}}, metav1.CreateOptions{}); err != nil {
		return err
	}
	gaps, err := b.stepGaps(nodes)
	if err != nil {
		return err
	}
	p50, _ := percentiles(gaps)
	worst := gaps[0]
	for _, g := range gaps {
		worst = max(worst, g)
	}
	met := b.report.check("between two steps, worst", "ms", ms(worst), ms(*stepOverhead))
	b.report.add("between two steps p50", "ms", ms(p50))
	b.printf("node done -> next node targeted  p50 %6.1fms worst %6.1fms (n=%d, target <= %v: %s)\n", ms(p50), ms(worst), len(gaps), *stepOverhead, verdict(met))
	return b.waitPhase("pci-passthrough", v1alpha1.PhaseCompleted)
}

// steppedPool creates a pool of *stepNodes Intel nodes the fake MCO steps
// and waits until it settled; cleanup removes it all.
func (b *bench) steppedPool(name string) (nodes []string, cleanup func(), err error) {
	var undo []func()
	cleanup = func() {
		for i := len(undo) - 1; i >= 0; i-- {
			undo[i]()
		}
	}
	for i := range *stepNodes {
		node := fmt.Sprintf("%s-%d", name, i)
		if err := b.e.CreateNode(b.ctx, node, map[string]string{"node-role.kubernetes.io/" + name: "", hardware.VendorLabel: "GenuineIntel"}); err != nil {
			return nil, cleanup, err
		}
		undo = append(undo, func() { _ = b.e.DeleteNode(context.Background(), node) })
		nodes = append(nodes, node)
	}
	mcs, err := b.resource(mcGVK, "")
	if err != nil {
		return nil, cleanup, err
	}
	role := map[string]interface{}{"machineconfiguration.openshift.io/role": name}
	base := &unstructured.Unstructured{Object: map[string]interface{}{"apiVersion": "machineconfiguration.openshift.io/v1", "kind": "MachineConfig",
		"metadata": map[string]interface{}{"name": "00-" + name, "labels": role},
		"spec":     map[string]interface{}{"config": map[string]interface{}{"ignition": map[string]interface{}{"version": "3.2.0"}}}}}
	if _, err := mcs.Create(b.ctx, base, metav1.CreateOptions{}); err != nil {
		return nil, cleanup, err
	}
	undo = append(undo, func() { _ = mcs.Delete(context.Background(), "00-"+name, metav1.DeleteOptions{}) })
	pools, err := b.resource(mcpGVK, "")
	if err != nil {
		return nil, cleanup, err
	}
	pool := &unstructured.Unstructured{Object: map[string]interface{}{"apiVersion": "machineconfiguration.openshift.io/v1", "kind": "MachineConfigPool",
		"metadata": map[string]interface{}{"name": name, "annotations": map[string]interface{}{fakemco.StepNodesAnnotation: "true", fakemco.StepTimeAnnotation: "1s"}},
		"spec": map[string]interface{}{"machineConfigSelector": map[string]interface{}{"matchLabels": role},
			"nodeSelector": map[string]interface{}{"matchLabels": map[string]interface{}{"node-role.kubernetes.io/" + name: ""}}, "maxUnavailable": int64(1)}}}
	if _, err := pools.Create(b.ctx, pool, metav1.CreateOptions{}); err != nil {
		return nil, cleanup, err
	}
	undo = append(undo, func() { _ = pools.Delete(context.Background(), name, metav1.DeleteOptions{}) })
	return nodes, cleanup, wait.PollUntilContextTimeout(b.ctx, 100*time.Millisecond, budget, true, func(ctx context.Context) (bool, error) {
		p, err := pools.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		spec, _, _ := unstructured.NestedString(p.Object, "spec", "configuration", "name")
		status, _, _ := unstructured.NestedString(p.Object, "status", "configuration", "name")
		updated, _, _ := unstructured.NestedInt64(p.Object, "status", "updatedMachineCount")
		return spec != "" && spec == status && updated == int64(len(nodes)), nil
	})
}

// stepGaps follows the nodes (every 20 ms) until each was updated to a
// new config, and returns, for each node but the first, the time from the
// previous node's update done (Done and Ready) to its own targeting.
func (b *bench) stepGaps(nodes []string) ([]time.Duration, error) {
	kube, err := kubernetes.NewForConfig(b.e.AdminConfig)
	if err != nil {
		return nil, err
	}
	initial := map[string]string{}
	targeted, done := map[string]time.Time{}, map[string]time.Time{}
	err = wait.PollUntilContextTimeout(b.ctx, 20*time.Millisecond, budget, true, func(ctx context.Context) (bool, error) {
		list, err := kube.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, nil
		}
		now := time.Now()
		for i := range list.Items {
			n := &list.Items[i]
			a := n.Annotations
			if _, ours := initial[n.Name]; !ours && slices.Contains(nodes, n.Name) {
				initial[n.Name] = a[fakemco.CurrentConfigAnnotation]
			}
			desired, current := a[fakemco.DesiredConfigAnnotation], a[fakemco.CurrentConfigAnnotation]
			if desired != initial[n.Name] && targeted[n.Name].IsZero() && slices.Contains(nodes, n.Name) {
				targeted[n.Name] = now
			}
			if current == desired && desired != initial[n.Name] && a[fakemco.StateAnnotation] == fakemco.StateDone && ready(n) && done[n.Name].IsZero() && slices.Contains(nodes, n.Name) {
				done[n.Name] = now
			}
		}
		return len(done) == len(nodes), nil
	})
	if err != nil {
		return nil, fmt.Errorf("following the stepped rollout (%d of %d nodes done): %w", len(done), len(nodes), err)
	}
	order := append([]string(nil), nodes...)
	slices.SortFunc(order, func(a, b string) int { return targeted[a].Compare(targeted[b]) })
	var gaps []time.Duration
	for i := 1; i < len(order); i++ {
		gaps = append(gaps, targeted[order[i]].Sub(done[order[i-1]]))
	}
	return gaps, nil
}

func ready(n *corev1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return true
}
