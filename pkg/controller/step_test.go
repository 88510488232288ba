package controller

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubevirt/virt-advisor/pkg/apis/advisor/v1alpha1"
)

func TestStep(t *testing.T) {
	pending := []v1alpha1.VirtPlatformConfigItem{{Name: "a", State: v1alpha1.ItemStatePending}}
	rolling := []v1alpha1.VirtPlatformConfigItem{{Name: "a", State: v1alpha1.ItemStateInProgress, Message: "MachineConfigPool 'worker' is updating"}}
	tests := []struct {
		name        string
		phase       v1alpha1.ConfigPhase
		action      v1alpha1.PlanAction
		specChanged bool
		items       []v1alpha1.VirtPlatformConfigItem
		want        work
		// revert: the approval is of a revert plan.
		revert bool
	}{
		{"new config", "", v1alpha1.PlanActionDryRun, true, nil, workDraft, false},
		{"Ignore wins in any phase", v1alpha1.PhaseInProgress, v1alpha1.PlanActionIgnore, false, pending, workIgnore, false},
		{"Ignored, action back to DryRun", v1alpha1.PhaseIgnored, v1alpha1.PlanActionDryRun, true, nil, workDraft, false},
		{"ReviewRequired re-plans", v1alpha1.PhaseReviewRequired, v1alpha1.PlanActionDryRun, false, pending, workDraft, false},
		{"PrerequisiteFailed re-plans", v1alpha1.PhasePrerequisiteFailed, v1alpha1.PlanActionDryRun, false, nil, workDraft, false},
		{"InProgress applies", v1alpha1.PhaseInProgress, v1alpha1.PlanActionDryRun, false, pending, workProgress, false},
		{"InProgress with writes pending after a spec change: progress fails it", v1alpha1.PhaseInProgress, v1alpha1.PlanActionDryRun, true, pending, workProgress, false},
		{"InProgress rolling out after a spec change re-plans", v1alpha1.PhaseInProgress, v1alpha1.PlanActionDryRun, true, rolling, workDraft, false},
		{"Completed is checked", v1alpha1.PhaseCompleted, v1alpha1.PlanActionDryRun, false, nil, workCheck, false},
		{"Drifted is checked", v1alpha1.PhaseDrifted, v1alpha1.PlanActionApply, false, nil, workCheck, false},
		{"Completed after a spec change re-plans", v1alpha1.PhaseCompleted, v1alpha1.PlanActionDryRun, true, nil, workDraft, false},
		{"Failed stays", v1alpha1.PhaseFailed, v1alpha1.PlanActionApply, false, pending, workNone, false},
		{"Failed after a spec change re-plans", v1alpha1.PhaseFailed, v1alpha1.PlanActionDryRun, true, nil, workDraft, false},
		{"Failed with a written MachineConfig rolling out is tracked", v1alpha1.PhaseFailed, v1alpha1.PlanActionApply, false,
			[]v1alpha1.VirtPlatformConfigItem{{Name: "mc", State: v1alpha1.ItemStateInProgress, TargetRef: v1alpha1.ObjectReference{APIVersion: "machineconfiguration.openshift.io/v1", Kind: "MachineConfig", Name: "mc"}}}, workTrack, false},
		{"a revert is written under action Ignore", v1alpha1.PhaseInProgress, v1alpha1.PlanActionIgnore, false, pending, workProgress, true},
		{"a revert's rollout is followed under action Ignore", v1alpha1.PhaseInProgress, v1alpha1.PlanActionIgnore, false, rolling, workProgress, true},
		{"a written revert rests, whatever the action", v1alpha1.PhaseIgnored, v1alpha1.PlanActionApply, false, nil, workNone, true},
		{"a written revert, then a spec change: re-plans", v1alpha1.PhaseIgnored, v1alpha1.PlanActionDryRun, true, nil, workDraft, true},
		{"a written revert, then action Ignore", v1alpha1.PhaseIgnored, v1alpha1.PlanActionIgnore, true, nil, workIgnore, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg := &v1alpha1.VirtPlatformConfig{ObjectMeta: metav1.ObjectMeta{Generation: 2}}
			cfg.Spec.Action = tc.action
			cfg.Status.Phase, cfg.Status.Items, cfg.Status.ObservedGeneration = tc.phase, tc.items, 2
			if tc.revert {
				cfg.Status.Approval = &v1alpha1.ApprovalRecord{Revert: true}
			}
			if tc.specChanged {
				cfg.Status.ObservedGeneration = 1
			}
			if got := step(cfg); got != tc.want {
				t.Fatalf("step = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestSoonest(t *testing.T) {
	for _, tc := range []struct {
		in   []time.Duration
		want time.Duration
	}{
		{nil, 0},
		{[]time.Duration{0, 0}, 0},
		{[]time.Duration{0, time.Minute}, time.Minute},
		{[]time.Duration{time.Hour, 0, time.Minute}, time.Minute},
		{[]time.Duration{-time.Second, time.Minute}, time.Minute},
	} {
		if got := soonest(tc.in...); got != tc.want {
			t.Errorf("soonest(%v) = %v, want %v", tc.in, got, tc.want)
		}
	}
}
