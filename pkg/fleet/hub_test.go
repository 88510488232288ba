package fleet

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kubevirt/virt-advisor/pkg/apis/advisor/v1alpha1"
)

func fleetConfig() *v1alpha1.FleetConfig {
	return &v1alpha1.FleetConfig{ObjectMeta: metav1.ObjectMeta{Name: "la", Namespace: "virt-fleet", UID: "u1", Generation: 2},
		Spec: v1alpha1.FleetConfigSpec{Profile: "load-aware-rebalancing", PlacementRef: v1alpha1.FleetPlacementRef{Name: "p"},
			RolloutStrategy: v1alpha1.RolloutStrategy{Type: v1alpha1.RolloutTypeProgressivePerGroup}}}
}

var waves = []Decision{{Cluster: "spoke-b", GroupIndex: 1}, {Cluster: "spoke-a", Group: "canary"}}

func reported(spec string) map[string]Report {
	return map[string]Report{
		"spoke-a": {Phase: "ReviewRequired", Plan: &v1alpha1.PlanSummary{PlanHash: hash('a'), SpecHash: spec}},
		"spoke-b": {Phase: "ReviewRequired", Plan: &v1alpha1.PlanSummary{PlanHash: hash('b'), SpecHash: spec}},
	}
}

func TestCompute(t *testing.T) {
	spec := hash('s')
	full, err := Compute(fleetConfig(), spec, waves, reported(spec))
	if err != nil {
		t.Fatal(err)
	}
	if len(full.Pending) != 0 || len(full.FleetHash) != 64 {
		t.Fatalf("a fleet whose clusters all reported has a hash: %+v", full)
	}
	if full.Clusters[0].Name != "spoke-a" || full.Clusters[1].Name != "spoke-b" {
		t.Errorf("clusters not in wave order: %+v", full.Clusters)
	}
	for _, tc := range []struct {
		name      string
		fc        func(*v1alpha1.FleetConfig)
		decisions []Decision
		reports   func(map[string]Report)
		pending   string // "": approvable, with another hash than full's unless same
		same      bool
	}{
		{name: "the same inputs", same: true},
		{name: "a cluster has no ManifestWork yet", reports: func(r map[string]Report) { delete(r, "spoke-b") }, pending: "spoke-b: its ManifestWork is not created yet"},
		{name: "a cluster reports no plan yet", reports: func(r map[string]Report) { r["spoke-b"] = Report{Phase: "Drafting"} }, pending: "no plan reported yet"},
		{name: "a cluster's plan is of an earlier spec", reports: func(r map[string]Report) { r["spoke-b"].Plan.SpecHash = hash('0') }, pending: "earlier spec"},
		{name: "the Placement selects nothing", decisions: []Decision{}, pending: "selects no cluster"},
		{name: "a cluster's plan changed", reports: func(r map[string]Report) { r["spoke-b"].Plan.PlanHash = hash('c') }},
		{name: "a cluster moved to another wave", decisions: []Decision{{Cluster: "spoke-b"}, {Cluster: "spoke-a", Group: "canary"}}},
		{name: "another strategy", fc: func(fc *v1alpha1.FleetConfig) { fc.Spec.RolloutStrategy.Type = v1alpha1.RolloutTypeAll }},
		{name: "another generation", fc: func(fc *v1alpha1.FleetConfig) { fc.Generation = 3 }},
		{name: "another object of the same name", fc: func(fc *v1alpha1.FleetConfig) { fc.UID = "u2" }},
		{name: "a phase reported differently is no other plan", reports: func(r map[string]Report) { r["spoke-a"] = Report{Phase: "Drifted", Plan: r["spoke-a"].Plan} }, same: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fc, decisions, reports := fleetConfig(), append([]Decision(nil), waves...), reported(spec)
			if tc.fc != nil {
				tc.fc(fc)
			}
			if tc.decisions != nil {
				decisions = tc.decisions
			}
			if tc.reports != nil {
				tc.reports(reports)
			}
			got, err := Compute(fc, spec, decisions, reports)
			if err != nil {
				t.Fatal(err)
			}
			if tc.pending != "" {
				if got.FleetHash != "" || !strings.Contains(strings.Join(got.Pending, "; "), tc.pending) {
					t.Errorf("pending %q, hash %q: want pending …%s… and no hash", got.Pending, got.FleetHash, tc.pending)
				}
				return
			}
			if (got.FleetHash == full.FleetHash) != tc.same {
				t.Errorf("fleet hash %s, first %s: same should be %v", got.FleetHash, full.FleetHash, tc.same)
			}
		})
	}
}

