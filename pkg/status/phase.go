// Package status sets the phase of a VirtPlatformConfig and its phase
// conditions, so that exactly one phase condition is True. The approve
// subresource and the controller both move configs between phases.
package status

import (
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubevirt/virt-advisor/pkg/apis/advisor/v1alpha1"
)

// Condition types besides the phases.
const (
	ConditionUpgradeAvailable     = "UpgradeAvailable"
	ConditionInputDependencyDrift = "InputDependencyDrift"
)

// Messages users of the earlier operator know.
const (
	MessageIgnored = "Configuration is ignored - no management actions will be performed. Resources remain in their current state and are now under manual control. Change action to 'DryRun' or 'Apply' to resume operator management."
	MessageReview  = "Plan ready for review. Change action to 'Apply' to execute, or approve the plan you reviewed: GET .../plan, then POST its planHash to .../approve."
	MessageApplied = "Configuration successfully applied and in sync"
	MessageNoop    = "Configuration already in desired state - no changes needed"
	MessageStale   = "Plan is stale: target resources have been modified since plan generation. Please regenerate the plan by changing action to DryRun, then review and re-approve."
	MessageDrifted = "Configuration has drifted from desired state"
)

// phases lists every phase condition, in the order they are written.
var phases = []v1alpha1.ConfigPhase{
	v1alpha1.PhaseIgnored, v1alpha1.PhasePending, v1alpha1.PhaseDrafting, v1alpha1.PhasePrerequisiteFailed,
	v1alpha1.PhaseReviewRequired, v1alpha1.PhaseInProgress, v1alpha1.PhaseCompleted, v1alpha1.PhaseCompletedWithErrors,
	v1alpha1.PhaseCompletedWithUpgrade, v1alpha1.PhaseDrifted, v1alpha1.PhaseFailed,
}

// inactive is the reason and message of a phase condition that is not current.
var inactive = map[v1alpha1.ConfigPhase][2]string{
	v1alpha1.PhaseIgnored:              {"NotIgnored", "Configuration is being managed"},
	v1alpha1.PhasePending:              {"NotPending", "Not waiting to draft a plan"},
	v1alpha1.PhaseDrafting:             {"NotDrafting", "Plan generation completed"},
	v1alpha1.PhasePrerequisiteFailed:   {"PrerequisitesMet", "All prerequisites are installed"},
	v1alpha1.PhaseReviewRequired:       {"NotReviewRequired", "No plan is waiting for review"},
	v1alpha1.PhaseInProgress:           {"NotInProgress", "Plan is not being applied"},
	v1alpha1.PhaseCompleted:            {"NotCompleted", "Plan not yet applied"},
	v1alpha1.PhaseCompletedWithErrors:  {"NotCompletedWithErrors", "No plan completed with errors"},
	v1alpha1.PhaseCompletedWithUpgrade: {"NoUpgrade", "No newer profile logic to apply"},
	v1alpha1.PhaseDrifted:              {"NoDrift", "Configuration is in sync with desired state"},
	v1alpha1.PhaseFailed:               {"NotFailed", "No failure"},
}

// SetPhase makes phase current: status.phase and a True condition of that
// type with reason and message; every other phase condition turns False.
func SetPhase(st *v1alpha1.VirtPlatformConfigStatus, phase v1alpha1.ConfigPhase, reason, message string) {
	st.Phase = phase
	for _, p := range phases {
		c := metav1.Condition{Type: string(p), Status: metav1.ConditionFalse}
		switch {
		case p == phase:
			c.Status, c.Reason, c.Message = metav1.ConditionTrue, reason, message
		case phase == v1alpha1.PhaseIgnored:
			c.Reason, c.Message = "Ignored", "Not applicable - configuration is ignored"
		default:
			c.Reason, c.Message = inactive[p][0], inactive[p][1]
		}
		meta.SetStatusCondition(&st.Conditions, c)
	}
}

// PhaseMessage is the message of the current phase condition.
func PhaseMessage(st *v1alpha1.VirtPlatformConfigStatus) string {
	if c := meta.FindStatusCondition(st.Conditions, string(st.Phase)); c != nil {
		return c.Message
	}
	return ""
}

// IsWarning tells which phases deserve a Warning event.
func IsWarning(phase v1alpha1.ConfigPhase) bool {
	switch phase {
	case v1alpha1.PhaseFailed, v1alpha1.PhaseDrifted, v1alpha1.PhasePrerequisiteFailed, v1alpha1.PhaseCompletedWithErrors:
		return true
	}
	return false
}
