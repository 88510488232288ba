package virtplatformconfig

import (
	"context"

	"github.com/kubevirt/virt-advisor/pkg/apis/advisor/v1alpha1"
	"github.com/kubevirt/virt-advisor/pkg/plan"
)

// Planner is what the plan and approve subresources use of the plan engine
// (*plan.Engine): the plan a user reviews and the plan an approval is
// checked against are computed by the code the controller applies with.
// The Gate bounds and shares the computations.
type Planner interface {
	// ComputeLive computes the live plan of a config, its inputs read
	// from the cluster as the request is served.
	ComputeLive(ctx context.Context, cfg *v1alpha1.VirtPlatformConfig) (*plan.Result, error)
	// ComputeRevertLive computes the plan that restores what the
	// config's writes replaced (status.replaced), by the same engine.
	ComputeRevertLive(ctx context.Context, cfg *v1alpha1.VirtPlatformConfig) (*plan.Result, error)
}

var _ Planner = &plan.Engine{}