func TestSpokeConfigCarriesTheApprovalOfThisGeneration(t *testing.T) {
	fc := fleetConfig()
	if SpokeConfig(fc, nil).Spec.DelegatedApproval != nil {
		t.Fatal("an unapproved fleet sends an approval")
	}
	fc.Status.Approval = &v1alpha1.FleetApprovalRecord{FleetHash: hash('f'), ApprovedBy: "alice", Generation: 2,
		Clusters: []v1alpha1.ClusterPlanHash{{Name: "spoke-a", PlanHash: hash('a')}}}
	d := SpokeConfig(fc, nil).Spec.DelegatedApproval
	if d == nil || d.Fleet != "virt-fleet/la" || d.FleetHash != hash('f') || d.ApprovedBy != "alice" || len(d.Clusters) != 1 || d.AbortedBy != "" {
		t.Fatalf("delegated approval %+v", d)
	}
	if Strategy(fc).Type != v1alpha1.RolloutTypeProgressivePerGroup {
		t.Errorf("approved: strategy %s, want the FleetConfig's", Strategy(fc).Type)
	}
	fc.Status.Abort = &v1alpha1.FleetAbortRecord{AbortedBy: "bob"}
	if d := SpokeConfig(fc, nil).Spec.DelegatedApproval; d.AbortedBy != "bob" {
		t.Errorf("aborted: %+v", d)
	}
	if Strategy(fc).Type != v1alpha1.RolloutTypeAll {
		t.Errorf("aborted: strategy %s, want All (every cluster at once)", Strategy(fc).Type)
	}
	fc.Generation = 3
	if SpokeConfig(fc, nil).Spec.DelegatedApproval != nil || Strategy(fc).Type != v1alpha1.RolloutTypeAll {
		t.Error("an approval of an earlier generation is sent")
	}
}

// work is a ManifestWork at generation 2 with the given work conditions
// (type=status@observedGeneration) and feedback values.
func work(conditions map[string]string, values map[string]any) *unstructured.Unstructured {
	var conds []any
	for t, v := range conditions {
		status, gen, _ := strings.Cut(v, "@")
		g := int64(2)
		if gen == "1" {
			g = 1
		}
		conds = append(conds, map[string]any{"type": t, "status": status, "observedGeneration": g, "reason": "r", "message": "m", "lastTransitionTime": "2026-12-03T10:00:00Z"})
	}
	var vals []any
	for name, v := range values {
		fv := map[string]any{}
		switch v := v.(type) {
		case string:
			fv["type"], fv["string"] = "String", v
		case int64:
			fv["type"], fv["integer"] = "Integer", v
		}
		vals = append(vals, map[string]any{"name": name, "fieldValue": fv})
	}
	w := &unstructured.Unstructured{Object: map[string]any{
		"metadata": map[string]any{"name": "la", "namespace": "spoke-a", "generation": int64(2)},
		"spec":     map[string]any{"workload": map[string]any{"manifests": []any{map[string]any{"spec": map[string]any{"delegatedApproval": map[string]any{"fleetHash": hash('f')}}}}}},
		"status": map[string]any{"conditions": conds, "resourceStatus": map[string]any{"manifests": []any{map[string]any{
			"statusFeedback": map[string]any{"values": vals},
			"conditions":     []any{map[string]any{"type": "Progressing", "status": "True", "message": "InProgress: Applying"}},
		}}}},
	}}
	return w
}

func TestRolloutOf(t *testing.T) {
	for _, tc := range []struct {
		name       string
		conditions map[string]string
		want       string
	}{
		{"not applied", map[string]string{"Progressing": "True"}, RolloutToApply},
		{"applied to an earlier generation", map[string]string{"Applied": "True@1", "Progressing": "False"}, RolloutToApply},
		{"no rule evaluated yet", map[string]string{"Applied": "True"}, RolloutToApply},
		{"a stale Progressing", map[string]string{"Applied": "True", "Progressing": "False@1"}, RolloutToApply},
		{"progressing", map[string]string{"Applied": "True", "Progressing": "True", "Degraded": "False"}, RolloutProgressing},
		{"failed", map[string]string{"Applied": "True", "Progressing": "True", "Degraded": "True"}, RolloutFailed},
		{"succeeded", map[string]string{"Applied": "True", "Progressing": "False", "Degraded": "False"}, RolloutSucceeded},
		{"degraded but done is no failure to OCM", map[string]string{"Applied": "True", "Progressing": "False", "Degraded": "True"}, RolloutSucceeded},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := RolloutOf(work(tc.conditions, nil)); got != tc.want {
				t.Errorf("RolloutOf = %s, want %s", got, tc.want)
			}
		})
	}
}

