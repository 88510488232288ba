package controller

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"sort"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/client-go/tools/record"

	"github.com/kubevirt/virt-advisor/pkg/apis/advisor/v1alpha1"
	"github.com/kubevirt/virt-advisor/pkg/cluster"
	"github.com/kubevirt/virt-advisor/pkg/plan"
	"github.com/kubevirt/virt-advisor/pkg/profiles"
	"github.com/kubevirt/virt-advisor/pkg/status"
)

// driftChecker is step check of the phase table: it looks at an applied
// config again (managed-field drift, input dependency drift, newer
// profile logic).
type driftChecker struct {
	planner   Planner
	recorder  record.EventRecorder
	metrics   Metrics
	version   string
	approvals *approvals
	out       outcomes
}

// changes is how a fresh plan differs from what was applied.
type changes struct {
	// drifted: items whose target no longer matches the applied desired
	// state, with the managed fields that differ.
	drifted map[string][]string
	// inputs: explanations of desired states that changed while the spec
	// and the build did not (an input such as the HCO changed).
	inputs []string
	// logic: desired states that changed because this build computes
	// them differently (an operator upgrade).
	logic []string
}

// recordApplied keeps what drift is measured against: the items as
// applied. status.items may then show a newer draft (after an input
// changed) without losing it.
func recordApplied(st *v1alpha1.VirtPlatformConfigStatus) {
	st.AppliedItems = make([]v1alpha1.AppliedItem, 0, len(st.Items))
	for _, it := range st.Items {
		st.AppliedItems = append(st.AppliedItems, v1alpha1.AppliedItem{
			Name: it.Name, TargetRef: it.TargetRef, Operation: it.Operation, State: it.State,
			DesiredState: it.DesiredState, ManagedFields: it.ManagedFields,
		})
	}
}

// appliedItems are the items of the last applied plan; a config applied
// before appliedItems existed has them in status.items.
func appliedItems(st *v1alpha1.VirtPlatformConfigStatus) []v1alpha1.VirtPlatformConfigItem {
	if st.AppliedItems == nil {
		return st.Items
	}
	items := make([]v1alpha1.VirtPlatformConfigItem, 0, len(st.AppliedItems))
	for _, a := range st.AppliedItems {
		items = append(items, v1alpha1.VirtPlatformConfigItem{
			Name: a.Name, TargetRef: a.TargetRef, Operation: a.Operation, State: a.State,
			DesiredState: a.DesiredState, ManagedFields: a.ManagedFields,
		})
	}
	return items
}

// inSyncItems are the items of a plan that matches what was applied.
func inSyncItems(res *plan.Result, now metav1.Time) []v1alpha1.VirtPlatformConfigItem {
	items := res.StatusItems(now)
	for i := range items {
		if items[i].State == v1alpha1.ItemStatePending {
			items[i].State, items[i].Message = v1alpha1.ItemStateCompleted, appliedMessage
		}
	}
	return items
}

// compare sets a fresh plan against the applied items.
func compare(cfg *v1alpha1.VirtPlatformConfig, profile profiles.Profile, res *plan.Result, version string) changes {
	applied := map[string]v1alpha1.VirtPlatformConfigItem{}
	for _, it := range appliedItems(&cfg.Status) {
		applied[it.Name] = it
	}
	ch := changes{drifted: map[string][]string{}}
	for _, p := range res.Status.Items {
		a, ok := applied[p.Name]
		// An item that failed is a known failure (CompletedWithErrors),
		// not drift; but a change of its desired state is an input
		// change like any other: it is never written without a review.
		failedBefore := ok && a.State == v1alpha1.ItemStateFailed
		if p.Error != "" {
			if !failedBefore {
				ch.drifted[p.Name] = []string{p.Error}
			}
			continue
		}
		if !ok || !sameJSON(a.DesiredState, p.DesiredState) {
			why := ""
			if ok {
				why = profile.DescribeInputChange(p.Name, rawMap(a.DesiredState), rawMap(p.DesiredState))
			}
			if cfg.Status.OperatorVersion != "" && cfg.Status.OperatorVersion != version {
				ch.logic = append(ch.logic, p.Name)
			} else if why != "" {
				ch.inputs = append(ch.inputs, why)
			} else {
				ch.inputs = append(ch.inputs, fmt.Sprintf("the desired state of item '%s' changed", p.Name))
			}
			continue
		}
		if p.Operation != v1alpha1.OperationNone && !failedBefore {
			ch.drifted[p.Name] = driftedFields(p, res)
		}
	}
	return ch
}

