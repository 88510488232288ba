// Package plan computes and applies plans: for each item of a profile the
// desired object, a server-side apply dry-run against the main cluster and
// a unified diff of live vs. dry-run result. The plan subresource and the
// controller share it, so the diff a user reviews is computed by the code
// that applies.
package plan

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/client-go/dynamic"
	"k8s.io/utils/clock"

	"github.com/kubevirt/virt-advisor/pkg/cluster"
	"github.com/kubevirt/virt-advisor/pkg/kubevirt"
	"github.com/kubevirt/virt-advisor/pkg/maintenance"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kubevirt/virt-advisor/pkg/apis/advisor/v1alpha1"
	"github.com/kubevirt/virt-advisor/pkg/profiles"
)

// Cluster is what the engine uses of the main cluster (*cluster.Cluster):
// reads, dry-runs and applies by kind, and the watch caches of inputs.
type Cluster interface {
	Resource(gvk schema.GroupVersionKind, namespace string) (dynamic.ResourceInterface, error)
	Get(ctx context.Context, gvk schema.GroupVersionKind, namespace, name string) (*unstructured.Unstructured, error)
	// GetAbsentAt reads an object expected not to exist, and the
	// resourceVersion of that read (a create's precondition).
	GetAbsentAt(ctx context.Context, gvk schema.GroupVersionKind, namespace, name string) (*unstructured.Unstructured, string, error)
	List(ctx context.Context, gvk schema.GroupVersionKind) ([]unstructured.Unstructured, error)
	Served(gvk schema.GroupVersionKind) (bool, error)
	ServedNow(gvk schema.GroupVersionKind) bool
	PreferredVersion(gk schema.GroupKind) (string, error)
	ListVMIs(ctx context.Context) ([]kubevirt.VMI, bool, error)
	// InputWatches caches the objects plans read as inputs; nil: none.
	InputWatches() *cluster.Watches
}

var _ Cluster = &cluster.Cluster{}

// Profiles finds a profile by name (the catalogue of this build,
// pkg/profiles/catalog): the engine depends on no concrete profile.
type Profiles interface {
	Get(name string) (profiles.Profile, bool)
}

// Metrics is what the engine records (*metrics.Recorder).
type Metrics interface {
	// PlanComputed records the outcome of a plan computation of profile.
	PlanComputed(profile string, failed bool)
	// CapacityChecked records the time a capacity check computed.
	CapacityChecked(d time.Duration)
}

// Engine computes plans.
type Engine struct {
	// placement is what the capacity check keeps across plans (capacity.go).
	placement placementMemo
	// assessed are the last assessments of each pool made from the caches
	// (assessmemo.go).
	assessed assessMemo

	Cluster  Cluster
	Profiles Profiles
	// Metrics, if set, records the outcome of every plan computation.
	Metrics Metrics
	// Clock is the real clock if nil.
	Clock clock.PassiveClock
	// NodeVMs, if set, serves the Nodes and VMIs plans read (nodevms.go);
	// nil reads them live.
	NodeVMs NodeVMs
	// Pods, if set, serves the launchers and requests per node the
	// capacity check reads (capacity.go); nil lists them live.
	Pods Pods
	// Gates are the server's defaults for the gates between the steps of
	// a pool's rollout.
	Gates GateDefaults

	// windows are the maintenance windows the plan tells the approver
	// about (when each MachineConfig item would be written).
	windows atomic.Pointer[maintenance.Lister]
}

// SetMaintenanceWindows sets where the plan reads the maintenance windows;
// until set, plans say nothing of them.
func (e *Engine) SetMaintenanceWindows(l maintenance.Lister) { e.windows.Store(&l) }

func (e *Engine) now() time.Time {
	if e.Clock == nil {
		return time.Now()
	}
	return e.Clock.Now()
}