func TestReportOf(t *testing.T) {
	r := ReportOf(work(map[string]string{"Applied": "True", "Progressing": "True"}, map[string]any{
		"phase": "InProgress", "planHash": hash('a'), "specHash": hash('s'), "nodeReboots": int64(3), "capacity": "pool worker: fits"}))
	if r.Phase != "InProgress" || r.Message != "Applying" || r.Approved != hash('f') || r.Plan == nil ||
		r.Plan.PlanHash != hash('a') || r.Plan.SpecHash != hash('s') || r.Plan.NodeReboots != 3 || r.Plan.Capacity != "pool worker: fits" {
		t.Errorf("report %+v, plan %+v", r, r.Plan)
	}
	if r := ReportOf(work(nil, map[string]any{"phase": "Drafting"})); r.Plan != nil {
		t.Errorf("a work without the hashes reports a plan: %+v", r.Plan)
	}
}

func TestProgress(t *testing.T) {
	approved := func() *v1alpha1.FleetConfig {
		fc := fleetConfig()
		fc.Status.Approval = &v1alpha1.FleetApprovalRecord{FleetHash: hash('f'), ApprovedBy: "alice", Generation: 2}
		return fc
	}
	for _, tc := range []struct {
		name    string
		fc      *v1alpha1.FleetConfig
		reports map[string]Report
		phase   v1alpha1.FleetPhase
		message string
	}{
		{name: "not approved", fc: fleetConfig(), phase: v1alpha1.FleetPhaseReviewRequired, message: "approve its fleetHash"},
		{name: "the canary rolls", fc: approved(), reports: map[string]Report{"spoke-a": {Phase: "InProgress", Rollout: RolloutProgressing, Approved: hash('f')}},
			phase: v1alpha1.FleetPhaseRollingOut, message: "0 of 2 clusters completed"},
		{name: "the canary failed", fc: approved(), reports: map[string]Report{"spoke-a": {Phase: "Failed", Message: "Failed: refused", Rollout: RolloutFailed, Approved: hash('f')}},
			phase: v1alpha1.FleetPhaseFailed, message: "spoke-a (Failed: refused)"},
		{name: "a failure of an earlier approval does not count", fc: approved(), reports: map[string]Report{"spoke-a": {Phase: "Failed", Rollout: RolloutFailed, Approved: hash('e')}},
			phase: v1alpha1.FleetPhaseRollingOut},
		{name: "all completed", fc: approved(), reports: map[string]Report{
			"spoke-a": {Phase: "Completed", Rollout: RolloutSucceeded, Approved: hash('f')}, "spoke-b": {Phase: "Completed", Rollout: RolloutSucceeded, Approved: hash('f')}},
			phase: v1alpha1.FleetPhaseCompleted, message: "applied on every cluster (2)"},
		{name: "completed before the approval reached it is not done", fc: approved(), reports: map[string]Report{
			"spoke-a": {Phase: "Completed", Rollout: RolloutSucceeded, Approved: hash('f')}, "spoke-b": {Phase: "Completed", Rollout: RolloutSucceeded}},
			phase: v1alpha1.FleetPhaseRollingOut, message: "1 of 2"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			phase, message, clusters := Progress(tc.fc, append([]Decision(nil), waves...), tc.reports)
			if phase != tc.phase || !strings.Contains(message, tc.message) {
				t.Errorf("Progress = %s %q, want %s …%s…", phase, message, tc.phase, tc.message)
			}
			if len(clusters) != 2 || clusters[0].Name != "spoke-a" {
				t.Fatalf("clusters %+v, want both in wave order", clusters)
			}
			if r, ok := tc.reports["spoke-b"]; tc.phase != v1alpha1.FleetPhaseReviewRequired && (!ok || r.Approved != hash('f')) && clusters[1].Rollout != RolloutToApply {
				t.Errorf("spoke-b, which the approval has not reached, shows rollout %q", clusters[1].Rollout)
			}
		})
	}
}
