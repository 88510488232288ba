// Package validation checks VirtPlatformConfigs and Approvals, with the
// messages of the earlier CRD-based operator so its users find the same rules.
package validation

import (
	"fmt"
	"reflect"
	"time"

	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/kubevirt/virt-advisor/pkg/apis/advisor"
)

var (
	actions          = []string{string(advisor.PlanActionDryRun), string(advisor.PlanActionApply), string(advisor.PlanActionIgnore)}
	failurePolicies  = []string{string(advisor.FailurePolicyAbort), string(advisor.FailurePolicyContinue)}
	phases           = phaseNames()
	impacts          = []string{string(advisor.ImpactNone), string(advisor.ImpactLow), string(advisor.ImpactMedium), string(advisor.ImpactHigh)}
	singletonMessage = "To ensure a singleton pattern, the VirtPlatformConfig name must exactly match the spec.profile."
)

// The values options may take, as the markers of the option structs of
// v1alpha1 declare them (hack/optionsgen). The profiles write them (or
// values derived from them) to the cluster, and the admission policy of
// artifacts/deploy pins the server's writes to them: its constants are
// generated from these (`go test ./artifacts/deploy -update`).
var (
	// DescheduleModes are the values of options.loadAware.mode.
	DescheduleModes = OptionValues("loadAware.mode")
	// DeviationLevels are the values of options.loadAware.devDeviationThresholds.
	DeviationLevels = OptionValues("loadAware.devDeviationThresholds")
	// DeschedulingIntervalSeconds bounds options.loadAware.deschedulingIntervalSeconds.
	DeschedulingIntervalSeconds = OptionRange("loadAware.deschedulingIntervalSeconds")
	// EvictionLimitTotal and EvictionLimitNode bound
	// options.loadAware.evictionLimitTotal and evictionLimitNode.
	EvictionLimitTotal = OptionRange("loadAware.evictionLimitTotal")
	EvictionLimitNode  = OptionRange("loadAware.evictionLimitNode")
	// MemoryToRequestRatio bounds options.virtHigherDensity.memoryToRequestRatio.
	MemoryToRequestRatio = OptionRange("virtHigherDensity.memoryToRequestRatio")
	// MigrationCooldown, MaxMigrationCooldown and MigrationHistoryWindow
	// bound options.loadAware.devMigrationCooldown, devMaxMigrationCooldown
	// and devMigrationHistoryWindow.
	MigrationCooldown      = DurationRange{Min: time.Minute, Max: 24 * time.Hour}
	MaxMigrationCooldown   = DurationRange{Min: time.Minute, Max: 7 * 24 * time.Hour}
	MigrationHistoryWindow = DurationRange{Min: time.Hour, Max: 30 * 24 * time.Hour}
)

// OptionRange is the range an integer option declares
// (+k8s:validation:minimum and maximum), by its path under spec.options
// ("loadAware.evictionLimitNode"). It panics on an option that declares
// none: the paths are the program's own.
func OptionRange(path string) Range {
	r, ok := declaredRanges[path]
	if !ok {
		panic("no option " + path + " declares a range (+k8s:validation:minimum and maximum)")
	}
	return r
}

// OptionValues are the values a string option declares
// (+k8s:validation:enum), by its path under spec.options.
func OptionValues(path string) []string {
	v, ok := declaredEnums[path]
	if !ok {
		panic("no option " + path + " declares its values (+k8s:validation:enum)")
	}
	return append([]string(nil), v...)
}

// The descheduler's own defaults of the cooldowns (its KubevirtMigrationAware
// plugin), which hold when an option is unset: the cross-field rules compare
// with them.
const (
	DeschedulerMigrationCooldown      = 15 * time.Minute
	DeschedulerMaxMigrationCooldown   = 6 * time.Hour
	DeschedulerMigrationHistoryWindow = 48 * time.Hour
)

// HistoryWindowPerMaxCooldown: the descheduler counts a VM's migrations over
// the history window; it must exceed this many maximum cooldowns, or a VM
// that keeps bouncing never reaches the cap (the plugin's documented rule).
const HistoryWindowPerMaxCooldown = 6

// DurationRange is an inclusive range of a duration option.
type DurationRange struct{ Min, Max time.Duration }