// check looks at an applied config again: managed-field drift, input
// dependency drift, newer profile logic, or nothing.
// Only targets changed (events): their drift is decided from the watch
// caches when it can be, without a plan (watchdrift.go).
func (d *driftChecker) check(ctx context.Context, cfg *v1alpha1.VirtPlatformConfig, profile profiles.Profile, eventAt time.Time, events sets.Set[cluster.ObjectKey]) (time.Duration, error) {
	st := &cfg.Status
	ch, fromWatch := d.fromWatch(ctx, cfg, events)
	var res *plan.Result
	if !fromWatch {
		var err error
		if res, err = d.planner.Compute(ctx, cfg); err != nil {
			return 0, err
		}
		if !res.Satisfied() {
			// An API we manage went away: say so, and come back when it returns.
			status.FailPrerequisites(st, res.MissingMessage())
			return prerequisiteRetry, nil
		}
		ch = compare(cfg, profile, res, d.version)
	}

	switch {
	case len(ch.logic) > 0:
		meta.SetStatusCondition(&st.Conditions, metav1.Condition{Type: status.ConditionUpgradeAvailable, Status: metav1.ConditionTrue,
			Reason: "LogicChanged", ObservedGeneration: cfg.Generation,
			Message: fmt.Sprintf("virt-advisor %s would configure %s differently than %s did; review the plan and approve it to upgrade",
				d.version, strings.Join(ch.logic, ", "), st.OperatorVersion)})
		status.SetPhase(st, v1alpha1.PhaseCompletedWithUpgrade, "UpgradeAvailable",
			fmt.Sprintf("Applied by %s; the profile logic of %s differs for: %s", st.OperatorVersion, d.version, strings.Join(ch.logic, ", ")))
		return 0, nil

	case len(ch.inputs) > 0:
		// An input changed: the new plan needs a human, even with Apply.
		status.MarkInputDrift(&cfg.Status, cfg.Generation, "Input dependency changed: "+strings.Join(ch.inputs, "; "))
		// The items show the new plan to review; what was applied stays
		// in appliedItems.
		if st.AppliedItems == nil {
			recordApplied(st)
		}
		st.Items = keepTransitionTimes(st.Items, res.StatusItems(metav1.NewTime(d.out.clock.Now())))
		return 0, nil

	case len(ch.drifted) > 0:
		return 0, d.drifted(ctx, cfg, res, ch.drifted, eventAt)
	}

	// In sync: what was applied is what this build would apply.
	status.ClearUpgrade(&cfg.Status, cfg.Generation, "NoLogicChange", "The applied configuration matches the profile logic of "+d.version)
	switch st.Phase {
	case v1alpha1.PhaseDrifted:
		for i := range st.Items {
			st.Items[i].Message = appliedMessage
		}
		d.recorder.Event(cfg, "Normal", "DriftResolved", "Configuration is back in sync with the desired state")
		d.out.completed(cfg, status.MessageApplied)
	case v1alpha1.PhaseCompletedWithUpgrade:
		d.out.completed(cfg, status.MessageApplied)
	}
	st.OperatorVersion = d.version
	return 0, nil
}

// drifted: targets no longer as applied. With action Apply and
// bypassOptimisticLock they are put back at once; otherwise the config is
// Drifted, each item saying which fields.
func (d *driftChecker) drifted(ctx context.Context, cfg *v1alpha1.VirtPlatformConfig, res *plan.Result, drifted map[string][]string, eventAt time.Time) error {
	st := &cfg.Status
	// A halted rollout is resumed by a person only, not by correcting drift.
	if cfg.Spec.Action == v1alpha1.PlanActionApply && cfg.Spec.BypassOptimisticLock && d.approvals.haltedNoPolicy(ctx, cfg) == "" {
		approved, err := d.approvals.standing(cfg, res)
		if err != nil {
			return err
		}
		if approved {
			d.recordDrift(cfg, eventAt)
			d.recorder.Eventf(cfg, "Normal", "DriftCorrection", "Correcting drift of %s (action Apply, bypassOptimisticLock)", driftSummary(drifted))
			return nil
		}
	}
	for i := range st.Items {
		if fields, ok := drifted[st.Items[i].Name]; ok {
			st.Items[i].Message = "Drifted: " + strings.Join(fields, ", ") + " no longer as applied"
		}
	}
	if st.Phase != v1alpha1.PhaseDrifted {
		d.recordDrift(cfg, eventAt)
	}
	status.SetPhase(st, v1alpha1.PhaseDrifted, "DriftDetected",
		fmt.Sprintf("%s: %s. Review the plan and approve it, or revert the change", status.MessageDrifted, driftSummary(drifted)))
	return nil
}

// recordDrift counts a detection and how long it took from the watch
// event that led to it (zero: no watch event, e.g. a resync).
func (d *driftChecker) recordDrift(cfg *v1alpha1.VirtPlatformConfig, eventAt time.Time) {
	d.metrics.DriftDetected(cfg.Spec.Profile)
	if !eventAt.IsZero() {
		d.metrics.DriftLatency(d.out.clock.Since(eventAt))
	}
}

// driftedFields names what drifted in an item of a fresh plan whose desired
// state is the applied one, from the comparison the plan made with the
// live object it read; fields set only by others are not drift.
func driftedFields(p v1alpha1.PlanItem, res *plan.Result) []string {
	if p.Operation == v1alpha1.OperationDelete || p.DesiredState == nil {
		return []string{"the object"}
	}
	fields, found := res.Differs[p.Name]
	switch {
	case !found:
		return []string{"the object (deleted)"}
	case len(fields) == 0:
		return []string{"labels or fields outside the managed ones"}
	}
	return fields
}

func driftSummary(drifted map[string][]string) string {
	var parts []string
	names := make([]string, 0, len(drifted))
	for name := range drifted {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		parts = append(parts, fmt.Sprintf("item '%s' (%s)", name, strings.Join(drifted[name], ", ")))
	}
	return strings.Join(parts, "; ")
}

func rawMap(r *runtime.RawExtension) map[string]interface{} {
	if r == nil || len(r.Raw) == 0 {
		return nil
	}
	var m map[string]interface{}
	if err := json.Unmarshal(r.Raw, &m); err != nil {
		return nil
	}
	return m
}

// sameJSON compares two desired states as JSON values.
func sameJSON(a, b *runtime.RawExtension) bool {
	return reflect.DeepEqual(rawMap(a), rawMap(b))
}
