package dashboard

import (
	"context"
	"fmt"
	"html/template"
	"sort"
	"strings"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/util/duration"

	"github.com/kubevirt/virt-advisor/pkg/apis/advisor/v1alpha1"
	policies "github.com/kubevirt/virt-advisor/pkg/approvalpolicy"
	"github.com/kubevirt/virt-advisor/pkg/cmd/advisor/internal/explain"
	"github.com/kubevirt/virt-advisor/pkg/cmd/advisor/internal/pools"
	"github.com/kubevirt/virt-advisor/pkg/machineconfig"
	"github.com/kubevirt/virt-advisor/pkg/status"
)

// eventsNamespace is where virt-advisor records the Events of its
// cluster-scoped configs.
const eventsNamespace = "default"

func (s *Server) funcs() template.FuncMap {
	return template.FuncMap{
		"short": v1alpha1.ShortHash,
		"when": func(t time.Time) string {
			if t.IsZero() {
				return "-"
			}
			return t.UTC().Format("2006-01-02 15:04:05 UTC")
		},
		"iso": func(t time.Time) string { return t.UTC().Format(time.RFC3339) },
		"ago": func(t time.Time) string {
			if t.IsZero() {
				return "-"
			}
			return duration.HumanDuration(s.clock.Since(t))
		},
		"phaseTone":   phaseTone,
		"fleetTone":   fleetTone,
		"glyph":       glyph,
		"opTone":      opTone,
		"impactTone":  impactTone,
		"stateTone":   stateTone,
		"nodeGlyph":   nodeGlyph,
		"waitingFor":  waitingFor,
		"waitingTone": waitingTone,
	}
}

// target is "Kind namespace/name" or "Kind name".
func target(ref v1alpha1.ObjectReference) string {
	if ref.Namespace != "" {
		return ref.Kind + " " + ref.Namespace + "/" + ref.Name
	}
	return ref.Kind + " " + ref.Name
}

// approvalView is a config's last approval.
type approvalView struct {
	Hash, By string
	// Policy is the approval policy that approved it, if one did (By
	// then says "policy/<name> (set by <author>)").
	Policy string
	At     time.Time
	Gen    int64
}

func newApprovalView(a *v1alpha1.ApprovalRecord) *approvalView {
	if a == nil {
		return nil
	}
	policy, _ := policies.PolicyOf(a.ApprovedBy)
	return &approvalView{Hash: a.PlanHash, By: a.ApprovedBy, Policy: policy, At: a.ApprovedAt.Time, Gen: a.Generation}
}

// summaryView is a config's phase, approval and drift: the header of its
// pages, and a row of the configs page.
type summaryView struct {
	Name, Action         string
	Impact               v1alpha1.Impact
	Phase                v1alpha1.ConfigPhase
	Message              string
	Approval             *approvalView
	Drift                string
	Notes                []string
	Generation, Observed int64
	SpecChangedBy        string
	Created              time.Time
	// Waiting is the Waiting condition's reason while the approved plan
	// waits (MaintenanceWindow, DrainBlocked, PoolBusy, ClusterUpgrading).
	Waiting string
}

// newSummary reads a config as of now (how far away a window's opening
// is, when the plan waits for one).
func newSummary(cfg *v1alpha1.VirtPlatformConfig, now time.Time) summaryView {
	st := cfg.Status
	v := summaryView{
		Name: cfg.Name, Action: string(cfg.Spec.Action), Impact: st.ImpactSeverity, Phase: st.Phase,
		Approval: newApprovalView(st.Approval), Generation: cfg.Generation, Observed: st.ObservedGeneration,
		SpecChangedBy: st.SpecChangedBy, Created: cfg.CreationTimestamp.Time,
	}
	v.Message = status.PhaseMessageAt(&st, now)
	if w := status.WaitingFor(&st); w != nil && st.Phase == v1alpha1.PhaseInProgress {
		v.Waiting = w.Reason
	}
	if st.Phase == v1alpha1.PhaseDrifted {
		v.Drift = "Drifted"
	}
	for _, t := range []string{"InputDependencyDrift", "UpgradeAvailable"} {
		if c := meta.FindStatusCondition(st.Conditions, t); c != nil && c.Status == metav1.ConditionTrue {
			v.Notes = append(v.Notes, t+": "+c.Message)
			if t == "InputDependencyDrift" {
				v.Drift = strings.TrimSpace(v.Drift + " input changed")
			}
		}
	}
	if v.Observed < v.Generation {
		v.Notes = append(v.Notes, fmt.Sprintf("This status is of generation %d; the spec is at generation %d and is being planned.", v.Observed, v.Generation))
	}
	if note := status.AbortHoldNote(cfg); note != "" && !strings.Contains(v.Message, note) {
		v.Notes = append(v.Notes, note)
	}
	return v
}

