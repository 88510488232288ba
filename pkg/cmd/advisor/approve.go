package advisor

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubevirt/virt-advisor/pkg/apis/advisor/v1alpha1"
	"github.com/kubevirt/virt-advisor/pkg/cmd/advisor/internal/pools"
)

type approveOptions struct {
	*options
	yes    bool
	dryRun bool
	// revert shows and approves the revert plan (kubectl advisor revert).
	revert bool
}

func newCmdApprove(o *options) *cobra.Command {
	ao := &approveOptions{options: o}
	cmd := &cobra.Command{
		Use:   "approve NAME",
		Short: "Show the live plan of a VirtPlatformConfig, ask, and approve exactly that plan",
		Long: `Show the live plan of a VirtPlatformConfig as "kubectl advisor plan" does, ask
"Approve plan <hash>? [y/N]", and on y or yes approve exactly the plan shown
(its planHash). If the plan changed in between, the server refuses with a
conflict and nothing is approved: review it again. Anything but y or yes,
or the end of input, approves nothing. The answer is read from standard
input, also when it is not a terminal.

Approving needs the virt-advisor-approver role (create
virtplatformconfigs/approve and get virtplatformconfigs/plan).

Exit status:
  0  approved (with --dry-run: the server would accept the approval)
  1  not approved: the answer was not yes
  2  error (refused by the server, e.g. the plan changed or no permission)`,
		Example: `  kubectl advisor approve load-aware-rebalancing
  kubectl advisor approve load-aware-rebalancing --dry-run --yes`,
		Args: nameArg("approve"),
		RunE: func(cmd *cobra.Command, args []string) error {
			return ao.run(cmd.Context(), args[0])
		},
	}
	ao.addFlags(cmd)
	return cmd
}

func (o *approveOptions) addFlags(cmd *cobra.Command) {
	cmd.Flags().BoolVarP(&o.yes, "yes", "y", false, "Approve the plan shown without asking.")
	cmd.Flags().BoolVar(&o.dryRun, "dry-run", false, "Ask the server to check the approval (dryRun=All) without recording it.")
}

func newCmdRevert(o *options) *cobra.Command {
	ao := &approveOptions{options: o, revert: true}
	cmd := &cobra.Command{
		Use:   "revert NAME",
		Short: "Show the revert plan of a VirtPlatformConfig, ask, and approve exactly that plan",
		Long: `Show the revert plan of a VirtPlatformConfig (GET .../revert): what restores
the objects virt-advisor wrote for it as they were before, each field back to
its previous value and each object it created deleted. A field someone else
changed since virt-advisor wrote it is a conflict: the plan names it in a
warning and the revert leaves it alone. Then ask "Approve revert plan
<hash>? [y/N]" and on y or yes approve exactly the plan shown, as approve
does. Once written, the config is Ignored: nothing is managed until its spec
changes.

Reverting needs the virt-advisor-approver role (create
virtplatformconfigs/approve and get virtplatformconfigs/revert).

Exit status:
  0  approved (with --dry-run: the server would accept the approval)
  1  not approved: the answer was not yes
  2  error (refused by the server, e.g. the plan changed or no permission)`,
		Example: `  kubectl advisor revert virt-higher-density
  kubectl advisor revert virt-higher-density --yes`,
		Args: nameArg("revert"),
		RunE: func(cmd *cobra.Command, args []string) error {
			return ao.run(cmd.Context(), args[0])
		},
	}
	ao.addFlags(cmd)
	return cmd
}

// what names the plan in the question and the answer.
func (o *approveOptions) what() string {
	if o.revert {
		return "Revert plan"
	}
	return "Plan"
}

func (o *approveOptions) run(ctx context.Context, name string) error {
	c, err := o.newClients()
	if err != nil {
		return err
	}
	configs := c.advisor.AdvisorV1alpha1().VirtPlatformConfigs()
	get := configs.GetPlan
	if o.revert {
		get = configs.GetRevertPlan
	}
	p, err := get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return err
	}
	printPlan(o.streams.Out, p, pools.Summary(ctx, c.dynamic, p.Status.Items), o.color())
	hash := p.Status.PlanHash
	if hash == "" {
		return fmt.Errorf("the server returned a plan without a planHash for %q: nothing to approve", name)
	}
	fmt.Fprintln(o.streams.Out)
	if !o.yes {
		fmt.Fprintf(o.streams.Out, "Approve %s %s? [y/N] ", strings.ToLower(o.what()), v1alpha1.ShortHash(hash))
		if !confirmed(o.streams.In) {
			fmt.Fprintln(o.streams.Out, "Nothing approved.")
			return &exitCodeError{code: exitChanges}
		}
	}
	opts := metav1.CreateOptions{}
	if o.dryRun {
		opts.DryRun = []string{metav1.DryRunAll}
	}
	a, err := configs.Approve(ctx, name, &v1alpha1.Approval{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec:       v1alpha1.ApprovalSpec{PlanHash: hash},
	}, opts)
	if err != nil {
		return err
	}
	fmt.Fprintln(o.streams.Out, approvedLine(o.what(), name, a, hash, o.dryRun))
	return nil
}

// confirmed reads one line and says whether it is y or yes (any case).
func confirmed(in io.Reader) bool {
	if in == nil {
		return false
	}
	line, _ := bufio.NewReader(in).ReadString('\n')
	switch strings.ToLower(strings.TrimSpace(line)) {
	case "y", "yes":
		return true
	}
	return false
}

// approvedLine reports what the server recorded.
func approvedLine(what, name string, a *v1alpha1.Approval, hash string, dryRun bool) string {
	if dryRun {
		return fmt.Sprintf("%s %s can be approved (dry run: nothing recorded).", what, v1alpha1.ShortHash(hash))
	}
	line := fmt.Sprintf("%s %s approved", what, v1alpha1.ShortHash(orDefault(a.Status.PlanHash, hash)))
	if a.Status.ApprovedBy != "" {
		line += " by " + a.Status.ApprovedBy
	}
	if a.Status.ApprovedAt != nil {
		line += " at " + a.Status.ApprovedAt.UTC().Format(time.RFC3339)
	}
	return line + ". Follow it with: kubectl advisor status -w " + name
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}
