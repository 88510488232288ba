package advisor

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubevirt/virt-advisor/pkg/apis/advisor/v1alpha1"
)

type abortOptions struct {
	*options
	yes    bool
	dryRun bool
}

func newCmdAbort(o *options) *cobra.Command {
	ao := &abortOptions{options: o}
	cmd := &cobra.Command{
		Use:   "abort NAME",
		Short: "Stop the approved plan of a VirtPlatformConfig while it is applied",
		Long: `Show which plan of a VirtPlatformConfig is being applied and by whose
approval, ask "Abort plan <hash>? [y/N]", and on y or yes abort exactly that
plan: nothing more of it is written, and the MachineConfigPools it was
rolling out on are paused (a node already updating finishes, no other
starts). The config goes to phase Aborted, saying what was written and what
not. To go on, review the plan (it starts from what is live) and approve it
with "kubectl advisor approve"; that ends the pause, as deleting the config
does. Anything but y or yes, or the end of input, aborts nothing.

Aborting needs the virt-advisor-approver role (create
virtplatformconfigs/abort).

Exit status:
  0  aborted (with --dry-run: the server would accept the abort)
  1  not aborted: the answer was not yes
  2  error (refused by the server, e.g. no plan is being applied or no permission)`,
		Example: `  kubectl advisor abort load-aware-rebalancing
  kubectl advisor abort load-aware-rebalancing --yes`,
		Args: nameArg("abort"),
		RunE: func(cmd *cobra.Command, args []string) error {
			return ao.run(cmd.Context(), args[0])
		},
	}
	cmd.Flags().BoolVarP(&ao.yes, "yes", "y", false, "Abort the approved plan without asking.")
	cmd.Flags().BoolVar(&ao.dryRun, "dry-run", false, "Ask the server to check the abort (dryRun=All) without recording it.")
	return cmd
}

func (o *abortOptions) run(ctx context.Context, name string) error {
	c, err := o.newClients()
	if err != nil {
		return err
	}
	configs := c.advisor.AdvisorV1alpha1().VirtPlatformConfigs()
	cfg, err := configs.Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return err
	}
	a := cfg.Status.Approval
	if cfg.Status.Phase != v1alpha1.PhaseInProgress || a == nil {
		// The server says the same with a 409; asking first would be a
		// question about nothing.
		return fmt.Errorf("VirtPlatformConfig %q has no approved plan being applied (phase %s): there is nothing to abort", name, cfg.Status.Phase)
	}
	fmt.Fprintf(o.streams.Out, "Plan %s approved by %s at %s is being applied (phase %s):\n",
		v1alpha1.ShortHash(a.PlanHash), a.ApprovedBy, a.ApprovedAt.UTC().Format(time.RFC3339), cfg.Status.Phase)
	for _, it := range cfg.Status.Items {
		fmt.Fprintf(o.streams.Out, "  %-28s %-10s %s\n", it.Name, it.State, it.Message)
	}
	fmt.Fprintln(o.streams.Out)
	if !o.yes {
		fmt.Fprintf(o.streams.Out, "Abort plan %s? [y/N] ", v1alpha1.ShortHash(a.PlanHash))
		if !confirmed(o.streams.In) {
			fmt.Fprintln(o.streams.Out, "Nothing aborted.")
			return &exitCodeError{code: exitChanges}
		}
	}
	opts := metav1.CreateOptions{}
	if o.dryRun {
		opts.DryRun = []string{metav1.DryRunAll}
	}
	res, err := configs.Abort(ctx, name, &v1alpha1.Abort{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec:       v1alpha1.AbortSpec{PlanHash: a.PlanHash},
	}, opts)
	if err != nil {
		return err
	}
	fmt.Fprintln(o.streams.Out, abortedLine(name, res, o.dryRun))
	return nil
}

// abortedLine reports what the server recorded.
func abortedLine(name string, a *v1alpha1.Abort, dryRun bool) string {
	hash := v1alpha1.ShortHash(a.Status.PlanHash)
	if dryRun {
		return fmt.Sprintf("Plan %s can be aborted (dry run: nothing recorded).", hash)
	}
	list := func(names []string) string {
		if len(names) == 0 {
			return "none"
		}
		return strings.Join(names, ", ")
	}
	line := fmt.Sprintf("Plan %s aborted by %s", hash, a.Status.AbortedBy)
	if a.Status.AbortedAt != nil {
		line += " at " + a.Status.AbortedAt.UTC().Format(time.RFC3339)
	}
	line += fmt.Sprintf(". Written: %s; not written: %s", list(a.Status.Written), list(a.Status.NotWritten))
	if len(a.Status.InFlight) > 0 {
		line += fmt.Sprintf("; being written when aborted (may have been written): %s", list(a.Status.InFlight))
	}
	return line + ". To go on: kubectl advisor approve " + name
}
