package fleet

import (
	"context"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"

	"github.com/kubevirt/virt-advisor/pkg/apis/advisor/v1alpha1"
)

// Reader reads a fleet from the hub: its Placement's decisions and its
// clusters' ManifestWorks. It holds no credential of any cluster: what
// the clusters report reaches the hub through OCM's status feedback.
type Reader struct {
	Hub dynamic.Interface
	// Defaults fills in a VirtPlatformConfig's defaults as a cluster's
	// server does (the scheme's defaulting).
	Defaults func(*v1alpha1.VirtPlatformConfig)
}

// Decisions are the clusters fc's Placement selected, with their waves.
func (r *Reader) Decisions(ctx context.Context, fc *v1alpha1.FleetConfig) ([]Decision, error) {
	list, err := r.Hub.Resource(PlacementDecisionGVR).Namespace(fc.Namespace).List(ctx, metav1.ListOptions{LabelSelector: PlacementLabel + "=" + fc.Spec.PlacementRef.Name})
	if err != nil {
		return nil, fmt.Errorf("reading the decisions of Placement %s/%s: %w", fc.Namespace, fc.Spec.PlacementRef.Name, err)
	}
	return Decisions(list.Items), nil
}

// Reports are, by cluster, what the ManifestWorks of fc's
// ManifestWorkReplicaSet report.
func (r *Reader) Reports(ctx context.Context, fc *v1alpha1.FleetConfig) (map[string]Report, error) {
	list, err := r.Hub.Resource(ManifestWorkGVR).List(ctx, metav1.ListOptions{LabelSelector: ReplicaSetLabel + "=" + ReplicaSetKey(fc)})
	if err != nil {
		return nil, fmt.Errorf("reading the ManifestWorks of fleet %s/%s: %w", fc.Namespace, fc.Name, err)
	}
	out := make(map[string]Report, len(list.Items))
	for i := range list.Items {
		out[list.Items[i].GetNamespace()] = ReportOf(&list.Items[i])
	}
	return out, nil
}

// Plan is the live fleet plan of fc.
func (r *Reader) Plan(ctx context.Context, fc *v1alpha1.FleetConfig) (v1alpha1.FleetPlanStatus, error) {
	decisions, err := r.Decisions(ctx, fc)
	if err != nil {
		return v1alpha1.FleetPlanStatus{}, err
	}
	reports, err := r.Reports(ctx, fc)
	if err != nil {
		return v1alpha1.FleetPlanStatus{}, err
	}
	specHash, err := SpecHash(SpokeConfig(fc, r.Defaults).Spec)
	if err != nil {
		return v1alpha1.FleetPlanStatus{}, err
	}
	return Compute(fc, specHash, decisions, reports)
}
