package virtplatformconfig

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

func TestPlanError(t *testing.T) {
	tests := []struct {
		name       string
		err        error
		code       int32
		retryAfter int32
		message    string
	}{
		{name: "every slot taken", err: fmt.Errorf("wrapped: %w", &BusyError{Limit: 8, Waited: 5 * time.Second}),
			code: 429, retryAfter: busyRetrySeconds, message: "--max-concurrent-plans"},
		{name: "main cluster too slow", err: fmt.Errorf("computing the plan: %w", context.DeadlineExceeded),
			code: 504, message: "check that the main cluster is reachable"},
		{name: "not allowed to read a target", err: apierrors.NewForbidden(schema.GroupResource{Resource: "kubedeschedulers"}, "cluster", errors.New("no")),
			code: 403, message: "03-server-rbac.yaml"},
		{name: "a bug in the computation", err: apierrors.NewInternalError(errors.New("computing the plan failed unexpectedly: boom")),
			code: 500, message: "boom"},
		{name: "main cluster unreachable", err: errors.New("connection refused"),
			code: 503, message: "check that the main cluster is reachable and retry"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			status := planError("load-aware-rebalancing", tt.err).(apierrors.APIStatus).Status()
			if status.Code != tt.code {
				t.Errorf("code %d, want %d (%s)", status.Code, tt.code, status.Message)
			}
			var retryAfter int32
			if status.Details != nil {
				retryAfter = status.Details.RetryAfterSeconds
			}
			if tt.retryAfter != 0 && retryAfter != tt.retryAfter {
				t.Errorf("Retry-After %d, want %d", retryAfter, tt.retryAfter)
			}
			if !strings.Contains(status.Message, tt.message) {
				t.Errorf("message %q does not say %q", status.Message, tt.message)
			}
		})
	}
}
