package advisor

// Phases are every ConfigPhase of the API, in the order their conditions
// are written. The state machine (pkg/status) has a row for each; a test
// there keeps its table in step with this list.
func Phases() []ConfigPhase {
	return []ConfigPhase{
		PhaseIgnored,
		PhasePending,
		PhaseDrafting,
		PhasePrerequisiteFailed,
		PhaseReviewRequired,
		PhaseInProgress,
		PhaseCompleted,
		PhaseCompletedWithErrors,
		PhaseCompletedWithUpgrade,
		PhaseDrifted,
		PhaseFailed,
		PhaseAborted,
	}
}
