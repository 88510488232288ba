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
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"

	"github.com/kubevirt/virt-advisor/pkg/apis/advisor/v1alpha1"
	"github.com/kubevirt/virt-advisor/pkg/machineconfig"
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
}

// Engine computes plans.
type Engine struct {
	Cluster  Cluster
	Profiles Profiles
	// Metrics, if set, records the outcome of every plan computation.
	Metrics Metrics
	// Clock is the real clock if nil.
	Clock clock.PassiveClock
	// NodeVMs, if set, serves the Nodes and VMIs plans read (nodevms.go);
	// nil reads them live.
	NodeVMs NodeVMs

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
	// waiting for the reads before the dry-runs.
	optimisticInputs
)

// live is true for the computations of API requests: their reads start
// together as the computation starts and go to kube-apiserver (confirmed
// there when optimistic).
func (s inputSource) live() bool { return s == liveInputs || s == optimisticInputs }

func (e *Engine) computeFrom(ctx context.Context, cfg *v1alpha1.VirtPlatformConfig, from inputSource) (*Result, error) {
	var res *Result
	var err error
	if from == liveInputs && e.Cluster.InputWatches() != nil {
		var consistent bool
		res, consistent, err = e.compute(ctx, cfg, optimisticInputs)
		if err != nil || !consistent {
			res, _, err = e.compute(ctx, cfg, liveInputs)
		}
	} else {
		res, _, err = e.compute(ctx, cfg, from)
	}
	// A caller that went away (a cancelled request, a lost leadership) is
	// no failure of the plan.
	if e.Metrics != nil && !errors.Is(err, context.Canceled) {
		e.Metrics.PlanComputed(cfg.Spec.Profile, err != nil || res.itemFailed())
	}
	return res, err
}

