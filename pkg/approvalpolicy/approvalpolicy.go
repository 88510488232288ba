// Package approvalpolicy decides, without I/O, whether an ApprovalPolicy
// approves a plan: which configs a policy covers, whether a plan stays
// within its bounds (impact, reboots, VM fates, items, windows, four
// eyes), and, when it does not, which bound it exceeds, in words.
package approvalpolicy

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/kubevirt/virt-advisor/pkg/apis/advisor/v1alpha1"
	"github.com/kubevirt/virt-advisor/pkg/maintenance"
)

// Facts are what a decision depends on besides the policy and the plan.
type Facts struct {
	// Now is the instant of the decision.
	Now time.Time
	// SpecChangedBy is the user who last changed the config's spec.
	SpecChangedBy string
	// RequireDistinctApprover: a policy never approves the plan of a spec
	// its author last changed (--require-distinct-approver).
	RequireDistinctApprover bool
	// Windows are the maintenance windows.
	Windows []*maintenance.Window
	// PoolLabels are the labels of the MachineConfigPools, by name: which
	// windows select a pool depends on them.
	PoolLabels map[string]map[string]string
}

// Decision is what one policy says of one plan.
type Decision struct {
	// Policy is the policy's name.
	Policy string
	// Approved is true when the plan is within every bound.
	Approved bool
	// Exceeded say, when not approved, each bound the plan exceeds, e.g.
	// "reboots pool worker; policy 'quiet-tuning' allows no reboot".
	Exceeded []string
	// OpensAt is, when the policy refused only because none of its
	// windows is open, when the first of them opens next (zero: never).
	OpensAt time.Time
}

// Message says the decision in one sentence.
func (d Decision) Message() string {
	if d.Approved {
		return fmt.Sprintf("policy '%s' approves the plan", d.Policy)
	}
	return strings.Join(d.Exceeded, "; ")
}

// ApprovedBy is how an approval by policy p is recorded:
// "policy/<name> (set by <author>)".
func ApprovedBy(p *v1alpha1.ApprovalPolicy) string {
	return fmt.Sprintf("%s%s (set by %s)", approvedByPrefix, p.Name, p.Status.Author)
}

const approvedByPrefix = "policy/"

// PolicyOf returns the name of the policy an approval was recorded by,
// if a policy made it.
func PolicyOf(approvedBy string) (string, bool) {
	rest, ok := strings.CutPrefix(approvedBy, approvedByPrefix)
	if !ok {
		return "", false
	}
	name, _, ok := strings.Cut(rest, " (set by ")
	if !ok {
		return "", false
	}
	return name, true
}

// Covers is true when policy p covers the config of that name and labels.
func Covers(p *v1alpha1.ApprovalPolicy, name string, configLabels map[string]string) bool {
	for _, n := range p.Spec.Configs.Names {
		if n == name {
			return true
		}
	}
	if p.Spec.Configs.Selector == nil {
		return false
	}
	sel, err := metav1.LabelSelectorAsSelector(p.Spec.Configs.Selector)
	return err == nil && sel.Matches(labels.Set(configLabels))
}

// Decide asks every policy that covers cfg about plan, in name order: the
// first that approves it, and the refusals of the others before it.
func Decide(policies []*v1alpha1.ApprovalPolicy, cfg *v1alpha1.VirtPlatformConfig, plan *v1alpha1.PlanStatus, f Facts) (approved *Decision, refused []Decision) {
	sorted := append([]*v1alpha1.ApprovalPolicy(nil), policies...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].Name < sorted[j].Name })
	for _, p := range sorted {
		if !Covers(p, cfg.Name, cfg.Labels) {
			continue
		}
		d := Evaluate(p, plan, f)
		if d.Approved {
			return &d, refused
		}
		refused = append(refused, d)
	}
	return nil, refused
}

