package fleetconfig

import (
	"context"
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/duration"

	"github.com/kubevirt/virt-advisor/pkg/apis/advisor"
	"github.com/kubevirt/virt-advisor/pkg/registry/table"
)

var fleetColumns = []metav1.TableColumnDefinition{
	{Name: "Name", Type: "string", Format: "name", Description: "Name of the FleetConfig"},
	{Name: "Profile", Type: "string", Description: "spec.profile: what every cluster of the fleet is configured with"},
	{Name: "Placement", Type: "string", Description: "spec.placementRef: the Placement that selects the clusters and their waves"},
	{Name: "Strategy", Type: "string", Description: "spec.rolloutStrategy.type: how OCM rolls the approved plan out"},
	{Name: "Phase", Type: "string", Description: "status.phase: ReviewRequired, RollingOut, Completed, Failed or Aborted"},
	{Name: "Completed", Type: "string", Description: "clusters whose config completed the approved plan, of the clusters the Placement selected"},
	{Name: "Age", Type: "string", Description: "time since the FleetConfig was created"},
	{Name: "Approved-By", Type: "string", Priority: 1, Description: "status.approval.approvedBy: the hub user who approved the fleet plan"},
	{Name: "Message", Type: "string", Priority: 1, Description: "status.message: what the fleet waits for, or which cluster failed and why"},
}

// fleetTable prints NAME PROFILE PLACEMENT STRATEGY PHASE COMPLETED AGE
// (-o wide: APPROVED-BY, MESSAGE).
type fleetTable struct {
	now func() time.Time
}

func (t fleetTable) ConvertToTable(ctx context.Context, obj runtime.Object, tableOptions runtime.Object) (*metav1.Table, error) {
	now := time.Now()
	if t.now != nil {
		now = t.now()
	}
	return table.Of(obj, fleetColumns, func(fc *advisor.FleetConfig) []interface{} {
		return []interface{}{
			fc.Name, fc.Spec.Profile, fc.Spec.PlacementRef.Name, string(fc.Spec.RolloutStrategy.Type), orNone(string(fc.Status.Phase)),
			completed(fc.Status.Clusters), duration.HumanDuration(now.Sub(fc.CreationTimestamp.Time)),
			approvedBy(fc.Status.Approval), orNone(fc.Status.Message),
		}
	})
}

// completed says how many of the clusters completed the approved plan.
func completed(clusters []advisor.FleetClusterStatus) string {
	done := 0
	for _, c := range clusters {
		if c.Phase == string(advisor.PhaseCompleted) {
			done++
		}
	}
	return fmt.Sprintf("%d/%d", done, len(clusters))
}

func approvedBy(a *advisor.FleetApprovalRecord) string {
	if a == nil {
		return "<none>"
	}
	return a.ApprovedBy
}

func orNone(s string) string {
	if s == "" {
		return "<none>"
	}
	return s
}