// boundSettings are the spec settings a plan hash binds besides the items
// (docs/design.md, the governance invariant): changing any of them after
// the review makes the reviewed hash stale.
type boundSettings struct {
	Action, FailurePolicy, WaitTimeout        string
	BypassOptimisticLock, AllowBlockingDrains bool
	Generation                                int64
}

func newBoundSettings(cfg *v1alpha1.VirtPlatformConfig) boundSettings {
	b := boundSettings{
		Action: string(cfg.Spec.Action), FailurePolicy: string(cfg.Spec.FailurePolicy),
		BypassOptimisticLock: cfg.Spec.BypassOptimisticLock, WaitTimeout: cfg.Spec.WaitTimeout, Generation: cfg.Generation,
		AllowBlockingDrains: cfg.Spec.AllowsBlockingDrains(),
	}
	if b.Action == "" {
		b.Action = string(v1alpha1.PlanActionDryRun) + " (default)"
	}
	if b.FailurePolicy == "" {
		b.FailurePolicy = string(v1alpha1.FailurePolicyAbort) + " (default)"
	}
	if b.WaitTimeout == "" {
		b.WaitTimeout = "unset (wait forever)"
	}
	return b
}

// diffLine is one line of a unified diff, classified for colour; the
// +/- prefix stays in the text, so the colour is never the only sign.
type diffLine struct {
	Kind string // file, hunk, add, del, ctx
	Text string
}

func diffLines(diff string) (lines []diffLine, added, removed int) {
	diff = strings.TrimRight(diff, "\n")
	if diff == "" {
		return nil, 0, 0
	}
	for _, t := range strings.Split(diff, "\n") {
		k := "ctx"
		switch {
		case strings.HasPrefix(t, "+++"), strings.HasPrefix(t, "---"):
			k = "file"
		case strings.HasPrefix(t, "@@"):
			k = "hunk"
		case strings.HasPrefix(t, "+"):
			k = "add"
			added++
		case strings.HasPrefix(t, "-"):
			k = "del"
			removed++
		}
		lines = append(lines, diffLine{Kind: k, Text: t})
	}
	return lines, added, removed
}

// itemView is one item of a plan.
type itemView struct {
	Index, Total                 int
	Name, Target, Message, Error string
	Operation                    v1alpha1.Operation
	Impact                       v1alpha1.Impact
	Reboots                      string
	ManagedFields                []string
	Changes                      bool
	Lines                        []diffLine
	Added, Removed               int
}

// approveView says whether the page offers the approve button, and why not.
type approveView struct {
	Can    bool
	Reason string // why there is no button
	Note   string // said next to the button
}

// banner is the outcome of an action, at the top of a page.
type banner struct {
	Tone, Title, Detail, Hint string
}

// planView is the plan page.
type planView struct {
	Name     string
	Summary  summaryView
	Err      string
	Hash     string
	Gen      int64
	Impact   v1alpha1.Impact
	Computed time.Time
	Bound    boundSettings
	// BoundNote says when the settings shown are not of the plan's generation.
	BoundNote       string
	Missing         []v1alpha1.Prerequisite
	Warnings        []string
	Items           []itemView
	Changed, Failed int
	Reboots         string
	// Gates are the gates in force between the node reboots of the
	// plan's rollouts, "" when it rolls no pool.
	Gates   string
	Approve approveView
	Banner  *banner
}

