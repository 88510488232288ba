package v1alpha1

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// GroupName is the API group of virt-advisor.
const GroupName = "advisor.kubevirt.io"

// SchemeGroupVersion is the group version used to register these objects.
var SchemeGroupVersion = schema.GroupVersion{Group: GroupName, Version: "v1alpha1"}

// Resource takes an unqualified resource and returns a group-qualified GroupResource.
func Resource(resource string) schema.GroupResource {
	return SchemeGroupVersion.WithResource(resource).GroupResource()
}

var (
	// SchemeBuilder registers the v1alpha1 types; the generated files add
	// defaulting and conversion functions to it.
	SchemeBuilder      runtime.SchemeBuilder
	localSchemeBuilder = &SchemeBuilder
	// AddToScheme adds the v1alpha1 types to a scheme.
	AddToScheme = localSchemeBuilder.AddToScheme
)

func init() {
	localSchemeBuilder.Register(addKnownTypes, addDefaultingFuncs, addFieldLabelConversions)
}

// addFieldLabelConversions lists the fields list and watch requests may
// select by, e.g. fieldSelector=status.phase=Drifted for configs or
// fieldSelector=spec.kind=Deny for MaintenanceWindows. A kind without one
// answers every field selector but metadata.name with 400.
func addFieldLabelConversions(scheme *runtime.Scheme) error {
	for kind, fields := range selectableFields {
		if err := scheme.AddFieldLabelConversionFunc(SchemeGroupVersion.WithKind(kind), fieldLabelConversion(fields)); err != nil {
			return err
		}
	}
	return nil
}

// selectableFields are, per kind, the fields its storage's GetAttrs sets
// besides metadata.name (and metadata.namespace, always empty: both kinds
// are cluster-scoped).
var selectableFields = map[string][]string{
	"VirtPlatformConfig": {"spec.profile", "spec.action", "status.phase"},
	"MaintenanceWindow":  {"spec.kind"},
}

func fieldLabelConversion(fields []string) runtime.FieldLabelConversionFunc {
	known := append([]string{"metadata.name"}, fields...)
	return func(label, value string) (string, string, error) {
		if label == "metadata.namespace" || slices.Contains(known, label) {
			return label, value, nil
		}
		return "", "", fmt.Errorf("%q is not a known field selector: only %s", label, strings.Join(quoted(known), ", "))
	}
}

func quoted(labels []string) []string {
	out := make([]string, len(labels))
	for i, l := range labels {
		out[i] = strconv.Quote(l)
	}
	return out
}

func addKnownTypes(scheme *runtime.Scheme) error {
	scheme.AddKnownTypes(SchemeGroupVersion,
		&VirtPlatformConfig{},
		&VirtPlatformConfigList{},
		&Plan{},
		&Approval{},
		&Abort{},
		&MaintenanceWindow{},
		&MaintenanceWindowList{},
		&ApprovalPolicy{},
		&ApprovalPolicyList{},
		&FleetConfig{},
		&FleetConfigList{},
		&FleetPlan{},
	)
	metav1.AddToGroupVersion(scheme, SchemeGroupVersion)
	return nil
}
