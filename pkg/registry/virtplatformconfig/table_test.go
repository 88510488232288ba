package virtplatformconfig

import (
	"context"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/kubevirt/virt-advisor/pkg/apis/advisor"
	"github.com/kubevirt/virt-advisor/pkg/status"
)

// The MESSAGE column (-o wide) of a plan waiting for a maintenance window
// says how far away the opening is at the time of the read; the stored
// message names the opening's time only. PHASE says what the plan waits for.
func TestTableMessageSaysWhenTheWindowOpens(t *testing.T) {
	opens := metav1.NewTime(time.Date(2026, 11, 28, 21, 0, 0, 0, time.UTC))
	stored := "Waiting for maintenance window 'weekend' (opens Sat 28 Nov 22:00 CET (21:00 UTC)) before writing item 'psi'; plan 1ca7b923a24b approved by admin, nothing written yet"
	cfg := func(waitReason string) *advisor.VirtPlatformConfig {
		c := &advisor.VirtPlatformConfig{ObjectMeta: metav1.ObjectMeta{Name: "load-aware-rebalancing"}}
		c.Status.Phase = advisor.PhaseInProgress
		c.Status.Conditions = []metav1.Condition{{Type: string(advisor.PhaseInProgress), Status: metav1.ConditionTrue, Reason: "Waiting", Message: stored}}
		if waitReason != "" {
			c.Status.Conditions = append(c.Status.Conditions, metav1.Condition{Type: status.ConditionWaiting, Status: metav1.ConditionTrue, Reason: waitReason})
		}
		c.Status.Items = []advisor.VirtPlatformConfigItem{{Name: "descheduler"}, {Name: "psi", MaintenanceWindow: &advisor.WindowWait{Name: "weekend", OpensAt: &opens}}}
		return c
	}
	tests := []struct {
		name string
		cfg  *advisor.VirtPlatformConfig
		at   time.Time
		want string
		// phase is the PHASE column
		phase string
	}{
		{"read on Friday", cfg(status.WaitingMaintenanceWindow), time.Date(2026, 11, 27, 11, 0, 0, 0, time.UTC),
			"Waiting for maintenance window 'weekend' (opens Sat 28 Nov 22:00 CET (21:00 UTC), in 1d10h) before writing item 'psi'; plan 1ca7b923a24b approved by admin, nothing written yet", "InProgress (Waiting: MaintenanceWindow)"},
		{"read on Saturday", cfg(status.WaitingMaintenanceWindow), time.Date(2026, 11, 28, 20, 30, 0, 0, time.UTC),
			"Waiting for maintenance window 'weekend' (opens Sat 28 Nov 22:00 CET (21:00 UTC), in 30m) before writing item 'psi'; plan 1ca7b923a24b approved by admin, nothing written yet", "InProgress (Waiting: MaintenanceWindow)"},
		{"waiting for something else: as stored", cfg(status.WaitingDrainBlocked), time.Date(2026, 11, 27, 11, 0, 0, 0, time.UTC), stored, "InProgress (Waiting: DrainBlocked)"},
		{"not waiting: as stored", cfg(""), time.Date(2026, 11, 27, 11, 0, 0, 0, time.UTC), stored, "InProgress"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			table, err := configTable{clock: clocktesting.NewFakePassiveClock(tt.at)}.ConvertToTable(context.Background(), tt.cfg, nil)
			if err != nil {
				t.Fatal(err)
			}
			cells := table.Rows[0].Cells
			if got := cells[len(cells)-1]; got != tt.want {
				t.Errorf("MESSAGE %q\nwant    %q", got, tt.want)
			}
			if got := cells[3]; got != tt.phase {
				t.Errorf("PHASE %q, want %q", got, tt.phase)
			}
		})
	}
}
