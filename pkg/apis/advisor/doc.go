// +k8s:deepcopy-gen=package
// +groupName=advisor.kubevirt.io

// Package advisor is the internal version of the advisor.kubevirt.io API.
package advisor
