package dashboard

import (
	"context"
	"errors"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clienttesting "k8s.io/client-go/testing"

	"github.com/kubevirt/virt-advisor/pkg/apis/advisor/v1alpha1"
)

func TestConfigsPageShowsPolicies(t *testing.T) {
	cfg := exampleConfig()
	cfg.Status.Approval = &v1alpha1.ApprovalRecord{PlanHash: hashA, ApprovedBy: "policy/quiet-tuning (set by alice)", ApprovedAt: metav1.Now(), Generation: 2}
	tests := []struct {
		name     string
		policy   *v1alpha1.ApprovalPolicy
		listErr  error
		contains []string
	}{
		{"a policy", &v1alpha1.ApprovalPolicy{
			ObjectMeta: metav1.ObjectMeta{Name: "quiet-tuning"},
			Spec: v1alpha1.ApprovalPolicySpec{Configs: v1alpha1.PolicyConfigs{Names: []string{"example-profile"}},
				Bounds: v1alpha1.PolicyBounds{MaxImpact: v1alpha1.ImpactLow, Reboots: v1alpha1.RebootBoundNone, VMFates: []v1alpha1.VMFate{v1alpha1.VMFateLiveMigrate}}},
			Status: v1alpha1.ApprovalPolicyStatus{Author: "alice", LastApproved: &v1alpha1.PolicyDecision{Config: "example-profile", PlanHash: hashA}},
		}, nil, []string{"approved by policy <strong>quiet-tuning</strong>", "policy/quiet-tuning (set by alice)",
			`data-policy="quiet-tuning"`, "Low reboots=None vms=LiveMigrate", "any time", "<td>alice</td>"}},
		{"none", nil, nil, []string{"No approval policies: every plan waits for a person."}},
		{"not readable", nil, apierrors.NewForbidden(v1alpha1.Resource("approvalpolicies"), "", errors.New("no")), []string{"approvalpolicies"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, "bob", cfg)
			if tt.policy != nil {
				if _, err := h.advisor.AdvisorV1alpha1().ApprovalPolicies().Create(context.Background(), tt.policy, metav1.CreateOptions{}); err != nil {
					t.Fatal(err)
				}
			}
			if tt.listErr != nil {
				h.advisor.PrependReactor("list", "approvalpolicies", func(clienttesting.Action) (bool, runtime.Object, error) { return true, nil, tt.listErr })
			}
			w := h.do(t, request{method: "GET", path: "/"})
			if w.Code != 200 {
				t.Fatalf("code %d: %s", w.Code, w.Body)
			}
			mustContain(t, w.Body.String(), tt.contains...)
		})
	}
}
