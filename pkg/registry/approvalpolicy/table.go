package approvalpolicy

import (
	"context"
	"fmt"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/duration"

	"github.com/kubevirt/virt-advisor/pkg/apis/advisor"
	"github.com/kubevirt/virt-advisor/pkg/apis/advisor/v1alpha1"
	policies "github.com/kubevirt/virt-advisor/pkg/approvalpolicy"
	"github.com/kubevirt/virt-advisor/pkg/registry/table"
)

var policyColumns = []metav1.TableColumnDefinition{
	{Name: "Name", Type: "string", Format: "name", Description: "Name of the policy"},
	{Name: "Configs", Type: "string", Description: "spec.configs: the configs it covers by name, and its selector"},
	{Name: "Bounds", Type: "string", Description: "spec.bounds: the highest impact, reboots, the VM fates and items it allows"},
	{Name: "Window", Type: "string", Description: "spec.windows: the MaintenanceWindows it approves in (<any>: at any time)"},
	{Name: "Last-Approved", Type: "string", Description: "status.lastApproved: the config whose plan it last approved, and when"},
	{Name: "Author", Type: "string", Priority: 1, Description: "status.author: who set the spec; the policy approves in their name"},
	{Name: "Covers", Type: "string", Priority: 1, Description: "status.configs: the configs it covers now"},
	{Name: "Last-Refused", Type: "string", Priority: 1, Description: "status.lastRefused: the config whose plan it last refused, still waiting for a review"},
}

// policyTable prints NAME CONFIGS BOUNDS WINDOW LAST-APPROVED (-o wide:
// AUTHOR, COVERS, LAST-REFUSED).
type policyTable struct {
	now func() time.Time
}

func (t policyTable) ConvertToTable(ctx context.Context, obj runtime.Object, tableOptions runtime.Object) (*metav1.Table, error) {
	now := time.Now()
	if t.now != nil {
		now = t.now()
	}
	return table.Of(obj, policyColumns, func(p *advisor.ApprovalPolicy) []interface{} {
		covers := strings.Join(p.Status.Configs, ",")
		if covers == "" {
			covers = "<none>"
		}
		return []interface{}{
			p.Name, configs(&p.Spec.Configs), bounds(&p.Spec.Bounds), windows(p.Spec.Windows), decision(p.Status.LastApproved, now),
			p.Status.Author, covers, decision(p.Status.LastRefused, now),
		}
	})
}

func configs(c *advisor.PolicyConfigs) string {
	var parts []string
	if len(c.Names) > 0 {
		parts = append(parts, strings.Join(c.Names, ","))
	}
	if c.Selector != nil {
		parts = append(parts, metav1.FormatLabelSelector(c.Selector))
	}
	return strings.Join(parts, " + ")
}

// bounds says a policy's bounds in a few words (approvalpolicy.Summary).
func bounds(b *advisor.PolicyBounds) string {
	var out v1alpha1.PolicyBounds
	if err := v1alpha1.Convert_advisor_PolicyBounds_To_v1alpha1_PolicyBounds(b, &out, nil); err != nil {
		return "<unknown>"
	}
	return policies.Summary(out)
}

func windows(names []string) string {
	if len(names) == 0 {
		return "<any>"
	}
	return strings.Join(names, ",")
}

func decision(d *advisor.PolicyDecision, now time.Time) string {
	if d == nil {
		return "<none>"
	}
	if d.At == nil {
		return d.Config
	}
	return fmt.Sprintf("%s (%s ago)", d.Config, duration.HumanDuration(now.Sub(d.At.Time)))
}