// buildPlan reads the config and its live plan, and decides about the
// approve button; a failure is shown on the page, not returned.
func (s *Server) buildPlan(ctx context.Context, name string) (planView, int) {
	v := planView{Name: name}
	configs := s.c.Advisor.AdvisorV1alpha1().VirtPlatformConfigs()
	cfg, err := configs.Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		v.Err = explain.Line(err)
		return v, codeOf(err)
	}
	p, err := configs.GetPlan(ctx, name, metav1.GetOptions{})
	if err != nil {
		v.Summary = newSummary(cfg, s.clock.Now())
		v.Err = explain.Line(err)
		return v, codeOf(err)
	}
	if p.Status.Generation != cfg.Generation {
		// The spec changed between the two reads: read it again, so the
		// settings shown are those the hash binds.
		if again, err := configs.Get(ctx, name, metav1.GetOptions{}); err == nil {
			cfg = again
		}
	}
	v.Summary = newSummary(cfg, s.clock.Now())
	v.Bound = newBoundSettings(cfg)
	if set := p.Status.Settings; set.Action != "" {
		// The server says what its hash binds: show exactly that.
		v.Bound = newBoundSettings(&v1alpha1.VirtPlatformConfig{ObjectMeta: metav1.ObjectMeta{Generation: p.Status.Generation},
			Spec: v1alpha1.VirtPlatformConfigSpec{Action: set.Action, FailurePolicy: set.FailurePolicy, BypassOptimisticLock: set.BypassOptimisticLock, WaitTimeout: set.WaitTimeout,
				Rollout: &v1alpha1.RolloutSpec{AllowBlockingDrains: set.AllowBlockingDrains}}})
	} else if p.Status.Generation != cfg.Generation {
		v.BoundNote = fmt.Sprintf("The plan was computed from generation %d, the settings shown are of generation %d: reload the page.", p.Status.Generation, cfg.Generation)
	}
	st := p.Status
	v.Hash, v.Gen, v.Impact, v.Computed, v.Warnings = st.PlanHash, st.Generation, st.ImpactSeverity, p.CreationTimestamp.Time, st.Warnings
	for _, pr := range st.Prerequisites {
		if !pr.Satisfied {
			v.Missing = append(v.Missing, pr)
		}
	}
	for i, it := range st.Items {
		iv := itemView{Index: i + 1, Total: len(st.Items), Name: it.Name, Target: target(it.TargetRef), Message: it.Message,
			Error: explain.Flatten(it.Error), Operation: it.Operation, Impact: it.ImpactSeverity, ManagedFields: it.ManagedFields}
		iv.Changes = it.Operation != v1alpha1.OperationNone && it.Operation != ""
		if iv.Changes {
			v.Changed++
			iv.Lines, iv.Added, iv.Removed = diffLines(it.Diff)
		}
		if it.Error != "" {
			v.Failed++
		}
		if machineconfig.IsMachineConfig(it.TargetRef) && iv.Changes {
			iv.Reboots = pools.Summary(ctx, s.c.Dynamic, []v1alpha1.PlanItem{it})
		}
		v.Items = append(v.Items, iv)
	}
	v.Reboots = pools.Summary(ctx, s.c.Dynamic, st.Items)
	v.Gates = pools.Gates(st.Settings.Gates)
	v.Approve = s.mayApprove(ctx, cfg, v.Hash)
	return v, 200
}

