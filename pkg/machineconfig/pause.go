package machineconfig

// One reboot per node: before a MachineConfig item is written, every pool
// that renders it is paused (spec.paused applied by our field manager) for
// a coalescing window, so that the MachineConfig changes approved within
// it render into one config and every node reboots once. The window's end
// is kept on the pool itself (PausedUntilAnnotation, in the same apply as
// spec.paused), so whichever replica leads next finishes it. Unpausing
// withdraws our ownership of spec.paused: a pool someone else also paused
// stays paused. This file decides; the controller reads and writes.

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kubevirt/virt-advisor/pkg/apis/advisor/v1alpha1"
)

const (
	// PausedUntilAnnotation on a MachineConfigPool is the end of the
	// coalescing window of a pause we hold (RFC 3339).
	PausedUntilAnnotation = "advisor.kubevirt.io/paused-until"
	// HoldAnnotation on a MachineConfigPool is an administrator's hold:
	// while it is there virt-advisor writes no MachineConfig the pool
	// renders and never ends a pause of the pool, its own included. A
	// `kubectl patch … paused: true` on a pool we already paused changes
	// nothing, so no field ownership records it and ending our pause would
	// unpause the pool; the annotation is the hold that cannot be lost.
	HoldAnnotation = "advisor.kubevirt.io/hold"
	// PausedForAnnotation on a MachineConfigPool names the maintenance
	// window whose close made us pause it mid-rollout; a pause of ours
	// without it is a coalescing pause.
	PausedForAnnotation = "advisor.kubevirt.io/paused-for-window"
	// HeldRetry is how often a held pool we paused is looked at again.
	HeldRetry = 10 * time.Second
	// HoldRetry is how often a window that ended is looked at again while
	// approved MachineConfig items for its pool are still being written.
	HoldRetry = time.Second
)

// PoolPause is what the coalescing decisions read of a MachineConfigPool.
type PoolPause struct {
	Name   string
	Paused bool
	// ours: our field manager applied spec.paused; others: every other
	// manager owning it.
	Ours   bool
	Others []string
	// until is the end of our window, zero when not recorded.
	Until time.Time
	// ForWindow: we paused it because this maintenance window closed
	// mid-rollout ("" for a coalescing pause).
	ForWindow string
	// Unmarked: spec.paused is ours but neither PausedUntilAnnotation nor
	// PausedForAnnotation is on the pool (someone removed them). The
	// admission policy (artifacts/deploy) lets the server end only a
	// pause that carries one, so this one is no longer ours to end.
	Unmarked bool
	// held: an administrator's HoldAnnotation is set (its value, the
	// reason, in hold).
	Held bool
	Hold string
	// Halt: a gate tripped between two steps of a rollout on the pool
	// (HaltAnnotation); nil when none did.
	Halt                     *PoolHalt
	SpecConfig, StatusConfig string
	// hasChange: spec.configuration already renders the item's change (its
	// MachineConfig is in the source, or gone from it for a delete).
	HasChange        bool
	Degraded         bool
	DegradedMachines int64
}

// ReadPool reads a pool for writing MachineConfig mc with operation op;
// manager is our field manager.
func ReadPool(pool *unstructured.Unstructured, manager, mc string, op v1alpha1.Operation) PoolPause {
	p := PoolPause{Name: pool.GetName()}
	p.Paused, _, _ = unstructured.NestedBool(pool.Object, "spec", "paused")
	p.Ours, p.Others = PausedOwners(pool, manager)
	p.Hold, p.Held = pool.GetAnnotations()[HoldAnnotation]
	p.Halt = ReadHalt(pool)
	if t, err := time.Parse(time.RFC3339, pool.GetAnnotations()[PausedUntilAnnotation]); err == nil {
		p.Until = t
	}
	p.ForWindow = pool.GetAnnotations()[PausedForAnnotation]
	_, until := pool.GetAnnotations()[PausedUntilAnnotation]
	_, forWindow := pool.GetAnnotations()[PausedForAnnotation]
	p.Unmarked = p.Ours && !until && !forWindow
	p.SpecConfig, _, _ = unstructured.NestedString(pool.Object, "spec", "configuration", "name")
	p.StatusConfig, _, _ = unstructured.NestedString(pool.Object, "status", "configuration", "name")
	p.HasChange = HasSource(pool, "spec", mc) == (op != v1alpha1.OperationDelete)
	p.DegradedMachines, _, _ = unstructured.NestedInt64(pool.Object, "status", "degradedMachineCount")
	p.Degraded = p.DegradedMachines > 0 || ConditionTrue(pool, "Degraded") || ConditionTrue(pool, "NodeDegraded")
	return p
}

