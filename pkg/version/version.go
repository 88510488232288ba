// Package version holds the build version, set with
// -ldflags "-X github.com/kubevirt/virt-advisor/pkg/version.Version=…".
package version

// Version is the virt-advisor build version; status.operatorVersion reports it.
var Version = "dev"
