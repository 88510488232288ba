// Package fleet holds what a fleet's hub and its clusters must compute
// alike: the hash of the spec a cluster drafts its plan for, the summary
// of that plan the hub reviews, the fleet hash an approval approves, and
// whether a delegated approval approves a cluster's live plan
// (docs/fleet.md).
package fleet
