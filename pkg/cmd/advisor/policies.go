package advisor

import (
	"context"
	"fmt"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubevirt/virt-advisor/pkg/apis/advisor/v1alpha1"
	policies "github.com/kubevirt/virt-advisor/pkg/approvalpolicy"
	"github.com/kubevirt/virt-advisor/pkg/machineconfig"
	"github.com/kubevirt/virt-advisor/pkg/maintenance"
)

// policyVerdict says whether an approval policy would approve plan p of
// config name now, and why not, with the user's credentials: the same
// decision the controller makes (pkg/approvalpolicy). What cannot be
// read is said, never an error: the plan is printed anyway.
func policyVerdict(ctx context.Context, c *clients, name string, p *v1alpha1.Plan) string {
	if planExitCode(p) == exitOK {
		return "" // nothing to approve
	}
	cfg, err := c.advisor.AdvisorV1alpha1().VirtPlatformConfigs().Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return "approval policies: not known (" + flatten(err.Error()) + ")"
	}
	list, err := c.advisor.AdvisorV1alpha1().ApprovalPolicies().List(ctx, metav1.ListOptions{})
	if err != nil {
		return "approval policies: cannot be read (" + flatten(err.Error()) + ")"
	}
	facts := policies.Facts{Now: time.Now(), SpecChangedBy: cfg.Status.SpecChangedBy, PoolLabels: map[string]map[string]string{}}
	if windows, err := c.advisor.AdvisorV1alpha1().MaintenanceWindows().List(ctx, metav1.ListOptions{}); err == nil {
		for i := range windows.Items {
			if w, err := maintenance.FromAPI(&windows.Items[i]); err == nil {
				facts.Windows = append(facts.Windows, w)
			}
		}
	}
	for _, it := range p.Status.Items {
		for _, r := range it.Reboots {
			if pool, err := c.dynamic.Resource(machineconfig.MachineConfigPools).Get(ctx, r.Pool, metav1.GetOptions{}); err == nil {
				facts.PoolLabels[r.Pool] = pool.GetLabels()
			}
		}
	}
	all := make([]*v1alpha1.ApprovalPolicy, len(list.Items))
	for i := range list.Items {
		all[i] = &list.Items[i]
	}
	return policyLine(cfg, all, &p.Status, facts)
}

// policyLine is the verdict in words.
func policyLine(cfg *v1alpha1.VirtPlatformConfig, all []*v1alpha1.ApprovalPolicy, plan *v1alpha1.PlanStatus, facts policies.Facts) string {
	approved, refused := policies.Decide(all, cfg, plan, facts)
	if approved != nil {
		for _, p := range all {
			if p.Name != approved.Policy {
				continue
			}
			line := fmt.Sprintf("approval policies: policy '%s' (set by %s) would approve this plan, as %s", p.Name, p.Status.Author, policies.ApprovedBy(p))
			if p.Status.Author == cfg.Status.SpecChangedBy {
				line += fmt.Sprintf("; not on a server that requires a second person (--require-distinct-approver): %s made the last spec change", p.Status.Author)
			}
			return line
		}
	}
	if len(refused) == 0 {
		return fmt.Sprintf("approval policies: none covers %s; a person approves this plan", cfg.Name)
	}
	var why []string
	for _, d := range refused {
		why = append(why, d.Message())
	}
	return "approval policies: none would approve this plan: " + strings.Join(why, "; ") + "; a person approves it"
}
