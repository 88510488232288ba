package fakemco

import (
	"errors"
	"net/http"
	"syscall"
	"time"
)

// waitWhileRefused makes a GET to a kube-apiserver that is not listening
// (a test stopped it) wait for it, rather than fail. The informers' lists
// and watches go through it: client-go's reflector backs off further with
// every failed attempt (up to 30 s, doubled by jitter), so an informer
// that failed through an outage of a few seconds stayed blind for up to a
// minute after it, and a pool created then was not rendered in time. A
// reflector whose list waits sees one slow list instead.
type waitWhileRefused struct {
	next http.RoundTripper
	// every is how often a refused connection is tried again.
	every time.Duration
}

func (w waitWhileRefused) RoundTrip(req *http.Request) (*http.Response, error) {
	for {
		resp, err := w.next.RoundTrip(req)
		if err == nil || req.Method != http.MethodGet || !errors.Is(err, syscall.ECONNREFUSED) {
			return resp, err
		}
		select {
		case <-req.Context().Done():
			return nil, err
		case <-time.After(w.every):
		}
	}
}
