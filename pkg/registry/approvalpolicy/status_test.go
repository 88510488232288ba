package approvalpolicy

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/kubevirt/virt-advisor/pkg/apis/advisor"
	"github.com/kubevirt/virt-advisor/pkg/apis/advisor/install"
	"github.com/kubevirt/virt-advisor/pkg/apis/advisor/v1alpha1"
)

func TestComputeStatus(t *testing.T) {
	scheme := runtime.NewScheme()
	install.Install(scheme)
	at := func(m int) metav1.Time { return metav1.NewTime(time.Date(2026, 11, 27, 10, m, 0, 0, time.UTC)) }
	approved := func(name, by, hash string, m int) v1alpha1.VirtPlatformConfig {
		return v1alpha1.VirtPlatformConfig{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"tier": "quiet"}},
			Status: v1alpha1.VirtPlatformConfigStatus{Phase: v1alpha1.PhaseCompleted, Approval: &v1alpha1.ApprovalRecord{ApprovedBy: by, PlanHash: hash, ApprovedAt: at(m)}}}
	}
	refused := func(name, reason, message string, m int) v1alpha1.VirtPlatformConfig {
		return v1alpha1.VirtPlatformConfig{ObjectMeta: metav1.ObjectMeta{Name: name},
			Status: v1alpha1.VirtPlatformConfigStatus{Phase: v1alpha1.PhaseReviewRequired, Conditions: []metav1.Condition{
				{Type: "ReviewRequired", Status: metav1.ConditionTrue, Reason: reason, Message: message, LastTransitionTime: at(m)}}}}
	}
	byNames := advisor.ApprovalPolicySpec{Configs: advisor.PolicyConfigs{Names: []string{"a", "b"}}}
	bySelector := advisor.ApprovalPolicySpec{Configs: advisor.PolicyConfigs{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"tier": "quiet"}}}}
	tests := []struct {
		name         string
		spec         advisor.ApprovalPolicySpec
		configs      []v1alpha1.VirtPlatformConfig
		covers       []string
		lastApproved string // config/hash
		lastRefused  string // config
	}{
		{"nothing yet", byNames, nil, nil, "", ""},
		{"the latest approval by this policy", byNames, []v1alpha1.VirtPlatformConfig{
			approved("a", "policy/quiet (set by alice)", "h1", 1),
			approved("b", "policy/quiet (set by alice)", "h2", 5),
			approved("c", "policy/quiet (set by alice)", "h3", 3), // approved before the policy stopped covering it
			approved("d", "policy/other (set by alice)", "h4", 9),
			approved("e", "alice", "h5", 9),
		}, []string{"a", "b"}, "b/h2", ""},
		{"a selector covers by label", bySelector, []v1alpha1.VirtPlatformConfig{approved("a", "bob", "h1", 1), refused("b", "PolicyBoundExceeded", "policy 'quiet' …", 2)}, []string{"a"}, "", "b"},
		{"refusals naming this policy only", byNames, []v1alpha1.VirtPlatformConfig{
			refused("a", "PolicyBoundExceeded", "reboots pool worker; policy 'quiet' allows no reboot", 1),
			refused("b", "PolicyBoundExceeded", "reboots pool worker; policy 'quieter' allows no reboot", 4),
			refused("c", "ReviewRequired", "policy 'quiet'", 5),
		}, []string{"a", "b"}, "", "a"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := &advisor.ApprovalPolicy{ObjectMeta: metav1.ObjectMeta{Name: "quiet"}, Spec: tt.spec, Status: advisor.ApprovalPolicyStatus{Author: "alice", Configs: []string{"stale"}}}
			computeStatus(scheme, p, tt.configs)
			if p.Status.Author != "alice" {
				t.Errorf("author %q: the stored author is kept", p.Status.Author)
			}
			if got, want := p.Status.Configs, tt.covers; len(got) != len(want) || (len(got) > 0 && got[0] != want[0]) {
				t.Errorf("configs %v, want %v", got, want)
			}
			var gotApproved, gotRefused string
			if a := p.Status.LastApproved; a != nil {
				gotApproved = a.Config + "/" + a.PlanHash
			}
			if r := p.Status.LastRefused; r != nil {
				gotRefused = r.Config
			}
			if gotApproved != tt.lastApproved || gotRefused != tt.lastRefused {
				t.Errorf("last approved %q, refused %q; want %q, %q", gotApproved, gotRefused, tt.lastApproved, tt.lastRefused)
			}
		})
	}
}
