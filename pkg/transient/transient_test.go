package transient

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"syscall"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

func TestIs(t *testing.T) {
	gr := schema.GroupResource{Group: "hco.kubevirt.io", Resource: "hyperconvergeds"}
	refused := &url.Error{Op: "Get", URL: "https://127.0.0.1:6443/apis", Err: &net.OpError{Op: "dial", Net: "tcp", Err: &sysErr{syscall.ECONNREFUSED}}}
	for _, tc := range []struct {
		name string
		err  error
		want bool
	}{
		{"nil", nil, false},
		{"connection refused", refused, true},
		{"connection refused, wrapped", fmt.Errorf("reading HyperConverged: %w", refused), true},
		{"connection reset", &net.OpError{Op: "read", Net: "tcp", Err: &sysErr{syscall.ECONNRESET}}, true},
		{"unexpected EOF", fmt.Errorf("read: %w", io.ErrUnexpectedEOF), true},
		{"client timeout", context.DeadlineExceeded, true},
		{"http2 connection lost", errors.New("http2: client connection lost"), true},
		{"429", apierrors.NewTooManyRequests("slow down", 1), true},
		{"500", apierrors.NewInternalError(errors.New("etcdserver: leader changed")), true},
		{"503", apierrors.NewServiceUnavailable("starting"), true},
		{"504 server timeout", apierrors.NewServerTimeout(gr, "patch", 1), true},
		{"409 conflict", apierrors.NewConflict(gr, "kubevirt-hyperconverged", errors.New("the object has been modified")), true},
		{"422 invalid", apierrors.NewInvalid(schema.GroupKind{Group: "hco.kubevirt.io", Kind: "HyperConverged"}, "x", field.ErrorList{field.Invalid(field.NewPath("spec"), 1, "no")}), false},
		{"403 forbidden (admission policy)", apierrors.NewForbidden(gr, "x", errors.New("denied by policy")), false},
		{"404 not found", apierrors.NewNotFound(gr, "x"), false},
		{"400 bad request", apierrors.NewBadRequest("admission webhook denied the request"), false},
		{"kind not served", &meta.NoKindMatchError{GroupKind: schema.GroupKind{Group: "x", Kind: "Y"}}, false},
		{"cancelled (leadership lost)", context.Canceled, false},
		{"anything else", errors.New("decoding the desired state"), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Is(tc.err); got != tc.want {
				t.Errorf("Is(%v) = %v, want %v", tc.err, got, tc.want)
			}
		})
	}
}

func TestRetry(t *testing.T) {
	gr := schema.GroupResource{Group: "operator.openshift.io", Resource: "kubedeschedulers"}
	// As kube-apiserver words them (the authorizer's reason after the name).
	rbac := apierrors.NewForbidden(gr, "cluster", errors.New(`User "system:serviceaccount:virt-advisor:virt-advisor-apiserver" cannot patch resource "kubedeschedulers" in API group "operator.openshift.io" in the namespace "openshift-kube-descheduler-operator"`))
	notReady := apierrors.NewForbidden(gr, "cluster", errors.New(`User "system:serviceaccount:virt-advisor:virt-advisor-apiserver" cannot get resource "kubedeschedulers" in API group "operator.openshift.io" in the namespace "openshift-kube-descheduler-operator": RBAC: [clusterrole.rbac.authorization.k8s.io "system:basic-user" not found, clusterrole.rbac.authorization.k8s.io "virt-advisor-apiserver" not found]`))
	policy := apierrors.NewForbidden(gr, "cluster", errors.New(`ValidatingAdmissionPolicy 'virt-advisor-writes' with binding 'virt-advisor-writes' denied request: virt-advisor writes only what its profiles write`))
	webhook := apierrors.NewForbidden(gr, "cluster", errors.New(`admission webhook "validate.example.io" denied the request: no`))
	// As a kube-apiserver restarted a moment ago answered in CI: its
	// ValidatingAdmissionPolicy plugin had not synced yet.
	admissionStarting := apierrors.NewForbidden(schema.GroupResource{Group: "hco.kubevirt.io", Resource: "hyperconvergeds"}, "kubevirt-hyperconverged", errors.New("not yet ready to handle request"))
	for _, tc := range []struct {
		name     string
		err      error
		attempts int32
		want     bool
	}{
		{"an authorizer's 403, first failure", rbac, 0, true},
		{"an authorizer's 403, third failure", rbac, 2, true},
		{"an authorizer's 403, fifth failure", rbac, 4, true},
		{"an authorizer's 403 after five retries: permanent", rbac, 5, false},
		{"an authorizer whose caches are empty (bootstrap roles not found), however often", notReady, 50, true},
		{"an admission policy's 403", policy, 0, false},
		{"a webhook's 403", webhook, 0, false},
		{"an admission plugin not ready yet after a restart, however often", admissionStarting, 50, true},
		{"a policy whose message merely mentions it: permanent", apierrors.NewForbidden(gr, "cluster", errors.New(`ValidatingAdmissionPolicy 'p' with binding 'b' denied request: not yet ready to handle request, says the policy`)), 0, false},
		{"a transient error, however often", apierrors.NewServiceUnavailable("starting"), 50, true},
		{"422", apierrors.NewBadRequest("bad"), 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Retry(tc.err, tc.attempts); got != tc.want {
				t.Errorf("Retry(%v, %d) = %v, want %v", tc.err, tc.attempts, got, tc.want)
			}
		})
	}
}

// sysErr is a syscall error as the net package wraps it.
type sysErr struct{ errno syscall.Errno }

func (e *sysErr) Error() string { return e.errno.Error() }
func (e *sysErr) Unwrap() error { return e.errno }

func TestBackoff(t *testing.T) {
	for _, tc := range []struct {
		attempt int32
		jitter  float64
		want    time.Duration
	}{
		{1, 0.5, time.Second},
		{2, 0.5, 2 * time.Second},
		{4, 0.5, 8 * time.Second},
		{7, 0.5, time.Minute},
		{40, 0.5, time.Minute},
		{4, 0, 6400 * time.Millisecond},
		{4, 0.999, 9600 * time.Millisecond},
	} {
		if got := Backoff(tc.attempt, tc.jitter); got != tc.want {
			t.Errorf("Backoff(%d, %v) = %v, want %v", tc.attempt, tc.jitter, got, tc.want)
		}
	}
}
