package approval

import (
	"fmt"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubevirt/virt-advisor/pkg/apis/advisor/v1alpha1"
	"github.com/kubevirt/virt-advisor/pkg/machineconfig"
	"github.com/kubevirt/virt-advisor/pkg/status"
)

// Abort aborts the approved plan of cfg in place, as user at now: phase
// Aborted, the abort record, each item saying what became of it. It says
// why not, and what to do, when cfg has no approved plan being applied or
// planHash (when set) is not the approved plan's. The abort is written
// with the stored config's resourceVersion, so every write the
// controller checks against storage after it sees the abort.
func Abort(cfg *v1alpha1.VirtPlatformConfig, planHash, user string, now metav1.Time) (*v1alpha1.AbortRecord, error) {
	if err := abortable(cfg, planHash); err != nil {
		return nil, err
	}
	st := &cfg.Status
	a := st.Approval
	rec := &v1alpha1.AbortRecord{PlanHash: a.PlanHash, AbortedBy: user, AbortedAt: now, ApprovalSequence: a.Sequence,
		Held: Held(st.Items)}
	by := fmt.Sprintf("plan %s aborted by %s", v1alpha1.ShortHash(a.PlanHash), user)
	for i := range st.Items {
		it := &st.Items[i]
		switch abortedItem(it) {
		case itemWritten:
			rec.Written = append(rec.Written, it.Name)
			if it.State == v1alpha1.ItemStateInProgress && machineconfig.RollsPools(it.TargetRef) {
				// Not "updating" any more: the pools are paused before
				// the abort is answered.
				it.Message = "Written; its rollout stops: the " + by + ", the MachineConfigPools that render it are paused (a node already updating finishes, no other starts) until a plan is approved again"
			}
		case itemInFlight:
			rec.InFlight = append(rec.InFlight, it.Name)
			it.Message = "Its write had started when the " + by + ": it may have been written; the next plan shows what is live"
			it.Retry = nil
		case itemNotWritten:
			rec.NotWritten = append(rec.NotWritten, it.Name)
			it.Message = "Not written: the " + by
			it.MaintenanceWindow = nil
			it.LastTransitionTime = &now
		}
	}
	st.Abort = rec
	status.ClearWaiting(st, cfg.Generation)
	status.SetPhase(st, v1alpha1.PhaseAborted, "AbortedByUser", AbortMessage(a, rec))
	return rec, nil
}

// Held are the MachineConfigs and KubeletConfigs of items written or
// being written, whose pools an abort holds paused: recorded with the
// abort, the hold outlives the items (a spec change drafts others).
func Held(items []v1alpha1.VirtPlatformConfigItem) []v1alpha1.HeldConfig {
	var out []v1alpha1.HeldConfig
	for i := range items {
		it := &items[i]
		if it.State == v1alpha1.ItemStateInProgress && it.Operation != v1alpha1.OperationNone && machineconfig.RollsPools(it.TargetRef) {
			out = append(out, machineconfig.Held(machineconfig.ItemChange(it.TargetRef, it.DesiredState)))
		}
	}
	return out
}

type itemFate int

const (
	itemUntouched  itemFate = iota // nothing to write, or failed
	itemWritten                    // written (its rollout may go on)
	itemInFlight                   // its write had started: it may land
	itemNotWritten                 // pending: the abort keeps it unwritten
)

// abortedItem is what the abort makes of an item, by its state.
func abortedItem(it *v1alpha1.VirtPlatformConfigItem) itemFate {
	switch {
	case it.Operation == v1alpha1.OperationNone || it.State == v1alpha1.ItemStateFailed:
		return itemUntouched
	case it.State == v1alpha1.ItemStatePending:
		return itemNotWritten
	case it.State == v1alpha1.ItemStateInProgress && (it.Message == status.ItemApplying || it.Retry != nil):
		// The controller recorded its intent (or a failed attempt to be
		// retried): an attempt may be in flight.
		return itemInFlight
	}
	return itemWritten
}

// AbortMessage is phase Aborted's message.
func AbortMessage(a *v1alpha1.ApprovalRecord, rec *v1alpha1.AbortRecord) string {
	list := func(names []string) string {
		if len(names) == 0 {
			return "none"
		}
		return strings.Join(names, ", ")
	}
	msg := fmt.Sprintf("Plan %s approved by %s was aborted by %s: written: %s; not written: %s",
		v1alpha1.ShortHash(a.PlanHash), a.ApprovedBy, rec.AbortedBy, list(rec.Written), list(rec.NotWritten))
	if len(rec.InFlight) > 0 {
		msg += fmt.Sprintf("; being written when aborted (may have been written): %s", list(rec.InFlight))
	}
	return msg + ". The MachineConfigPools it was rolling out on stay paused by virt-advisor (a node already updating finishes). To go on, review the plan (it starts from what is live) and approve it; deleting the config also ends the pause"
}

// abortable says why cfg has no approved plan to abort, and what to do,
// if it has none; planHash, when set, must be the approved plan's.
func abortable(cfg *v1alpha1.VirtPlatformConfig, planHash string) error {
	st := &cfg.Status
	a := st.Approval
	switch {
	case st.Phase == v1alpha1.PhaseAborted && st.Abort != nil:
		return fmt.Errorf("plan %s was already aborted by %s at %s; nothing of it is being written. To go on, review the plan and approve it",
			v1alpha1.ShortHash(st.Abort.PlanHash), st.Abort.AbortedBy, st.Abort.AbortedAt.UTC().Format("2006-01-02T15:04:05Z"))
	case st.Phase != v1alpha1.PhaseInProgress || a == nil:
		return fmt.Errorf("no approved plan is being applied (phase %s): there is nothing to abort. An abort stops an approved plan while it is written or rolled out (phase InProgress); to change what is applied, change the spec, review the plan and approve it", phaseName(st.Phase))
	case planHash != "" && planHash != a.PlanHash:
		return fmt.Errorf("you asked to abort plan %s but the approved plan is %s (approved by %s): GET the config, and abort that plan if you mean to",
			v1alpha1.ShortHash(planHash), v1alpha1.ShortHash(a.PlanHash), a.ApprovedBy)
	}
	return nil
}

func phaseName(p v1alpha1.ConfigPhase) string {
	if p == "" {
		return "not set yet"
	}
	return string(p)
}
