package fleetconfig

import (
	"context"
	"reflect"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubevirt/virt-advisor/pkg/apis/advisor"
)

func TestFleetTable(t *testing.T) {
	created := time.Date(2026, 12, 3, 10, 0, 0, 0, time.UTC)
	table := fleetTable{now: func() time.Time { return created.Add(90 * time.Minute) }}
	fleet := func(mutate func(*advisor.FleetConfig)) *advisor.FleetConfig {
		fc := &advisor.FleetConfig{
			ObjectMeta: metav1.ObjectMeta{Name: "psi", Namespace: "virt-fleet", CreationTimestamp: metav1.NewTime(created)},
			Spec: advisor.FleetConfigSpec{Profile: "load-aware-rebalancing", PlacementRef: advisor.FleetPlacementRef{Name: "virt-clusters"},
				RolloutStrategy: advisor.RolloutStrategy{Type: advisor.RolloutTypeProgressivePerGroup}},
		}
		mutate(fc)
		return fc
	}
	tests := []struct {
		name string
		fc   *advisor.FleetConfig
		want []interface{}
	}{
		{"just created", fleet(func(*advisor.FleetConfig) {}),
			[]interface{}{"psi", "load-aware-rebalancing", "virt-clusters", "ProgressivePerGroup", "<none>", "0/0", "90m", "<none>", "<none>"}},
		{"the canary completed, the second wave rolls out", fleet(func(fc *advisor.FleetConfig) {
			fc.Status = advisor.FleetConfigStatus{Phase: advisor.FleetPhaseRollingOut, Message: "wave 2 of 2 rolls out",
				Approval: &advisor.FleetApprovalRecord{ApprovedBy: "fleet-approver"},
				Clusters: []advisor.FleetClusterStatus{{Name: "spoke-a", Phase: "Completed"}, {Name: "spoke-b", Phase: "InProgress"}}}
		}), []interface{}{"psi", "load-aware-rebalancing", "virt-clusters", "ProgressivePerGroup", "RollingOut", "1/2", "90m", "fleet-approver", "wave 2 of 2 rolls out"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := table.ConvertToTable(context.Background(), tt.fc, nil)
			if err != nil {
				t.Fatal(err)
			}
			if len(got.ColumnDefinitions) != len(tt.want) {
				t.Fatalf("%d columns, want %d", len(got.ColumnDefinitions), len(tt.want))
			}
			if !reflect.DeepEqual(got.Rows[0].Cells, tt.want) {
				t.Errorf("cells %q, want %q", got.Rows[0].Cells, tt.want)
			}
		})
	}
	list, err := table.ConvertToTable(context.Background(), &advisor.FleetConfigList{Items: []advisor.FleetConfig{*tests[0].fc, *tests[1].fc}}, nil)
	if err != nil || len(list.Rows) != 2 {
		t.Fatalf("a list: %v rows, %v", len(list.Rows), err)
	}
	if _, err := table.ConvertToTable(context.Background(), &advisor.ApprovalPolicy{}, nil); err == nil {
		t.Error("another kind printed")
	}
}
