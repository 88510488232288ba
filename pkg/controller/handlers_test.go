package controller

import (
	"testing"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"
)

// TestSpecChanged: the configs are looked at again when an admission
// policy is added, deleted or its spec changed, not when kube-apiserver
// writes its status (the type checking it records a while after).
func TestSpecChanged(t *testing.T) {
	policy := func(generation int64, warnings int) *admissionv1.ValidatingAdmissionPolicy {
		p := &admissionv1.ValidatingAdmissionPolicy{ObjectMeta: metav1.ObjectMeta{Name: "p", Generation: generation}}
		if warnings > 0 {
			p.Status.TypeChecking = &admissionv1.TypeChecking{ExpressionWarnings: make([]admissionv1.ExpressionWarning, warnings)}
		}
		return p
	}
	tests := []struct {
		name  string
		event func(h cache.ResourceEventHandler)
		want  int
	}{
		{"added", func(h cache.ResourceEventHandler) { h.OnAdd(policy(1, 0), false) }, 1},
		{"deleted", func(h cache.ResourceEventHandler) { h.OnDelete(policy(1, 0)) }, 1},
		{"its spec changed", func(h cache.ResourceEventHandler) { h.OnUpdate(policy(1, 0), policy(2, 0)) }, 1},
		{"its status written", func(h cache.ResourceEventHandler) { h.OnUpdate(policy(1, 0), policy(1, 2)) }, 0},
		{"no generation to compare", func(h cache.ResourceEventHandler) { h.OnUpdate(policy(0, 0), policy(0, 1)) }, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			calls := 0
			tt.event(specChanged(func() { calls++ }))
			if calls != tt.want {
				t.Errorf("configs looked at %d times, want %d", calls, tt.want)
			}
		})
	}
}
