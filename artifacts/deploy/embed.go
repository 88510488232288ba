// Package deploy holds the deployment manifests of virt-advisor. The server
// is built with its admission policies (AdmissionPolicies) and writes
// nothing they confine until the cluster holds them as shipped
// (pkg/confinement).
package deploy

import _ "embed"

// AdmissionPolicies is 05-admission-policy.yaml, as generated from the
// profiles (`go test ./artifacts/deploy -update`).
//
//go:embed 05-admission-policy.yaml
var AdmissionPolicies []byte
