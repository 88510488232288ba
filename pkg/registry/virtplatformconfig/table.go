package virtplatformconfig

import (
	"context"
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/duration"
	"k8s.io/utils/clock"

	"github.com/kubevirt/virt-advisor/pkg/apis/advisor"
	"github.com/kubevirt/virt-advisor/pkg/registry/table"
	"github.com/kubevirt/virt-advisor/pkg/status"
)

var configColumns = []metav1.TableColumnDefinition{
	{Name: "Name", Type: "string", Format: "name", Description: "Name, equal to the profile"},
	{Name: "Action", Type: "string", Description: "spec.action: DryRun, Apply or Ignore"},
	{Name: "Impact", Type: "string", Description: "status.impactSeverity: the highest impact of the plan"},
	{Name: "Phase", Type: "string", Description: "status.phase; while the approved plan waits, with what for: the reason of the Waiting condition, e.g. InProgress (Waiting: MaintenanceWindow)"},
	{Name: "Age", Type: "string", Description: "Time since creation"},
	{Name: "Profile", Type: "string", Priority: 1, Description: "spec.profile"},
	{Name: "Message", Type: "string", Priority: 1, Description: "Message of the condition of the current phase; while the plan waits for a maintenance window, with the time until it opens"},
}

// configTable prints NAME ACTION IMPACT PHASE AGE (-o wide: PROFILE MESSAGE).
type configTable struct {
	clock clock.PassiveClock
}

func (t configTable) ConvertToTable(ctx context.Context, obj runtime.Object, tableOptions runtime.Object) (*metav1.Table, error) {
	now := t.clock.Now()
	return table.Of(obj, configColumns, func(c *advisor.VirtPlatformConfig) []interface{} {
		return []interface{}{
			c.Name, string(c.Spec.Action), string(c.Status.ImpactSeverity), phase(c),
			age(c.CreationTimestamp), c.Spec.Profile, phaseMessage(c, now),
		}
	})
}

func age(t metav1.Time) string {
	if t.IsZero() {
		return "<unknown>"
	}
	return duration.HumanDuration(metav1.Now().Sub(t.Time))
}

// phase is status.phase, and what an approved plan waits for.
func phase(c *advisor.VirtPlatformConfig) string {
	for _, cond := range c.Status.Conditions {
		if cond.Type == status.ConditionWaiting && cond.Status == metav1.ConditionTrue && c.Status.Phase == advisor.PhaseInProgress {
			return fmt.Sprintf("%s (Waiting: %s)", c.Status.Phase, cond.Reason)
		}
	}
	return string(c.Status.Phase)
}

// phaseMessage is the message of the condition named after the current
// phase. The stored text of a wait for a maintenance window names the
// opening's time only (it would go stale); how far away it is is added
// here, on read.
func phaseMessage(c *advisor.VirtPlatformConfig, now time.Time) string {
	msg := ""
	waitingForWindow := false
	for _, cond := range c.Status.Conditions {
		switch {
		case cond.Type == string(c.Status.Phase):
			msg = cond.Message
		case cond.Type == status.ConditionWaiting:
			waitingForWindow = cond.Status == metav1.ConditionTrue && cond.Reason == status.WaitingMaintenanceWindow
		}
	}
	if !waitingForWindow {
		return msg
	}
	for _, it := range c.Status.Items {
		if w := it.MaintenanceWindow; w != nil && w.OpensAt != nil {
			return status.WithTimeToOpen(msg, w.OpensAt.Time, now)
		}
	}
	return msg
}