// Range is an inclusive range of an integer option.
type Range struct{ Min, Max int32 }

// Contains reports whether v is in the range.
func (r Range) Contains(v int32) bool { return v >= r.Min && v <= r.Max }

func phaseNames() sets.Set[string] {
	names := sets.New[string]()
	for _, p := range advisor.Phases() {
		names.Insert(string(p))
	}
	return names
}

// Profile is what validation knows of a profile the server serves.
type Profile struct {
	Name string
	// Options is the block of spec.options the profile reads, by its JSON
	// name (advisor.Options*); "" when it takes none. It is the only
	// block a config of the profile may set.
	Options string
	// Validate checks that block (the profile's own checks, from its
	// package: profiles.Metadata.ValidateOptions); nil checks nothing.
	Validate func(*advisor.ProfileOptions, *field.Path) field.ErrorList
}

// Profiles are the profiles a server serves, in the order messages list
// them. The profile catalogue provides them (catalog.Catalog.Validation).
type Profiles []Profile

func (ps Profiles) names() []string {
	names := make([]string, 0, len(ps))
	for _, p := range ps {
		names = append(names, p.Name)
	}
	return names
}

func (ps Profiles) get(name string) (Profile, bool) {
	for _, p := range ps {
		if p.Name == name {
			return p, true
		}
	}
	return Profile{}, false
}

// owner is the profile that reads the options block, if any.
func (ps Profiles) owner(block string) (string, bool) {
	for _, p := range ps {
		if p.Options == block {
			return p.Name, true
		}
	}
	return "", false
}

// ValidateVirtPlatformConfig validates a new VirtPlatformConfig of one of
// the profiles served.
func ValidateVirtPlatformConfig(c *advisor.VirtPlatformConfig, served Profiles) field.ErrorList {
	allErrs := apimachineryvalidation.ValidateObjectMeta(&c.ObjectMeta, false, apimachineryvalidation.NameIsDNSSubdomain, field.NewPath("metadata"))
	allErrs = append(allErrs, validateSpec(&c.Spec, served, field.NewPath("spec"))...)
	if c.Spec.Profile != "" && c.Name != c.Spec.Profile {
		allErrs = append(allErrs, field.Invalid(field.NewPath("metadata", "name"), c.Name, singletonMessage))
	}
	return allErrs
}

// ValidateVirtPlatformConfigUpdate validates a spec or metadata update.
func ValidateVirtPlatformConfigUpdate(c, old *advisor.VirtPlatformConfig, served Profiles) field.ErrorList {
	allErrs := apimachineryvalidation.ValidateObjectMetaUpdate(&c.ObjectMeta, &old.ObjectMeta, field.NewPath("metadata"))
	allErrs = append(allErrs, validateSpec(&c.Spec, served, field.NewPath("spec"))...)
	if c.Spec.Profile != old.Spec.Profile {
		allErrs = append(allErrs, field.Invalid(field.NewPath("spec", "profile"), c.Spec.Profile, "Profile is immutable"))
	}
	return allErrs
}

// ValidateVirtPlatformConfigStatusUpdate validates a write to the status subresource.
func ValidateVirtPlatformConfigStatusUpdate(c, old *advisor.VirtPlatformConfig) field.ErrorList {
	allErrs := apimachineryvalidation.ValidateObjectMetaUpdate(&c.ObjectMeta, &old.ObjectMeta, field.NewPath("metadata"))
	st, fldPath := &c.Status, field.NewPath("status")
	if st.Phase != "" && !phases.Has(string(st.Phase)) {
		allErrs = append(allErrs, field.NotSupported(fldPath.Child("phase"), st.Phase, sets.List(phases)))
	}
	if st.ImpactSeverity != "" {
		allErrs = append(allErrs, validateEnum(fldPath.Child("impactSeverity"), string(st.ImpactSeverity), impacts)...)
	}
	if st.ObservedGeneration < 0 {
		allErrs = append(allErrs, field.Invalid(fldPath.Child("observedGeneration"), st.ObservedGeneration, "must not be negative"))
	}
	allErrs = append(allErrs, metav1validation.ValidateConditions(st.Conditions, fldPath.Child("conditions"))...)
	if len(st.Items) > MaxStatusItems {
		allErrs = append(allErrs, field.TooMany(fldPath.Child("items"), len(st.Items), MaxStatusItems))
	}
	seen := sets.New[string]()
	for i, item := range st.Items {
		p := fldPath.Child("items").Index(i)
		if item.Name == "" {
			allErrs = append(allErrs, field.Required(p.Child("name"), "every item needs a name"))
		} else if seen.Has(item.Name) {
			allErrs = append(allErrs, field.Duplicate(p.Child("name"), item.Name))
		}
		seen.Insert(item.Name)
		if item.LastTransitionTime == nil {
			allErrs = append(allErrs, field.Required(p.Child("lastTransitionTime"), "every item records when its state last changed"))
		}
	}
	return allErrs
}

