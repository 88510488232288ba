// Package status is the state machine's one table of phases and the code
// that sets the phase of a VirtPlatformConfig and its phase conditions, so
// that exactly one phase condition is True. The approve subresource and
// the controller read the table; it has a row for each phase of the API
// (advisor.Phases).
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
	// ConditionPartiallyApplied is True while some items of the last
	// approved plan were written and others failed: the cluster is
	// partially configured until a plan is applied in full.
	ConditionPartiallyApplied = "PartiallyApplied"
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

// ItemApplying is the message of an item whose write was started but not
// yet confirmed (the controller's intent): an attempt may be in flight.
const ItemApplying = "Applying"

// Step is what the controller does with a config in a phase.
type Step int

const (
	// StepNone: the phase is terminal; only a spec change moves it on.
	StepNone Step = iota
	// StepDraft computes the live plan and decides what it needs.
	StepDraft
	// StepProgress applies the approved items and follows their rollouts.
	StepProgress
	// StepCheck looks at an applied config again: drift, input changes,
	// newer profile logic.
	StepCheck
)

// PhaseInfo is everything the state machine knows of a phase.
type PhaseInfo struct {
	Phase v1alpha1.ConfigPhase
	// Step is what the controller does in this phase.
	Step Step
	// Warning phases are announced with a Warning event.
	Warning bool
	// Approvable phases take an approval; NotApprovable says why others
	// do not (a 409).
	Approvable    bool
	NotApprovable string
	// InactiveReason and InactiveMessage fill the phase's condition while
	// another phase is current.
	InactiveReason, InactiveMessage string
}

// Terminal is true when the controller leaves the phase alone until the
// spec changes.
func (p PhaseInfo) Terminal() bool { return p.Step == StepNone }

// phases is the one table of phases, in the order their conditions are
// written: a row for each of advisor.Phases, in that order. The approve
// subresource and the controller read it.
var phases = []PhaseInfo{
	{Phase: v1alpha1.PhaseIgnored, Step: StepDraft, Approvable: true,
		InactiveReason: "NotIgnored", InactiveMessage: "Configuration is being managed"},
	{Phase: v1alpha1.PhasePending, Step: StepDraft, Approvable: true,
		InactiveReason: "NotPending", InactiveMessage: "Not waiting to draft a plan"},
	{Phase: v1alpha1.PhaseDrafting, Step: StepDraft, Approvable: true,
		InactiveReason: "NotDrafting", InactiveMessage: "Plan generation completed"},
	{Phase: v1alpha1.PhasePrerequisiteFailed, Step: StepDraft, Warning: true,
		NotApprovable:  "phase is PrerequisiteFailed",
		InactiveReason: "PrerequisitesMet", InactiveMessage: "All prerequisites are installed"},
	{Phase: v1alpha1.PhaseReviewRequired, Step: StepDraft, Approvable: true,
		InactiveReason: "NotReviewRequired", InactiveMessage: "No plan is waiting for review"},
	{Phase: v1alpha1.PhaseInProgress, Step: StepProgress,
		NotApprovable:  "a plan is being applied (phase InProgress); wait until it finishes, then review and approve the next plan",
		InactiveReason: "NotInProgress", InactiveMessage: "Plan is not being applied"},
	{Phase: v1alpha1.PhaseCompleted, Step: StepCheck, Approvable: true,
		InactiveReason: "NotCompleted", InactiveMessage: "Plan not yet applied"},
	{Phase: v1alpha1.PhaseCompletedWithErrors, Step: StepCheck, Warning: true, Approvable: true,
		InactiveReason: "NotCompletedWithErrors", InactiveMessage: "No plan completed with errors"},
	{Phase: v1alpha1.PhaseCompletedWithUpgrade, Step: StepCheck, Approvable: true,
		InactiveReason: "NoUpgrade", InactiveMessage: "No newer profile logic to apply"},
	{Phase: v1alpha1.PhaseDrifted, Step: StepCheck, Warning: true, Approvable: true,
		InactiveReason: "NoDrift", InactiveMessage: "Configuration is in sync with desired state"},
	{Phase: v1alpha1.PhaseFailed, Step: StepNone, Warning: true, Approvable: true,
		InactiveReason: "NotFailed", InactiveMessage: "No failure"},
	// Aborted is terminal like Failed: nothing more of the aborted plan is
	// written; a new plan is reviewed and approved to go on.
	{Phase: v1alpha1.PhaseAborted, Step: StepNone, Warning: true, Approvable: true,
		InactiveReason: "NotAborted", InactiveMessage: "No plan was aborted"},
}

// noPhase is a config the controller has not looked at yet.
var noPhase = PhaseInfo{Step: StepDraft, Approvable: true}

// Lookup returns what the table says of phase; a config without a phase
// yet is drafted.
func Lookup(phase v1alpha1.ConfigPhase) (PhaseInfo, bool) {
	if phase == "" {
		return noPhase, true
	}
	for _, p := range phases {
		if p.Phase == phase {
			return p, true
		}
	}
	return PhaseInfo{}, false
}

// PhaseNames are the names of every phase of the table.
func PhaseNames() []string {
	names := make([]string, 0, len(phases))
	for _, p := range phases {
		names = append(names, string(p.Phase))
	}
	return names
}

// SetPhase makes phase current: status.phase and a True condition of that
// type with reason and message; every other phase condition turns False.
func SetPhase(st *v1alpha1.VirtPlatformConfigStatus, phase v1alpha1.ConfigPhase, reason, message string) {
	st.Phase = phase
	for _, p := range phases {
		c := metav1.Condition{Type: string(p.Phase), Status: metav1.ConditionFalse}
		switch {
		case p.Phase == phase:
			c.Status, c.Reason, c.Message = metav1.ConditionTrue, reason, message
		case phase == v1alpha1.PhaseIgnored:
			c.Reason, c.Message = "Ignored", "Not applicable - configuration is ignored"
		default:
			c.Reason, c.Message = p.InactiveReason, p.InactiveMessage
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
	p, _ := Lookup(phase)
	return p.Warning
}
