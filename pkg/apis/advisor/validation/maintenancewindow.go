package validation

import (
	"fmt"

	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/kubevirt/virt-advisor/pkg/apis/advisor"
	"github.com/kubevirt/virt-advisor/pkg/apis/advisor/maintenanceschedule"
)

var windowKinds = []string{string(advisor.MaintenanceWindowKindAllow), string(advisor.MaintenanceWindowKindDeny)}

// MaxWindowDescriptionLength bounds spec.description: a sentence or two for people.
const MaxWindowDescriptionLength = 1024

// ValidateMaintenanceWindow validates a new MaintenanceWindow.
func ValidateMaintenanceWindow(w *advisor.MaintenanceWindow) field.ErrorList {
	allErrs := apimachineryvalidation.ValidateObjectMeta(&w.ObjectMeta, false, apimachineryvalidation.NameIsDNSSubdomain, field.NewPath("metadata"))
	return append(allErrs, validateWindowSpec(&w.Spec, field.NewPath("spec"))...)
}

// ValidateMaintenanceWindowUpdate validates a change of a MaintenanceWindow:
// every spec field may change.
func ValidateMaintenanceWindowUpdate(w, old *advisor.MaintenanceWindow) field.ErrorList {
	allErrs := apimachineryvalidation.ValidateObjectMetaUpdate(&w.ObjectMeta, &old.ObjectMeta, field.NewPath("metadata"))
	return append(allErrs, validateWindowSpec(&w.Spec, field.NewPath("spec"))...)
}

func validateWindowSpec(spec *advisor.MaintenanceWindowSpec, fldPath *field.Path) field.ErrorList {
	allErrs := validateWindowPools(spec, fldPath)
	allErrs = append(allErrs, validateWindowTimes(spec, fldPath)...)
	allErrs = append(allErrs, validateEnum(fldPath.Child("kind"), string(spec.Kind), windowKinds)...)
	if len(spec.Description) > MaxWindowDescriptionLength {
		allErrs = append(allErrs, field.TooLong(fldPath.Child("description"), "", MaxWindowDescriptionLength))
	}
	return allErrs
}

// validateWindowPools checks which pools a window selects: by label,
// by name, or both.
func validateWindowPools(spec *advisor.MaintenanceWindowSpec, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	if spec.Pools == nil && len(spec.PoolNames) == 0 {
		allErrs = append(allErrs, field.Required(fldPath.Child("pools"),
			"select the MachineConfigPools the window applies to: pools (a label selector; {} selects every pool) or poolNames (e.g. [worker]), or both"))
	}
	if spec.Pools != nil {
		allErrs = append(allErrs, metav1validation.ValidateLabelSelector(spec.Pools, metav1validation.LabelSelectorValidationOptions{}, fldPath.Child("pools"))...)
	}
	seen := sets.New[string]()
	for i, name := range spec.PoolNames {
		p := fldPath.Child("poolNames").Index(i)
		for _, msg := range apimachineryvalidation.NameIsDNSSubdomain(name, false) {
			allErrs = append(allErrs, field.Invalid(p, name, "not a MachineConfigPool name: "+msg))
		}
		if seen.Has(name) {
			allErrs = append(allErrs, field.Duplicate(p, name))
		}
		seen.Insert(name)
	}
	return allErrs
}

// validateWindowTimes checks when a window opens and for how long: its
// schedule, duration and time zone, then, on a window they accept, what
// evaluating it costs.
func validateWindowTimes(spec *advisor.MaintenanceWindowSpec, fldPath *field.Path) field.ErrorList {
	schedulePath := fldPath.Child("schedule")
	schedule, allErrs := validateSchedule(spec.Schedule, schedulePath)

	durationPath := fldPath.Child("duration")
	switch d := spec.Duration.Duration; {
	case d <= 0:
		allErrs = append(allErrs, field.Invalid(durationPath, d.String(), "must be positive: how long each opening lasts, e.g. 8h or 90m"))
	case schedule != nil:
		if err := maintenanceschedule.CheckDuration(d, *schedule); err != nil {
			allErrs = append(allErrs, field.Invalid(durationPath, d.String(), err.Error()))
			schedule = nil
		}
	}

	loc, err := maintenanceschedule.LoadLocation(spec.TimeZone)
	if err != nil {
		allErrs = append(allErrs, field.Invalid(fldPath.Child("timeZone"), spec.TimeZone, err.Error()))
	}
	// Last, on a window the checks above accept: what evaluating it costs.
	if schedule != nil && err == nil && spec.Duration.Duration > 0 {
		if err := maintenanceschedule.CheckCost(*schedule, spec.Duration.Duration, loc); err != nil {
			allErrs = append(allErrs, field.Invalid(schedulePath, spec.Schedule, err.Error()))
		}
	}
	return allErrs
}

// validateSchedule parses a window's schedule; nil when it is not one.
func validateSchedule(expr string, schedulePath *field.Path) (*maintenanceschedule.Schedule, field.ErrorList) {
	if expr == "" {
		return nil, field.ErrorList{field.Required(schedulePath, `a 5-field cron expression (minute hour day-of-month month day-of-week), e.g. "0 22 * * 6" for Saturdays at 22:00`)}
	}
	s, err := maintenanceschedule.ParseSchedule(expr)
	if err != nil {
		return nil, field.ErrorList{field.Invalid(schedulePath, expr,
			fmt.Sprintf(`not a 5-field cron expression (minute hour day-of-month month day-of-week, e.g. "0 22 * * 6" for Saturdays at 22:00): %v`, err))}
	}
	return &s, nil
}
