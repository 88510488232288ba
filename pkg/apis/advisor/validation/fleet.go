package validation

import (
	"fmt"
	"regexp"
	"strings"

	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/sets"
	utilvalidation "k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/kubevirt/virt-advisor/pkg/apis/advisor"
)

// MaxFleetClusters bounds a fleet: a delegated approval names every
// cluster's plan hash, and it travels in every cluster's ManifestWork.
const MaxFleetClusters = 1000

// validateDelegatedApproval validates spec.delegatedApproval, which the
// fleet hub writes: a malformed one is refused, not ignored.
func validateDelegatedApproval(d *advisor.DelegatedApproval, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	if ns, name, ok := strings.Cut(d.Fleet, "/"); !ok || len(apimachineryvalidation.ValidateNamespaceName(ns, false)) > 0 ||
		len(utilvalidation.IsDNS1123Subdomain(name)) > 0 {
		allErrs = append(allErrs, field.Invalid(fldPath.Child("fleet"), d.Fleet, "must be the FleetConfig's namespace/name on the hub"))
	}
	if !isPlanHash(d.FleetHash) {
		allErrs = append(allErrs, field.Invalid(fldPath.Child("fleetHash"), d.FleetHash, "must be the approved fleet plan's hash (64 lowercase hex digits)"))
	}
	if d.ApprovedBy == "" {
		allErrs = append(allErrs, field.Required(fldPath.Child("approvedBy"), "the hub user who approved the fleet plan"))
	}
	if d.ApprovedAt.IsZero() {
		allErrs = append(allErrs, field.Required(fldPath.Child("approvedAt"), "when the hub recorded the approval"))
	}
	allErrs = append(allErrs, validateClusterPlanHashes(d.Clusters, fldPath.Child("clusters"))...)
	return allErrs
}

func validateClusterPlanHashes(clusters []advisor.ClusterPlanHash, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	if len(clusters) == 0 {
		return field.ErrorList{field.Required(fldPath, "the approved plan hash of every cluster of the fleet")}
	}
	if len(clusters) > MaxFleetClusters {
		return field.ErrorList{field.TooMany(fldPath, len(clusters), MaxFleetClusters)}
	}
	seen := sets.New[string]()
	for i, c := range clusters {
		p := fldPath.Index(i)
		for _, msg := range utilvalidation.IsDNS1123Label(c.Name) {
			allErrs = append(allErrs, field.Invalid(p.Child("name"), c.Name, msg))
		}
		if seen.Has(c.Name) {
			allErrs = append(allErrs, field.Duplicate(p.Child("name"), c.Name))
		}
		seen.Insert(c.Name)
		if !isPlanHash(c.PlanHash) {
			allErrs = append(allErrs, field.Invalid(p.Child("planHash"), c.PlanHash, "must be the cluster's plan hash (64 lowercase hex digits)"))
		}
	}
	return allErrs
}

// ValidateFleetConfig validates a new FleetConfig.
func ValidateFleetConfig(c *advisor.FleetConfig, served Profiles) field.ErrorList {
	allErrs := apimachineryvalidation.ValidateObjectMeta(&c.ObjectMeta, true, apimachineryvalidation.NameIsDNSSubdomain, field.NewPath("metadata"))
	return append(allErrs, validateFleetSpec(&c.Spec, served, field.NewPath("spec"))...)
}

// ValidateFleetConfigUpdate validates a spec or metadata update.
func ValidateFleetConfigUpdate(c, old *advisor.FleetConfig, served Profiles) field.ErrorList {
	allErrs := apimachineryvalidation.ValidateObjectMetaUpdate(&c.ObjectMeta, &old.ObjectMeta, field.NewPath("metadata"))
	allErrs = append(allErrs, validateFleetSpec(&c.Spec, served, field.NewPath("spec"))...)
	if c.Spec.Profile != old.Spec.Profile {
		allErrs = append(allErrs, field.Invalid(field.NewPath("spec", "profile"), c.Spec.Profile, "profile is immutable: create another FleetConfig for another profile"))
	}
	return allErrs
}

func validateFleetSpec(spec *advisor.FleetConfigSpec, served Profiles, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	if spec.Profile == "" {
		allErrs = append(allErrs, field.Required(fldPath.Child("profile"), fmt.Sprintf("one of %q", served.names())))
	} else {
		allErrs = append(allErrs, validateEnum(fldPath.Child("profile"), spec.Profile, served.names())...)
	}
	if spec.Options != nil {
		allErrs = append(allErrs, validateOptions(served, spec.Profile, spec.Options, fldPath.Child("options"))...)
	}
	if spec.PlacementRef.Name == "" {
		allErrs = append(allErrs, field.Required(fldPath.Child("placementRef", "name"), "the Placement, in this namespace, that selects the fleet's clusters"))
	} else {
		for _, msg := range utilvalidation.IsDNS1123Subdomain(spec.PlacementRef.Name) {
			allErrs = append(allErrs, field.Invalid(fldPath.Child("placementRef", "name"), spec.PlacementRef.Name, msg))
		}
	}
	return append(allErrs, validateRolloutStrategy(&spec.RolloutStrategy, fldPath.Child("rolloutStrategy"))...)
}