// Evaluate decides whether policy p approves plan.
func Evaluate(p *v1alpha1.ApprovalPolicy, plan *v1alpha1.PlanStatus, f Facts) Decision {
	e := &evaluation{p: p, f: f, d: Decision{Policy: p.Name}}
	if f.RequireDistinctApprover && f.SpecChangedBy != "" && f.SpecChangedBy == p.Status.Author {
		e.d.Exceeded = append(e.d.Exceeded, fmt.Sprintf(
			"user %q, who set policy '%s', made the last spec change, and this server requires a second person (--require-distinct-approver)", p.Status.Author, p.Name))
	}
	if maxImpact := orLow(p.Spec.Bounds.MaxImpact); rank(plan.ImpactSeverity) > rank(maxImpact) {
		e.refuse(impactBound, plan.ImpactSeverity)
	}
	for i := range plan.Items {
		e.item(&plan.Items[i])
	}
	if len(p.Spec.Windows) > 0 {
		e.windows()
	}
	e.gates(plan.Settings.Gates)
	d := e.d
	d.Approved = len(d.Exceeded) == 0
	if !d.Approved && len(d.Exceeded) > 1 {
		d.OpensAt = time.Time{} // opening a window would not be enough
	}
	return d
}

// evaluation is an Evaluate under way: the bounds of p the plan exceeds
// so far, in d.
type evaluation struct {
	p *v1alpha1.ApprovalPolicy
	f Facts
	d Decision
}

// refuse notes a bound exceeded, and what the policy allows instead.
func (e *evaluation) refuse(format string, args ...any) {
	e.d.Exceeded = append(e.d.Exceeded, fmt.Sprintf(format, args...)+fmt.Sprintf("; policy '%s' %s", e.p.Name, allows(e.p, format)))
}

// item checks what a plan's item changes and the reboots it makes
// against the policy's bounds.
func (e *evaluation) item(it *v1alpha1.PlanItem) {
	b := e.p.Spec.Bounds
	if it.Operation == v1alpha1.OperationNone || it.Operation == "" {
		return
	}
	if it.Error != "" {
		e.d.Exceeded = append(e.d.Exceeded, fmt.Sprintf("item %s could not be planned; policy '%s' approves only whole plans", it.Name, e.p.Name))
		return
	}
	if len(b.Items) > 0 && !itemAllowed(b.Items, it) {
		e.refuse(itemBound, it.Name, it.TargetRef.Kind, it.TargetRef.Name)
	}
	for _, r := range it.Reboots {
		e.reboot(r)
	}
}

// reboot checks a pool's reboot, and what it does to the pool's VMs,
// against the policy's bounds.
func (e *evaluation) reboot(r v1alpha1.PoolReboot) {
	b := e.p.Spec.Bounds
	disrupts := r.Drains || r.Disruption == v1alpha1.NodeDisruptionReboot
	if disrupts {
		switch {
		case orNone(b.Reboots) == v1alpha1.RebootBoundNone:
			e.refuse(rebootBound, verb(r), r.Pool)
		case !windowed(e.p, r.Pool, e.f):
			e.refuse(windowBound, verb(r), r.Pool)
		}
	}
	if r.VMImpactUnknown != "" && r.Drains {
		e.refuse(unknownVMBound, r.Pool, r.VMImpactUnknown)
	}
	if r.LiveMigrations > 0 && !fateAllowed(b.VMFates, v1alpha1.VMFateLiveMigrate) {
		e.refuse(migrationsBound, vms(r.LiveMigrations), r.Pool)
	}
	for _, vm := range r.VMImpacts {
		if vm.Fate != v1alpha1.VMFateLiveMigrate && !fateAllowed(b.VMFates, vm.Fate) {
			e.refuse(fateBound, vm.Namespace, vm.Name, r.Pool, fateWords(vm.Fate)+because(vm.Reason))
		}
	}
}

// windows checks that one of the windows the policy approves in is open,
// and notes when the next opens when none is.
func (e *evaluation) windows() {
	open, next, missing := windowsOpen(e.p.Spec.Windows, e.f)
	if open {
		return
	}
	when := "none of them is open"
	if next != nil {
		// The message is stored: the opening's time, not how far away it is.
		e.d.OpensAt = next.NextOpening(e.f.Now)
		when = "the next opens " + maintenance.FormatAt(e.d.OpensAt, next.Location, e.f.Now)
	}
	if len(missing) > 0 {
		when += fmt.Sprintf(" (%s: no such MaintenanceWindow)", strings.Join(missing, ", "))
	}
	e.d.Exceeded = append(e.d.Exceeded, fmt.Sprintf("policy '%s' approves only while window %s is open; %s", e.p.Name, strings.Join(e.p.Spec.Windows, " or "), when))
}