// compute plans from the inputs of from; consistent is false when an
// optimistic computation read inputs that were not the live ones.
func (e *Engine) compute(ctx context.Context, cfg *v1alpha1.VirtPlatformConfig, from inputSource) (res *Result, consistent bool, err error) {
	profile, ok := e.Profiles.Get(cfg.Spec.Profile)
	if !ok {
		return nil, false, fmt.Errorf("unknown profile %q", cfg.Spec.Profile)
	}
	opts := profiles.ResolveOptions(profile.Metadata().Options, cfg.Spec)
	res = &Result{
		Status:  v1alpha1.PlanStatus{Profile: cfg.Spec.Profile, Generation: cfg.Generation},
		Desired: map[string]*unstructured.Unstructured{},
		Differs: map[string][]string{},
		Targets: map[string]v1alpha1.ReviewedTarget{},
	}
	res.Status.Settings = settingsOf(cfg.Spec)
	for _, p := range profile.Prerequisites(opts) {
		served, err := e.Cluster.Served(p.GVK)
		if err != nil {
			return nil, false, fmt.Errorf("checking prerequisite %s: %w", p.GVK.Kind, err)
		}
		apiVersion := p.GVK.GroupVersion().String()
		if p.GVK.Version == "" {
			// Any version will do: name the one in use, or just the group.
			apiVersion = p.GVK.Group
			if v, err := e.Cluster.PreferredVersion(p.GVK.GroupKind()); err == nil && v != "" {
				apiVersion = p.GVK.Group + "/" + v
			}
		}
		res.Status.Prerequisites = append(res.Status.Prerequisites, v1alpha1.Prerequisite{
			Kind: p.GVK.Kind, APIVersion: apiVersion, Description: p.Description, Satisfied: served,
		})
	}
	if !res.Satisfied() {
		return res, true, nil
	}

	refs := profile.InputObjects(opts)
	listPools := e.poolLister(ctx, profile, refs, from)
	inputs := newInputReader(ctx, e.Cluster, refs, from, listPools)
	// What the MachineConfig items do to nodes and VMs is read once per
	// plan, and the profile's own reads of Nodes share the list.
	reads := e.newClusterReads(ctx, inputs.Get, true)
	inputs.nodes = reads.nodes
	if from.live() && writesMachineConfigs(profile) {
		reads.start()
	}
	items, err := profile.Items(ctx, profiles.Inputs{ConfigName: cfg.Name, Options: opts, Cluster: inputs})
	if err != nil {
		return nil, false, err
	}
	planned := make([]plannedItem, len(items))
	owned := OwnershipOf(&cfg.Status)
	var wg sync.WaitGroup
	checks := make([]struct {
		sentence string
		warnings []string
	}, len(items))
	for i := range items {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			planned[i] = e.planItemSafely(ctx, cfg.Name, owned, items[i], inputs)
		}(i)
		if check := items[i].Check; check != nil {
			wg.Go(func() { checks[i].sentence, checks[i].warnings = check(ctx) })
		}
	}
	wg.Wait()
	for i := range checks {
		if checks[i].sentence != "" && !planned[i].skip {
			planned[i].item.Message += ". " + checks[i].sentence
		}
		items[i].Warnings = append(items[i].Warnings, checks[i].warnings...)
	}
	if err := ctx.Err(); err != nil {
		return nil, false, fmt.Errorf("computing the plan: %w", err)
	}

	snapshot := map[string]interface{}{}
	var hashed []interface{}
	for i, p := range planned {
		if p.skip {
			continue
		}
		if p.item.Error == "" {
			// An item that cannot be planned fails when applied; its live
			// state is not part of what was reviewed.
			snapshot[p.key] = p.snapshot
		}
		res.Status.Items = append(res.Status.Items, p.item)
		for _, w := range items[i].Warnings {
			res.Status.Warnings = append(res.Status.Warnings, fmt.Sprintf("item '%s': %s", p.item.Name, w))
		}
		if p.item.Operation != v1alpha1.OperationDelete {
			res.Desired[p.item.Name] = items[i].Desired
		}
		if p.differs != nil && p.item.Error == "" {
			res.Differs[p.item.Name] = p.differs
		}
		if p.item.Error == "" {
			res.Targets[p.item.Name] = p.target
		}
		hashed = append(hashed, map[string]interface{}{
			"name": p.item.Name, "targetRef": p.item.TargetRef, "operation": p.item.Operation, "desiredState": p.desired, "error": p.item.Error,
		})
		res.Status.ImpactSeverity = MaxImpact(res.Status.ImpactSeverity, p.item.ImpactSeverity)
	}
	warnings, disrupted := addRebootNotes(ctx, res.Status.Items, rollChanges(planned), listPools, reads, cfg.Spec.AllowsBlockingDrains())
	res.Status.Warnings = append(res.Status.Warnings, warnings...)
	res.Disrupted = disrupted
	res.ReadAt = reads.at.get()
	if res.ReadAt != (ReadAt{}) {
		res.Status.ReadFrom = &v1alpha1.PlanReadFrom{NodesResourceVersion: res.ReadAt.Nodes, VirtualMachineInstancesResourceVersion: res.ReadAt.VMIs}
	}
	if l := e.windows.Load(); l != nil {
		addWindowNotes(ctx, res.Status.Items, listPools, *l, e.now())
	}
	if res.SnapshotHash, err = hashJSON(snapshot); err != nil {
		return nil, false, err
	}
	if res.Status.PlanHash, err = hashPlan(cfg, res.Status.Settings, hashed, snapshot, disrupted); err != nil {
		return nil, false, err
	}
	return res, inputs.consistent(), nil
}

// hashPlan is the plan hash: what approving the plan approves.
func hashPlan(cfg *v1alpha1.VirtPlatformConfig, settings v1alpha1.PlanSettings, items []interface{}, snapshot map[string]interface{}, disrupted map[string][]v1alpha1.DisruptedVM) (string, error) {
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
		hashed["vmImpact"] = disrupted
	}
	return hashJSON(hashed)
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

type plannedItem struct {
	item     v1alpha1.PlanItem
	desired  map[string]interface{}
	snapshot map[string]interface{}
	key      string
	skip     bool // an Absent item whose object is already gone
	// differs: the managed fields the live target does not hold as
	// desired; nil when there is no target or no desired state.
	differs []string
	// target is the live target as planned against.
	target v1alpha1.ReviewedTarget
	// labels of what the item writes or deletes: those of the desired
	// state, or of the live object for a Delete (the pools that select
	// it are the pools that roll its removal).
	labels map[string]string
	// change is the spec before and after, for a MachineConfig.
	change mcChange
}

