package advisor

import (
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// GroupName is the API group of virt-advisor.
const GroupName = "advisor.kubevirt.io"

// SchemeGroupVersion is the internal version used to register the objects.
var SchemeGroupVersion = schema.GroupVersion{Group: GroupName, Version: runtime.APIVersionInternal}

// Kind takes an unqualified kind and returns a group-qualified GroupKind.
func Kind(kind string) schema.GroupKind {
	return SchemeGroupVersion.WithKind(kind).GroupKind()
}

// Resource takes an unqualified resource and returns a group-qualified GroupResource.
func Resource(resource string) schema.GroupResource {
	return SchemeGroupVersion.WithResource(resource).GroupResource()
}

var (
	// SchemeBuilder registers the internal types.
	SchemeBuilder = runtime.NewSchemeBuilder(addKnownTypes)
	// AddToScheme adds the internal types to a scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)

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
	return nil
}

// Profile names: a VirtPlatformConfig is named after its profile.
const (
	ProfileLoadAwareRebalancing = "load-aware-rebalancing"
	ProfileVirtHigherDensity    = "virt-higher-density"
	ProfileExample              = "example-profile"
)