// The formats of the bounds a plan exceeds; allows says what the policy allows instead.
const (
	impactBound     = "impact %s"
	itemBound       = "changes item %s (%s %s)"
	rebootBound     = "%s pool %s"
	windowBound     = "%s pool %s, which no Allow maintenance window it trusts governs"
	unknownVMBound  = "the VMs of pool %s could not be assessed (%s)"
	fateBound       = "VM %s/%s on pool %s would be %s"
	migrationsBound = "%s on pool %s would be live-migrated"
)

func allows(p *v1alpha1.ApprovalPolicy, format string) string {
	b := p.Spec.Bounds
	switch format {
	case impactBound:
		return "allows at most " + string(orLow(b.MaxImpact))
	case itemBound:
		var names []string
		for _, it := range b.Items {
			names = append(names, strings.TrimSpace(it.Kind+" "+it.Name))
		}
		return "allows only " + strings.Join(names, ", ")
	case rebootBound:
		return "allows no reboot"
	case windowBound:
		return "allows reboots only in the maintenance windows it trusts (" + trusted(p.Spec.TrustedWindows) + ")"
	case unknownVMBound:
		return "approves only drains whose VMs it knows"
	case fateBound, migrationsBound:
		var fates []string
		for _, f := range b.VMFates {
			fates = append(fates, fateWords(f))
		}
		return "allows only VMs that are " + strings.Join(fates, " or ")
	}
	return ""
}

// vms says a number of VMs: "1 VM", "2 VMs".
func vms(n int64) string {
	if n == 1 {
		return "1 VM"
	}
	return fmt.Sprintf("%d VMs", n)
}

// trusted says which windows a policy trusts, e.g. "nightly, or labelled team=platform".
func trusted(tw *v1alpha1.PolicyWindows) string {
	if tw == nil {
		return "none: spec.trustedWindows is not set"
	}
	var what []string
	if len(tw.Names) > 0 {
		what = append(what, strings.Join(tw.Names, ", "))
	}
	if tw.Selector != nil {
		what = append(what, "labelled "+metav1.FormatLabelSelector(tw.Selector))
	}
	return strings.Join(what, ", or ")
}

func verb(r v1alpha1.PoolReboot) string {
	if r.Disruption == v1alpha1.NodeDisruptionReboot {
		return "reboots"
	}
	return "drains"
}

func fateWords(f v1alpha1.VMFate) string {
	switch f {
	case v1alpha1.VMFateLiveMigrate:
		return "live-migrated"
	case v1alpha1.VMFateShutDown:
		return "shut down"
	case v1alpha1.VMFateBlocksDrain:
		return "blocking the drain"
	}
	return string(f)
}

func because(reason string) string {
	if reason == "" {
		return ""
	}
	return " (" + reason + ")"
}

func fateAllowed(allowed []v1alpha1.VMFate, f v1alpha1.VMFate) bool {
	if len(allowed) == 0 {
		allowed = []v1alpha1.VMFate{v1alpha1.VMFateLiveMigrate}
	}
	for _, a := range allowed {
		if a == f {
			return true
		}
	}
	return false
}

func itemAllowed(allowed []v1alpha1.PolicyItem, it *v1alpha1.PlanItem) bool {
	for _, a := range allowed {
		if (a.Kind == "" || a.Kind == it.TargetRef.Kind) && (a.Name == "" || a.Name == it.Name) {
			return true
		}
	}
	return false
}

// windowed is true when an Allow window policy p trusts selects the pool:
// its writes wait for a window. Windows p does not trust do not count:
// whoever may create one does not decide what p approves.
func windowed(p *v1alpha1.ApprovalPolicy, pool string, f Facts) bool {
	mp := maintenance.Pool{Name: pool, Labels: f.PoolLabels[pool]}
	for _, w := range f.Windows {
		if w.Kind == maintenance.Allow && Trusts(p, w) && w.Selects(mp) {
			return true
		}
	}
	return false
}

// Trusts is true when policy p trusts window w (spec.trustedWindows), by
// name or by label.
func Trusts(p *v1alpha1.ApprovalPolicy, w *maintenance.Window) bool {
	tw := p.Spec.TrustedWindows
	if tw == nil {
		return false
	}
	if slices.Contains(tw.Names, w.Name) {
		return true
	}
	if tw.Selector == nil {
		return false
	}
	sel, err := metav1.LabelSelectorAsSelector(tw.Selector)
	return err == nil && sel.Matches(labels.Set(w.Labels))
}

