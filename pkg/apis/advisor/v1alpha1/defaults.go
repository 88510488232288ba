package v1alpha1

import "k8s.io/apimachinery/pkg/runtime"

// Defaults are declared with +default markers on the types: defaulter-gen
// turns them into SetObjectDefaults_* and they appear in the OpenAPI schema.
// Options blocks are defaulted only when present; eviction limits are never
// defaulted because the profile derives them from the HyperConverged CR.
func addDefaultingFuncs(scheme *runtime.Scheme) error {
	return RegisterDefaults(scheme)
}
