package validation_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/kubevirt/virt-advisor/pkg/apis/advisor"
	"github.com/kubevirt/virt-advisor/pkg/apis/advisor/v1alpha1"
	"github.com/kubevirt/virt-advisor/pkg/apis/advisor/validation"
)

// approvalPolicy defaults and converts a v1alpha1 policy as the API
// server does before validation.
func approvalPolicy(t *testing.T, mutate func(*v1alpha1.ApprovalPolicySpec)) *advisor.ApprovalPolicy {
	t.Helper()
	in := &v1alpha1.ApprovalPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "quiet-tuning"},
		Spec:       v1alpha1.ApprovalPolicySpec{Configs: v1alpha1.PolicyConfigs{Names: []string{"load-aware-rebalancing"}}},
	}
	if mutate != nil {
		mutate(&in.Spec)
	}
	scheme.Default(in)
	out := &advisor.ApprovalPolicy{}
	if err := scheme.Convert(in, out, nil); err != nil {
		t.Fatal(err)
	}
	return out
}

func TestValidateApprovalPolicy(t *testing.T) {
	tests := []struct {
		name    string
		mutate  func(*v1alpha1.ApprovalPolicySpec)
		field   string // "" = valid
		message string
	}{
		{"names, defaults: Low, no reboot, live migration only", nil, "", ""},
		{"a selector", func(s *v1alpha1.ApprovalPolicySpec) {
			s.Configs = v1alpha1.PolicyConfigs{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"tier": "quiet"}}}
		}, "", ""},
		{"every bound set", func(s *v1alpha1.ApprovalPolicySpec) {
			s.Bounds = v1alpha1.PolicyBounds{MaxImpact: v1alpha1.ImpactHigh, Reboots: v1alpha1.RebootBoundInWindow,
				VMFates: []v1alpha1.VMFate{v1alpha1.VMFateLiveMigrate, v1alpha1.VMFateShutDown}, Items: []v1alpha1.PolicyItem{{Kind: "KubeDescheduler"}, {Name: "enable-psi-metrics"}}}
			s.TrustedWindows = &v1alpha1.PolicyWindows{Names: []string{"nightly"}, Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"team": "platform"}}}
			s.Windows = []string{"nightly"}
		}, "", ""},
		{"least gates at their bounds", func(s *v1alpha1.ApprovalPolicySpec) {
			s.Bounds.Gates = &v1alpha1.PolicyGates{MaxNodeReadyTimeout: "30s", MinSoak: "24h", MaxFailedMigrations: ptrInt32(1000), RequireAlerts: true}
		}, "", ""},
		{"least gates: a node timeout under 30s", func(s *v1alpha1.ApprovalPolicySpec) {
			s.Bounds.Gates = &v1alpha1.PolicyGates{MaxNodeReadyTimeout: "29s"}
		}, "spec.bounds.gates.maxNodeReadyTimeout", "must be between 30s and 24h0m0s"},
		{"least gates: a soak that is no duration", func(s *v1alpha1.ApprovalPolicySpec) {
			s.Bounds.Gates = &v1alpha1.PolicyGates{MinSoak: "a while"}
		}, "spec.bounds.gates.minSoak", "must be a Go duration"},
		{"least gates: failed migrations over the cap", func(s *v1alpha1.ApprovalPolicySpec) {
			s.Bounds.Gates = &v1alpha1.PolicyGates{MaxFailedMigrations: ptrInt32(1001)}
		}, "spec.bounds.gates.maxFailedMigrations", "must be between 0 and 1000"},
		{"reboots InWindow trusting no window", func(s *v1alpha1.ApprovalPolicySpec) {
			s.Bounds.Reboots = v1alpha1.RebootBoundInWindow
		}, "spec.trustedWindows", "Required value: with bounds.reboots InWindow, name the MaintenanceWindows the policy trusts"},
		{"reboots InWindow trusting an empty list", func(s *v1alpha1.ApprovalPolicySpec) {
			s.Bounds.Reboots, s.TrustedWindows = v1alpha1.RebootBoundInWindow, &v1alpha1.PolicyWindows{}
		}, "spec.trustedWindows", "Required value"},
		{"reboots InWindow trusting windows by label", func(s *v1alpha1.ApprovalPolicySpec) {
			s.Bounds.Reboots = v1alpha1.RebootBoundInWindow
			s.TrustedWindows = &v1alpha1.PolicyWindows{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"team": "platform"}}}
		}, "", ""},
		{"bad trusted window name", func(s *v1alpha1.ApprovalPolicySpec) {
			s.TrustedWindows = &v1alpha1.PolicyWindows{Names: []string{"ok", "Night!"}}
		}, "spec.trustedWindows.names[1]", "not the name of a MaintenanceWindow"},
		{"duplicate trusted window", func(s *v1alpha1.ApprovalPolicySpec) {
			s.TrustedWindows = &v1alpha1.PolicyWindows{Names: []string{"a", "a"}}
		}, "spec.trustedWindows.names[1]", "Duplicate value"},
		{"too many trusted windows", func(s *v1alpha1.ApprovalPolicySpec) {
			s.TrustedWindows = &v1alpha1.PolicyWindows{}
			for i := range validation.MaxPolicyNames + 1 {
				s.TrustedWindows.Names = append(s.TrustedWindows.Names, fmt.Sprintf("window-%d", i))
			}
		}, "spec.trustedWindows.names", "must have at most 16 names"},
		{"bad trusted window selector", func(s *v1alpha1.ApprovalPolicySpec) {
			s.TrustedWindows = &v1alpha1.PolicyWindows{Selector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "team", Operator: "Sometimes"}}}}
		}, "spec.trustedWindows.selector.matchExpressions[0].operator", "not a valid selector operator"},
		{"no config", func(s *v1alpha1.ApprovalPolicySpec) { s.Configs.Names = nil }, "spec.configs.names", "Required value: name the VirtPlatformConfigs"},
		{"bad config name", func(s *v1alpha1.ApprovalPolicySpec) { s.Configs.Names = []string{"Load_Aware"} }, "spec.configs.names[0]", "not the name of a VirtPlatformConfig"},
		{"too many config names", func(s *v1alpha1.ApprovalPolicySpec) {
			s.Configs.Names = nil
			for i := range validation.MaxPolicyNames + 1 {
				s.Configs.Names = append(s.Configs.Names, fmt.Sprintf("config-%d", i))
			}
		}, "spec.configs.names", "must have at most 16 names (each costs a review of the approve permission when the policy is set); cover more configs with spec.configs.selector"},
		{"as many config names as allowed", func(s *v1alpha1.ApprovalPolicySpec) {
			s.Configs.Names = nil
			for i := range validation.MaxPolicyNames {
				s.Configs.Names = append(s.Configs.Names, fmt.Sprintf("config-%d", i))
			}
		}, "", ""},
		{"duplicate config name", func(s *v1alpha1.ApprovalPolicySpec) { s.Configs.Names = []string{"a", "a"} }, "spec.configs.names[1]", "Duplicate value"},
		{"bad selector", func(s *v1alpha1.ApprovalPolicySpec) {
			s.Configs.Selector = &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "tier", Operator: "Sometimes"}}}
		}, "spec.configs.selector.matchExpressions[0].operator", "not a valid selector operator"},
		{"impact None", func(s *v1alpha1.ApprovalPolicySpec) { s.Bounds.MaxImpact = v1alpha1.ImpactNone }, "spec.bounds.maxImpact", `supported values: "Low", "Medium", "High"`},
		{"reboots Always", func(s *v1alpha1.ApprovalPolicySpec) { s.Bounds.Reboots = "Always" }, "spec.bounds.reboots", `supported values: "None", "InWindow"`},
		{"an unknown fate", func(s *v1alpha1.ApprovalPolicySpec) { s.Bounds.VMFates = []v1alpha1.VMFate{"Paused"} }, "spec.bounds.vmFates[0]", `supported values: "LiveMigrate"`},
		{"a fate twice", func(s *v1alpha1.ApprovalPolicySpec) {
			s.Bounds.VMFates = []v1alpha1.VMFate{v1alpha1.VMFateShutDown, v1alpha1.VMFateShutDown}
		}, "spec.bounds.vmFates[1]", "Duplicate value"},
		{"an empty item", func(s *v1alpha1.ApprovalPolicySpec) { s.Bounds.Items = []v1alpha1.PolicyItem{{}} }, "spec.bounds.items[0]", "set kind"},
		{"bad window name", func(s *v1alpha1.ApprovalPolicySpec) { s.Windows = []string{"Nightly!"} }, "spec.windows[0]", "not the name of a MaintenanceWindow"},
		{"description too long", func(s *v1alpha1.ApprovalPolicySpec) { s.Description = strings.Repeat("x", 1025) }, "spec.description", "Too long"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			errs := validation.ValidateApprovalPolicy(approvalPolicy(t, tt.mutate))
			if tt.field == "" {
				if len(errs) > 0 {
					t.Fatalf("want valid, got %v", errs)
				}
				return
			}
			for _, e := range errs {
				if e.Field == tt.field && strings.Contains(e.Error(), tt.message) {
					return
				}
			}
			t.Fatalf("want an error on %s containing %q, got %v", tt.field, tt.message, errs)
		})
	}
}

// TestSamplePolicyIsValid keeps the sample the docs point to valid.
func TestSamplePolicyIsValid(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("..", "..", "..", "..", "artifacts", "samples", "approvalpolicy-quiet-tuning.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	in := &v1alpha1.ApprovalPolicy{}
	if err := yaml.UnmarshalStrict(data, in); err != nil {
		t.Fatal(err)
	}
	scheme.Default(in)
	out := &advisor.ApprovalPolicy{}
	if err := scheme.Convert(in, out, nil); err != nil {
		t.Fatal(err)
	}
	if errs := validation.ValidateApprovalPolicy(out); len(errs) > 0 {
		t.Fatal(errs)
	}
}

func ptrInt32(n int32) *int32 { return &n }
