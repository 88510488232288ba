package status

import (
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubevirt/virt-advisor/pkg/apis/advisor/v1alpha1"
)

// The named steps of the state machine that more than one edge takes.

// FailPrerequisites: an API the profile needs is missing (never installed,
// or removed while managed); there are no items until it returns. message
// lists what is missing.
func FailPrerequisites(st *v1alpha1.VirtPlatformConfigStatus, message string) {
	st.Items = nil
	SetPhase(st, v1alpha1.PhasePrerequisiteFailed, "PrerequisitesFailed", message)
}

// MarkInputDrift: an input such as the HCO changed the plan; it needs a
// review even with action Apply.
func MarkInputDrift(st *v1alpha1.VirtPlatformConfigStatus, generation int64, message string) {
	meta.SetStatusCondition(&st.Conditions, metav1.Condition{Type: ConditionInputDependencyDrift, Status: metav1.ConditionTrue,
		Reason: "InputChanged", Message: message, ObservedGeneration: generation})
	SetPhase(st, v1alpha1.PhaseReviewRequired, "InputDependencyDrift", message+". "+MessageReview)
}

// ClearInputDrift turns InputDependencyDrift False when it was True: a
// spec change or an approval acknowledged it (reason Acknowledged), or the
// input was reverted (DriftResolved).
func ClearInputDrift(st *v1alpha1.VirtPlatformConfigStatus, generation int64, reason, message string) {
	clear(st, ConditionInputDependencyDrift, generation, reason, message)
}

// MarkPartiallyApplied sets PartiallyApplied True with what was written.
func MarkPartiallyApplied(st *v1alpha1.VirtPlatformConfigStatus, generation int64, message string) {
	meta.SetStatusCondition(&st.Conditions, metav1.Condition{Type: ConditionPartiallyApplied, Status: metav1.ConditionTrue,
		Reason: "ItemsNotWritten", Message: message, ObservedGeneration: generation})
}

// ClearPartiallyApplied turns PartiallyApplied False when it was True: a
// plan was applied in full.
func ClearPartiallyApplied(st *v1alpha1.VirtPlatformConfigStatus, generation int64) {
	clear(st, ConditionPartiallyApplied, generation, "Applied", "Every item of the last approved plan was written")
}

// ClearUpgrade turns UpgradeAvailable False when it was True: the newer
// logic was applied (reason Applied) or matches what was (NoLogicChange).
func ClearUpgrade(st *v1alpha1.VirtPlatformConfigStatus, generation int64, reason, message string) {
	clear(st, ConditionUpgradeAvailable, generation, reason, message)
}

func clear(st *v1alpha1.VirtPlatformConfigStatus, condition string, generation int64, reason, message string) {
	if c := meta.FindStatusCondition(st.Conditions, condition); c == nil || c.Status != metav1.ConditionTrue {
		return
	}
	meta.SetStatusCondition(&st.Conditions, metav1.Condition{Type: condition, Status: metav1.ConditionFalse,
		Reason: reason, Message: message, ObservedGeneration: generation})
}

// ItemDue is when an approved item became due for writing: the approval,
// or the item's own last transition if later; nil when neither is known.
// The controller's waitTimeout and the metrics' waiting time count from it.
func ItemDue(st *v1alpha1.VirtPlatformConfigStatus, it *v1alpha1.VirtPlatformConfigItem) *metav1.Time {
	due := it.LastTransitionTime
	if a := st.Approval; a != nil && (due == nil || a.ApprovedAt.After(due.Time)) {
		due = &a.ApprovedAt
	}
	return due
}