// mayApprove asks the cluster whether the user may approve (a
// SelfSubjectAccessReview), and, for the author of the spec, whether the
// server wants a second person (a dry-run approval). The server decides
// again when the form is sent.
func (s *Server) mayApprove(ctx context.Context, cfg *v1alpha1.VirtPlatformConfig, hash string) approveView {
	if hash == "" {
		return approveView{Reason: "There is no plan to approve: the server returned no plan hash."}
	}
	if cfg.Spec.Action == v1alpha1.PlanActionIgnore {
		return approveView{Reason: "spec.action is Ignore: nothing is applied while a config is ignored. Set spec.action to DryRun to approve its plans."}
	}
	if why := status.WhyNotApprovable(&cfg.Status); why != "" {
		return approveView{Reason: "The server takes no approval now: " + why + "."}
	}
	review := &authorizationv1.SelfSubjectAccessReview{Spec: authorizationv1.SelfSubjectAccessReviewSpec{
		ResourceAttributes: &authorizationv1.ResourceAttributes{
			Group: v1alpha1.GroupName, Resource: "virtplatformconfigs", Subresource: "approve", Verb: "create", Name: cfg.Name,
		},
	}}
	res, err := s.c.Kube.AuthorizationV1().SelfSubjectAccessReviews().Create(ctx, review, metav1.CreateOptions{})
	if err != nil {
		return approveView{Can: true, Note: "Your permission to approve could not be checked (" + explain.Brief(err) + "); the server decides when you approve."}
	}
	if !res.Status.Allowed {
		who := "You"
		if s.user != "" {
			who = fmt.Sprintf("You (%s)", s.user)
		}
		return approveView{Reason: who + " may not approve plans: that takes create on virtplatformconfigs/approve, which the " +
			explain.RoleFor("create virtplatformconfigs/approve") + " role grants. Ask a cluster administrator for it, or ask someone who has it to approve."}
	}
	if s.user != "" && cfg.Status.SpecChangedBy == s.user {
		_, err := s.c.Advisor.AdvisorV1alpha1().VirtPlatformConfigs().Approve(ctx, cfg.Name,
			&v1alpha1.Approval{ObjectMeta: metav1.ObjectMeta{Name: cfg.Name}, Spec: v1alpha1.ApprovalSpec{PlanHash: hash}},
			metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		if apierrors.IsForbidden(err) {
			return approveView{Reason: "You made the last change to this config's spec, and the server wants a second person to approve its plans (four eyes): " +
				explain.Line(err) + "."}
		}
	}
	return approveView{Can: true}
}

// mayAbort offers the abort button while an approved plan is applied,
// to a user the cluster lets abort (a SelfSubjectAccessReview; the server
// decides again when the form is sent).
func (s *Server) mayAbort(ctx context.Context, cfg *v1alpha1.VirtPlatformConfig) abortView {
	a := cfg.Status.Approval
	if cfg.Status.Phase != v1alpha1.PhaseInProgress || a == nil {
		return abortView{}
	}
	v := abortView{Show: true, Hash: a.PlanHash}
	review := &authorizationv1.SelfSubjectAccessReview{Spec: authorizationv1.SelfSubjectAccessReviewSpec{
		ResourceAttributes: &authorizationv1.ResourceAttributes{
			Group: v1alpha1.GroupName, Resource: "virtplatformconfigs", Subresource: "abort", Verb: "create", Name: cfg.Name,
		},
	}}
	res, err := s.c.Kube.AuthorizationV1().SelfSubjectAccessReviews().Create(ctx, review, metav1.CreateOptions{})
	if err == nil && !res.Status.Allowed {
		v.Reason = "Aborting takes create on virtplatformconfigs/abort, which the " +
			explain.RoleFor("create virtplatformconfigs/abort") + " role grants."
		return v
	}
	v.Can = true
	return v
}

// codeOf is the HTTP status of an API error, 502 for others.
func codeOf(err error) int {
	if st, ok := err.(apierrors.APIStatus); ok && st.Status().Code >= 400 {
		return int(st.Status().Code)
	}
	return 502
}

// rolloutView is the rollout page.
type rolloutView struct {
	Name      string
	Summary   summaryView
	Err       string
	Flash     string
	Items     []itemStateView
	Pools     []gridPool
	PoolsNote string
	Events    []eventView
	EventsErr string
	// Abort offers the abort button while an approved plan is applied.
	Abort  abortView
	Banner *banner
}

// abortView says whether the rollout page offers the abort button, and
// why not.
type abortView struct {
	// Show: an approved plan is being applied (phase InProgress).
	Show, Can    bool
	Hash, Reason string
}

// itemStateView is an item's progress.
type itemStateView struct {
	Name, Target, Message string
	Operation             v1alpha1.Operation
	State                 v1alpha1.ItemState
	Since                 time.Time
}

// eventView is one Event of the config.
type eventView struct {
	Time                  time.Time
	Type, Reason, Message string
	Count                 int32
}

func (s *Server) buildRollout(ctx context.Context, name, approved, aborted string) (rolloutView, int) {
	v := rolloutView{Name: name}
	cfg, err := s.c.Advisor.AdvisorV1alpha1().VirtPlatformConfigs().Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		v.Err = explain.Line(err)
		return v, codeOf(err)
	}
	v.Summary = newSummary(cfg, s.clock.Now())
	if a := cfg.Status.Approval; approved != "" && a != nil && a.PlanHash == approved {
		v.Flash = fmt.Sprintf("Plan %s approved by %s at %s. The controller applies exactly that plan; this page follows it.",
			v1alpha1.ShortHash(a.PlanHash), a.ApprovedBy, a.ApprovedAt.UTC().Format("2006-01-02 15:04:05 UTC"))
	}
	if a := cfg.Status.Abort; aborted != "" && a != nil && a.PlanHash == aborted {
		v.Flash = fmt.Sprintf("Plan %s aborted by %s at %s. Nothing more of it is written; its MachineConfigPools stay paused until a plan is approved again.",
			v1alpha1.ShortHash(a.PlanHash), a.AbortedBy, a.AbortedAt.UTC().Format("2006-01-02 15:04:05 UTC"))
	}
	v.Abort = s.mayAbort(ctx, cfg)
	for _, it := range cfg.Status.Items {
		iv := itemStateView{Name: it.Name, Target: target(it.TargetRef), Message: it.Message, Operation: it.Operation, State: it.State}
		if it.LastTransitionTime != nil {
			iv.Since = it.LastTransitionTime.Time
		}
		v.Items = append(v.Items, iv)
	}
	v.Pools, v.PoolsNote = s.gridOf(ctx, cfg)
	v.Events, v.EventsErr = s.eventsOf(ctx, cfg)
	return v, 200
}