// MaxStatusItems bounds status.items: a profile plans a handful of items.
const MaxStatusItems = 32

// ValidateApproval validates the body of POST .../approve.
func ValidateApproval(a *advisor.Approval) field.ErrorList {
	if a.Spec.PlanHash == "" {
		return field.ErrorList{field.Required(field.NewPath("spec", "planHash"),
			"set it to status.planHash of the plan you reviewed (GET .../plan)")}
	}
	return nil
}

// ValidateAbort validates the body of POST .../abort: spec.planHash is
// optional, and when set it is a plan hash.
func ValidateAbort(a *advisor.Abort) field.ErrorList {
	if h := a.Spec.PlanHash; h != "" && !isPlanHash(h) {
		return field.ErrorList{field.Invalid(field.NewPath("spec", "planHash"), h,
			"must be status.approval.planHash of the config (64 lowercase hex digits), or left out to abort whatever plan is approved")}
	}
	return nil
}

func isPlanHash(h string) bool {
	if len(h) != 64 {
		return false
	}
	for _, r := range h {
		if (r < '0' || r > '9') && (r < 'a' || r > 'f') {
			return false
		}
	}
	return true
}

func validateSpec(spec *advisor.VirtPlatformConfigSpec, served Profiles, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	if spec.Profile == "" {
		allErrs = append(allErrs, field.Required(fldPath.Child("profile"), fmt.Sprintf("one of %q", served.names())))
	} else {
		allErrs = append(allErrs, validateEnum(fldPath.Child("profile"), spec.Profile, served.names())...)
	}
	allErrs = append(allErrs, validateEnum(fldPath.Child("action"), string(spec.Action), actions)...)
	allErrs = append(allErrs, validateEnum(fldPath.Child("failurePolicy"), string(spec.FailurePolicy), failurePolicies)...)
	if _, err := advisor.ParseWaitTimeout(spec.WaitTimeout); err != nil {
		allErrs = append(allErrs, field.Invalid(fldPath.Child("waitTimeout"), spec.WaitTimeout, err.Error()))
	}
	if spec.Options != nil {
		allErrs = append(allErrs, validateOptions(served, spec.Profile, spec.Options, fldPath.Child("options"))...)
	}
	if spec.Rollout != nil && spec.Rollout.Gates != nil {
		allErrs = append(allErrs, validateGates(spec.Rollout.Gates, fldPath.Child("rollout", "gates"))...)
	}
	if spec.DelegatedApproval != nil {
		allErrs = append(allErrs, validateDelegatedApproval(spec.DelegatedApproval, fldPath.Child("delegatedApproval"))...)
	}
	return allErrs
}

// setBlocks are the JSON names of the blocks of spec.options a config
// sets: every pointer field of ProfileOptions is one block, named as its
// JSON field (blockNames, generated from the declaration), so a new block
// needs no entry here.
func setBlocks(o *advisor.ProfileOptions) []string {
	var out []string
	v := reflect.ValueOf(o).Elem()
	for i := 0; i < v.NumField(); i++ {
		if f := v.Field(i); f.Kind() == reflect.Pointer && !f.IsNil() {
			out = append(out, blockNames[v.Type().Field(i).Name])
		}
	}
	return out
}