// Result is a computed plan and what the controller needs to apply it.
type Result struct {
	Status v1alpha1.PlanStatus
	// SnapshotHash covers the live values of the managed fields only.
	SnapshotHash string
	// Desired are the objects to apply (nil for Delete items), by item name.
	Desired map[string]*unstructured.Unstructured
	// Differs lists, by item name, the managed fields whose live value
	// differs from the desired one, read from the live object the plan was
	// computed from; only items with a desired state whose target exists
	// are listed (an empty list: the managed fields are as desired).
	Differs map[string][]string
	// Targets are, by item name, the targets as this plan saw them; an
	// approved item is written only while its live target still matches.
	Targets map[string]v1alpha1.ReviewedTarget
	// Disrupted are, by item name, the VMs draining the nodes of the
	// item's pools shuts down or would block on (none: not listed).
	Disrupted map[string][]v1alpha1.DisruptedVM
	// ReadAt: the resourceVersions of the caches the plan's Nodes and
	// VMIs were read from.
	ReadAt ReadAt
}

// Satisfied is true when no prerequisite is missing.
func (r *Result) Satisfied() bool {
	for _, p := range r.Status.Prerequisites {
		if !p.Satisfied {
			return false
		}
	}
	return true
}

// itemFailed is true when an item could not be planned.
func (r *Result) itemFailed() bool {
	for _, it := range r.Status.Items {
		if it.Error != "" {
			return true
		}
	}
	return false
}

// MissingMessage is the seed's message for missing prerequisites.
func (r *Result) MissingMessage() string {
	var b strings.Builder
	b.WriteString("Missing required dependencies:\n")
	for _, p := range r.Status.Prerequisites {
		if !p.Satisfied {
			fmt.Fprintf(&b, "  - %s (%s): %s\n", p.Kind, strings.ReplaceAll(p.APIVersion, "/", "."), p.Description)
		}
	}
	return b.String()
}

// Compute returns the live plan of a config. Per-item failures (a rejected
// dry-run, say) are reported in the item; an error is returned only when no
// plan can be made at all.
// Input objects come from their watch caches: the controller re-plans on
// their events, so its cache is at least as new as what made it look.
func (e *Engine) Compute(ctx context.Context, cfg *v1alpha1.VirtPlatformConfig) (*Result, error) {
	return e.computeFrom(ctx, cfg, watchedInputs)
}

// ComputeLive returns the live plan of a config for an API request: its
// inputs are read from the cluster as the request is served (see
// liveInputs).
func (e *Engine) ComputeLive(ctx context.Context, cfg *v1alpha1.VirtPlatformConfig) (*Result, error) {
	return e.computeFrom(ctx, cfg, liveInputs)
}

// inputSource says where a computation reads the profile's input objects.
type inputSource int

const (
	// watchedInputs reads them from their watch caches once synced.
	watchedInputs inputSource = iota
	// liveInputs reads them from kube-apiserver: a user who has just
	// changed an input (the HCO migration limits) and asks for the plan
	// must see the plan of that change, not of a watch event still on its
	// way.
	liveInputs
	// optimisticInputs plans from the watch caches while the live reads
	// are in flight, and keeps the plan only when the live reads return
	// the objects the caches held: the plan of the live state, without
	// waiting for the reads before the dry-runs. When they do not, the
	// items are planned again from the live reads (none sent twice).
	optimisticInputs
	// cachedInputs reads every input from its watch cache, the inputs
	// that are targets too: the drift check compares the targets as their
	// caches hold them with what was applied, and the desired states it
	// compares with must come from the same caches.
	cachedInputs
)

// live is true for the computations of API requests: their reads start
// together as the computation starts and go to kube-apiserver (confirmed
// there when optimistic).
func (s inputSource) live() bool { return s == liveInputs || s == optimisticInputs }

func (e *Engine) computeFrom(ctx context.Context, cfg *v1alpha1.VirtPlatformConfig, from inputSource) (*Result, error) {
	res, err := e.compute(ctx, cfg, from)
	// A caller that went away (a cancelled request, a lost leadership) is
	// no failure of the plan.
	if e.Metrics != nil && !errors.Is(err, context.Canceled) {
		e.Metrics.PlanComputed(cfg.Spec.Profile, err != nil || res.itemFailed())
	}
	return res, err
}

