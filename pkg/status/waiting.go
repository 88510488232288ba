package status

import (
	"fmt"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubevirt/virt-advisor/pkg/apis/advisor/v1alpha1"
	"github.com/kubevirt/virt-advisor/pkg/maintenance"
)

// ConditionWaiting is True while an approved plan waits before a write
// or with a rollout paused: the phase stays InProgress, and its message
// and this condition say for what. Its reasons are the Waiting* below.
const ConditionWaiting = "Waiting"

// Reasons of the Waiting condition.
const (
	// WaitingMaintenanceWindow: a pool the item rolls may not be disrupted
	// now (no Allow window open, or a freeze).
	WaitingMaintenanceWindow = "MaintenanceWindow"
	// WaitingDrainBlocked: a VM would block the drain of a node.
	WaitingDrainBlocked = "DrainBlocked"
	// WaitingPoolBusy: a pool is rolling out something else, paused by
	// someone else, or degraded.
	WaitingPoolBusy = "PoolBusy"
	// WaitingClusterUpgrading: the cluster is being upgraded.
	WaitingClusterUpgrading = "ClusterUpgrading"
	// WaitingAdmissionPolicy: an admission policy that confines the
	// server's writes of the item's kind is missing or not as shipped
	// (pkg/confinement): nothing of that kind is written until it is.
	WaitingAdmissionPolicy = "AdmissionPolicyNotInForce"
	// WaitingRolloutHalted: a gate tripped between two steps of a pool's
	// rollout; only an approver ends it (approve again, abort, revert).
	WaitingRolloutHalted = "RolloutHalted"
	// WaitingGate: a step of a pool's rollout is over when its gates pass
	// (a node coming back, the soak, the alerts being read).
	WaitingGate = "RolloutGate"
)

// Wait is what an approved plan waits for.
type Wait struct {
	// Reason is one of the Waiting* reasons.
	Reason string
	// Message says it, with absolute times only: stored text must not go
	// stale ("opens Sat 28 Nov 22:00 CET (21:00 UTC)", never "in 1d10h").
	Message string
}

// WindowWaitMessage: "Waiting for maintenance window 'weekend' (opens Sat
// 28 Nov 22:00 CET (21:00 UTC)) to write item 'enable-psi-metrics'". what
// is "to write item '…'" or "to resume the rollout of item '…'"; window
// "" is a wait whose end is not in sight, said by reason.
func WindowWaitMessage(window string, opensAt time.Time, loc *time.Location, now time.Time, what, reason string) string {
	if window == "" || opensAt.IsZero() {
		return fmt.Sprintf("Waiting for a maintenance window %s: %s", what, reason)
	}
	return fmt.Sprintf("Waiting for maintenance window '%s' %s%s) %s", window, opensPrefix, maintenance.FormatAt(opensAt, loc, now), what)
}

// opensPrefix starts the parenthesis WithTimeToOpen completes.
const opensPrefix = "(opens "

// WithTimeToOpen adds, when text is read, how far away the opening it
// names is: "(opens Sat 28 Nov 22:00 CET (21:00 UTC))" becomes "(opens Sat
// 28 Nov 22:00 CET (21:00 UTC), in 1d10h)". Text without such a
// parenthesis, or a zero opensAt, is returned as it is.
func WithTimeToOpen(text string, opensAt, now time.Time) string {
	start := strings.Index(text, opensPrefix)
	if start < 0 || opensAt.IsZero() {
		return text
	}
	depth := 0
	for i := start; i < len(text); i++ {
		switch text[i] {
		case '(':
			depth++
		case ')':
			depth--
			if depth == 0 {
				return text[:i] + ", " + maintenance.FormatFrom(opensAt, now) + text[i:]
			}
		}
	}
	return text
}

// MarkWaiting: the approved plan waits. The phase stays InProgress; its
// message says for what and whose plan it is, and the Waiting condition
// turns True with the wait's reason.
func MarkWaiting(st *v1alpha1.VirtPlatformConfigStatus, generation int64, w Wait) {
	meta.SetStatusCondition(&st.Conditions, metav1.Condition{Type: ConditionWaiting, Status: metav1.ConditionTrue,
		Reason: w.Reason, Message: w.Message, ObservedGeneration: generation})
	SetPhase(st, v1alpha1.PhaseInProgress, "Waiting", w.Message+approvedNote(st))
}

