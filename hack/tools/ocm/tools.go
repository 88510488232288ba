//go:build tools

// Package tools pins Open Cluster Management, whose hub controllers and
// klusterlet agent the fleet e2e specs run as processes (test/env/ocm.go).
// A module of its own: OCM is built on another Kubernetes minor than ours.
// v1.2.1 is the newest release whose module the Go module proxy serves.
package tools

import (
	_ "open-cluster-management.io/ocm/cmd/placement"
	_ "open-cluster-management.io/ocm/cmd/registration"
	_ "open-cluster-management.io/ocm/cmd/registration-operator"
	_ "open-cluster-management.io/ocm/cmd/work"
)
