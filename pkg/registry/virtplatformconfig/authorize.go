package virtplatformconfig

import (
	"context"

	"k8s.io/apiserver/pkg/authorization/authorizer"

	"github.com/kubevirt/virt-advisor/pkg/registry/permission"
)

func configPermission(verb, subresource string) permission.Permission {
	return permission.Permission{Verb: verb, Resource: "virtplatformconfigs", Subresource: subresource}
}

var (
	approvePermission  = configPermission("create", "approve")
	readPlanPermission = configPermission("get", "plan")
	// readRevertPermission: approving a revert takes reviewing it too.
	readRevertPermission = configPermission("get", "revert")
)

// MayApprove says whether the request's user may `create
// virtplatformconfigs/approve` on the config name, or, with name "", on
// every config. Approving, setting action Apply and setting an approval
// policy all take it; this is the one check of it.
func MayApprove(ctx context.Context, authz authorizer.Authorizer, name string) (bool, error) {
	return permission.Allowed(ctx, authz, approvePermission, "", name)
}
