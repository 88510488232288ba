package controller

import (
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubevirt/virt-advisor/pkg/apis/advisor/v1alpha1"
)

// TestPendingWriteIs: the watch event of a status write still in flight
// is recognised as ours by its status as storage holds it (times in
// seconds), on the same spec, in a newer version; anything else is not.
func TestPendingWriteIs(t *testing.T) {
	written := &v1alpha1.VirtPlatformConfig{ObjectMeta: metav1.ObjectMeta{Name: "c", Generation: 3, ResourceVersion: "10"}}
	written.Status.Phase = v1alpha1.PhaseCompleted
	meta.SetStatusCondition(&written.Status.Conditions, metav1.Condition{Type: "Completed", Status: metav1.ConditionTrue, Reason: "Applied",
		LastTransitionTime: metav1.NewTime(time.Date(2026, 11, 27, 22, 3, 10, 576053363, time.UTC))})
	w := newPendingWrite(written)
	// The status of the write is the one it began with, whatever the
	// writer does to its copy meanwhile.
	began := written.DeepCopy()
	written.Status.Phase = v1alpha1.PhaseDrifted
	stored := func(mutate func(*v1alpha1.VirtPlatformConfig)) *v1alpha1.VirtPlatformConfig {
		out := began.DeepCopy()
		out.ResourceVersion = "11"
		out.Status.Conditions[0].LastTransitionTime = metav1.NewTime(time.Date(2026, 11, 27, 22, 3, 10, 0, time.UTC))
		if mutate != nil {
			mutate(out)
		}
		return out
	}
	for _, tt := range []struct {
		name string
		cfg  *v1alpha1.VirtPlatformConfig
		ours bool
	}{
		{"the write as stored, its times in seconds", stored(nil), true},
		{"the spec changed meanwhile", stored(func(c *v1alpha1.VirtPlatformConfig) { c.Generation = 4 }), false},
		{"another status", stored(func(c *v1alpha1.VirtPlatformConfig) { c.Status.Phase = v1alpha1.PhaseDrifted }), false},
		{"the version the write was made on", stored(func(c *v1alpha1.VirtPlatformConfig) { c.ResourceVersion = "10" }), false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := w.is(tt.cfg); got != tt.ours {
				t.Errorf("is = %v, want %v", got, tt.ours)
			}
		})
	}
}