// compute plans a config in steps: its prerequisites, the snapshot of its
// inputs (where they are read from decided once, here), each item planned
// from the snapshot, the items gathered into the result, the result
// annotated with what it does to nodes and VMs, and hashed.
func (e *Engine) compute(ctx context.Context, cfg *v1alpha1.VirtPlatformConfig, from inputSource) (*Result, error) {
	profile, ok := e.Profiles.Get(cfg.Spec.Profile)
	if !ok {
		return nil, fmt.Errorf("unknown profile %q", cfg.Spec.Profile)
	}
	return e.computeWith(ctx, cfg, profile, from)
}

// computeWith plans the items of profile (the config's, or the revert
// of what it wrote) for cfg.
func (e *Engine) computeWith(ctx context.Context, cfg *v1alpha1.VirtPlatformConfig, profile profiles.Profile, from inputSource) (*Result, error) {
	opts := profiles.ResolveOptions(profile.Metadata().Options, cfg.Spec)
	res := newResult(cfg)
	var err error
	if res.Status.Prerequisites, err = e.prerequisites(profile.Prerequisites(opts)); err != nil {
		return nil, err
	}
	if !res.Satisfied() {
		return res, nil
	}
	snap := e.readSnapshot(ctx, profile, opts, from)
	planned, err := e.planItems(ctx, cfg, profile, opts, snap)
	if snap.optimistic && (err != nil || !snap.consistent()) {
		// The watch caches were behind the live state: plan from the
		// live reads, already made or on their way.
		snap = snap.liveOnly()
		planned, err = e.planItems(ctx, cfg, profile, opts, snap)
	}
	if err != nil {
		return nil, err
	}
	snapshot, hashed := res.addItems(planned)
	if rollsPools(planned) {
		res.Status.Settings.Gates = e.Gates.gatesOf(cfg.Spec)
		res.Status.Warnings = append(res.Status.Warnings, gateWarnings(res.Status.Settings.Gates)...)
	}
	e.annotate(ctx, res, planned, snap, cfg.Spec.AllowsBlockingDrains())
	if res.SnapshotHash, err = hashJSON(snapshot); err != nil {
		return nil, err
	}
	_, revert := profile.(*revertProfile)
	if res.Status.PlanHash, err = hashPlan(cfg, res.Status.Settings, hashed, snapshot, res.Disrupted, revert); err != nil {
		return nil, err
	}
	return res, nil
}

// newResult is the empty plan of a config.
func newResult(cfg *v1alpha1.VirtPlatformConfig) *Result {
	return &Result{
		Status:  v1alpha1.PlanStatus{Profile: cfg.Spec.Profile, Generation: cfg.Generation, Settings: settingsOf(cfg.Spec)},
		Desired: map[string]*unstructured.Unstructured{},
		Differs: map[string][]string{},
		Targets: map[string]v1alpha1.ReviewedTarget{},
	}
}

// prerequisites are the profile's prerequisites, each said served or not.
func (e *Engine) prerequisites(prereqs []profiles.Prerequisite) ([]v1alpha1.Prerequisite, error) {
	var out []v1alpha1.Prerequisite
	for _, p := range prereqs {
		served, err := e.Cluster.Served(p.GVK)
		if err != nil {
			return nil, fmt.Errorf("checking prerequisite %s: %w", p.GVK.Kind, err)
		}
		apiVersion := p.GVK.GroupVersion().String()
		if p.GVK.Version == "" {
			// Any version will do: name the one in use, or just the group.
			apiVersion = p.GVK.Group
			if v, err := e.Cluster.PreferredVersion(p.GVK.GroupKind()); err == nil && v != "" {
				apiVersion = p.GVK.Group + "/" + v
			}
		}
		out = append(out, v1alpha1.Prerequisite{
			Kind: p.GVK.Kind, APIVersion: apiVersion, Description: p.Description, Satisfied: served,
		})
	}
	return out, nil
}