// PausedOwners tells who owns spec.paused: the applies of manager (ours),
// and the others.
func PausedOwners(pool *unstructured.Unstructured, manager string) (ours bool, others []string) {
	for _, mf := range pausedEntries(pool) {
		if mf.Manager == manager && mf.Operation == metav1.ManagedFieldsOperationApply {
			ours = true
		} else {
			others = append(others, mf.Manager)
		}
	}
	sort.Strings(others)
	return ours, others
}

// PausedManagers names every field manager that owns spec.paused.
func PausedManagers(pool *unstructured.Unstructured) []string {
	var out []string
	for _, mf := range pausedEntries(pool) {
		out = append(out, mf.Manager)
	}
	return out
}

// pausedEntries are the managed-fields entries of the pool (not of its
// status) that own spec.paused.
func pausedEntries(pool *unstructured.Unstructured) []metav1.ManagedFieldsEntry {
	var out []metav1.ManagedFieldsEntry
	for _, mf := range pool.GetManagedFields() {
		if mf.Subresource != "" || mf.FieldsV1 == nil {
			continue
		}
		var fields struct {
			Spec map[string]json.RawMessage `json:"f:spec"`
		}
		if json.Unmarshal(mf.FieldsV1.Raw, &fields) != nil {
			continue
		}
		if _, ok := fields.Spec["f:paused"]; ok {
			out = append(out, mf)
		}
	}
	return out
}

type WriteAction int

const (
	// WriteNow: write the item (the pool is ours to write to, or no
	// coalescing is wanted).
	WriteNow WriteAction = iota
	// PauseThenWrite: pause the pool for a window, then write.
	PauseThenWrite
	// WaitToWrite: write nothing yet; the reason says why.
	WaitToWrite
)

// DecideWrite is what to do with pool p when a MachineConfig item it
// renders is due. A pool paused by someone else is never taken over; a
// degraded pool or one updating to a config without this change gets no
// second rollout piled onto the first.
func DecideWrite(p PoolPause, mc string, window time.Duration) (WriteAction, string) {
	switch {
	case p.Held:
		return WaitToWrite, fmt.Sprintf("MachineConfigPool '%s' is held by an administrator (annotation %s: %q); the change is written when the annotation is removed", p.Name, HoldAnnotation, p.Hold)
	case p.Halt != nil:
		return WaitToWrite, fmt.Sprintf("the rollout on MachineConfigPool '%s' is halted (gate %s: %s); the change is written when an approver resumes (approves again), aborts or reverts the rollout", p.Name, p.Halt.Gate, p.Halt.Message)
	case p.Paused && p.Unmarked:
		return WaitToWrite, fmt.Sprintf("MachineConfigPool '%s' is paused by virt-advisor, but its annotation %s was removed: virt-advisor ends only a pause that carries it (the admission policy refuses any other unpause), so the pool stays paused until someone unpauses it or sets the annotation again; the change is written then", p.Name, PausedUntilAnnotation)
	case p.Paused && (!p.Ours || len(p.Others) > 0):
		by := "no field manager recorded"
		if len(p.Others) > 0 {
			by = "field manager " + strings.Join(p.Others, ", ")
		}
		return WaitToWrite, fmt.Sprintf("MachineConfigPool '%s' is paused by someone else (%s); virt-advisor never unpauses it: the change is written when the pool is unpaused", p.Name, by)
	case p.Degraded:
		return WaitToWrite, fmt.Sprintf("MachineConfigPool '%s' is degraded (%d degraded machines); the change is written when it is no longer degraded", p.Name, p.DegradedMachines)
	case p.Paused:
		return WriteNow, "" // our window: the change joins it
	case p.SpecConfig != p.StatusConfig && !p.HasChange:
		return WaitToWrite, fmt.Sprintf("MachineConfigPool '%s' is updating to %s, which does not include MachineConfig '%s'; the change is written when it is done", p.Name, p.SpecConfig, mc)
	case p.SpecConfig != p.StatusConfig:
		// Rolling out this change already (written before a crash): a
		// pause would only hold the nodes in the middle of it.
		return WriteNow, ""
	case window <= 0:
		return WriteNow, ""
	default:
		return PauseThenWrite, ""
	}
}

