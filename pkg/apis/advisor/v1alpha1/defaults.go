package v1alpha1

import "k8s.io/apimachinery/pkg/runtime"

// Defaults are declared with +default markers on the types: defaulter-gen
// turns them into SetObjectDefaults_* and they appear in the OpenAPI schema.
// Options blocks are defaulted only when present; eviction limits are never
// defaulted because the profile derives them from the HyperConverged CR.
func addDefaultingFuncs(scheme *runtime.Scheme) error {
	return RegisterDefaults(scheme)
}

// Ratios used when memoryToRequestRatio is unset: overcommit needs swap to
// back it, so without swap the default is no overcommit at all. Turning swap
// off with {"enableSwap": false} alone must not be refused for a ratio the
// user never set.
const (
	DefaultMemoryToRequestRatioWithSwap    = int32(150)
	DefaultMemoryToRequestRatioWithoutSwap = int32(100)
)

// SetDefaults_VirtHigherDensityConfig defaults memoryToRequestRatio after
// enableSwap (an unset enableSwap means true).
func SetDefaults_VirtHigherDensityConfig(obj *VirtHigherDensityConfig) {
	if obj.MemoryToRequestRatio != nil {
		return
	}
	ratio := DefaultMemoryToRequestRatioWithSwap
	if obj.EnableSwap != nil && !*obj.EnableSwap {
		ratio = DefaultMemoryToRequestRatioWithoutSwap
	}
	obj.MemoryToRequestRatio = &ratio
}