// validateOptions admits the block of the config's profile only, and
// checks its fields.
func validateOptions(served Profiles, profile string, o *advisor.ProfileOptions, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	own, _ := served.get(profile)
	for _, b := range setBlocks(o) {
		p := fldPath.Child(b)
		switch owner, owned := served.owner(b); {
		case b == own.Options:
			allErrs = append(allErrs, DeclaredChecks(b, o, p)...)
			if own.Validate != nil {
				allErrs = append(allErrs, own.Validate(o, p)...)
			}
		case own.Options != "":
			allErrs = append(allErrs, field.Forbidden(p, fmt.Sprintf("When profile is '%s', only options.%s may be set", profile, own.Options)))
		case owned:
			allErrs = append(allErrs, field.Forbidden(p, fmt.Sprintf("options.%s can only be used with profile '%s'", b, owner)))
		default:
			allErrs = append(allErrs, field.Forbidden(p, fmt.Sprintf("options.%s is read by no profile this server serves", b)))
		}
	}
	return allErrs
}

// LoadAwareOptions checks options.loadAware (load-aware-rebalancing's
// ValidateOptions).
func LoadAwareOptions(opts *advisor.ProfileOptions, fldPath *field.Path) field.ErrorList {
	o := opts.LoadAware
	// Bounds and values are the markers' (declaredChecks).
	return migrationCooldowns(o, fldPath)
}

// migrationCooldowns checks the three durations, then that they fit
// together, an unset one standing for the descheduler's default.
func migrationCooldowns(o *advisor.LoadAwareConfig, fldPath *field.Path) field.ErrorList {
	cooldownPath, maxPath, windowPath := fldPath.Child("devMigrationCooldown"), fldPath.Child("devMaxMigrationCooldown"), fldPath.Child("devMigrationHistoryWindow")
	cooldown, errs := ParseDurationOption(cooldownPath, o.DevMigrationCooldown, MigrationCooldown, DeschedulerMigrationCooldown)
	maxCooldown, maxErrs := ParseDurationOption(maxPath, o.DevMaxMigrationCooldown, MaxMigrationCooldown, DeschedulerMaxMigrationCooldown)
	window, windowErrs := ParseDurationOption(windowPath, o.DevMigrationHistoryWindow, MigrationHistoryWindow, DeschedulerMigrationHistoryWindow)
	allErrs := append(append(errs, maxErrs...), windowErrs...)
	if len(allErrs) > 0 {
		return allErrs
	}
	if (o.DevMigrationCooldown != "" || o.DevMaxMigrationCooldown != "") && maxCooldown < cooldown {
		p, v := maxPath, o.DevMaxMigrationCooldown
		if v == "" {
			p, v = cooldownPath, o.DevMigrationCooldown
		}
		allErrs = append(allErrs, field.Invalid(p, v, fmt.Sprintf("devMaxMigrationCooldown (%s) must be at least devMigrationCooldown (%s); an unset one is the descheduler's default",
			maxCooldown, cooldown)))
	}
	if (o.DevMaxMigrationCooldown != "" || o.DevMigrationHistoryWindow != "") && window < HistoryWindowPerMaxCooldown*maxCooldown {
		p, v := windowPath, o.DevMigrationHistoryWindow
		if v == "" {
			p, v = maxPath, o.DevMaxMigrationCooldown
		}
		allErrs = append(allErrs, field.Invalid(p, v, fmt.Sprintf("devMigrationHistoryWindow (%s) must be at least %d x devMaxMigrationCooldown (%s), else a VM that keeps migrating never reaches the cap; an unset one is the descheduler's default",
			window, HistoryWindowPerMaxCooldown, maxCooldown)))
	}
	return allErrs
}

