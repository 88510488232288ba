package controller

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubevirt/virt-advisor/pkg/apis/advisor/v1alpha1"
	"github.com/kubevirt/virt-advisor/pkg/approval"
	"github.com/kubevirt/virt-advisor/pkg/fleet"
	"github.com/kubevirt/virt-advisor/pkg/status"
)

// delegatedFor is a fleet approval of planHash for spoke-a.
func delegatedFor(planHash string, at metav1.Time) *v1alpha1.DelegatedApproval {
	return &v1alpha1.DelegatedApproval{Fleet: "virt-fleet/la", FleetHash: strings.Repeat("f", 64), ApprovedBy: "alice", ApprovedAt: at,
		Clusters: []v1alpha1.ClusterPlanHash{{Name: "spoke-a", PlanHash: planHash}, {Name: "spoke-b", PlanHash: strings.Repeat("b", 64)}}}
}

// A fleet's approval approves the cluster's live plan only when it names
// that plan's hash for this cluster, and only once; the config says why
// otherwise, and the status always summarizes the live plan for the hub.
func TestDelegatedApproval(t *testing.T) {
	tests := []struct {
		name       string
		cluster    string
		approved   func(live string) string // the plan hash the fleet approved for spoke-a
		aborted    bool
		phase      v1alpha1.ConfigPhase
		reason     string
		approvedBy string
	}{
		{name: "(review) --the fleet approved this plan--> InProgress", cluster: "spoke-a", approved: func(live string) string { return live },
			phase: v1alpha1.PhaseInProgress, reason: "Approved", approvedBy: "alice (on the hub, fleet virt-fleet/la)"},
		{name: "(review) --the plan changed since the fleet's review--> ReviewRequired, nothing written", cluster: "spoke-a",
			approved: func(string) string { return strings.Repeat("0", 64) }, phase: v1alpha1.PhaseReviewRequired, reason: fleet.ReasonMismatch},
		{name: "(review) --another cluster's name--> ReviewRequired", cluster: "spoke-z", approved: func(live string) string { return live },
			phase: v1alpha1.PhaseReviewRequired, reason: fleet.ReasonMismatch},
		{name: "(review) --no --cluster-name--> ReviewRequired", approved: func(live string) string { return live },
			phase: v1alpha1.PhaseReviewRequired, reason: fleet.ReasonNoCluster},
		{name: "(review) --the fleet was aborted before it started--> ReviewRequired", cluster: "spoke-a", approved: func(live string) string { return live },
			aborted: true, phase: v1alpha1.PhaseReviewRequired, reason: fleet.ReasonFleetAborted},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, "v1", false)
			h.c.approvals.clusterName = tt.cluster
			h.create(dryRun, "system:serviceaccount:open-cluster-management-agent:klusterlet-agent-sa")
			h.planner.result = deschedulerPlan()
			h.mustReconcile(v1alpha1.PhaseReviewRequired)
			live := h.planner.result.Status.PlanHash
			if p := h.get().Status.Plan; p == nil || p.PlanHash != live || p.SpecHash == "" || len(p.Items) != 1 {
				t.Fatalf("status.plan = %+v, want the live plan %s summarized", p, live)
			}
			// The work agent sets it: no spec change, the generation stays.
			h.edit(false, "", func(cfg *v1alpha1.VirtPlatformConfig) {
				cfg.Spec.DelegatedApproval = delegatedFor(tt.approved(live), metav1.NewTime(h.clock.Now()))
				if tt.aborted {
					cfg.Spec.DelegatedApproval.AbortedBy = "bob"
				}
			})
			h.reconcile()
			if h.err != nil {
				t.Fatalf("reconcile: %v", h.err)
			}
			cfg := h.get()
			if cfg.Status.Phase != tt.phase {
				t.Fatalf("phase %s, want %s (%s)", cfg.Status.Phase, tt.phase, status.PhaseMessage(&cfg.Status))
			}
			if cfg.Status.DelegatedFleetHash != strings.Repeat("f", 64) {
				t.Errorf("status.delegatedFleetHash %q: the status does not say which approval it answers", cfg.Status.DelegatedFleetHash)
			}
			if c := findCondition(cfg, tt.phase); c.Reason != tt.reason {
				t.Errorf("reason %s, want %s (%s)", c.Reason, tt.reason, c.Message)
			}
			var by string
			if a := cfg.Status.Approval; a != nil {
				by = a.ApprovedBy
				if err := approval.Check(cfg); err != nil {
					t.Errorf("the fleet's approval fails the check before every write: %v", err)
				}
			}
			if by != tt.approvedBy {
				t.Errorf("approvedBy %q, want %q", by, tt.approvedBy)
			}
		})
	}
}