var rolloutTypes = []string{string(advisor.RolloutTypeAll), string(advisor.RolloutTypeProgressive), string(advisor.RolloutTypeProgressivePerGroup)}

// validateRolloutStrategy checks what OCM's own schema checks, so that a
// strategy OCM would refuse is refused here, with its field path, and
// not when the approval writes the ManifestWorkReplicaSet.
func validateRolloutStrategy(s *advisor.RolloutStrategy, fldPath *field.Path) field.ErrorList {
	allErrs := validateEnum(fldPath.Child("type"), string(s.Type), rolloutTypes)
	blocks := map[advisor.RolloutType]bool{
		advisor.RolloutTypeAll:                 s.All != nil,
		advisor.RolloutTypeProgressive:         s.Progressive != nil,
		advisor.RolloutTypeProgressivePerGroup: s.ProgressivePerGroup != nil,
	}
	typ := s.Type
	if typ == "" {
		typ = advisor.RolloutTypeAll
	}
	for t, set := range blocks {
		if set && t != typ {
			allErrs = append(allErrs, field.Forbidden(fldPath.Child(blockName(t)), fmt.Sprintf("type is %s: set only the %s block", typ, blockName(typ))))
		}
	}
	switch {
	case s.All != nil:
		allErrs = append(allErrs, validateRolloutConfig(&s.All.RolloutConfig, fldPath.Child("all"))...)
	case s.Progressive != nil:
		p := fldPath.Child("progressive")
		allErrs = append(allErrs, validateRolloutConfig(&s.Progressive.RolloutConfig, p)...)
		allErrs = append(allErrs, validateMandatory(s.Progressive.MandatoryDecisionGroups.MandatoryDecisionGroups, p.Child("mandatoryDecisionGroups"))...)
		allErrs = append(allErrs, validateCountOrPercent(s.Progressive.MaxConcurrency, p.Child("maxConcurrency"))...)
	case s.ProgressivePerGroup != nil:
		p := fldPath.Child("progressivePerGroup")
		allErrs = append(allErrs, validateRolloutConfig(&s.ProgressivePerGroup.RolloutConfig, p)...)
		allErrs = append(allErrs, validateMandatory(s.ProgressivePerGroup.MandatoryDecisionGroups.MandatoryDecisionGroups, p.Child("mandatoryDecisionGroups"))...)
	}
	return allErrs
}

func blockName(t advisor.RolloutType) string {
	switch t {
	case advisor.RolloutTypeProgressive:
		return "progressive"
	case advisor.RolloutTypeProgressivePerGroup:
		return "progressivePerGroup"
	}
	return "all"
}

func validateRolloutConfig(c *advisor.RolloutConfig, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	if c.MinSuccessTime.Duration < 0 {
		allErrs = append(allErrs, field.Invalid(fldPath.Child("minSuccessTime"), c.MinSuccessTime.String(), "must not be negative"))
	}
	if d := c.ProgressDeadline; d != "" && d != "None" {
		if !progressDeadline.MatchString(d) {
			allErrs = append(allErrs, field.Invalid(fldPath.Child("progressDeadline"), d, `a number of hours, minutes or seconds such as "4h", "30m" or "90s", or "None"`))
		}
	}
	return append(allErrs, validateCountOrPercent(c.MaxFailures, fldPath.Child("maxFailures"))...)
}

func validateMandatory(groups []advisor.MandatoryDecisionGroup, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	for i, g := range groups {
		if g.GroupIndex < 0 {
			allErrs = append(allErrs, field.Invalid(fldPath.Index(i).Child("groupIndex"), g.GroupIndex, "must not be negative"))
		}
	}
	return allErrs
}

func validateCountOrPercent(v intstr.IntOrString, fldPath *field.Path) field.ErrorList {
	if v.Type == intstr.Int && v.IntVal < 0 {
		return field.ErrorList{field.Invalid(fldPath, v.IntVal, "must not be negative")}
	}
	if v.Type == intstr.String && v.StrVal != "" && !percent.MatchString(v.StrVal) {
		return field.ErrorList{field.Invalid(fldPath, v.StrVal, `a number or a percentage such as "10%"`)}
	}
	return nil
}

var (
	// progressDeadline is OCM's pattern for RolloutConfig.progressDeadline.
	progressDeadline = regexp.MustCompile(`^[0-9]+[hms]$`)
	percent          = regexp.MustCompile(`^(100|[0-9]{1,2})%$`)
)
