package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/kubernetes"

	"github.com/kubevirt/virt-advisor/pkg/apis/advisor/v1alpha1"
	"github.com/kubevirt/virt-advisor/pkg/apiserver"
	"github.com/kubevirt/virt-advisor/pkg/fleet"
)

var fleetPlanFactor = flag.Float64("fleet-plan-factor", 1.5, "target: a fleet plan GET p50 at most this many times a cluster's plan GET p50, for 2 and for 20 simulated clusters")

// fleetSizes are the fleets the fleet step measures.
var fleetSizes = []int{2, 20}

const (
	fleetBenchNS      = "virt-fleet-bench"
	fleetBenchProfile = "load-aware-rebalancing"
)

// fleetPlan measures GET …/fleetconfigs/NAME/plan on a fleet's hub whose
// clusters are simulated: a PlacementDecision of N clusters and, per
// cluster, the ManifestWork OCM would make, its status feedback holding
// the cluster's plan summary as a work agent reports it. Each fleet plan
// GET takes turns with a GET of this cluster's own plan of the same
// profile, so that both see the same machine.
func (b *bench) fleetPlan() error {
	b.printf("\n== fleet plan GET (2 and 20 simulated clusters, their plan summaries in ManifestWork status) vs. a cluster's plan GET, taking turns\n")
	if err := b.e.InstallOCMHubCRDs(b.ctx); err != nil {
		return err
	}
	if err := b.e.RestartAdvisorWith(b.ctx, nil, map[string]string{"--fleet-hub": "true"}); err != nil {
		return err
	}
	if err := b.createConfig(fleetBenchProfile, planSpecs[fleetBenchProfile]); err != nil {
		return err
	}
	kube := kubernetes.NewForConfigOrDie(b.e.AdminConfig)
	if err := createNamespaces(b, kube, append([]string{fleetBenchNS}, simulatedClusters(fleetSizes[len(fleetSizes)-1])...)); err != nil {
		return err
	}
	for _, n := range fleetSizes {
		name := fmt.Sprintf("bench-%d", n)
		if err := b.simulateFleet(name, n); err != nil {
			return err
		}
		var fleetTimes, clusterTimes []time.Duration
		var last *v1alpha1.FleetPlan
		for i := 0; i < *planRuns+5; i++ {
			start := time.Now()
			p, err := b.adv.AdvisorV1alpha1().FleetConfigs(fleetBenchNS).GetPlan(b.ctx, name, metav1.GetOptions{})
			if err != nil {
				return fmt.Errorf("fleet plan of %s: %w", name, err)
			}
			took := time.Since(start)
			last = p
			start = time.Now()
			if _, err := b.adv.AdvisorV1alpha1().VirtPlatformConfigs().GetPlan(b.ctx, fleetBenchProfile, metav1.GetOptions{}); err != nil {
				return err
			}
			if i >= 5 { // warm-up
				fleetTimes = append(fleetTimes, took)
				clusterTimes = append(clusterTimes, time.Since(start))
			}
		}
		if len(last.Status.Pending) > 0 || len(last.Status.Clusters) != n {
			return fmt.Errorf("fleet %s: the plan shows %d clusters, pending %q: the simulated clusters are not read as a work agent reports them", name, len(last.Status.Clusters), last.Status.Pending)
		}
		f50, f95 := percentiles(fleetTimes)
		c50, _ := percentiles(clusterTimes)
		b.report.add(fmt.Sprintf("fleet plan GET p50, %d clusters", n), "ms", ms(f50))
		b.report.add(fmt.Sprintf("fleet plan GET p95, %d clusters", n), "ms", ms(f95))
		b.report.add(fmt.Sprintf("cluster plan GET p50, taking turns with the fleet of %d", n), "ms", ms(c50))
		factor := float64(f50) / float64(c50)
		met := b.report.check(fmt.Sprintf("fleet plan GET p50 / cluster plan GET p50, %d clusters", n), "x", factor, *fleetPlanFactor)
		b.printf("%2d clusters: fleet plan p50 %6.1fms p95 %6.1fms   cluster plan p50 %6.1fms   ratio %.2f (target <= %.2f: %s)\n",
			n, ms(f50), ms(f95), ms(c50), factor, *fleetPlanFactor, verdict(met))
	}
	return nil
}

// simulatedClusters are the names of n simulated clusters.
func simulatedClusters(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("sim-%02d", i)
	}
	return out
}