// An approval the fleet made holds only while spec.delegatedApproval
// still carries it: the hub withdrawing or aborting it stops the writes.
func TestDelegatedApprovalIsCheckedBeforeEveryWrite(t *testing.T) {
	for _, tt := range []struct {
		name   string
		change func(*v1alpha1.DelegatedApproval) *v1alpha1.DelegatedApproval
		want   string
	}{
		{name: "withdrawn", change: func(*v1alpha1.DelegatedApproval) *v1alpha1.DelegatedApproval { return nil }, want: "no longer holds"},
		{name: "replaced", change: func(d *v1alpha1.DelegatedApproval) *v1alpha1.DelegatedApproval {
			d.FleetHash = strings.Repeat("e", 64)
			return d
		}, want: "no longer holds"},
		{name: "aborted", change: func(d *v1alpha1.DelegatedApproval) *v1alpha1.DelegatedApproval { d.AbortedBy = "bob"; return d }, want: "aborted by bob"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, "v1", false)
			h.c.approvals.clusterName = "spoke-a"
			h.create(dryRun, "agent")
			h.planner.result = deschedulerPlan()
			h.mustReconcile(v1alpha1.PhaseReviewRequired)
			h.edit(false, "", func(cfg *v1alpha1.VirtPlatformConfig) {
				cfg.Spec.DelegatedApproval = delegatedFor(h.planner.result.Status.PlanHash, metav1.NewTime(h.clock.Now()))
			})
			h.reconcile()
			cfg := h.get()
			cfg.Spec.DelegatedApproval = tt.change(cfg.Spec.DelegatedApproval)
			if err := approval.Check(cfg); err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("check = %v, want …%s…", err, tt.want)
			}
		})
	}
}

// The hub aborting the fleet's rollout aborts a plan the fleet's
// approval approved here, as POST .../abort does.
func TestFleetAbortAbortsTheApprovedPlan(t *testing.T) {
	h := newHarness(t, "v1", false)
	h.c.approvals.clusterName = "spoke-a"
	h.create(dryRun, "agent")
	h.planner.result = deschedulerPlan()
	h.mustReconcile(v1alpha1.PhaseReviewRequired)
	h.edit(false, "", func(cfg *v1alpha1.VirtPlatformConfig) {
		cfg.Spec.DelegatedApproval = delegatedFor(h.planner.result.Status.PlanHash, metav1.NewTime(h.clock.Now()))
	})
	h.reconcile()
	if got := h.get().Status.Phase; got != v1alpha1.PhaseInProgress {
		t.Fatalf("phase %s, want InProgress", got)
	}
	h.edit(false, "", func(cfg *v1alpha1.VirtPlatformConfig) { cfg.Spec.DelegatedApproval.AbortedBy = "bob" })
	h.reconcile()
	cfg := h.get()
	if cfg.Status.Phase != v1alpha1.PhaseAborted || cfg.Status.Abort == nil || cfg.Status.Abort.AbortedBy != "bob (on the hub, fleet virt-fleet/la)" {
		t.Fatalf("phase %s, abort %+v: want Aborted by the hub user", cfg.Status.Phase, cfg.Status.Abort)
	}
	// And the approval never approves again.
	h.reconcile()
	if got := h.get().Status.Phase; got == v1alpha1.PhaseInProgress {
		t.Errorf("the aborted fleet approval approved again")
	}
}
