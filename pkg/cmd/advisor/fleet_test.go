package advisor

import (
	"bytes"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubevirt/virt-advisor/pkg/apis/advisor/v1alpha1"
)

func TestPrintFleetPlan(t *testing.T) {
	h := func(c byte) string { return strings.Repeat(string(c), 64) }
	plan := func(mutate func(*v1alpha1.FleetPlanStatus)) *v1alpha1.FleetPlan {
		p := &v1alpha1.FleetPlan{ObjectMeta: metav1.ObjectMeta{Name: "la", Namespace: "virt-fleet"}, Status: v1alpha1.FleetPlanStatus{
			Profile: "load-aware-rebalancing", Generation: 2, FleetHash: h('f'),
			RolloutStrategy: v1alpha1.RolloutStrategy{Type: v1alpha1.RolloutTypeProgressivePerGroup},
			Clusters: []v1alpha1.FleetPlanCluster{
				{Name: "spoke-a", Group: "canary", Phase: "ReviewRequired", Plan: &v1alpha1.PlanSummary{PlanHash: h('a'), NodeReboots: 3, LiveMigrations: 7,
					Items: []v1alpha1.PlanSummaryItem{{Name: "psi", Target: "MachineConfig/99-psi", Operation: v1alpha1.OperationCreate}}, Capacity: "pool worker: fits"}},
				{Name: "spoke-b", GroupIndex: 1, Phase: "ReviewRequired", Plan: &v1alpha1.PlanSummary{PlanHash: h('b')}, ApprovedPlanHash: h('c')},
			}}}
		if mutate != nil {
			mutate(&p.Status)
		}
		return p
	}
	for _, tc := range []struct {
		name string
		plan *v1alpha1.FleetPlan
		want []string
		not  []string
	}{
		{name: "by wave, with the fleet hash", plan: plan(nil), want: []string{
			"FleetConfig virt-fleet/la, profile load-aware-rebalancing, generation 2, rollout ProgressivePerGroup",
			"0 (canary)  spoke-a", "Create MachineConfig/99-psi", "pool worker: fits",
			"1           spoke-b", "bbbbbbbbbbbb (approved cccccccccccc: MISMATCH)",
			"Fleet hash: " + h('f')}},
		{name: "pending: no hash to approve", plan: plan(func(s *v1alpha1.FleetPlanStatus) {
			s.FleetHash, s.Pending = "", []string{"spoke-b: no plan reported yet"}
			s.Clusters[1].Plan = nil
		}), want: []string{"Not approvable yet: spoke-b: no plan reported yet"}, not: []string{"Fleet hash"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out bytes.Buffer
			printFleetPlan(&out, tc.plan)
			for _, w := range tc.want {
				if !strings.Contains(out.String(), w) {
					t.Errorf("output does not contain %q:\n%s", w, out.String())
				}
			}
			for _, n := range tc.not {
				if strings.Contains(out.String(), n) {
					t.Errorf("output contains %q:\n%s", n, out.String())
				}
			}
		})
	}
}