// ClearWaiting turns Waiting False when it was True: the wait ended (the
// item was written, the rollout resumed) or the plan left InProgress. A
// config still InProgress says again that its plan is being applied.
func ClearWaiting(st *v1alpha1.VirtPlatformConfigStatus, generation int64) {
	if c := meta.FindStatusCondition(st.Conditions, ConditionWaiting); c == nil || c.Status != metav1.ConditionTrue {
		return
	}
	clear(st, ConditionWaiting, generation, "NotWaiting", "The approved plan waits for nothing")
	if st.Phase == v1alpha1.PhaseInProgress && st.Approval != nil {
		SetPhase(st, v1alpha1.PhaseInProgress, "Approved", ApplyingMessage(st.Approval))
	}
}

// ApplyingMessage is InProgress's message while an approved plan is
// being written or rolled out.
func ApplyingMessage(a *v1alpha1.ApprovalRecord) string {
	return fmt.Sprintf("Applying plan %s approved by %s", v1alpha1.ShortHash(a.PlanHash), a.ApprovedBy)
}

// approvedNote: "; plan 1ca7b923a24b approved by admin, nothing written
// yet".
func approvedNote(st *v1alpha1.VirtPlatformConfigStatus) string {
	if st.Approval == nil {
		return ""
	}
	note := fmt.Sprintf("; plan %s approved by %s", v1alpha1.ShortHash(st.Approval.PlanHash), st.Approval.ApprovedBy)
	if nothingWritten(st.Items) {
		note += ", nothing written yet"
	}
	return note
}

// nothingWritten: no item of the plan was written nor is being written.
func nothingWritten(items []v1alpha1.VirtPlatformConfigItem) bool {
	for _, it := range items {
		if it.State != v1alpha1.ItemStatePending && it.Operation != v1alpha1.OperationNone {
			return false
		}
	}
	return true
}

// WaitingFor is the Waiting condition while it is True, else nil.
func WaitingFor(st *v1alpha1.VirtPlatformConfigStatus) *metav1.Condition {
	if c := meta.FindStatusCondition(st.Conditions, ConditionWaiting); c != nil && c.Status == metav1.ConditionTrue {
		return c
	}
	return nil
}

// WhyNotApprovable says why a config takes no approval now, "" when it
// does: the table's NotApprovable, except for an approved plan that only
// waits, which is said as such with what to do.
func WhyNotApprovable(st *v1alpha1.VirtPlatformConfigStatus) string {
	p, known := Lookup(st.Phase)
	switch {
	case !known:
		return fmt.Sprintf("phase %s is not known to this server", st.Phase)
	case p.Approvable:
		return ""
	}
	if Halted(st) {
		return "" // an approval of the live plan resumes a halted rollout
	}
	if w := WaitingFor(st); w != nil && st.Phase == v1alpha1.PhaseInProgress && st.Approval != nil {
		written := "part of it is written"
		if nothingWritten(st.Items) {
			written = "nothing of it is written yet"
		}
		lapse := "(phase Failed, reason ApprovalMismatch, nothing more written) and the plan of the new spec can be reviewed and approved"
		if st.Approval.Policy != nil {
			// A policy's approval of an earlier spec lapses without a failure.
			lapse = "(nothing more written) and the plan of the new spec goes to the approval policies like any other, or to a person"
		}
		return fmt.Sprintf("plan %s approved by %s is waiting (%s: %s); %s, and it is applied when the wait ends. To apply another plan instead, change the spec: the waiting approval then lapses %s",
			v1alpha1.ShortHash(st.Approval.PlanHash), st.Approval.ApprovedBy, w.Reason, w.Message, written, lapse)
	}
	return p.NotApprovable
}

// PhaseMessageAt is the message of the current phase as it is shown at
// now: while the plan waits for a maintenance window, with how far away
// the opening is (WithTimeToOpen, the first item waiting for one).
func PhaseMessageAt(st *v1alpha1.VirtPlatformConfigStatus, now time.Time) string {
	msg := PhaseMessage(st)
	if w := WaitingFor(st); w == nil || w.Reason != WaitingMaintenanceWindow {
		return msg
	}
	for _, it := range st.Items {
		if w := it.MaintenanceWindow; w != nil && w.OpensAt != nil {
			return WithTimeToOpen(msg, w.OpensAt.Time, now)
		}
	}
	return msg
}

// Halted is true while a gate halts the rollout of the approved plan: an
// approval of the live plan (resume) or of the revert plan ends it.
func Halted(st *v1alpha1.VirtPlatformConfigStatus) bool {
	w := WaitingFor(st)
	return w != nil && w.Reason == WaitingRolloutHalted && st.Phase == v1alpha1.PhaseInProgress
}
