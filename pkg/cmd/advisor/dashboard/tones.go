package dashboard

import (
	"github.com/kubevirt/virt-advisor/pkg/apis/advisor/v1alpha1"
	"github.com/kubevirt/virt-advisor/pkg/status"
)

// The words, tones and glyphs the pages say states with: a tone pairs a
// colour with a glyph, and the state is always written out too.

// waitingFor says a Waiting condition's reason in words.
func waitingFor(reason string) string {
	switch reason {
	case status.WaitingMaintenanceWindow:
		return "Waiting for a maintenance window"
	case status.WaitingDrainBlocked:
		return "Waiting: a VM would block the drain"
	case status.WaitingPoolBusy:
		return "Waiting for a busy MachineConfigPool"
	case status.WaitingClusterUpgrading:
		return "Waiting for the cluster upgrade"
	case status.WaitingRolloutHalted:
		return "Rollout halted: an approver decides"
	case status.WaitingGate:
		return "Waiting for the rollout's gates"
	}
	return "Waiting: " + reason
}

// waitingTone: a halted rollout waits for a person, and stands out; any
// other wait ends by itself.
func waitingTone(reason string) string {
	if reason == status.WaitingRolloutHalted {
		return "bad"
	}
	return "warn"
}

// glyph is the glyph of a tone.
func glyph(tone string) string {
	switch tone {
	case "ok":
		return "✓"
	case "info":
		return "●"
	case "warn":
		return "▲"
	case "bad":
		return "✕"
	}
	return "○"
}

func nodeGlyph(s nodeState) string {
	switch s {
	case nodeUpdated:
		return "✓"
	case nodeUpdating:
		return "↻"
	case nodeDegraded:
		return "✕"
	}
	return "○"
}

func phaseTone(p v1alpha1.ConfigPhase) string {
	switch p {
	case v1alpha1.PhaseCompleted:
		return "ok"
	case v1alpha1.PhaseReviewRequired, v1alpha1.PhaseInProgress, v1alpha1.PhasePending, v1alpha1.PhaseDrafting, v1alpha1.PhaseCompletedWithUpgrade:
		return "info"
	case v1alpha1.PhaseDrifted, v1alpha1.PhaseCompletedWithErrors, v1alpha1.PhasePrerequisiteFailed:
		return "warn"
	case v1alpha1.PhaseFailed:
		return "bad"
	}
	return "neutral"
}

func opTone(op v1alpha1.Operation) string {
	switch op {
	case v1alpha1.OperationCreate:
		return "ok"
	case v1alpha1.OperationUpdate:
		return "info"
	case v1alpha1.OperationDelete:
		return "bad"
	}
	return "neutral"
}

func impactTone(i v1alpha1.Impact) string {
	switch i {
	case v1alpha1.ImpactHigh:
		return "bad"
	case v1alpha1.ImpactMedium:
		return "warn"
	}
	return "neutral"
}

func stateTone(s v1alpha1.ItemState) string {
	switch s {
	case v1alpha1.ItemStateCompleted:
		return "ok"
	case v1alpha1.ItemStateInProgress:
		return "info"
	case v1alpha1.ItemStateFailed:
		return "bad"
	}
	return "neutral"
}
