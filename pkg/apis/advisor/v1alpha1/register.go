package v1alpha1

import (
	"fmt"

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
// select MaintenanceWindows by, e.g. fieldSelector=spec.kind=Deny.
func addFieldLabelConversions(scheme *runtime.Scheme) error {
	return scheme.AddFieldLabelConversionFunc(SchemeGroupVersion.WithKind("MaintenanceWindow"),
		func(label, value string) (string, string, error) {
			switch label {
			case "metadata.name", "metadata.namespace", "spec.kind":
				return label, value, nil
			}
			return "", "", fmt.Errorf("%q is not a known field selector: only \"metadata.name\", \"spec.kind\"", label)
		})
}

func addKnownTypes(scheme *runtime.Scheme) error {
	scheme.AddKnownTypes(SchemeGroupVersion,
		&VirtPlatformConfig{},
		&VirtPlatformConfigList{},
		&Plan{},
		&Approval{},
		&MaintenanceWindow{},
		&MaintenanceWindowList{},
	)
	metav1.AddToGroupVersion(scheme, SchemeGroupVersion)
	return nil
}
