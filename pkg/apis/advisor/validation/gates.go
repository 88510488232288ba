package validation

import (
	"fmt"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/kubevirt/virt-advisor/pkg/apis/advisor"
)

var gateErrorPolicies = []string{string(advisor.GateErrorHold), string(advisor.GateErrorIgnore)}

// validateGates checks spec.rollout.gates: durations within their
// bounds, a count of failed migrations, parseable label matchers.
func validateGates(g *advisor.RolloutGates, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	if _, err := advisor.ParseGateDuration(g.NodeReadyTimeout, advisor.MinNodeReadyTimeout); err != nil {
		allErrs = append(allErrs, field.Invalid(fldPath.Child("nodeReadyTimeout"), g.NodeReadyTimeout, err.Error()))
	}
	if _, err := advisor.ParseGateDuration(g.Soak, 0); err != nil {
		allErrs = append(allErrs, field.Invalid(fldPath.Child("soak"), g.Soak, err.Error()))
	}
	if n := g.MaxFailedMigrations; n != nil && (*n < 0 || *n > advisor.MaxFailedMigrationsCap) {
		allErrs = append(allErrs, field.Invalid(fldPath.Child("maxFailedMigrations"), *n, fmt.Sprintf("must be between 0 and %d", advisor.MaxFailedMigrationsCap)))
	}
	if g.Alerts != nil {
		allErrs = append(allErrs, validateAlertGate(g.Alerts, fldPath.Child("alerts"))...)
	}
	return allErrs
}

func validateAlertGate(a *advisor.AlertGate, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	if len(a.Matchers) > advisor.MaxAlertMatchers {
		allErrs = append(allErrs, field.TooMany(fldPath.Child("matchers"), len(a.Matchers), advisor.MaxAlertMatchers))
	}
	for i, m := range a.Matchers {
		if _, err := advisor.ParseMatcher(m); err != nil {
			allErrs = append(allErrs, field.Invalid(fldPath.Child("matchers").Index(i), m, err.Error()))
		}
	}
	if len(a.Ignore) > advisor.MaxAlertMatchers {
		allErrs = append(allErrs, field.TooMany(fldPath.Child("ignore"), len(a.Ignore), advisor.MaxAlertMatchers))
	}
	for i, name := range a.Ignore {
		if name == "" {
			allErrs = append(allErrs, field.Invalid(fldPath.Child("ignore").Index(i), name, "an alert name, e.g. Watchdog"))
		}
	}
	return append(allErrs, validateEnum(fldPath.Child("onError"), string(a.OnError), gateErrorPolicies)...)
}
