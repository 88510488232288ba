package controller

import (
	"context"
	"errors"
	"sync"
	"time"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/kubevirt/virt-advisor/pkg/apis/advisor/v1alpha1"
	"github.com/kubevirt/virt-advisor/pkg/cluster"
	"github.com/kubevirt/virt-advisor/pkg/disruption"
	"github.com/kubevirt/virt-advisor/pkg/machineconfig"
	"github.com/kubevirt/virt-advisor/pkg/plan"
	"github.com/kubevirt/virt-advisor/pkg/profiles"
	"github.com/kubevirt/virt-advisor/pkg/status"
)

var everything = labels.Everything()

const (
	// applyingMessage marks an item whose write was started but not yet
	// confirmed: after a crash it is written again (server-side apply of
	// the same desired state changes nothing).
	applyingMessage  = status.ItemApplying
	appliedMessage   = "Applied successfully"
	unchangedMessage = "Already in desired state - no changes needed"
	// prerequisiteRetry re-checks missing prerequisites even without a CRD event.
	prerequisiteRetry = 2 * time.Minute
)

// reconcile moves one config through the state machine and writes its
// status when it changed. It returns when to look again, if ever.
func (c *Controller) reconcile(ctx context.Context, name string) (time.Duration, error) {
	cached, err := c.writes.cached(name)
	if errors.Is(err, errCacheBehind) {
		// The event of our last write brings the config back; the watch
		// events seen so far are left for that reconcile.
		return 0, nil
	}
	// The first watch event since the last reconcile, for the drift latency.
	eventAt, _ := c.events.take(name)
	objects := c.objects.take(name)
	if apierrors.IsNotFound(err) {
		c.Watches.Forget(name)
		c.writes.forget(name)
		c.retries.forget(name)
		c.seen.forget(name)
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	cfg := cached.DeepCopy()
	profile, ok := c.Profiles.Get(cfg.Spec.Profile)
	if !ok {
		return 0, nil // validation only admits known profiles
	}
	before := cfg.Status.DeepCopy()

	var requeue time.Duration
	if abortedByFleet(cfg, metav1.NewTime(c.clock.Now())) {
		return 0, c.writes.write(ctx, cfg, before)
	}
	switch step(cfg) {
	case workIgnore:
		ignore(cfg, profile.Metadata().Level)
	case workDraft:
		requeue, err = c.drafter.draft(ctx, cfg, profile)
	case workProgress:
		requeue, err = c.progress.progress(ctx, cfg)
		if err == nil && cfg.Status.Phase == v1alpha1.PhaseReviewRequired {
			// A policy's approval lapsed before a write: the policies
			// are asked again at once.
			requeue, err = c.drafter.draft(ctx, cfg, profile)
		}
	case workCheck:
		requeue, err = c.drift.check(ctx, cfg, profile, eventAt, objects)
	case workTrack:
		c.follow.track(ctx, cfg)
	}
	return c.finish(ctx, cfg, profile, before, requeue, err)
}

// finish ends a reconcile of cfg whose status was before: it declares
// what cfg depends on and writes the status when it changed. requeue and
// err are the step's.
func (c *Controller) finish(ctx context.Context, cfg *v1alpha1.VirtPlatformConfig, profile profiles.Profile, before *v1alpha1.VirtPlatformConfigStatus,
	requeue time.Duration, err error) (time.Duration, error) {
	if cfg.Status.Phase != v1alpha1.PhaseInProgress {
		// Only an approved plan waits (progress says for what).
		status.ClearWaiting(&cfg.Status, cfg.Generation)
	}
	c.watch(cfg, profile)
	if apiequality.Semantic.DeepEqual(before, &cfg.Status) {
		return requeue, err
	}
	if werr := c.writes.write(ctx, cfg, before); werr != nil {
		return 0, werr
	}
	return requeue, err
}

// work is what a reconcile does with a config: a step of the phase table
// of pkg/status, or one of the two the controller adds to it whatever the
// phase.
type work int

const (
	workNone     work = iota // status.StepNone: nothing until the spec changes
	workDraft                // status.StepDraft
	workProgress             // status.StepProgress
	workCheck                // status.StepCheck
	// workIgnore is the controller's answer to action Ignore, in any phase.
	workIgnore
	// workTrack follows the rollouts of MachineConfigs already written by
	// a config whose phase is terminal (Failed): its status follows
	// reality.
	workTrack
)

// workOf is the work of a step of the phase table.
func workOf(s status.Step) work {
	switch s {
	case status.StepDraft:
		return workDraft
	case status.StepProgress:
		return workProgress
	case status.StepCheck:
		return workCheck
	}
	return workNone
}

// step is what to do with cfg now: the phase table's step, except that
// a revert's pending writes are progressed and a written revert rests
// whatever the action, action Ignore wins over the rest, approved writes
// still pending are always progressed (progress fails them if the spec
// changed since the approval), and any other spec change re-plans.
func step(cfg *v1alpha1.VirtPlatformConfig) work {
	phase, known := status.Lookup(cfg.Status.Phase)
	switch {
	case reverting(cfg) && phase.Step == status.StepProgress:
		// A revert is written whatever the action: Ignore left in place
		// what the revert restores.
		return workProgress
	case reverted(cfg):
		return workNone
	case cfg.Spec.Action == v1alpha1.PlanActionIgnore:
		return workIgnore
	case phase.Step == status.StepProgress && writesPending(cfg.Status.Items):
		return workProgress
	case cfg.Status.ObservedGeneration != cfg.Generation || !known:
		return workDraft
	case phase.Terminal() && rollingOut(cfg.Status.Items):
		return workTrack
	}
	return workOf(phase.Step)
}

// ignore: nothing is rolled back and the items are kept; the pools an
// abort holds stay paused, and the message says how to release them.
func ignore(cfg *v1alpha1.VirtPlatformConfig, level v1alpha1.Impact) {
	st := &cfg.Status
	st.ObservedGeneration = cfg.Generation
	if st.ImpactSeverity == "" {
		st.ImpactSeverity = level
	}
	status.SetPhase(st, v1alpha1.PhaseIgnored, "Ignored", withHoldNote(cfg, status.MessageIgnored))
}

// withHoldNote adds to a phase message the pools an abort still holds.
func withHoldNote(cfg *v1alpha1.VirtPlatformConfig, message string) string {
	if note := status.AbortHoldNote(cfg); note != "" {
		return message + " " + note
	}
	return message
}

// errLookAgain marks errors that say nothing of an item (this replica's
// cache is behind storage, our own status write lost a race): the config
// is looked at again, the item keeps its state.
var errLookAgain = errors.New("look again")

// reverting is true while the approved plan is a revert.
func reverting(cfg *v1alpha1.VirtPlatformConfig) bool {
	return cfg.Status.Approval != nil && cfg.Status.Approval.Revert
}

// reverted is true once a revert was written and the spec did not change
// since: nothing is managed, the config stays Ignored.
func reverted(cfg *v1alpha1.VirtPlatformConfig) bool {
	return reverting(cfg) && cfg.Status.Phase == v1alpha1.PhaseIgnored && cfg.Status.ObservedGeneration == cfg.Generation
}

// watch declares what the config depends on: its targets, the pools of
// its MachineConfigs and the profile's input objects.
func (c *Controller) watch(cfg *v1alpha1.VirtPlatformConfig, profile profiles.Profile) {
	if cfg.Spec.Action == v1alpha1.PlanActionIgnore {
		c.Watches.Forget(cfg.Name)
		return
	}
	var keys []cluster.ObjectKey
	for i := range cfg.Status.Items {
		it := &cfg.Status.Items[i]
		keys = append(keys, cluster.ObjectKey{GVK: plan.TargetGVK(it.TargetRef), Namespace: it.TargetRef.Namespace, Name: it.TargetRef.Name})
		if rollsPools(it) {
			// A cluster upgrade's end lets a waiting item go on (preflight).
			keys = append(keys, cluster.ObjectKey{GVK: disruption.ClusterVersionGVK, Name: disruption.ClusterVersionName})
			if pool := machineconfig.ItemChange(it.TargetRef, it.DesiredState).PoolHint(); pool != "" {
				keys = append(keys, cluster.ObjectKey{GVK: machineconfig.MachineConfigPoolGVK, Name: pool})
			}
			for _, pc := range it.PoolConfigsBefore {
				keys = append(keys, cluster.ObjectKey{GVK: machineconfig.MachineConfigPoolGVK, Name: pc.Pool})
			}
		}
	}
	for _, pool := range c.seen.pools(cfg.Name) {
		keys = append(keys, cluster.ObjectKey{GVK: machineconfig.MachineConfigPoolGVK, Name: pool})
	}
	for _, in := range profile.InputObjects(c.Profiles.ResolveOptions(cfg.Spec)) {
		if in.Name == "" {
			// Every object of the kind: watched as a kind.
			if c.Kinds != nil {
				c.Kinds.Watch(in.GVK.GroupKind())
			}
			continue
		}
		keys = append(keys, cluster.ObjectKey{GVK: in.GVK, Namespace: in.Namespace, Name: in.Name})
	}
	c.Watches.Set(cfg.Name, keys)
}

// rollsPools is true for an item whose write rolls MachineConfigPools (a
// MachineConfig, or a KubeletConfig the MachineConfig operator renders
// into one): what the controller does for pools is done for it.
func rollsPools(it *v1alpha1.VirtPlatformConfigItem) bool {
	return machineconfig.RollsPools(it.TargetRef)
}

// rollingOut is true when a MachineConfig item was written and its
// rollout is not finished.
func rollingOut(items []v1alpha1.VirtPlatformConfigItem) bool {
	for i := range items {
		if itemRollingOut(&items[i]) {
			return true
		}
	}
	return false
}

// writePending is true for an item whose write has not been confirmed:
// not started, or started before a crash.
func itemRollingOut(it *v1alpha1.VirtPlatformConfigItem) bool {
	return it.State == v1alpha1.ItemStateInProgress && rollsPools(it) && !writePending(it)
}

func writePending(it *v1alpha1.VirtPlatformConfigItem) bool {
	return it.State == v1alpha1.ItemStatePending || (it.State == v1alpha1.ItemStateInProgress && (it.Message == applyingMessage || it.Retry != nil))
}

func writesPending(items []v1alpha1.VirtPlatformConfigItem) bool {
	for i := range items {
		if writePending(&items[i]) {
			return true
		}
	}
	return false
}

func notStarted(items []v1alpha1.VirtPlatformConfigItem) bool {
	for _, it := range items {
		if it.State != v1alpha1.ItemStatePending && it.State != v1alpha1.ItemStateFailed {
			return false
		}
	}
	return true
}

// keepTransitionTimes keeps the time of items whose state did not change,
// so that an unchanged plan writes nothing.
func keepTransitionTimes(old, items []v1alpha1.VirtPlatformConfigItem) []v1alpha1.VirtPlatformConfigItem {
	byName := map[string]v1alpha1.VirtPlatformConfigItem{}
	for _, it := range old {
		byName[it.Name] = it
	}
	for i := range items {
		if prev, ok := byName[items[i].Name]; ok && prev.State == items[i].State && prev.LastTransitionTime != nil {
			items[i].LastTransitionTime = prev.LastTransitionTime
		}
	}
	return items
}

// eventTimes remembers when a watch event arrived per config.
type eventTimes struct {
	mu    sync.Mutex
	times map[string]time.Time
}

func newEventTimes() *eventTimes { return &eventTimes{times: map[string]time.Time{}} }

func (e *eventTimes) seen(config string, t time.Time) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if _, ok := e.times[config]; !ok {
		e.times[config] = t
	}
}

// take returns and forgets the first event time since the last take.
func (e *eventTimes) take(config string) (time.Time, bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	t, ok := e.times[config]
	delete(e.times, config)
	return t, ok
}
