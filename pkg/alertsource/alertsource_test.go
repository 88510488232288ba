package alertsource

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func TestNewRefusesWhatCannotWork(t *testing.T) {
	for _, tc := range []struct {
		endpoint Endpoint
		err      string
	}{
		{Endpoint{Kind: Prometheus, URL: "thanos-querier:9091"}, "is not an http(s) URL"},
		{Endpoint{Kind: Prometheus, URL: "ftp://x"}, "is not an http(s) URL"},
		{Endpoint{Kind: "Graphite", URL: "http://x"}, `unknown alert source "Graphite"`},
		{Endpoint{Kind: Alertmanager, URL: "https://x", CA: []byte("not PEM")}, "the CA holds no PEM certificate"},
	} {
		if _, err := New(tc.endpoint); err == nil || !strings.Contains(err.Error(), tc.err) {
			t.Errorf("%+v: err %v, want %q", tc.endpoint, err, tc.err)
		}
	}
}

// What a gate says when the endpoint refuses or is down: the URL, the
// status and the first line of the answer; the token is sent.
func TestErrorsNameTheEndpoint(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer s3cret" {
			http.Error(w, "no token", http.StatusUnauthorized)
			return
		}
		http.Error(w, "Forbidden (user=system:serviceaccount:x:y, verb=get, resource=prometheuses/api)\nmore", http.StatusForbidden)
	}))
	down := httptest.NewServer(http.NotFoundHandler())
	down.Close()
	for _, tc := range []struct {
		endpoint Endpoint
		err      string
	}{
		{Endpoint{Kind: Prometheus, URL: srv.URL, Token: token("s3cret")}, "GET " + srv.URL + "/api/v1/query: 403 Forbidden: Forbidden (user=system:serviceaccount:x:y, verb=get, resource=prometheuses/api)"},
		{Endpoint{Kind: Alertmanager, URL: srv.URL + "/", Token: token("wrong")}, "GET " + srv.URL + "/api/v2/alerts: 401 Unauthorized: no token"},
		{Endpoint{Kind: Alertmanager, URL: down.URL}, "GET " + down.URL + "/api/v2/alerts: "},
	} {
		r, err := New(tc.endpoint)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := r.Firing(context.Background()); err == nil || !strings.Contains(err.Error(), tc.err) {
			t.Errorf("%+v: err %v, want %q", tc.endpoint, err, tc.err)
		}
	}
	srv.Close()
}

func token(t string) func() (string, error) { return func() (string, error) { return t, nil } }
