// Package kubevirt holds what this build knows of KubeVirt's APIs, shared
// by the profiles, the cluster access and the drain assessment: the
// HyperConverged CR (its group and kind, the one object, its versions and
// where its virtualization settings sit in each) and the fields of a
// VirtualMachineInstance a drain depends on. No I/O, no decisions.
package kubevirt

import (
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// HyperConvergedGVK has no version: it is read and written through the
// version discovery prefers.
var HyperConvergedGVK = schema.GroupVersionKind{Group: "hco.kubevirt.io", Kind: "HyperConverged"}

// The one HyperConverged of a cluster.
const (
	HCONamespace = "openshift-cnv"
	HCOName      = "kubevirt-hyperconverged"
)

// HyperConverged versions. HCO 1.18 adds v1 beside v1beta1, 1.20 stores v1,
// 1.22 serves v1 only. v1 moved the virtualization settings under
// spec.virtualization; the profiles read and write through the version
// discovery prefers.
const (
	HCOVersionV1beta1 = "v1beta1"
	HCOVersionV1      = "v1"
)

// HCOFieldPath is the path of a virtualization field of the HyperConverged
// spec (liveMigrationConfig, higherWorkloadDensity, ksmConfiguration,
// evictionStrategy) in the given version.
func HCOFieldPath(version string, field ...string) []string {
	if version == HCOVersionV1 {
		return append([]string{"spec", "virtualization"}, field...)
	}
	return append([]string{"spec"}, field...)
}

// VersionOf is the version of an object read from the cluster.
func VersionOf(obj *unstructured.Unstructured) string {
	return obj.GroupVersionKind().Version
}

// HCOMigrationDefaults are the HyperConverged live-migration defaults of a
// version (its CRD defaults): perCluster, perNode.
func HCOMigrationDefaults(version string) (int64, int64) {
	if version == HCOVersionV1 {
		return 5, 1
	}
	return 5, 2
}

// HCOCompletionTimeoutPerGiBDefault is liveMigrationConfig's
// completionTimeoutPerGiB default of a version (its CRD default: 150 in
// v1beta1, 20 in v1 as HCO 1.20 installs it, artifacts/testdata/crds).
func HCOCompletionTimeoutPerGiBDefault(version string) int64 {
	if version == HCOVersionV1 {
		return 20
	}
	return 150
}

// HCOVersionError says which versions this build knows.
func HCOVersionError(version string) error {
	return fmt.Errorf("HyperConverged %s is not supported: this build reads and writes hco.kubevirt.io/%s and %s", version, HCOVersionV1beta1, HCOVersionV1)
}
