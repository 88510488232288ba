package status

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubevirt/virt-advisor/pkg/apis/advisor/v1alpha1"
)

func TestItemDue(t *testing.T) {
	approved := metav1.NewTime(time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC))
	earlier, later := metav1.NewTime(approved.Add(-time.Hour)), metav1.NewTime(approved.Add(time.Minute))
	tests := []struct {
		name     string
		approval *v1alpha1.ApprovalRecord
		itemTime *metav1.Time
		want     *metav1.Time
	}{
		{"neither known", nil, nil, nil},
		{"no approval: the item's transition", nil, &earlier, &earlier},
		{"an item set before the approval: the approval", &v1alpha1.ApprovalRecord{ApprovedAt: approved}, &earlier, &approved},
		{"an item changed after the approval: its transition", &v1alpha1.ApprovalRecord{ApprovedAt: approved}, &later, &later},
		{"an item without a time: the approval", &v1alpha1.ApprovalRecord{ApprovedAt: approved}, nil, &approved},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st := &v1alpha1.VirtPlatformConfigStatus{Approval: tt.approval}
			got := ItemDue(st, &v1alpha1.VirtPlatformConfigItem{LastTransitionTime: tt.itemTime})
			if (got == nil) != (tt.want == nil) || (got != nil && !got.Equal(tt.want)) {
				t.Errorf("ItemDue = %v, want %v", got, tt.want)
			}
		})
	}
}
