package status

import (
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubevirt/virt-advisor/pkg/apis/advisor/v1alpha1"
)

func TestWindowWaitMessageAndTimeToOpen(t *testing.T) {
	berlin, err := time.LoadLocation("Europe/Berlin")
	if err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 11, 27, 11, 0, 0, 0, time.UTC) // Fri
	opens := time.Date(2026, 11, 28, 21, 0, 0, 0, time.UTC)
	stored := WindowWaitMessage("weekend", opens, berlin, now, "before writing item 'psi'", "unused")
	if want := "Waiting for maintenance window 'weekend' (opens Sat 28 Nov 22:00 CET (21:00 UTC)) before writing item 'psi'"; stored != want {
		t.Fatalf("stored message %q, want %q", stored, want)
	}
	tests := []struct {
		name      string
		text      string
		opens, at time.Time
		want      string
	}{
		{"a day and a half before", stored, opens, now,
			"Waiting for maintenance window 'weekend' (opens Sat 28 Nov 22:00 CET (21:00 UTC), in 1d10h) before writing item 'psi'"},
		{"read a day later: the relative part follows the clock", stored, opens, now.Add(24 * time.Hour),
			"Waiting for maintenance window 'weekend' (opens Sat 28 Nov 22:00 CET (21:00 UTC), in 10h) before writing item 'psi'"},
		{"read after the opening, before the controller looked", stored, opens, opens.Add(90 * time.Second),
			"Waiting for maintenance window 'weekend' (opens Sat 28 Nov 22:00 CET (21:00 UTC), 1m30s ago) before writing item 'psi'"},
		{"no opening named", "Applying plan 1ca7b923a24b approved by admin", opens, now, "Applying plan 1ca7b923a24b approved by admin"},
		{"no time known", stored, time.Time{}, now, stored},
		{"parenthesis not closed", "Waiting (opens Sat", opens, now, "Waiting (opens Sat"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := WithTimeToOpen(tt.text, tt.opens, tt.at); got != tt.want {
				t.Errorf("got  %q\nwant %q", got, tt.want)
			}
		})
	}
	if got := WindowWaitMessage("", time.Time{}, berlin, now, "before writing item 'psi'", "maintenance windows cannot be read: boom"); got != "Waiting for a maintenance window before writing item 'psi': maintenance windows cannot be read: boom" {
		t.Errorf("no window: %q", got)
	}
}

// approved is a config whose plan was approved by admin; items are its
// items' states.
func approved(states ...v1alpha1.ItemState) *v1alpha1.VirtPlatformConfigStatus {
	st := &v1alpha1.VirtPlatformConfigStatus{Approval: &v1alpha1.ApprovalRecord{PlanHash: strings.Repeat("ab", 32), ApprovedBy: "admin", Generation: 2}}
	for _, s := range states {
		st.Items = append(st.Items, v1alpha1.VirtPlatformConfigItem{Name: "it", Operation: v1alpha1.OperationCreate, State: s})
	}
	SetPhase(st, v1alpha1.PhaseInProgress, "Approved", ApplyingMessage(st.Approval))
	return st
}

var windowWait = Wait{Reason: WaitingMaintenanceWindow, Message: "Waiting for maintenance window 'weekend' (opens Sat 28 Nov 22:00 CET (21:00 UTC)) before writing item 'it'"}

