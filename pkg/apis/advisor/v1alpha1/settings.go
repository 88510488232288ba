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

// ShortHash abbreviates a plan or items hash for people, as git shows
// commits: its first 12 characters. The server's messages, the plugin and
// the dashboard all show hashes this way.
func ShortHash(h string) string {
	if len(h) > 12 {
		return h[:12]
	}
	return h
}