// planItemSafely plans an item; a panic in a profile or in the engine
// fails that item, never the server.
func (e *Engine) planItemSafely(ctx context.Context, configName string, owned Ownership, it profiles.Item, inputs *inputReader) (p plannedItem) {
	defer func() {
		if r := recover(); r != nil {
			utilruntime.HandleError(fmt.Errorf("planning item %q of %s panicked: %v", it.Name, configName, r))
			p = plannedItem{item: v1alpha1.PlanItem{Name: it.Name, ImpactSeverity: v1alpha1.ImpactMedium,
				Error: fmt.Sprintf("internal error while planning this item (%v); the server log has the details", r)},
				snapshot: map[string]interface{}{"__state": "ERROR"}}
			if it.Desired != nil {
				gvk := it.Desired.GroupVersionKind()
				p.item.TargetRef = v1alpha1.ObjectReference{APIVersion: gvk.GroupVersion().String(), Kind: gvk.Kind, Name: it.Desired.GetName(), Namespace: it.Desired.GetNamespace()}
				p.key = snapshotKey(gvk, it.Desired.GetNamespace(), it.Desired.GetName())
			}
		}
	}()
	return e.planItem(ctx, configName, owned, it, inputs)
}

// rollChanges are the labels and changes of each planned item that is
// kept, in order.
func rollChanges(planned []plannedItem) []itemChange {
	out := make([]itemChange, 0, len(planned))
	for _, p := range planned {
		if !p.skip {
			out = append(out, itemChange{labels: p.labels, spec: p.change})
		}
	}
	return out
}

