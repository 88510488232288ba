package validation_test

import (
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/kubevirt/virt-advisor/pkg/apis/advisor"
	"github.com/kubevirt/virt-advisor/pkg/apis/advisor/validation"
)

func TestDelegatedApproval(t *testing.T) {
	valid := func() *advisor.DelegatedApproval {
		return &advisor.DelegatedApproval{Fleet: "virt-fleet/la", FleetHash: strings.Repeat("f", 64), ApprovedBy: "alice", ApprovedAt: metav1.Now(),
			Clusters: []advisor.ClusterPlanHash{{Name: "spoke-a", PlanHash: strings.Repeat("a", 64)}}}
	}
	for _, tc := range []struct {
		name, field, message string
		mutate               func(*advisor.DelegatedApproval)
	}{
		{name: "valid", mutate: func(*advisor.DelegatedApproval) {}},
		{name: "fleet without a namespace", field: "spec.delegatedApproval.fleet", message: "namespace/name", mutate: func(d *advisor.DelegatedApproval) { d.Fleet = "la" }},
		{name: "short fleet hash", field: "spec.delegatedApproval.fleetHash", message: "64 lowercase hex", mutate: func(d *advisor.DelegatedApproval) { d.FleetHash = "abc" }},
		{name: "no approver", field: "spec.delegatedApproval.approvedBy", message: "hub user", mutate: func(d *advisor.DelegatedApproval) { d.ApprovedBy = "" }},
		{name: "no clusters", field: "spec.delegatedApproval.clusters", message: "every cluster", mutate: func(d *advisor.DelegatedApproval) { d.Clusters = nil }},
		{name: "a cluster twice", field: "spec.delegatedApproval.clusters[1].name", message: "Duplicate", mutate: func(d *advisor.DelegatedApproval) {
			d.Clusters = append(d.Clusters, d.Clusters[0])
		}},
		{name: "a bad plan hash", field: "spec.delegatedApproval.clusters[0].planHash", message: "64 lowercase hex", mutate: func(d *advisor.DelegatedApproval) { d.Clusters[0].PlanHash = "X" }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := &advisor.VirtPlatformConfig{ObjectMeta: metav1.ObjectMeta{Name: ex}, Spec: advisor.VirtPlatformConfigSpec{Profile: ex, DelegatedApproval: valid()}}
			tc.mutate(c.Spec.DelegatedApproval)
			expectError(t, validation.ValidateVirtPlatformConfig(c, served), tc.field, tc.message)
		})
	}
}

func TestFleetConfig(t *testing.T) {
	valid := func() *advisor.FleetConfig {
		return &advisor.FleetConfig{ObjectMeta: metav1.ObjectMeta{Name: "la", Namespace: "virt-fleet"}, Spec: advisor.FleetConfigSpec{
			Profile: lar, PlacementRef: advisor.FleetPlacementRef{Name: "virt-clusters"},
			RolloutStrategy: advisor.RolloutStrategy{Type: advisor.RolloutTypeProgressivePerGroup, ProgressivePerGroup: &advisor.RolloutProgressivePerGroup{
				RolloutConfig:           advisor.RolloutConfig{MinSuccessTime: metav1.Duration{Duration: time.Minute}, ProgressDeadline: "4h", MaxFailures: intstr.FromInt32(0)},
				MandatoryDecisionGroups: advisor.MandatoryDecisionGroups{MandatoryDecisionGroups: []advisor.MandatoryDecisionGroup{{GroupName: "canary"}}},
			}}}}
	}
	for _, tc := range []struct {
		name, field, message string
		mutate               func(*advisor.FleetConfig)
	}{
		{name: "valid", mutate: func(*advisor.FleetConfig) {}},
		{name: "default strategy", mutate: func(c *advisor.FleetConfig) { c.Spec.RolloutStrategy = advisor.RolloutStrategy{} }},
		{name: "unknown profile", field: "spec.profile", message: "Unsupported", mutate: func(c *advisor.FleetConfig) { c.Spec.Profile = "turbo" }},
		{name: "options of another profile", field: "spec.options", message: "", mutate: func(c *advisor.FleetConfig) {
			c.Spec.Profile = ex
			c.Spec.Options = &advisor.ProfileOptions{LoadAware: &advisor.LoadAwareConfig{}}
		}},
		{name: "no placement", field: "spec.placementRef.name", message: "Placement", mutate: func(c *advisor.FleetConfig) { c.Spec.PlacementRef.Name = "" }},
		{name: "unknown type", field: "spec.rolloutStrategy.type", message: "Unsupported", mutate: func(c *advisor.FleetConfig) { c.Spec.RolloutStrategy.Type = "Fast" }},
		{name: "a block of another type", field: "spec.rolloutStrategy.progressivePerGroup", message: "set only the all block", mutate: func(c *advisor.FleetConfig) {
			c.Spec.RolloutStrategy.Type = advisor.RolloutTypeAll
		}},
		{name: "bad deadline", field: "spec.rolloutStrategy.progressivePerGroup.progressDeadline", message: `"4h"`, mutate: func(c *advisor.FleetConfig) {
			c.Spec.RolloutStrategy.ProgressivePerGroup.ProgressDeadline = "four hours"
		}},
		{name: "bad maxFailures", field: "spec.rolloutStrategy.progressivePerGroup.maxFailures", message: "percentage", mutate: func(c *advisor.FleetConfig) {
			c.Spec.RolloutStrategy.ProgressivePerGroup.MaxFailures = intstr.FromString("many")
		}},
		{name: "no namespace", field: "metadata.namespace", message: "Required", mutate: func(c *advisor.FleetConfig) { c.Namespace = "" }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := valid()
			tc.mutate(c)
			expectError(t, validation.ValidateFleetConfig(c, served), tc.field, tc.message)
		})
	}
}