// DecideUnpause is what to do with a pool at now: unpause it, or look
// again after the returned duration (zero: never, it is not paused by us).
// After the window ends, the pause is held while approved MachineConfig
// items for the pool are still due (due), at most one more window, so that
// they join this rollout rather than start another.
//
// closed: the pool's maintenance window is closed (its nodes may not be
// disrupted) and opens again after opensIn; our pause then lasts until it
// opens, whatever its recorded end. A pause for a window ends as soon as
// the pool may be disrupted again (an Allow window added, a freeze lifted),
// whatever its recorded end.
func DecideUnpause(p PoolPause, now time.Time, due bool, window time.Duration, closed bool, opensIn time.Duration) (bool, time.Duration) {
	switch {
	case !p.Ours, p.Unmarked:
		return false, 0 // not ours, or no longer ours to end
	case p.Held:
		return false, HeldRetry // an administrator's hold outlasts our window
	case closed:
		return false, opensIn
	case p.ForWindow != "":
		return true, 0
	case p.Until.IsZero():
		return true, 0 // a pause of ours whose end is no time: end it
	case now.Before(p.Until):
		return false, p.Until.Sub(now)
	case due && !p.Degraded && now.Before(p.Until.Add(window)):
		return false, HoldRetry
	default:
		return true, 0
	}
}

// PausedBy says whether manager alone holds the pool paused, and until
// when (for the rollout message).
func PausedBy(pool *unstructured.Unstructured, manager string) (time.Time, bool) {
	if pool == nil {
		return time.Time{}, false
	}
	p := ReadPool(pool, manager, "", "")
	return p.Until, p.Paused && p.Ours && len(p.Others) == 0
}

// UnpauseMessage says what ending our pause of a pool does.
func UnpauseMessage(p PoolPause) string {
	if len(p.Others) > 0 {
		return fmt.Sprintf("virt-advisor ended its pause; spec.paused stays as field manager %s set it", strings.Join(p.Others, ", "))
	}
	return "virt-advisor ended its pause: the MachineConfig changes written meanwhile roll out together"
}

// DecideWindowPause is whether to pause a pool now because its
// maintenance window closed during a rollout: its nodes may no longer be
// disrupted, it still has nodes to update, and nobody paused it yet (a
// pool paused by someone else stays theirs; one paused by us stays paused
// until the window opens, see DecideUnpause).
func DecideWindowPause(p PoolPause, rolling, allowed bool) bool {
	return !allowed && rolling && !p.Paused
}

// RollingOut is true while the pool has nodes to update: its spec names
// another rendered config than its nodes run, or it reports Updating.
func RollingOut(pool *unstructured.Unstructured) bool {
	spec, _, _ := unstructured.NestedString(pool.Object, "spec", "configuration", "name")
	status, _, _ := unstructured.NestedString(pool.Object, "status", "configuration", "name")
	return spec != status || ConditionTrue(pool, "Updating")
}