// gridOf reads the pools that roll the config's MachineConfigs out, and
// their nodes; a note says why there are none.
func (s *Server) gridOf(ctx context.Context, cfg *v1alpha1.VirtPlatformConfig) ([]gridPool, string) {
	items := make([]v1alpha1.PlanItem, 0, len(cfg.Status.Items))
	for _, it := range cfg.Status.Items {
		items = append(items, v1alpha1.PlanItem{Name: it.Name, TargetRef: it.TargetRef, Operation: it.Operation, DesiredState: it.DesiredState})
	}
	changes, err := pools.Changes(ctx, s.c.Dynamic, items, true)
	if err != nil {
		return nil, err.Error()
	}
	changes = pools.WithHeld(changes, cfg.Status.Abort)
	if len(changes) == 0 {
		return nil, "This config has no MachineConfig items: nothing rolls out through a MachineConfigPool, no node reboots."
	}
	all, err := pools.List(ctx, s.c.Dynamic)
	if err != nil {
		return nil, err.Error()
	}
	selecting, err := machineconfig.Rolls(all, changes)
	if err != nil {
		return nil, err.Error()
	}
	if len(selecting) == 0 {
		return nil, "No MachineConfigPool selects this config's MachineConfigs: no node reboots."
	}
	var out []gridPool
	for _, r := range selecting {
		for i := range all {
			if all[i].GetName() != r.Pool {
				continue
			}
			var nodes []corev1.Node
			var nodesErr string
			if sel, err := machineconfig.PoolSelector(&all[i], "nodeSelector"); err != nil {
				nodesErr = "its nodeSelector is invalid: " + err.Error()
			} else if list, err := s.c.Kube.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: sel.String()}); err != nil {
				nodesErr = explain.Brief(err)
			} else {
				nodes = list.Items
			}
			g := newGridPool(&all[i], r.Configs, nodes, nodesErr)
			g.followItems(itemsRolledBy(cfg.Status.Items, r.Configs))
			if a := cfg.Status.Abort; a != nil {
				g.heldByAbort(a)
			}
			g.followSteps(&all[i], cfg)
			out = append(out, g)
		}
	}
	return out, ""
}

