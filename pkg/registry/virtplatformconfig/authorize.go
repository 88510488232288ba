package virtplatformconfig

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/apiserver/pkg/endpoints/request"

	"github.com/kubevirt/virt-advisor/pkg/apis/advisor"
)

// permission is one verb on one subresource of one VirtPlatformConfig.
type permission struct {
	verb, subresource string
}

var (
	approvePermission  = permission{verb: "create", subresource: "approve"}
	readPlanPermission = permission{verb: "get", subresource: "plan"}
	// readRevertPermission: approving a revert takes reviewing it too.
	readRevertPermission = permission{verb: "get", subresource: "revert"}
)

func (p permission) String() string {
	return fmt.Sprintf("%s virtplatformconfigs/%s", p.verb, p.subresource)
}

// allowed asks the server's (delegated) authorizer whether the request's
// user holds p on the config name, as the certificates API asks about its
// approve verb: a check on another subresource than the one requested.
func allowed(ctx context.Context, authz authorizer.Authorizer, name string, p permission) (bool, error) {
	u, ok := request.UserFrom(ctx)
	if !ok {
		return false, nil
	}
	decision, _, err := authz.Authorize(ctx, authorizer.AttributesRecord{
		User:            u,
		Verb:            p.verb,
		APIGroup:        advisor.GroupName,
		APIVersion:      "*",
		Resource:        "virtplatformconfigs",
		Subresource:     p.subresource,
		Name:            name,
		ResourceRequest: true,
	})
	if err != nil && decision != authorizer.DecisionAllow {
		return false, err
	}
	return decision == authorizer.DecisionAllow, nil
}

// requirePermission returns a 403 naming p and what to do instead when the
// request's user does not hold it.
func requirePermission(ctx context.Context, authz authorizer.Authorizer, name string, p permission, why, instead string) error {
	ok, err := allowed(ctx, authz, name, p)
	if err != nil {
		return apierrors.NewInternalError(fmt.Errorf("checking %s: %w", p, err))
	}
	if ok {
		return nil
	}
	return apierrors.NewForbidden(configsResource, name, fmt.Errorf("user %q may not %s: %s; %s", requestUser(ctx), p, why, instead))
}

// MayApprove says whether the request's user may `create
// virtplatformconfigs/approve` on the config name, or, with name "", on
// every config. Approving, setting action Apply and setting an approval
// policy all take it; this is the one check of it.
func MayApprove(ctx context.Context, authz authorizer.Authorizer, name string) (bool, error) {
	return allowed(ctx, authz, name, approvePermission)
}
