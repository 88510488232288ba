package fleet

import (
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubevirt/virt-advisor/pkg/apis/advisor/v1alpha1"
)

func hash(c byte) string { return strings.Repeat(string(c), 64) }

func TestDecide(t *testing.T) {
	at := metav1.NewTime(time.Date(2026, 12, 3, 10, 0, 0, 0, time.UTC))
	approval := func(mutate func(*v1alpha1.DelegatedApproval)) *v1alpha1.DelegatedApproval {
		d := &v1alpha1.DelegatedApproval{Fleet: "virt-fleet/load-aware", FleetHash: hash('f'), ApprovedBy: "alice", ApprovedAt: at,
			Clusters: []v1alpha1.ClusterPlanHash{{Name: "spoke-a", PlanHash: hash('a')}, {Name: "spoke-b", PlanHash: hash('b')}}}
		if mutate != nil {
			mutate(d)
		}
		return d
	}
	cfg := &v1alpha1.VirtPlatformConfig{ObjectMeta: metav1.ObjectMeta{Name: "load-aware-rebalancing", UID: "u1", Generation: 3}}
	used := fleetRecord(approval(nil), cfg, hash('a'), at)
	for _, tc := range []struct {
		name     string
		d        *v1alpha1.DelegatedApproval
		cluster  string
		live     string
		last     *v1alpha1.ApprovalRecord
		approve  bool
		reason   string
		contains string
	}{
		{name: "its own hash approves", d: approval(nil), cluster: "spoke-a", live: hash('a'), approve: true},
		{name: "the other cluster's hash does not", d: approval(nil), cluster: "spoke-a", live: hash('b'), reason: ReasonMismatch, contains: "live plan is now bbbbbbbb"},
		{name: "a plan changed since the review", d: approval(nil), cluster: "spoke-b", live: hash('c'), reason: ReasonMismatch, contains: "approved plan bbbbbbbbbbbb for cluster spoke-b"},
		{name: "a cluster the fleet did not review", d: approval(nil), cluster: "spoke-z", live: hash('a'), reason: ReasonMismatch, contains: "approved no plan for cluster spoke-z"},
		{name: "no cluster name", d: approval(nil), cluster: "", live: hash('a'), reason: ReasonNoCluster, contains: "--cluster-name"},
		{name: "aborted before it started", d: approval(func(d *v1alpha1.DelegatedApproval) { d.AbortedBy = "bob" }), cluster: "spoke-a", live: hash('a'), reason: ReasonFleetAborted, contains: "aborted by bob"},
		{name: "used once, never again", d: approval(nil), cluster: "spoke-a", live: hash('a'), last: &used, reason: ReasonUsed},
		{name: "a new approval of the same fleet hash is another approval", d: approval(func(d *v1alpha1.DelegatedApproval) { d.ApprovedAt = metav1.NewTime(at.Add(time.Minute)) }),
			cluster: "spoke-a", live: hash('a'), last: &used, approve: true},
		{name: "a local approval does not use it", d: approval(nil), cluster: "spoke-a", live: hash('a'),
			last: &v1alpha1.ApprovalRecord{PlanHash: hash('a'), ApprovedBy: "carol"}, approve: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := Decide(tc.d, tc.cluster, tc.live, tc.last)
			if v.Approve != tc.approve || v.Reason != tc.reason {
				t.Fatalf("Decide = %+v, want approve %v reason %q", v, tc.approve, tc.reason)
			}
			if !strings.Contains(v.Message, tc.contains) {
				t.Errorf("message %q does not say %q", v.Message, tc.contains)
			}
		})
	}
}

func fleetRecord(d *v1alpha1.DelegatedApproval, cfg *v1alpha1.VirtPlatformConfig, planHash string, now metav1.Time) v1alpha1.ApprovalRecord {
	return Record(d, cfg, planHash, now)
}

func TestRecordNamesTheHubUser(t *testing.T) {
	d := &v1alpha1.DelegatedApproval{Fleet: "virt-fleet/la", FleetHash: hash('f'), ApprovedBy: "alice"}
	cfg := &v1alpha1.VirtPlatformConfig{ObjectMeta: metav1.ObjectMeta{UID: "u1", Generation: 4}}
	rec := Record(d, cfg, hash('a'), metav1.Now())
	if rec.ApprovedBy != "alice (on the hub, fleet virt-fleet/la)" || rec.Generation != 4 || rec.UID != "u1" || rec.Delegated.FleetHash != hash('f') {
		t.Errorf("record = %+v", rec)
	}
}

func TestSpecHashLeavesTheDelegatedApprovalOut(t *testing.T) {
	spec := v1alpha1.VirtPlatformConfigSpec{Profile: "load-aware-rebalancing", Action: v1alpha1.PlanActionDryRun}
	before, err := SpecHash(spec)
	if err != nil {
		t.Fatal(err)
	}
	spec.DelegatedApproval = &v1alpha1.DelegatedApproval{Fleet: "a/b"}
	if after, _ := SpecHash(spec); after != before {
		t.Errorf("a delegated approval changed the spec hash")
	}
	spec.Action = v1alpha1.PlanActionApply
	if after, _ := SpecHash(spec); after == before {
		t.Errorf("another action did not change the spec hash")
	}
}