func (e *Engine) planItem(ctx context.Context, configName string, owned Ownership, it profiles.Item, inputs *inputReader) plannedItem {
	desired := it.Desired.DeepCopy()
	if it.Owned {
		labels := desired.GetLabels()
		if labels == nil {
			labels = map[string]string{}
		}
		labels[profiles.ManagedByLabel] = configName
		desired.SetLabels(labels)
	}
	gvk := desired.GroupVersionKind()
	ns, name := desired.GetNamespace(), desired.GetName()
	label := fmt.Sprintf("%s (%s)", name, gvk.Kind)
	if it.ShowVersion {
		label = fmt.Sprintf("%s (%s %s)", name, gvk.Kind, gvk.GroupVersion())
	}
	p := plannedItem{
		key:     snapshotKey(gvk, ns, name),
		desired: desired.Object,
		item: v1alpha1.PlanItem{
			Name:          it.Name,
			TargetRef:     v1alpha1.ObjectReference{APIVersion: gvk.GroupVersion().String(), Kind: gvk.Kind, Name: name, Namespace: ns},
			Message:       it.Message,
			ManagedFields: it.ManagedFields,
		},
	}
	if raw, err := json.Marshal(desired.Object); err == nil {
		p.item.DesiredState = &runtime.RawExtension{Raw: raw}
	}
	fail := func(err error) plannedItem {
		p.item.Error = err.Error()
		p.item.ImpactSeverity = it.Impact
		if p.item.ImpactSeverity == "" {
			p.item.ImpactSeverity = v1alpha1.ImpactMedium
		}
		p.snapshot = map[string]interface{}{"__state": "ERROR"}
		return p
	}

	if it.Err != nil {
		return fail(it.Err)
	}
	ri, err := e.Cluster.Resource(gvk, ns)
	if it.Absent && meta.IsNoMatchError(err) {
		// The kind is not served (no MachineConfig API on a hosted
		// control plane, say): there is nothing of it to delete.
		p.skip = true
		return p
	}
	if err != nil {
		return fail(fmt.Errorf("resolving %s: %w", gvk.Kind, err))
	}
	// The live object and the dry-run are independent requests: send them
	// together. The dry-run answers with the resourceVersion it was based
	// on; if a write slipped in between, both are read again.
	var live, dry *unstructured.Unstructured
	var dryErr error
	for attempt := 0; ; attempt++ {
		done := make(chan struct{})
		if !it.Absent {
			go func() {
				defer close(done)
				dry, dryErr = ri.Apply(ctx, name, desired, metav1.ApplyOptions{FieldManager: cluster.FieldManager, Force: true, DryRun: []string{metav1.DryRunAll}})
			}()
		} else {
			close(done)
		}
		// The profile may have just read the target: use that read, checked
		// against the dry-run's resourceVersion like a fresh GET.
		if prev, ok := inputs.readLive(cluster.ObjectKey{GVK: gvk, Namespace: ns, Name: name}); ok && attempt == 0 && prev != nil {
			live, err = prev, nil
		} else {
			live, err = ri.Get(ctx, name, metav1.GetOptions{})
		}
		<-done
		if apierrors.IsNotFound(err) {
			live, err = nil, nil
		}
		if err != nil {
			return fail(fmt.Errorf("reading %s %s: %w", gvk.Kind, cluster.ObjectName(ns, name), err))
		}
		if attempt == 0 && dryErr == nil && live != nil && !it.Absent && dry.GetResourceVersion() == live.GetResourceVersion() &&
			inputs.readFromCache(cluster.ObjectKey{GVK: gvk, Namespace: ns, Name: name}) {
			inputs.confirm(cluster.ObjectKey{GVK: gvk, Namespace: ns, Name: name})
		}
		if attempt > 0 || it.Absent || dryErr != nil || live == nil || dry.GetResourceVersion() == live.GetResourceVersion() {
			break
		}
		if inputs.readFromCache(cluster.ObjectKey{GVK: gvk, Namespace: ns, Name: name}) {
			// The profile computed the desired state from an older copy.
			inputs.overtake()
		}
	}
	ours := owned.MadeByUs(live)
	if it.Owned && live != nil && !ours && !it.Absent && dryErr == nil {
		// Someone else made this object: it is changed as the profile
		// needs, but never labelled ours, so never pruned.
		labels := desired.GetLabels()
		delete(labels, profiles.ManagedByLabel)
		desired.SetLabels(labels)
		dry, dryErr = ri.Apply(ctx, name, desired, metav1.ApplyOptions{FieldManager: cluster.FieldManager, Force: true, DryRun: []string{metav1.DryRunAll}})
		p.desired = desired.Object
		if raw, err := json.Marshal(desired.Object); err == nil {
			p.item.DesiredState = &runtime.RawExtension{Raw: raw}
		}
	}
	var bound boundMeta
	if !it.Absent {
		bound = boundMetaOf(desired) // a Delete sets nothing
	}
	p.snapshot = snapshotValue(live, it.ManagedFields, bound)
	if p.target.SnapshotHash, err = hashJSON(p.snapshot); err != nil {
		return fail(err)
	}
	p.target.FieldHashes = fieldHashes(p.snapshot)
	p.labels = desired.GetLabels()
	if live != nil {
		p.target.UID = live.GetUID()
		if it.Absent {
			p.labels = live.GetLabels()
		}
	}
	if live != nil && !it.Absent {
		p.differs = differingFields(live.Object, desired.Object, it.ManagedFields)
	}
	if gvk.GroupKind() == machineconfig.MachineConfigGVK.GroupKind() {
		// What the node disruption of the change is decided from: the
		// live spec and what the write leaves (the dry-run's answer).
		p.change.before = specOf(live)
		if !it.Absent && dryErr == nil {
			p.change.after = specOf(dry)
		}
	}
	p.item.ImpactSeverity = it.Impact
	if p.item.ImpactSeverity == "" {
		p.item.ImpactSeverity = v1alpha1.ImpactLow
		if live == nil {
			p.item.ImpactSeverity = v1alpha1.ImpactMedium
		}
	}
	liveYAML, err := toYAML(sanitize(live))
	if err != nil {
		return fail(err)
	}

	if it.Absent {
		switch decideAbsent(live != nil, ours) {
		case gone:
			p.skip = true
		case leaveInPlace:
			p.item.Operation = v1alpha1.OperationNone
			p.item.DesiredState = nil
			p.desired = nil
			p.item.ImpactSeverity = v1alpha1.ImpactNone
			p.item.Message = fmt.Sprintf("%s '%s' was not created by virt-advisor: it is left in place (delete it yourself if it is no longer wanted)", gvk.Kind, name)
			p.item.Diff, _ = unifiedDiff(liveYAML, liveYAML, label, label)
		default:
			p.item.Operation = v1alpha1.OperationDelete
			p.item.DesiredState = nil
			p.desired = nil
			if p.item.Diff, err = unifiedDiff(liveYAML, "", label, devNull); err != nil {
				return fail(err)
			}
		}
		return p
	}

	if dryErr != nil {
		return fail(fmt.Errorf("server-side apply dry-run of %s %s was rejected: %w", gvk.Kind, cluster.ObjectName(ns, name), dryRunCause(dryErr)))
	}
	dryYAML, err := toYAML(sanitize(dry))
	if err != nil {
		return fail(err)
	}
	fromLabel := label
	p.item.Operation = decideWanted(live != nil, liveYAML == dryYAML)
	switch p.item.Operation {
	case v1alpha1.OperationCreate:
		fromLabel = devNull
	case v1alpha1.OperationNone:
		p.item.ImpactSeverity = v1alpha1.ImpactNone
		p.item.Message = unchangedMessage(gvk.Kind, name, it.Message)
	}
	if p.item.Diff, err = unifiedDiff(liveYAML, dryYAML, fromLabel, label); err != nil {
		return fail(err)
	}
	return p
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
