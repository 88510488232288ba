package validation

import (
	"fmt"
	"slices"

	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/kubevirt/virt-advisor/pkg/apis/advisor"
)

// MaxPolicyNames bounds the names a policy lists (spec.configs.names):
// admitting a policy reviews its author's approve permission on each, one
// SubjectAccessReview per name. Many configs are covered with a selector.
const MaxPolicyNames = 16

var (
	policyImpacts = []string{string(advisor.ImpactLow), string(advisor.ImpactMedium), string(advisor.ImpactHigh)}
	rebootBounds  = []string{string(advisor.RebootBoundNone), string(advisor.RebootBoundInWindow)}
	vmFates       = []string{"LiveMigrate", "ShutDown", "BlocksDrain"}
)

// ValidateApprovalPolicy validates a new ApprovalPolicy.
func ValidateApprovalPolicy(p *advisor.ApprovalPolicy) field.ErrorList {
	allErrs := apimachineryvalidation.ValidateObjectMeta(&p.ObjectMeta, false, apimachineryvalidation.NameIsDNSSubdomain, field.NewPath("metadata"))
	return append(allErrs, validatePolicySpec(&p.Spec, field.NewPath("spec"))...)
}

// ValidateApprovalPolicyUpdate validates a change of an ApprovalPolicy:
// every spec field may change.
func ValidateApprovalPolicyUpdate(p, old *advisor.ApprovalPolicy) field.ErrorList {
	allErrs := apimachineryvalidation.ValidateObjectMetaUpdate(&p.ObjectMeta, &old.ObjectMeta, field.NewPath("metadata"))
	return append(allErrs, validatePolicySpec(&p.Spec, field.NewPath("spec"))...)
}

func validatePolicySpec(spec *advisor.ApprovalPolicySpec, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	configs := fldPath.Child("configs")
	if len(spec.Configs.Names) == 0 && spec.Configs.Selector == nil {
		allErrs = append(allErrs, field.Required(configs.Child("names"),
			"name the VirtPlatformConfigs the policy covers (e.g. [load-aware-rebalancing]), or select them with configs.selector"))
	}
	if n := len(spec.Configs.Names); n > MaxPolicyNames {
		allErrs = append(allErrs, &field.Error{Type: field.ErrorTypeTooMany, Field: configs.Child("names").String(), BadValue: n,
			Detail: fmt.Sprintf("must have at most %d names (each costs a review of the approve permission when the policy is set); cover more configs with spec.configs.selector", MaxPolicyNames)})
	}
	allErrs = append(allErrs, uniqueNames(spec.Configs.Names, configs.Child("names"), "a VirtPlatformConfig")...)
	if spec.Configs.Selector != nil {
		allErrs = append(allErrs, metav1validation.ValidateLabelSelector(spec.Configs.Selector, metav1validation.LabelSelectorValidationOptions{}, configs.Child("selector"))...)
	}

	bounds := fldPath.Child("bounds")
	if !contains(policyImpacts, string(spec.Bounds.MaxImpact)) {
		allErrs = append(allErrs, field.NotSupported(bounds.Child("maxImpact"), spec.Bounds.MaxImpact, policyImpacts))
	}
	if !contains(rebootBounds, string(spec.Bounds.Reboots)) {
		allErrs = append(allErrs, field.NotSupported(bounds.Child("reboots"), spec.Bounds.Reboots, rebootBounds))
	}
	seen := sets.New[advisor.VMFate]()
	for i, f := range spec.Bounds.VMFates {
		p := bounds.Child("vmFates").Index(i)
		if !contains(vmFates, string(f)) {
			allErrs = append(allErrs, field.NotSupported(p, f, vmFates))
		}
		if seen.Has(f) {
			allErrs = append(allErrs, field.Duplicate(p, f))
		}
		seen.Insert(f)
	}
	for i, it := range spec.Bounds.Items {
		if it.Kind == "" && it.Name == "" {
			allErrs = append(allErrs, field.Required(bounds.Child("items").Index(i),
				"set kind (the target's kind, e.g. KubeDescheduler), name (the item's name, e.g. descheduler-profile), or both"))
		}
	}
	if g := spec.Bounds.Gates; g != nil {
		allErrs = append(allErrs, validatePolicyGates(g, bounds.Child("gates"))...)
	}
	allErrs = append(allErrs, validateTrustedWindows(spec, fldPath.Child("trustedWindows"))...)
	allErrs = append(allErrs, uniqueNames(spec.Windows, fldPath.Child("windows"), "a MaintenanceWindow")...)
	if len(spec.Description) > MaxWindowDescriptionLength {
		allErrs = append(allErrs, field.TooLong(fldPath.Child("description"), "", MaxWindowDescriptionLength))
	}
	return allErrs
}

