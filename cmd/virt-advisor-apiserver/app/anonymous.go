package app

import (
	"net/http"

	"k8s.io/apiserver/pkg/authentication/authenticator"
	"k8s.io/apiserver/pkg/authentication/user"
)

// probePaths are the only paths an anonymous request may reach; the
// authorizer always allows them (--authorization-always-allow-paths).
var probePaths = map[string]bool{"/healthz": true, "/livez": true, "/readyz": true}

// probesOnlyForAnonymous turns an anonymous request for anything but a
// probe into an unauthenticated one (401), before authorization.
func probesOnlyForAnonymous(next authenticator.Request) authenticator.Request {
	if next == nil {
		return nil
	}
	return authenticator.RequestFunc(func(req *http.Request) (*authenticator.Response, bool, error) {
		resp, ok, err := next.AuthenticateRequest(req)
		if ok && resp != nil && resp.User != nil && resp.User.GetName() == user.Anonymous && !probePaths[req.URL.Path] {
			return nil, false, nil
		}
		return resp, ok, err
	})
}