// planItems asks the profile for its items, reading its inputs from the
// snapshot, and plans them all at once, each with its own check.
func (e *Engine) planItems(ctx context.Context, cfg *v1alpha1.VirtPlatformConfig, profile profiles.Profile, opts v1alpha1.ProfileOptions, snap *inputReader) ([]plannedItem, error) {
	items, err := profile.Items(ctx, profiles.Inputs{ConfigName: cfg.Name, Options: opts, Cluster: snap})
	if err != nil {
		return nil, err
	}
	planned := make([]plannedItem, len(items))
	checks := make([]itemCheck, len(items))
	owned := OwnershipOf(&cfg.Status)
	var wg sync.WaitGroup
	for i := range items {
		wg.Go(func() { planned[i] = e.planItemSafely(ctx, cfg.Name, owned, items[i], snap) })
		if check := items[i].Check; check != nil {
			wg.Go(func() { checks[i].sentence, checks[i].warnings = check(ctx) })
		}
	}
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("computing the plan: %w", err)
	}
	for i := range planned {
		planned[i].addProfileNotes(items[i], checks[i])
	}
	return planned, nil
}

// addItems adds the planned items to the result, those skipped left out,
// and returns what the hashes bind: the live state of the managed fields
// (by snapshot key) and the items as hashed.
func (r *Result) addItems(planned []plannedItem) (snapshot map[string]interface{}, hashed []interface{}) {
	snapshot = map[string]interface{}{}
	for _, p := range planned {
		if p.skip {
			continue
		}
		name := p.item.Name
		if p.item.Error == "" {
			// An item that cannot be planned fails when applied; its live
			// state is not part of what was reviewed.
			snapshot[p.key] = p.snapshot
			r.Targets[name] = p.target
			if p.differs != nil {
				r.Differs[name] = p.differs
			}
		}
		r.Status.Items = append(r.Status.Items, p.item)
		for _, w := range p.warnings {
			r.Status.Warnings = append(r.Status.Warnings, fmt.Sprintf("item '%s': %s", name, w))
		}
		if p.item.Operation != v1alpha1.OperationDelete {
			r.Desired[name] = p.applied
		}
		hashed = append(hashed, p.hashed())
		r.Status.ImpactSeverity = MaxImpact(r.Status.ImpactSeverity, p.item.ImpactSeverity)
	}
	return snapshot, hashed
}

// hashPlan is the plan hash: what approving the plan approves.
func hashPlan(cfg *v1alpha1.VirtPlatformConfig, settings v1alpha1.PlanSettings, items []interface{}, snapshot map[string]interface{}, disrupted map[string][]v1alpha1.DisruptedVM, revert bool) (string, error) {
	// The generation binds the spec too: failurePolicy, waitTimeout,
	// bypassOptimisticLock or rollout.allowBlockingDrains changed after a
	// review change what applying does, so the reviewed hash no longer
	// approves it; they are also hashed and shown by name. The UID binds
	// the object: a config deleted and created again under the same name
	// has plans of its own.
	hashed := map[string]interface{}{
		"profile": cfg.Spec.Profile, "generation": cfg.Generation, "uid": cfg.UID, "settings": hashedSettings(settings),
		"items": items, "snapshot": snapshot,
	}
	// What the approver accepts to suffer is part of what they approve:
	// the VMs drains shut down or would block on (not those that migrate,
	// so that ordinary migrations leave a review valid). A plan without
	// such VMs hashes as it did before they were hashed.
	if len(disrupted) > 0 {
		hashed["vmImpact"] = hashedDisrupted(disrupted)
	}
	// A revert plan never hashes as a plan of the profile, even one of
	// the same items (none, say).
	if revert {
		hashed["revert"] = true
	}
	return hashJSON(hashed)
}

// hashedDisrupted are the disrupted VMs as the hash reads them: a VM that
// does not fit hashes by that fact, not by the free memory its reason
// quotes, which any pod started since changes (a review stays valid while
// the same VMs do not fit).
func hashedDisrupted(disrupted map[string][]v1alpha1.DisruptedVM) map[string][]v1alpha1.DisruptedVM {
	out := make(map[string][]v1alpha1.DisruptedVM, len(disrupted))
	for item, vms := range disrupted {
		vms = slices.Clone(vms)
		for i := range vms {
			if strings.HasPrefix(vms[i].Reason, ReasonInsufficientCapacity) {
				vms[i].Reason = ReasonInsufficientCapacity
			}
		}
		out[item] = vms
	}
	return out
}

