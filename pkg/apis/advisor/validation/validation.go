// Package validation checks VirtPlatformConfigs and Approvals, with the
// messages of the earlier CRD-based operator so its users find the same rules.
package validation

import (
	"fmt"
	"time"

	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/kubevirt/virt-advisor/pkg/apis/advisor"
)

var (
	profiles         = []string{advisor.ProfileLoadAwareRebalancing, advisor.ProfileVirtHigherDensity, advisor.ProfileExample}
	actions          = []string{string(advisor.PlanActionDryRun), string(advisor.PlanActionApply), string(advisor.PlanActionIgnore)}
	failurePolicies  = []string{string(advisor.FailurePolicyAbort), string(advisor.FailurePolicyContinue)}
	descheduleModes  = []string{"Automatic", "Predictive"}
	deviationLevels  = []string{"Low", "Medium", "High", "AsymmetricLow", "AsymmetricMedium", "AsymmetricHigh"}
	phases           = phaseNames()
	impacts          = []string{string(advisor.ImpactLow), string(advisor.ImpactMedium), string(advisor.ImpactHigh)}
	singletonMessage = "To ensure a singleton pattern, the VirtPlatformConfig name must exactly match the spec.profile."
)

func phaseNames() sets.Set[string] {
	names := sets.New[string]()
	for _, p := range advisor.Phases() {
		names.Insert(string(p))
	}
	return names
}

// ValidateVirtPlatformConfig validates a new VirtPlatformConfig.
func ValidateVirtPlatformConfig(c *advisor.VirtPlatformConfig) field.ErrorList {
	allErrs := apimachineryvalidation.ValidateObjectMeta(&c.ObjectMeta, false, apimachineryvalidation.NameIsDNSSubdomain, field.NewPath("metadata"))
	allErrs = append(allErrs, validateSpec(&c.Spec, field.NewPath("spec"))...)
	if c.Spec.Profile != "" && c.Name != c.Spec.Profile {
		allErrs = append(allErrs, field.Invalid(field.NewPath("metadata", "name"), c.Name, singletonMessage))
	}
	return allErrs
}

// ValidateVirtPlatformConfigUpdate validates a spec or metadata update.
func ValidateVirtPlatformConfigUpdate(c, old *advisor.VirtPlatformConfig) field.ErrorList {
	allErrs := apimachineryvalidation.ValidateObjectMetaUpdate(&c.ObjectMeta, &old.ObjectMeta, field.NewPath("metadata"))
	allErrs = append(allErrs, validateSpec(&c.Spec, field.NewPath("spec"))...)
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

func validateSpec(spec *advisor.VirtPlatformConfigSpec, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	if spec.Profile == "" {
		allErrs = append(allErrs, field.Required(fldPath.Child("profile"), fmt.Sprintf("one of %q", profiles)))
	} else {
		allErrs = append(allErrs, validateEnum(fldPath.Child("profile"), spec.Profile, profiles)...)
	}
	allErrs = append(allErrs, validateEnum(fldPath.Child("action"), string(spec.Action), actions)...)
	allErrs = append(allErrs, validateEnum(fldPath.Child("failurePolicy"), string(spec.FailurePolicy), failurePolicies)...)
	if spec.WaitTimeout != "" {
		d, err := time.ParseDuration(spec.WaitTimeout)
		switch {
		case err != nil:
			allErrs = append(allErrs, field.Invalid(fldPath.Child("waitTimeout"), spec.WaitTimeout, "must be a Go duration such as 30m or 1h30m"))
		case d <= 0:
			allErrs = append(allErrs, field.Invalid(fldPath.Child("waitTimeout"), spec.WaitTimeout, "must be positive; leave it unset to wait forever"))
		}
	}
	if spec.Options != nil {
		allErrs = append(allErrs, validateOptions(spec.Profile, spec.Options, fldPath.Child("options"))...)
	}
	return allErrs
}

func validateOptions(profile string, o *advisor.ProfileOptions, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	if o.LoadAware != nil {
		p := fldPath.Child("loadAware")
		switch profile {
		case advisor.ProfileLoadAwareRebalancing:
			allErrs = append(allErrs, validateLoadAware(o.LoadAware, p)...)
		case advisor.ProfileVirtHigherDensity:
			allErrs = append(allErrs, field.Forbidden(p, "When profile is 'virt-higher-density', only options.virtHigherDensity may be set"))
		default:
			allErrs = append(allErrs, field.Forbidden(p, "options.loadAware can only be used with profile 'load-aware-rebalancing'"))
		}
	}
	if o.VirtHigherDensity != nil {
		p := fldPath.Child("virtHigherDensity")
		switch profile {
		case advisor.ProfileVirtHigherDensity:
			allErrs = append(allErrs, validateVirtHigherDensity(o.VirtHigherDensity, p)...)
		case advisor.ProfileLoadAwareRebalancing:
			allErrs = append(allErrs, field.Forbidden(p, "When profile is 'load-aware-rebalancing', only options.loadAware may be set"))
		default:
			allErrs = append(allErrs, field.Forbidden(p, "options.virtHigherDensity can only be used with profile 'virt-higher-density'"))
		}
	}
	return allErrs
}

func validateLoadAware(o *advisor.LoadAwareConfig, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	allErrs = append(allErrs, validateRange(fldPath.Child("deschedulingIntervalSeconds"), o.DeschedulingIntervalSeconds, 60, 86400)...)
	allErrs = append(allErrs, validateEnum(fldPath.Child("mode"), o.Mode, descheduleModes)...)
	allErrs = append(allErrs, validateEnum(fldPath.Child("devDeviationThresholds"), o.DevDeviationThresholds, deviationLevels)...)
	allErrs = append(allErrs, validateRange(fldPath.Child("evictionLimitTotal"), o.EvictionLimitTotal, 1, 1000)...)
	allErrs = append(allErrs, validateRange(fldPath.Child("evictionLimitNode"), o.EvictionLimitNode, 1, 100)...)
	return allErrs
}

func validateVirtHigherDensity(o *advisor.VirtHigherDensityConfig, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	ratioPath := fldPath.Child("memoryToRequestRatio")
	allErrs = append(allErrs, validateRange(ratioPath, o.MemoryToRequestRatio, 100, 300)...)
	if o.MemoryToRequestRatio != nil && *o.MemoryToRequestRatio > 120 && (o.EnableSwap == nil || !*o.EnableSwap) {
		allErrs = append(allErrs, field.Invalid(ratioPath, *o.MemoryToRequestRatio, "memoryToRequestRatio > 120 requires enableSwap=true"))
	}
	if ksm := o.KSMConfiguration; ksm != nil && ksm.NodeLabelSelector != nil {
		allErrs = append(allErrs, metav1validation.ValidateLabelSelector(ksm.NodeLabelSelector,
			metav1validation.LabelSelectorValidationOptions{}, fldPath.Child("ksmConfiguration", "nodeLabelSelector"))...)
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

func validateRange(fldPath *field.Path, v *int32, lo, hi int32) field.ErrorList {
	if v == nil || (*v >= lo && *v <= hi) {
		return nil
	}
	return field.ErrorList{field.Invalid(fldPath, *v, fmt.Sprintf("must be between %d and %d, inclusive", lo, hi))}
}