// windowsOpen says whether one of the named windows is open, and if not,
// which opens first (nil: none opens) and which names are no window.
func windowsOpen(names []string, f Facts) (open bool, first *maintenance.Window, missing []string) {
	var opensAt time.Time
	byName := map[string]*maintenance.Window{}
	for _, w := range f.Windows {
		byName[w.Name] = w
	}
	for _, n := range names {
		w, ok := byName[n]
		if !ok {
			missing = append(missing, n)
			continue
		}
		if w.IsOpen(f.Now) {
			return true, nil, nil
		}
		if next := w.NextOpening(f.Now); !next.IsZero() && (opensAt.IsZero() || next.Before(opensAt)) {
			opensAt, first = next, w
		}
	}
	return false, first, missing
}

func rank(i v1alpha1.Impact) int {
	switch i {
	case v1alpha1.ImpactLow:
		return 1
	case v1alpha1.ImpactMedium:
		return 2
	case v1alpha1.ImpactHigh:
		return 3
	}
	return 0
}

func orLow(i v1alpha1.Impact) v1alpha1.Impact {
	if i == "" {
		return v1alpha1.ImpactLow
	}
	return i
}

func orNone(r v1alpha1.RebootBound) v1alpha1.RebootBound {
	if r == "" {
		return v1alpha1.RebootBoundNone
	}
	return r
}

// RefusedReason is the reason of the ReviewRequired condition of a config
// whose plan every policy covering it refused; its message names each
// policy and the bound exceeded.
const RefusedReason = "PolicyBoundExceeded"

// Named is true when a refusal message names policy name.
func Named(message, name string) bool {
	return strings.Contains(message, "policy '"+name+"'")
}

// Summary says a policy's bounds in a few words, as kubectl and the
// dashboard show them, e.g. "impact<=Low reboots=None vms=LiveMigrate".
func Summary(b v1alpha1.PolicyBounds) string {
	var fates []string
	for _, f := range b.VMFates {
		fates = append(fates, string(f))
	}
	s := fmt.Sprintf("impact<=%s reboots=%s vms=%s", orLow(b.MaxImpact), orNone(b.Reboots), strings.Join(fates, ","))
	if len(b.Items) > 0 {
		var items []string
		for _, it := range b.Items {
			items = append(items, strings.Trim(it.Kind+"/"+it.Name, "/"))
		}
		s += " items=" + strings.Join(items, ",")
	}
	if g := b.Gates; g != nil {
		s += " gates=" + gatesSummary(g)
	}
	return s
}

// Ref is policy p as an approval records it: name, UID and generation.
func Ref(p *v1alpha1.ApprovalPolicy) *v1alpha1.ApprovalPolicyRef {
	return &v1alpha1.ApprovalPolicyRef{Name: p.Name, UID: p.UID, Generation: p.Generation}
}

// LapsedReason is the reason of the ReviewRequired condition of a config
// whose policy approval lapsed before all its items were written, and
// that no policy approved again.
const LapsedReason = "PolicyApprovalLapsed"

// Lapsed says what changed in the policy that approved a, so that the
// items a approved and not yet written may no longer be written; "" when
// a was not made by a policy, or its policy still holds: current (the
// policy of that name now, nil when there is none) is the one that
// approved (same UID and generation) and still covers the config of that
// name and labels.
func Lapsed(a *v1alpha1.ApprovalRecord, current *v1alpha1.ApprovalPolicy, config string, configLabels map[string]string) string {
	if a == nil {
		return ""
	}
	name, byPolicy := PolicyOf(a.ApprovedBy)
	if !byPolicy {
		return ""
	}
	ref := a.Policy
	switch {
	case ref == nil || ref.Name != name:
		return fmt.Sprintf("approval policy '%s' approved the plan without a record of its UID and generation", name)
	case current == nil:
		return fmt.Sprintf("approval policy '%s' was deleted", name)
	case current.UID != ref.UID:
		return fmt.Sprintf("approval policy '%s' was deleted and created again (UID %s, was %s)", name, current.UID, ref.UID)
	case !Covers(current, config, configLabels):
		return fmt.Sprintf("approval policy '%s' no longer covers the config", name)
	case current.Generation != ref.Generation:
		return fmt.Sprintf("approval policy '%s' changed (generation %d → %d)", name, ref.Generation, current.Generation)
	}
	return ""
}