// hashedSettings are the settings as the plan hash reads them: as the
// Plan's JSON showed them when it left false booleans out. The Plan now
// shows them (a reader tells false from not bound); the hash stays the
// same, so that approvals recorded before approve the same plans.
type hashedSettings v1alpha1.PlanSettings

func (s hashedSettings) MarshalJSON() ([]byte, error) {
	return json.Marshal(struct {
		Action               v1alpha1.PlanAction    `json:"action,omitempty"`
		FailurePolicy        v1alpha1.FailurePolicy `json:"failurePolicy,omitempty"`
		BypassOptimisticLock bool                   `json:"bypassOptimisticLock,omitempty"`
		WaitTimeout          string                 `json:"waitTimeout,omitempty"`
		AllowBlockingDrains  bool                   `json:"allowBlockingDrains,omitempty"`
		Gates                *v1alpha1.PlanGates    `json:"gates,omitempty"`
	}(s))
}

// settingsOf are the spec settings a plan's hash binds, defaults resolved.
func settingsOf(spec v1alpha1.VirtPlatformConfigSpec) v1alpha1.PlanSettings {
	s := v1alpha1.PlanSettings{Action: spec.Action, FailurePolicy: spec.FailurePolicy,
		BypassOptimisticLock: spec.BypassOptimisticLock, WaitTimeout: spec.WaitTimeout,
		AllowBlockingDrains: spec.AllowsBlockingDrains()}
	if s.FailurePolicy == "" {
		s.FailurePolicy = v1alpha1.FailurePolicyAbort
	}
	return s
}

// dryRunCause keeps the API server's own words for a rejected dry-run.
// The error still wraps the API status, so that callers can tell a 500 or
// a 429 (retried) from a 422 or a 403 (not).
func dryRunCause(err error) error {
	var status apierrors.APIStatus
	if errors.As(err, &status) && status.Status().Message != "" {
		return &statusCause{message: status.Status().Message, err: err}
	}
	return err
}

// statusCause is an API error told in the API server's own words.
type statusCause struct {
	message string
	err     error
}

func (e *statusCause) Error() string { return e.message }
func (e *statusCause) Unwrap() error { return e.err }

// unchangedMessage is the message of an item with nothing to write: a
// profile says what its item will do ("KubeDescheduler 'cluster' will be
// configured with …"), which an item already so configured does not. A
// message that says something else (the state found, say) is kept.
func unchangedMessage(kind, name, message string) string {
	switch {
	case strings.Contains(message, " will be configured"):
		return strings.Replace(message, " will be configured", " is already configured", 1) + "; nothing to change"
	case message == "":
		return fmt.Sprintf("%s '%s' is already in the desired state; nothing to change", kind, name)
	}
	return message
}

var impactRank = map[v1alpha1.Impact]int{"": 0, v1alpha1.ImpactNone: 1, v1alpha1.ImpactLow: 2, v1alpha1.ImpactMedium: 3, v1alpha1.ImpactHigh: 4}

// MaxImpact returns the higher of two impacts (None < Low < Medium < High).
func MaxImpact(a, b v1alpha1.Impact) v1alpha1.Impact {
	if impactRank[b] > impactRank[a] {
		return b
	}
	return a
}

// absentAction is what an item whose object the profile no longer wants
// does.
type absentAction int

const (
	gone         absentAction = iota // nothing to delete: no item
	leaveInPlace                     // someone else made it: left alone, said so
	deleteIt                         // we made it: deleted
)

// decideAbsent: only objects virt-advisor created are ever deleted.
func decideAbsent(exists, ours bool) absentAction {
	switch {
	case !exists:
		return gone
	case !ours:
		return leaveInPlace
	}
	return deleteIt
}

// decideWanted is the operation of an item whose object the profile
// wants, from whether it exists and whether the dry-run of the apply
// leaves it as it is.
func decideWanted(exists, unchanged bool) v1alpha1.Operation {
	switch {
	case !exists:
		return v1alpha1.OperationCreate
	case unchanged:
		return v1alpha1.OperationNone
	}
	return v1alpha1.OperationUpdate
}
