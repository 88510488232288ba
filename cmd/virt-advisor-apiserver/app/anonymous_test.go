package app

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"k8s.io/apiserver/pkg/authentication/authenticator"
	"k8s.io/apiserver/pkg/authentication/user"
)

func TestProbesOnlyForAnonymous(t *testing.T) {
	as := func(name string) authenticator.Request {
		return authenticator.RequestFunc(func(*http.Request) (*authenticator.Response, bool, error) {
			return &authenticator.Response{User: &user.DefaultInfo{Name: name}}, true, nil
		})
	}
	tests := []struct {
		user, path string
		want       bool
	}{
		{user.Anonymous, "/readyz", true},
		{user.Anonymous, "/livez", true},
		{user.Anonymous, "/healthz", true},
		{user.Anonymous, "/readyz/etcd", false},
		{user.Anonymous, "/apis/advisor.kubevirt.io/v1alpha1/virtplatformconfigs", false},
		{user.Anonymous, "/metrics", false},
		{user.Anonymous, "/openapi/v2", false},
		{"alice", "/apis/advisor.kubevirt.io/v1alpha1/virtplatformconfigs", true},
		{"alice", "/metrics", true},
	}
	for _, tc := range tests {
		t.Run(tc.user+" "+tc.path, func(t *testing.T) {
			_, ok, err := probesOnlyForAnonymous(as(tc.user)).AuthenticateRequest(httptest.NewRequest("GET", tc.path, nil))
			if err != nil || ok != tc.want {
				t.Fatalf("authenticated %v (err %v), want %v", ok, err, tc.want)
			}
		})
	}
}
