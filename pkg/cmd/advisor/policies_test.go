package advisor

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubevirt/virt-advisor/pkg/apis/advisor/v1alpha1"
	policies "github.com/kubevirt/virt-advisor/pkg/approvalpolicy"
)

func TestPolicyLine(t *testing.T) {
	cfg := &v1alpha1.VirtPlatformConfig{ObjectMeta: metav1.ObjectMeta{Name: "load-aware-rebalancing"}, Status: v1alpha1.VirtPlatformConfigStatus{SpecChangedBy: "bob"}}
	quiet := &v1alpha1.ApprovalPolicy{ObjectMeta: metav1.ObjectMeta{Name: "quiet-tuning"},
		Spec:   v1alpha1.ApprovalPolicySpec{Configs: v1alpha1.PolicyConfigs{Names: []string{"load-aware-rebalancing"}}, Bounds: v1alpha1.PolicyBounds{MaxImpact: v1alpha1.ImpactLow}},
		Status: v1alpha1.ApprovalPolicyStatus{Author: "alice"}}
	byBob := quiet.DeepCopy()
	byBob.Status.Author = "bob"
	low := &v1alpha1.PlanStatus{ImpactSeverity: v1alpha1.ImpactLow, Items: []v1alpha1.PlanItem{{Name: "descheduler-profile", Operation: v1alpha1.OperationUpdate}}}
	psi := &v1alpha1.PlanStatus{ImpactSeverity: v1alpha1.ImpactHigh, Items: []v1alpha1.PlanItem{{Name: "enable-psi-metrics", Operation: v1alpha1.OperationCreate,
		Reboots: []v1alpha1.PoolReboot{{Pool: "worker", Disruption: v1alpha1.NodeDisruptionReboot, Drains: true}}}}}
	tests := []struct {
		name     string
		policies []*v1alpha1.ApprovalPolicy
		plan     *v1alpha1.PlanStatus
		want     string
	}{
		{"none covers it", nil, low, "approval policies: none covers load-aware-rebalancing; a person approves this plan"},
		{"approved", []*v1alpha1.ApprovalPolicy{quiet}, low,
			"approval policies: policy 'quiet-tuning' (set by alice) would approve this plan, as policy/quiet-tuning (set by alice)"},
		{"approved, but not under four eyes", []*v1alpha1.ApprovalPolicy{byBob}, low,
			"approval policies: policy 'quiet-tuning' (set by bob) would approve this plan, as policy/quiet-tuning (set by bob); not on a server that requires a second person (--require-distinct-approver): bob made the last spec change"},
		{"beyond the bounds", []*v1alpha1.ApprovalPolicy{quiet}, psi,
			"approval policies: none would approve this plan: impact High; policy 'quiet-tuning' allows at most Low; reboots pool worker; policy 'quiet-tuning' allows no reboot; a person approves it"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := policyLine(cfg, tt.policies, tt.plan, policies.Facts{}); got != tt.want {
				t.Errorf("got  %q\nwant %q", got, tt.want)
			}
		})
	}
}
