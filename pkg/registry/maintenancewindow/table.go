package maintenancewindow

import (
	"context"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/duration"
	"k8s.io/utils/clock"

	"github.com/kubevirt/virt-advisor/pkg/apis/advisor"
	"github.com/kubevirt/virt-advisor/pkg/maintenance"
	"github.com/kubevirt/virt-advisor/pkg/registry/table"
)

var windowColumns = []metav1.TableColumnDefinition{
	{Name: "Name", Type: "string", Format: "name", Description: "Name of the window"},
	{Name: "Kind", Type: "string", Description: "spec.kind: Allow, or Deny (a freeze)"},
	{Name: "Schedule", Type: "string", Description: "spec.schedule: when the window opens (cron, in the time zone)"},
	{Name: "Duration", Type: "string", Description: "spec.duration: how long each opening lasts"},
	{Name: "TimeZone", Type: "string", Description: "spec.timeZone"},
	{Name: "Pools", Type: "string", Description: "The MachineConfigPools it selects: poolNames, and the pools selector"},
	{Name: "Open", Type: "boolean", Description: "status.open: whether the window is open now"},
	{Name: "Next", Type: "string", Description: "Time until the next opening (after the current one while open)"},
	{Name: "Opens At", Type: "string", Priority: 1, Description: "status.opensAt in the window's time zone: start of the current or next opening"},
	{Name: "Closes At", Type: "string", Priority: 1, Description: "status.closesAt in the window's time zone: end of that opening"},
	{Name: "Description", Type: "string", Priority: 1, Description: "spec.description"},
}

// windowTable prints NAME KIND SCHEDULE DURATION TIMEZONE POOLS OPEN NEXT
// (-o wide: OPENS AT, CLOSES AT, DESCRIPTION).
type windowTable struct {
	clock clock.PassiveClock
}

func (t windowTable) ConvertToTable(ctx context.Context, obj runtime.Object, tableOptions runtime.Object) (*metav1.Table, error) {
	now := t.clock.Now()
	return table.Of(obj, windowColumns, func(w *advisor.MaintenanceWindow) []interface{} {
		next, loc := "<none>", time.UTC
		if parsed, err := parse(w); err == nil {
			loc = parsed.Location
			if n := parsed.NextOpening(now); !n.IsZero() {
				next = duration.HumanDuration(n.Sub(now))
			}
		}
		return []interface{}{
			w.Name, string(w.Spec.Kind), w.Spec.Schedule, maintenance.FormatDuration(w.Spec.Duration.Duration), w.Spec.TimeZone,
			pools(&w.Spec), w.Status.Open, next, inZone(w.Status.OpensAt, loc), inZone(w.Status.ClosesAt, loc), w.Spec.Description,
		}
	})
}

// pools says which pools a window selects: its names, then its selector
// ("<all>" for the empty selector, which selects every pool).
func pools(spec *advisor.MaintenanceWindowSpec) string {
	var parts []string
	if len(spec.PoolNames) > 0 {
		parts = append(parts, strings.Join(spec.PoolNames, ","))
	}
	if spec.Pools != nil {
		selector := metav1.FormatLabelSelector(spec.Pools)
		if len(spec.Pools.MatchLabels) == 0 && len(spec.Pools.MatchExpressions) == 0 {
			selector = "<all>"
		}
		parts = append(parts, selector)
	}
	return strings.Join(parts, " + ")
}

func inZone(t *metav1.Time, loc *time.Location) string {
	if t == nil {
		return "<none>"
	}
	return t.In(loc).Format(time.RFC3339)
}
