// +k8s:openapi-gen=true
// +k8s:deepcopy-gen=package
// +k8s:conversion-gen=github.com/kubevirt/virt-advisor/pkg/apis/advisor
// +k8s:defaulter-gen=TypeMeta
// +k8s:openapi-model-package=io.kubevirt.advisor.v1alpha1
// +groupName=advisor.kubevirt.io

// Package v1alpha1 is the v1alpha1 version of the advisor.kubevirt.io API.
package v1alpha1