func TestWaitingConditionAndPhaseMessage(t *testing.T) {
	tests := []struct {
		name                  string
		st                    *v1alpha1.VirtPlatformConfigStatus
		do                    func(*v1alpha1.VirtPlatformConfigStatus)
		phase                 v1alpha1.ConfigPhase
		phaseReason, message  string
		waiting               metav1.ConditionStatus
		waitReason, notApprov string
	}{
		{name: "InProgress --wait for a window--> InProgress, Waiting True, nothing written", st: approved(v1alpha1.ItemStatePending),
			do:    func(st *v1alpha1.VirtPlatformConfigStatus) { MarkWaiting(st, 2, windowWait) },
			phase: v1alpha1.PhaseInProgress, phaseReason: "Waiting", waiting: metav1.ConditionTrue, waitReason: WaitingMaintenanceWindow,
			message:   windowWait.Message + "; plan abababababab approved by admin, nothing written yet",
			notApprov: "plan abababababab approved by admin is waiting (MaintenanceWindow: " + windowWait.Message + "); nothing of it is written yet"},
		{name: "InProgress (a person's approval) --wait for a window--> a spec change fails it", st: approved(v1alpha1.ItemStatePending),
			do:    func(st *v1alpha1.VirtPlatformConfigStatus) { MarkWaiting(st, 2, windowWait) },
			phase: v1alpha1.PhaseInProgress, phaseReason: "Waiting", waiting: metav1.ConditionTrue, waitReason: WaitingMaintenanceWindow,
			message: windowWait.Message, notApprov: "the waiting approval then lapses (phase Failed, reason ApprovalMismatch, nothing more written)"},
		{name: "InProgress (a policy's approval) --wait for a window--> a spec change goes back to the policies", st: func() *v1alpha1.VirtPlatformConfigStatus {
			st := approved(v1alpha1.ItemStatePending)
			st.Approval.ApprovedBy, st.Approval.Policy = "policy/quiet (set by carol)", &v1alpha1.ApprovalPolicyRef{Name: "quiet", UID: "u", Generation: 1}
			return st
		}(), do: func(st *v1alpha1.VirtPlatformConfigStatus) { MarkWaiting(st, 2, windowWait) },
			phase: v1alpha1.PhaseInProgress, phaseReason: "Waiting", waiting: metav1.ConditionTrue, waitReason: WaitingMaintenanceWindow,
			message:   windowWait.Message,
			notApprov: "the waiting approval then lapses (nothing more written) and the plan of the new spec goes to the approval policies like any other, or to a person"},
		{name: "InProgress (an item written) --wait for a window--> the message does not say nothing was written", st: approved(v1alpha1.ItemStateCompleted, v1alpha1.ItemStatePending),
			do:    func(st *v1alpha1.VirtPlatformConfigStatus) { MarkWaiting(st, 2, windowWait) },
			phase: v1alpha1.PhaseInProgress, phaseReason: "Waiting", waiting: metav1.ConditionTrue, waitReason: WaitingMaintenanceWindow,
			message: windowWait.Message + "; plan abababababab approved by admin", notApprov: "part of it is written"},
		{name: "InProgress (waiting) --wait ends--> InProgress, Waiting False, applying", st: approved(v1alpha1.ItemStatePending),
			do: func(st *v1alpha1.VirtPlatformConfigStatus) {
				MarkWaiting(st, 2, windowWait)
				ClearWaiting(st, 2)
			},
			phase: v1alpha1.PhaseInProgress, phaseReason: "Approved", message: "Applying plan abababababab approved by admin",
			waiting: metav1.ConditionFalse, waitReason: "NotWaiting", notApprov: "a plan is being applied"},
		{name: "InProgress (waiting) --Completed, then cleared--> Completed keeps its message", st: approved(v1alpha1.ItemStatePending),
			do: func(st *v1alpha1.VirtPlatformConfigStatus) {
				MarkWaiting(st, 2, windowWait)
				SetPhase(st, v1alpha1.PhaseCompleted, "Completed", MessageApplied)
				ClearWaiting(st, 2)
			},
			phase: v1alpha1.PhaseCompleted, phaseReason: "Completed", message: MessageApplied, waiting: metav1.ConditionFalse, waitReason: "NotWaiting"},
		{name: "never waited: no Waiting condition", st: approved(v1alpha1.ItemStatePending),
			do:    func(st *v1alpha1.VirtPlatformConfigStatus) { ClearWaiting(st, 2) },
			phase: v1alpha1.PhaseInProgress, phaseReason: "Approved", message: "Applying plan abababababab", notApprov: "a plan is being applied"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.do(tt.st)
			if tt.st.Phase != tt.phase {
				t.Fatalf("phase %s, want %s", tt.st.Phase, tt.phase)
			}
			c := meta.FindStatusCondition(tt.st.Conditions, string(tt.phase))
			if c.Reason != tt.phaseReason || !strings.Contains(c.Message, tt.message) {
				t.Errorf("phase condition %s %q, want %s containing %q", c.Reason, c.Message, tt.phaseReason, tt.message)
			}
			w := meta.FindStatusCondition(tt.st.Conditions, ConditionWaiting)
			switch {
			case tt.waiting == "" && w != nil:
				t.Errorf("Waiting = %+v, want none", w)
			case tt.waiting != "" && (w == nil || w.Status != tt.waiting || w.Reason != tt.waitReason):
				t.Errorf("Waiting = %+v, want %s %s", w, tt.waiting, tt.waitReason)
			}
			if w := WaitingFor(tt.st); w != nil && w.Reason == WaitingMaintenanceWindow {
				tt.st.Items[len(tt.st.Items)-1].MaintenanceWindow = &v1alpha1.WindowWait{Name: "weekend", OpensAt: &metav1.Time{Time: time.Date(2026, 11, 28, 21, 0, 0, 0, time.UTC)}}
				at := PhaseMessageAt(tt.st, time.Date(2026, 11, 27, 11, 0, 0, 0, time.UTC))
				if !strings.Contains(at, "(opens Sat 28 Nov 22:00 CET (21:00 UTC), in 1d10h) before writing item 'it'") {
					t.Errorf("PhaseMessageAt = %q, want the time until the opening", at)
				}
			} else if at := PhaseMessageAt(tt.st, time.Now()); at != PhaseMessage(tt.st) {
				t.Errorf("PhaseMessageAt = %q, want the stored message %q", at, PhaseMessage(tt.st))
			}
			if got := WhyNotApprovable(tt.st); !strings.Contains(got, tt.notApprov) || (tt.notApprov == "") != (got == "") {
				t.Errorf("WhyNotApprovable = %q, want it to contain %q", got, tt.notApprov)
			}
		})
	}
}
