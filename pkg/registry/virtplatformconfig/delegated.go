package virtplatformconfig

import (
	"context"

	apiequality "k8s.io/apimachinery/pkg/api/equality"

	"github.com/kubevirt/virt-advisor/pkg/apis/advisor"
	"github.com/kubevirt/virt-advisor/pkg/registry/permission"
)

// delegatePermission is what setting spec.delegatedApproval takes: the
// shipped role grants it to Open Cluster Management's work agent only,
// which writes what the fleet's hub approved (docs/fleet.md).
var delegatePermission = configPermission("create", "delegatedapproval")

// requireDelegator refuses a write that sets or changes
// spec.delegatedApproval from a user who may not: a fleet approval
// approves plans, so forging one would approve without a review.
// Removing it takes nothing: that approves nothing.
func (r *REST) requireDelegator(ctx context.Context, name string, d, old *advisor.DelegatedApproval) error {
	if d == nil || apiequality.Semantic.DeepEqual(d, old) {
		return nil
	}
	return permission.Require(ctx, r.authz, delegatePermission, "", name,
		"spec.delegatedApproval approves this cluster's plan on behalf of a fleet's hub, and only the fleet's work agent may deliver it; "+
			"approve the fleet plan on the hub (POST .../fleetconfigs/NAME/approve), or this cluster's plan here (POST .../virtplatformconfigs/"+name+"/approve)")
}
