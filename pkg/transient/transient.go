// Package transient tells the errors worth retrying (the main API server
// restarting, overloaded or briefly unreachable) from those that a retry
// cannot fix (the request is invalid, forbidden or of a kind not served),
// and how long to wait before the next attempt.
package transient

import (
	"context"
	"errors"
	"io"
	"net"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	utilnet "k8s.io/apimachinery/pkg/util/net"
)

// Is reports whether err is transient: a connection refused, reset or cut
// short, a timeout, 429 TooManyRequests, a 5xx (an etcd leader change
// surfaces as one), or a 409 Conflict (the object changed under us: read
// it again and retry). Everything else — 400, 403, 404, 422, an admission
// denial, a kind that is not served, a cancelled context — is permanent.
func Is(err error) bool {
	if err == nil || errors.Is(err, context.Canceled) {
		return false
	}
	if meta.IsNoMatchError(err) {
		return false
	}
	var status apierrors.APIStatus
	if errors.As(err, &status) {
		return isTransientStatus(err, status.Status().Code)
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return true
	}
	return isConnectionLost(err)
}

// isTransientStatus reports whether an error the API server answered is
// worth retrying: 429, a timeout, a 409 Conflict or a 5xx.
func isTransientStatus(err error, code int32) bool {
	switch {
	case apierrors.IsTooManyRequests(err), apierrors.IsServerTimeout(err), apierrors.IsTimeout(err),
		apierrors.IsConflict(err), apierrors.IsInternalError(err), apierrors.IsServiceUnavailable(err),
		apierrors.IsUnexpectedServerError(err):
		return true
	case code >= 500:
		return true
	}
	return false
}

// isConnectionLost reports whether err is the connection to the API
// server refused, reset, cut short or timed out.
func isConnectionLost(err error) bool {
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return true // the connection was cut in the middle of an answer
	}
	if utilnet.IsConnectionRefused(err) || utilnet.IsConnectionReset(err) || utilnet.IsProbableEOF(err) {
		return true
	}
	var netErr net.Error
	if errors.As(err, &netErr) && netErr.Timeout() {
		return true
	}
	var opErr *net.OpError
	if errors.As(err, &opErr) {
		return true // dial, read or write on the wire: the server went away
	}
	msg := err.Error()
	for _, s := range []string{"http2: client connection lost", "use of closed network connection", "TLS handshake timeout", "i/o timeout", "no route to host"} {
		if strings.Contains(msg, s) {
			return true
		}
	}
	return false
}

// AuthorizationRetries is how many times a write the API server's
// authorizer refused is tried again before the refusal counts as
// permanent: about 30 s with the backoff below.
const AuthorizationRetries = 5

// Retry reports whether a write that failed with err, after attempts
// earlier failures of the same write, is tried again: a transient error
// always (within the caller's deadline), and a refusal of the API
// server's authorizer a few times. A kube-apiserver that has just started
// answers 403 to every request its RBAC allows until its authorizer's
// caches are filled (a second or so); retrying a few times tells that
// from a permission the server's ServiceAccount really lacks, which then
// fails with the API server's message.
func Retry(err error, attempts int32) bool {
	return Is(err) || rbacNotReady(err) || admissionNotReady(err) || (Authorization(err) && attempts < AuthorizationRetries)
}

// admissionNotReady is a 403 of an admission plugin of a kube-apiserver
// that has just started, before the informers of its policies or
// webhooks have synced: the plugin refuses every request with this
// message rather than admit it unjudged (k8s.io/apiserver's policy and
// webhook plugins). It judges the request once ready, so it is retried
// like a 503, within the caller's deadline.
func admissionNotReady(err error) bool {
	return apierrors.IsForbidden(err) && strings.HasSuffix(err.Error(), "forbidden: not yet ready to handle request")
}

// rbacNotReady is a 403 of an authorizer whose caches are still empty:
// it names the bootstrap roles every cluster has (system:basic-user,
// system:discovery) as not found. Retried like a 503, within the
// caller's deadline.
func rbacNotReady(err error) bool {
	if !Authorization(err) {
		return false
	}
	msg := err.Error()
	return strings.Contains(msg, `clusterrole.rbac.authorization.k8s.io "system:`) && strings.Contains(msg, "not found")
}

// Authorization is true for a 403 of the authorizer ("User … cannot patch
// resource …"), false for one of admission (a policy or a webhook that
// denied the request), which no retry changes.
func Authorization(err error) bool {
	if !apierrors.IsForbidden(err) {
		return false
	}
	msg := err.Error()
	return strings.Contains(msg, `User "`) && strings.Contains(msg, `" cannot `)
}

const (
	// FirstBackoff is the wait after the first failed attempt; it doubles
	// with every attempt up to MaxBackoff.
	FirstBackoff = time.Second
	MaxBackoff   = time.Minute
)

// Backoff is how long to wait after attempt (1 for the first failure):
// 1s, 2s, 4s, 8s, … up to a minute, spread by jitter (in [0, 1)) over
// ±20 % so that the retries of many configs do not arrive together.
func Backoff(attempt int32, jitter float64) time.Duration {
	d := FirstBackoff
	for i := int32(1); i < attempt && d < MaxBackoff; i++ {
		d *= 2
	}
	if d > MaxBackoff {
		d = MaxBackoff
	}
	spread := 0.8 + 0.4*jitter
	return time.Duration(float64(d) * spread).Round(100 * time.Millisecond)
}
