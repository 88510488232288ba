// Package permission checks, for a request to one subresource, that its
// user also holds a permission on another (approving a plan takes reading
// it), as the certificates API asks about its approve verb, and answers
// a 403 that names the permission and what to do.
package permission

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/apiserver/pkg/endpoints/request"

	"github.com/kubevirt/virt-advisor/pkg/apis/advisor"
)

// Permission is one verb on one subresource of a resource of our group.
type Permission struct {
	Verb, Resource, Subresource string
}

func (p Permission) String() string {
	return fmt.Sprintf("%s %s/%s", p.Verb, p.Resource, p.Subresource)
}

// Allowed asks the server's (delegated) authorizer whether the request's
// user holds p on the object namespace/name (namespace "" for a cluster
// scoped one; name "" for every object).
func Allowed(ctx context.Context, authz authorizer.Authorizer, p Permission, namespace, name string) (bool, error) {
	u, ok := request.UserFrom(ctx)
	if !ok {
		return false, nil
	}
	decision, _, err := authz.Authorize(ctx, authorizer.AttributesRecord{
		User:            u,
		Verb:            p.Verb,
		APIGroup:        advisor.GroupName,
		APIVersion:      "*",
		Resource:        p.Resource,
		Subresource:     p.Subresource,
		Namespace:       namespace,
		Name:            name,
		ResourceRequest: true,
	})
	if err != nil && decision != authorizer.DecisionAllow {
		return false, err
	}
	return decision == authorizer.DecisionAllow, nil
}

// Require returns a 403 naming p and reason (why it is needed, and what
// to do) when the request's user does not hold p; a 500 when the
// authorizer could not say.
func Require(ctx context.Context, authz authorizer.Authorizer, p Permission, namespace, name, reason string) error {
	ok, err := Allowed(ctx, authz, p, namespace, name)
	if err != nil {
		return apierrors.NewInternalError(fmt.Errorf("checking %s: %w", p, err))
	}
	if ok {
		return nil
	}
	var user string
	if u, found := request.UserFrom(ctx); found {
		user = u.GetName()
	}
	where := ""
	if namespace != "" {
		where = " in namespace " + namespace
	}
	return apierrors.NewForbidden(advisor.Resource(p.Resource), name, fmt.Errorf("user %q may not %s%s: %s", user, p, where, reason))
}