// maxEvents bounds the timeline.
const maxEvents = 50

// eventsOf lists the config's Events, oldest first.
func (s *Server) eventsOf(ctx context.Context, cfg *v1alpha1.VirtPlatformConfig) ([]eventView, string) {
	sel := fields.Set{"involvedObject.kind": "VirtPlatformConfig", "involvedObject.name": cfg.Name}.AsSelector().String()
	list, err := s.c.Kube.CoreV1().Events(eventsNamespace).List(ctx, metav1.ListOptions{FieldSelector: sel})
	if err != nil {
		return nil, "The config's Events cannot be read: " + explain.Brief(err)
	}
	out := make([]eventView, 0, len(list.Items))
	for _, e := range list.Items {
		if e.InvolvedObject.UID != "" && e.InvolvedObject.UID != cfg.UID {
			continue // of an earlier config of the same name
		}
		out = append(out, eventView{Time: eventTime(e), Type: e.Type, Reason: e.Reason, Message: e.Message, Count: e.Count})
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Time.Before(out[j].Time) })
	if len(out) > maxEvents {
		out = out[len(out)-maxEvents:]
	}
	return out, ""
}

// eventTime is when an Event last happened.
func eventTime(e corev1.Event) time.Time {
	switch {
	case !e.LastTimestamp.IsZero():
		return e.LastTimestamp.Time
	case !e.EventTime.IsZero():
		return e.EventTime.Time
	case !e.FirstTimestamp.IsZero():
		return e.FirstTimestamp.Time
	}
	return e.CreationTimestamp.Time
}

// configsView is the configs page.
type configsView struct {
	Rows []summaryView
	Err  string
	// Policies are the approval policies; PoliciesErr says why they
	// cannot be shown.
	Policies    []policyView
	PoliciesErr string
	// Fleets are the FleetConfigs of a fleet's hub (none elsewhere);
	// FleetsErr says why they cannot be shown.
	Fleets    []fleetRow
	FleetsErr string
}

// policyView is an approval policy as the configs page lists it.
type policyView struct {
	Name, Configs, Bounds, Windows, Author string
	LastApproved                           *v1alpha1.PolicyDecision
	LastRefused                            *v1alpha1.PolicyDecision
}

// policiesOf lists the approval policies for the configs page.
func (s *Server) policiesOf(ctx context.Context) ([]policyView, string) {
	list, err := s.c.Advisor.AdvisorV1alpha1().ApprovalPolicies().List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, explain.Line(err)
	}
	var out []policyView
	for _, p := range list.Items {
		configs := strings.Join(p.Spec.Configs.Names, ", ")
		if sel := p.Spec.Configs.Selector; sel != nil {
			configs = strings.TrimPrefix(configs+" + "+metav1.FormatLabelSelector(sel), " + ")
		}
		windows := strings.Join(p.Spec.Windows, ", ")
		if windows == "" {
			windows = "any time"
		}
		out = append(out, policyView{Name: p.Name, Configs: configs, Bounds: policies.Summary(p.Spec.Bounds), Windows: windows,
			Author: p.Status.Author, LastApproved: p.Status.LastApproved, LastRefused: p.Status.LastRefused})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, ""
}

func (s *Server) buildConfigs(ctx context.Context) (configsView, int) {
	list, err := s.c.Advisor.AdvisorV1alpha1().VirtPlatformConfigs().List(ctx, metav1.ListOptions{})
	if err != nil {
		return configsView{Err: explain.Line(err)}, codeOf(err)
	}
	v := configsView{}
	for i := range list.Items {
		v.Rows = append(v.Rows, newSummary(&list.Items[i], s.clock.Now()))
	}
	sort.Slice(v.Rows, func(i, j int) bool { return v.Rows[i].Name < v.Rows[j].Name })
	v.Policies, v.PoliciesErr = s.policiesOf(ctx)
	v.Fleets, v.FleetsErr = s.fleetsOf(ctx)
	return v, 200
}