// validateTrustedWindows checks the windows a policy trusts: required
// with reboots InWindow, which is about them and no other window.
func validateTrustedWindows(spec *advisor.ApprovalPolicySpec, fldPath *field.Path) field.ErrorList {
	tw := spec.TrustedWindows
	if tw == nil || (len(tw.Names) == 0 && tw.Selector == nil) {
		if spec.Bounds.Reboots == advisor.RebootBoundInWindow {
			return field.ErrorList{field.Required(fldPath,
				"with bounds.reboots InWindow, name the MaintenanceWindows the policy trusts (names: [nightly]) or select them (selector: {matchLabels: …}); other windows neither widen nor narrow the policy")}
		}
		return nil
	}
	var allErrs field.ErrorList
	if n := len(tw.Names); n > MaxPolicyNames {
		allErrs = append(allErrs, &field.Error{Type: field.ErrorTypeTooMany, Field: fldPath.Child("names").String(), BadValue: n,
			Detail: fmt.Sprintf("must have at most %d names; select more windows with spec.trustedWindows.selector", MaxPolicyNames)})
	}
	allErrs = append(allErrs, uniqueNames(tw.Names, fldPath.Child("names"), "a MaintenanceWindow")...)
	if tw.Selector != nil {
		allErrs = append(allErrs, metav1validation.ValidateLabelSelector(tw.Selector, metav1validation.LabelSelectorValidationOptions{}, fldPath.Child("selector"))...)
	}
	return allErrs
}

// uniqueNames checks a list of object names of what.
func uniqueNames(names []string, fldPath *field.Path, what string) field.ErrorList {
	var allErrs field.ErrorList
	seen := sets.New[string]()
	for i, name := range names {
		p := fldPath.Index(i)
		for _, msg := range apimachineryvalidation.NameIsDNSSubdomain(name, false) {
			allErrs = append(allErrs, field.Invalid(p, name, fmt.Sprintf("not the name of %s: %s", what, msg)))
		}
		if seen.Has(name) {
			allErrs = append(allErrs, field.Duplicate(p, name))
		}
		seen.Insert(name)
	}
	return allErrs
}

func contains(values []string, v string) bool { return slices.Contains(values, v) }

// validatePolicyGates checks the least gates a policy requires: the same
// bounds as the gates themselves (spec.rollout.gates).
func validatePolicyGates(g *advisor.PolicyGates, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	if _, err := advisor.ParseGateDuration(g.MaxNodeReadyTimeout, advisor.MinNodeReadyTimeout); err != nil {
		allErrs = append(allErrs, field.Invalid(fldPath.Child("maxNodeReadyTimeout"), g.MaxNodeReadyTimeout, err.Error()))
	}
	if _, err := advisor.ParseGateDuration(g.MinSoak, 0); err != nil {
		allErrs = append(allErrs, field.Invalid(fldPath.Child("minSoak"), g.MinSoak, err.Error()))
	}
	if n := g.MaxFailedMigrations; n != nil && (*n < 0 || *n > advisor.MaxFailedMigrationsCap) {
		allErrs = append(allErrs, field.Invalid(fldPath.Child("maxFailedMigrations"), *n, fmt.Sprintf("must be between 0 and %d", advisor.MaxFailedMigrationsCap)))
	}
	return allErrs
}
