package v1alpha1

import "fmt"

// Summary says which spec settings an approval of a plan approves besides
// its items, e.g. "action DryRun, failurePolicy Abort,
// bypassOptimisticLock false, waitTimeout none (waits without limit)".
func (s PlanSettings) Summary() string {
	wait := s.WaitTimeout
	if wait == "" {
		wait = "none (waits without limit)"
	}
	return fmt.Sprintf("action %s, failurePolicy %s, bypassOptimisticLock %t, waitTimeout %s", s.Action, s.FailurePolicy, s.BypassOptimisticLock, wait)
}