// ParseDurationOption parses a duration option: "" is unset (def), else a
// Go duration within r.
func ParseDurationOption(fldPath *field.Path, v string, r DurationRange, def time.Duration) (time.Duration, field.ErrorList) {
	if v == "" {
		return def, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil {
		return 0, field.ErrorList{field.Invalid(fldPath, v, "must be a duration such as 30m or 2h (units h, m, s)")}
	}
	if d < r.Min || d > r.Max {
		return 0, field.ErrorList{field.Invalid(fldPath, v, fmt.Sprintf("must be between %s and %s, inclusive", r.Min, r.Max))}
	}
	return d, nil
}

// VirtHigherDensityOptions checks options.virtHigherDensity
// (virt-higher-density's ValidateOptions).
func VirtHigherDensityOptions(opts *advisor.ProfileOptions, fldPath *field.Path) field.ErrorList {
	o := opts.VirtHigherDensity
	var allErrs field.ErrorList
	ratioPath := fldPath.Child("memoryToRequestRatio")
	if o.MemoryToRequestRatio != nil && *o.MemoryToRequestRatio > 120 && (o.EnableSwap == nil || !*o.EnableSwap) {
		allErrs = append(allErrs, field.Invalid(ratioPath, *o.MemoryToRequestRatio, "memoryToRequestRatio > 120 requires enableSwap=true"))
	}
	if ksm := o.KSMConfiguration; ksm != nil && ksm.NodeLabelSelector != nil {
		allErrs = append(allErrs, metav1validation.ValidateLabelSelector(ksm.NodeLabelSelector,
			metav1validation.LabelSelectorValidationOptions{}, fldPath.Child("ksmConfiguration", "nodeLabelSelector"))...)
	}
	// Zero pages change how KSM merges, not whether it runs: without KSM
	// the MachineConfig would reboot every worker for nothing.
	if ksm := o.KSMConfiguration; ksm != nil && ksm.UseZeroPages != nil && *ksm.UseZeroPages && ksm.Enabled != nil && !*ksm.Enabled {
		allErrs = append(allErrs, field.Invalid(fldPath.Child("ksmConfiguration", "useZeroPages"), true,
			"useZeroPages requires ksmConfiguration.enabled: true (it changes how KSM merges pages, and only the HyperConverged's KSM runs it); set enabled: true or drop useZeroPages"))
	}
	return allErrs
}

// validateEnum accepts "" (left to defaulting) or one of allowed.
func validateEnum(fldPath *field.Path, v string, allowed []string) field.ErrorList {
	if v == "" {
		return nil
	}
	for _, a := range allowed {
		if v == a {
			return nil
		}
	}
	return field.ErrorList{field.NotSupported(fldPath, v, allowed)}
}

// validateBounds accepts nil (left to defaulting) or a value within
// min..max, inclusive.
func validateBounds[T int32 | int64](fldPath *field.Path, v *T, minimum, maximum int64) field.ErrorList {
	if v == nil || (int64(*v) >= minimum && int64(*v) <= maximum) {
		return nil
	}
	return field.ErrorList{field.Invalid(fldPath, *v, fmt.Sprintf("must be between %d and %d, inclusive", minimum, maximum))}
}

// ValidatePool checks the pool option of a profile that writes a
// MachineConfig for one pool: a MachineConfigPool name, and one
// that makes a valid MachineConfig name (mcName); unset, it is defaulted.
// The control plane's pool master is refused, as dedicated-cpus refuses
// it: its MachineConfig reboots the control-plane nodes, which are not
// the nodes of VMs.
func ValidatePool(fldPath *field.Path, pool string, mcName func(string) string) field.ErrorList {
	if pool == "" {
		return nil // defaulted
	}
	if pool == "master" {
		return field.ErrorList{field.Forbidden(fldPath, "the control plane's pool is not for VMs (its MachineConfig "+mcName(pool)+
			" would reboot the control-plane nodes): name the pool of the nodes that run VMs, worker or a custom pool such as worker-cnv")}
	}
	var errs field.ErrorList
	for _, msg := range apimachineryvalidation.NameIsDNSSubdomain(pool, false) {
		errs = append(errs, field.Invalid(fldPath, pool, msg))
	}
	if len(errs) == 0 {
		for _, msg := range apimachineryvalidation.NameIsDNSSubdomain(mcName(pool), false) {
			errs = append(errs, field.Invalid(fldPath, pool, "makes the MachineConfig name "+mcName(pool)+", which "+msg))
		}
	}
	return errs
}

// DeclaredChecks checks the bounds and values the markers of a block's
// fields declare (generated by hack/optionsgen): validation runs them
// before the profile's own ValidateOptions, which keeps the checks across
// fields.
func DeclaredChecks(block string, o *advisor.ProfileOptions, fldPath *field.Path) field.ErrorList {
	check, ok := declaredChecks[block]
	if !ok {
		return nil
	}
	return check(o, fldPath)
}
