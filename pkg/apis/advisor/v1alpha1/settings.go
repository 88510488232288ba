package v1alpha1

import "fmt"

// Summary says which spec settings an approval of a plan approves besides
// its items, e.g. "action DryRun, failurePolicy Abort,
// bypassOptimisticLock false, waitTimeout none (waits without limit),
// allowBlockingDrains false".
func (s PlanSettings) Summary() string {
	wait := s.WaitTimeout
	if wait == "" {
		wait = "none (waits without limit)"
	}
	return fmt.Sprintf("action %s, failurePolicy %s, bypassOptimisticLock %t, waitTimeout %s, allowBlockingDrains %t",
		s.Action, s.FailurePolicy, s.BypassOptimisticLock, wait, s.AllowBlockingDrains)
}

// AllowsBlockingDrains is spec.rollout.allowBlockingDrains.
func (s VirtPlatformConfigSpec) AllowsBlockingDrains() bool {
	return s.Rollout != nil && s.Rollout.AllowBlockingDrains
}