func createNamespaces(b *bench, kube kubernetes.Interface, names []string) error {
	for _, ns := range names {
		_, err := kube.CoreV1().Namespaces().Create(b.ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
		if err != nil && !apierrors.IsAlreadyExists(err) {
			return err
		}
	}
	return nil
}

// simulateFleet creates FleetConfig name over n simulated clusters: its
// PlacementDecision (the first cluster a canary wave of its own) and
// each cluster's ManifestWork with the status feedback a work agent
// writes, for the spec the hub sends.
func (b *bench) simulateFleet(name string, n int) error {
	fc := &v1alpha1.FleetConfig{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: fleetBenchNS}, Spec: v1alpha1.FleetConfigSpec{
		Profile: fleetBenchProfile, PlacementRef: v1alpha1.FleetPlacementRef{Name: name}}}
	created, err := b.adv.AdvisorV1alpha1().FleetConfigs(fleetBenchNS).Create(b.ctx, fc, metav1.CreateOptions{})
	if err != nil {
		return err
	}
	specHash, err := fleet.SpecHash(fleet.SpokeConfig(created, func(c *v1alpha1.VirtPlatformConfig) { apiserver.Scheme.Default(c) }).Spec)
	if err != nil {
		return err
	}
	clusters := simulatedClusters(n)
	for group, members := range map[int][]string{0: clusters[:1], 1: clusters[1:]} {
		if err := b.createDecision(name, group, members); err != nil {
			return err
		}
	}
	items, _ := json.Marshal([]v1alpha1.PlanSummaryItem{
		{Name: "enable-load-aware-descheduling", Target: "KubeDescheduler/cluster", Operation: v1alpha1.OperationUpdate},
		{Name: "enable-psi-metrics", Target: "MachineConfig/99-worker-psi-karg", Operation: v1alpha1.OperationCreate}})
	return b.parallel(n, func(i int) error {
		c := clusters[i]
		work := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "work.open-cluster-management.io/v1", "kind": "ManifestWork",
			"metadata": map[string]any{"name": name, "namespace": c, "labels": map[string]any{fleet.ReplicaSetLabel: fleetBenchNS + "." + name}},
			"spec": map[string]any{"workload": map[string]any{"manifests": []any{map[string]any{
				"apiVersion": "advisor.kubevirt.io/v1alpha1", "kind": "VirtPlatformConfig", "metadata": map[string]any{"name": fleetBenchProfile},
				"spec": map[string]any{"profile": fleetBenchProfile}}}}},
		}}
		w, err := b.dyn.Resource(fleet.ManifestWorkGVR).Namespace(c).Create(b.ctx, work, metav1.CreateOptions{})
		if err != nil {
			return err
		}
		value := func(name, typ, key string, v any) any {
			return map[string]any{"name": name, "fieldValue": map[string]any{"type": typ, key: v}}
		}
		now := metav1.Now().UTC().Format(time.RFC3339)
		w.Object["status"] = map[string]any{
			"conditions": []any{map[string]any{"type": "Applied", "status": "True", "reason": "AppliedManifestWorkComplete", "message": "applied",
				"observedGeneration": w.GetGeneration(), "lastTransitionTime": now}},
			"resourceStatus": map[string]any{"manifests": []any{map[string]any{
				"resourceMeta": map[string]any{"ordinal": int64(0), "group": "advisor.kubevirt.io", "version": "v1alpha1", "kind": "VirtPlatformConfig",
					"resource": "virtplatformconfigs", "name": fleetBenchProfile},
				"conditions": []any{map[string]any{"type": "Progressing", "status": "False", "reason": "ConditionRuleEvaluated",
					"message": "ReviewRequired: The plan is ready for review", "lastTransitionTime": now}},
				"statusFeedback": map[string]any{"values": []any{
					value("phase", "String", "string", "ReviewRequired"),
					value("planHash", "String", "string", strings.Repeat(fmt.Sprintf("%x", i%16), 64)),
					value("specHash", "String", "string", specHash),
					value("items", "JsonRaw", "jsonRaw", string(items)),
					value("nodeReboots", "Integer", "integer", int64(3)),
					value("liveMigrations", "Integer", "integer", int64(40)),
					value("capacity", "String", "string", "pool worker: fits: worst node n2 moves 96 GiB, 140 GiB free elsewhere"),
				}},
			}}},
		}
		_, err = b.dyn.Resource(fleet.ManifestWorkGVR).Namespace(c).UpdateStatus(b.ctx, w, metav1.UpdateOptions{})
		return err
	})
}

// createDecision creates the PlacementDecision of decision group group
// of Placement name, selecting clusters.
func (b *bench) createDecision(name string, group int, clusters []string) error {
	var decisions []any
	for _, c := range clusters {
		decisions = append(decisions, map[string]any{"clusterName": c, "reason": ""})
	}
	d := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "cluster.open-cluster-management.io/v1beta1", "kind": "PlacementDecision",
		"metadata": map[string]any{"name": fmt.Sprintf("%s-decision-%d", name, group+1), "namespace": fleetBenchNS, "labels": map[string]any{
			fleet.PlacementLabel: name, fleet.DecisionGroupIndexLabel: fmt.Sprint(group), fleet.DecisionGroupNameLabel: map[int]string{0: "canary", 1: ""}[group]}},
	}}
	created, err := b.dyn.Resource(fleet.PlacementDecisionGVR).Namespace(fleetBenchNS).Create(b.ctx, d, metav1.CreateOptions{})
	if err != nil {
		return err
	}
	created.Object["status"] = map[string]any{"decisions": decisions}
	_, err = b.dyn.Resource(fleet.PlacementDecisionGVR).Namespace(fleetBenchNS).UpdateStatus(b.ctx, created, metav1.UpdateOptions{})
	return err
}
