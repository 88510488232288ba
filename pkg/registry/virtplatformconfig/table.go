package virtplatformconfig

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/duration"

	"github.com/kubevirt/virt-advisor/pkg/apis/advisor"
)

var configColumns = []metav1.TableColumnDefinition{
	{Name: "Name", Type: "string", Format: "name", Description: "Name, equal to the profile"},
	{Name: "Action", Type: "string", Description: "spec.action: DryRun, Apply or Ignore"},
	{Name: "Impact", Type: "string", Description: "status.impactSeverity: the highest impact of the plan"},
	{Name: "Phase", Type: "string", Description: "status.phase"},
	{Name: "Age", Type: "string", Description: "Time since creation"},
	{Name: "Profile", Type: "string", Priority: 1, Description: "spec.profile"},
	{Name: "Message", Type: "string", Priority: 1, Description: "Message of the condition of the current phase"},
}

// configTable prints NAME ACTION IMPACT PHASE AGE (-o wide: PROFILE MESSAGE).
type configTable struct{}

func (configTable) ConvertToTable(ctx context.Context, obj runtime.Object, tableOptions runtime.Object) (*metav1.Table, error) {
	table := &metav1.Table{ColumnDefinitions: configColumns}
	if m, err := meta.ListAccessor(obj); err == nil {
		table.ResourceVersion = m.GetResourceVersion()
		table.Continue = m.GetContinue()
		table.RemainingItemCount = m.GetRemainingItemCount()
	} else if m, err := meta.CommonAccessor(obj); err == nil {
		table.ResourceVersion = m.GetResourceVersion()
	}
	var configs []advisor.VirtPlatformConfig
	switch t := obj.(type) {
	case *advisor.VirtPlatformConfig:
		configs = []advisor.VirtPlatformConfig{*t}
	case *advisor.VirtPlatformConfigList:
		configs = t.Items
	default:
		return nil, fmt.Errorf("cannot print %T as a table", obj)
	}
	for i := range configs {
		c := &configs[i]
		table.Rows = append(table.Rows, metav1.TableRow{
			Object: runtime.RawExtension{Object: c},
			Cells: []interface{}{
				c.Name, string(c.Spec.Action), string(c.Status.ImpactSeverity), string(c.Status.Phase),
				age(c.CreationTimestamp), c.Spec.Profile, phaseMessage(c),
			},
		})
	}
	return table, nil
}

func age(t metav1.Time) string {
	if t.IsZero() {
		return "<unknown>"
	}
	return duration.HumanDuration(metav1.Now().Sub(t.Time))
}

// phaseMessage is the message of the condition named after the current phase.
func phaseMessage(c *advisor.VirtPlatformConfig) string {
	for _, cond := range c.Status.Conditions {
		if cond.Type == string(c.Status.Phase) {
			return cond.Message
		}
	}
	return ""
}
