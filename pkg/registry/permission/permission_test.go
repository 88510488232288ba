package permission

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/apiserver/pkg/endpoints/request"
)

// grant is one permission on one object.
type grant struct{ verb, resource, subresource, namespace, name string }

// grants allows exactly the permissions it holds, and remembers what it was asked.
type grants struct {
	allow map[grant]bool
	err   error
	asked []authorizer.Attributes
}

func (g *grants) Authorize(_ context.Context, a authorizer.Attributes) (authorizer.Decision, string, error) {
	g.asked = append(g.asked, a)
	if g.err != nil {
		return authorizer.DecisionNoOpinion, "", g.err
	}
	key := grant{a.GetVerb(), a.GetResource(), a.GetSubresource(), a.GetNamespace(), a.GetName()}
	if g.allow[key] {
		return authorizer.DecisionAllow, "", nil
	}
	return authorizer.DecisionNoOpinion, "", nil
}

func TestRequire(t *testing.T) {
	fleetPlan := Permission{Verb: "get", Resource: "fleetconfigs", Subresource: "plan"}
	approve := Permission{Verb: "create", Resource: "virtplatformconfigs", Subresource: "approve"}
	alice := request.WithUser(context.Background(), &user.DefaultInfo{Name: "alice"})
	tests := []struct {
		name            string
		ctx             context.Context
		p               Permission
		namespace, obj  string
		allow           []grant
		authzErr        error
		wantCode        int // 0: allowed
		wantMessagePart string
	}{
		{"held on the object", alice, approve, "", "psi", []grant{{"create", "virtplatformconfigs", "approve", "", "psi"}}, nil, 0, ""},
		{"held on another object", alice, approve, "", "psi", []grant{{"create", "virtplatformconfigs", "approve", "", "other"}}, nil,
			http.StatusForbidden, `user "alice" may not create virtplatformconfigs/approve: because; do this`},
		{"held in another namespace", alice, fleetPlan, "team-a", "f", []grant{{"get", "fleetconfigs", "plan", "team-b", "f"}}, nil,
			http.StatusForbidden, `user "alice" may not get fleetconfigs/plan in namespace team-a: because; do this`},
		{"held in its namespace", alice, fleetPlan, "team-a", "f", []grant{{"get", "fleetconfigs", "plan", "team-a", "f"}}, nil, 0, ""},
		{"no user", context.Background(), approve, "", "psi", nil, nil, http.StatusForbidden, `user "" may not`},
		{"the authorizer fails", alice, approve, "", "psi", nil, errors.New("webhook down"), http.StatusInternalServerError, "checking create virtplatformconfigs/approve: webhook down"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := &grants{allow: map[grant]bool{}, err: tt.authzErr}
			for _, a := range tt.allow {
				g.allow[a] = true
			}
			err := Require(tt.ctx, g, tt.p, tt.namespace, tt.obj, "because; do this")
			if tt.wantCode == 0 {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			var status apierrors.APIStatus
			if !errors.As(err, &status) || int(status.Status().Code) != tt.wantCode {
				t.Fatalf("got %v, want a %d", err, tt.wantCode)
			}
			if !strings.Contains(err.Error(), tt.wantMessagePart) {
				t.Errorf("message %q does not say %q", err.Error(), tt.wantMessagePart)
			}
			for _, a := range g.asked {
				if a.GetAPIGroup() != "advisor.kubevirt.io" || !a.IsResourceRequest() {
					t.Errorf("asked about %+v, not a resource of our group", a)
				}
			}
		})
	}
}
