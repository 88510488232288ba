package virtplatformconfig

import (
	"context"

	"github.com/kubevirt/virt-advisor/pkg/apis/advisor/v1alpha1"
	"github.com/kubevirt/virt-advisor/pkg/plan"
)

// Planner is what the plan and approve subresources use of the plan engine
// (*plan.Engine): the plan a user reviews and the plan an approval is
// checked against are computed by the code the controller applies with.
type Planner interface {
	// ComputeShared computes the live plan of a config for a review:
	// concurrent requests for the same revision share one computation, so
	// the result must not be modified.
	ComputeShared(ctx context.Context, cfg *v1alpha1.VirtPlatformConfig) (*plan.Result, error)
	// ComputeBounded computes the live plan of a config for an approval:
	// a computation of its own, never shared.
	ComputeBounded(ctx context.Context, cfg *v1alpha1.VirtPlatformConfig) (*plan.Result, error)
}

var _ Planner = &plan.Engine{}
