package advisor

import (
	"context"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubevirt/virt-advisor/pkg/apis/advisor/v1alpha1"
)

type fleetOptions struct {
	*options
	yes bool
}

// newCmdFleet is `kubectl advisor fleet`: the FleetConfigs of a fleet's
// hub, in the namespace of -n.
func newCmdFleet(o *options) *cobra.Command {
	fo := &fleetOptions{options: o}
	cmd := &cobra.Command{
		Use:   "fleet",
		Short: "Review, approve and follow a fleet's plan on its hub (FleetConfigs, in the namespace of -n)",
		Long: `Review, approve and follow the plan of a FleetConfig on a fleet's hub:
one plan for every cluster its Placement selects, each cluster's own plan
by wave, approved once by its fleet hash (docs/fleet.md).

  kubectl advisor fleet plan NAME -n NS      each cluster's plan, by wave, and the fleet hash
  kubectl advisor fleet approve NAME -n NS   show the fleet plan, ask, approve exactly that fleet hash
  kubectl advisor fleet abort NAME -n NS     ask, then stop the fleet's rollout
  kubectl advisor fleet status NAME -n NS    the fleet's phase and each cluster's progress, by wave`,
	}
	run := func(f func(context.Context, *clients, string, string) error) func(*cobra.Command, []string) error {
		return func(cmd *cobra.Command, args []string) error {
			if len(args) != 1 {
				return fmt.Errorf("give the name of one FleetConfig: kubectl advisor fleet %s NAME -n NAMESPACE", cmd.Name())
			}
			c, err := o.newClients()
			if err != nil {
				return err
			}
			ns, err := o.namespace()
			if err != nil {
				return err
			}
			return f(cmd.Context(), c, ns, args[0])
		}
	}
	approve := &cobra.Command{Use: "approve NAME", Short: "Show a fleet plan, ask, and approve exactly its fleet hash", RunE: run(fo.approve)}
	approve.Flags().BoolVarP(&fo.yes, "yes", "y", false, "Approve the fleet plan shown without asking.")
	abort := &cobra.Command{Use: "abort NAME", Short: "Stop a fleet's rollout: no cluster starts it, started clusters abort", RunE: run(fo.abort)}
	abort.Flags().BoolVarP(&fo.yes, "yes", "y", false, "Abort without asking.")
	cmd.AddCommand(
		&cobra.Command{Use: "plan NAME", Short: "Each cluster's plan, by wave, and the fleet hash", RunE: run(fo.plan)},
		approve, abort,
		&cobra.Command{Use: "status NAME", Short: "The fleet's phase and each cluster's progress, by wave", RunE: run(fo.status)},
	)
	return cmd
}

func (o *fleetOptions) plan(ctx context.Context, c *clients, ns, name string) error {
	p, err := c.advisor.AdvisorV1alpha1().FleetConfigs(ns).GetPlan(ctx, name, metav1.GetOptions{})
	if err != nil {
		return err
	}
	printFleetPlan(o.streams.Out, p)
	return nil
}

// printFleetPlan prints a fleet plan: a line per cluster, by wave.
func printFleetPlan(out io.Writer, p *v1alpha1.FleetPlan) {
	st := &p.Status
	fmt.Fprintf(out, "FleetConfig %s/%s, profile %s, generation %d, rollout %s\n", p.Namespace, p.Name, st.Profile, st.Generation, strategyName(st.RolloutStrategy))
	w := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "WAVE\tCLUSTER\tPHASE\tPLAN\tITEMS\tNODES REBOOTED\tVMS MIGRATED\tSHUT DOWN\tBLOCKING\tCAPACITY")
	for _, c := range st.Clusters {
		wave := wave(c.GroupIndex, c.Group)
		if c.Plan == nil {
			fmt.Fprintf(w, "%s\t%s\t%s\t-\t-\t-\t-\t-\t-\t-\n", wave, c.Name, c.Phase)
			continue
		}
		hash := v1alpha1.ShortHash(c.Plan.PlanHash)
		if c.ApprovedPlanHash != "" && c.ApprovedPlanHash != c.Plan.PlanHash {
			hash += " (approved " + v1alpha1.ShortHash(c.ApprovedPlanHash) + ": MISMATCH)"
		}
		var items []string
		for _, it := range c.Plan.Items {
			items = append(items, fmt.Sprintf("%s %s", it.Operation, it.Target))
		}
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%d\t%d\t%d\t%d\t%s\n", wave, c.Name, c.Phase, hash, strings.Join(items, ", "),
			c.Plan.NodeReboots, c.Plan.LiveMigrations, c.Plan.ShutDownVMs, c.Plan.DrainBlockingVMs, orDash(c.Plan.Capacity))
	}
	_ = w.Flush()
	if len(st.Pending) > 0 {
		fmt.Fprintf(out, "\nNot approvable yet: %s\n", strings.Join(st.Pending, "; "))
		return
	}
	fmt.Fprintf(out, "\nFleet hash: %s\n", st.FleetHash)
}

// wave names a decision group: its index, and its name when it has one.
func wave(index int32, name string) string {
	if name == "" {
		return fmt.Sprint(index)
	}
	return fmt.Sprintf("%d (%s)", index, name)
}

func strategyName(s v1alpha1.RolloutStrategy) string {
	if s.Type == "" {
		return string(v1alpha1.RolloutTypeAll)
	}
	return string(s.Type)
}

func (o *fleetOptions) approve(ctx context.Context, c *clients, ns, name string) error {
	fleets := c.advisor.AdvisorV1alpha1().FleetConfigs(ns)
	p, err := fleets.GetPlan(ctx, name, metav1.GetOptions{})
	if err != nil {
		return err
	}
	printFleetPlan(o.streams.Out, p)
	if len(p.Status.Pending) > 0 {
		return fmt.Errorf("the fleet plan of %s/%s cannot be approved yet: every cluster must report its plan first", ns, name)
	}
	if !o.yes {
		fmt.Fprintf(o.streams.Out, "Approve fleet plan %s for %d clusters? [y/N] ", v1alpha1.ShortHash(p.Status.FleetHash), len(p.Status.Clusters))
		if !confirmed(o.streams.In) {
			fmt.Fprintln(o.streams.Out, "Nothing approved.")
			return &exitCodeError{code: exitChanges}
		}
	}
	res, err := fleets.Approve(ctx, name, &v1alpha1.Approval{Spec: v1alpha1.ApprovalSpec{PlanHash: p.Status.FleetHash}}, metav1.CreateOptions{})
	if err != nil {
		return err
	}
	fmt.Fprintf(o.streams.Out, "Fleet plan %s approved by %s. Follow it: kubectl advisor fleet status %s -n %s\n", v1alpha1.ShortHash(res.Status.PlanHash), res.Status.ApprovedBy, name, ns)
	return nil
}

func (o *fleetOptions) abort(ctx context.Context, c *clients, ns, name string) error {
	fleets := c.advisor.AdvisorV1alpha1().FleetConfigs(ns)
	fc, err := fleets.Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return err
	}
	a := fc.Status.Approval
	if a == nil || fc.Status.Abort != nil {
		return fmt.Errorf("FleetConfig %s/%s has no approved fleet plan rolling out (phase %s): there is nothing to abort", ns, name, fc.Status.Phase)
	}
	if !o.yes {
		fmt.Fprintf(o.streams.Out, "Fleet plan %s approved by %s (phase %s). Abort it? [y/N] ", v1alpha1.ShortHash(a.FleetHash), a.ApprovedBy, fc.Status.Phase)
		if !confirmed(o.streams.In) {
			fmt.Fprintln(o.streams.Out, "Nothing aborted.")
			return &exitCodeError{code: exitChanges}
		}
	}
	res, err := fleets.Abort(ctx, name, &v1alpha1.Abort{Spec: v1alpha1.AbortSpec{PlanHash: a.FleetHash}}, metav1.CreateOptions{})
	if err != nil {
		return err
	}
	fmt.Fprintf(o.streams.Out, "Fleet plan %s aborted by %s: no cluster starts it; the clusters that started it abort it.\n", v1alpha1.ShortHash(res.Status.PlanHash), res.Status.AbortedBy)
	return nil
}

func (o *fleetOptions) status(ctx context.Context, c *clients, ns, name string) error {
	fc, err := c.advisor.AdvisorV1alpha1().FleetConfigs(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return err
	}
	printFleetStatus(o.streams.Out, fc)
	return nil
}

// printFleetStatus prints a FleetConfig's phase and each cluster's progress.
func printFleetStatus(out io.Writer, fc *v1alpha1.FleetConfig) {
	st := &fc.Status
	fmt.Fprintf(out, "FleetConfig %s/%s: %s\n%s\n", fc.Namespace, fc.Name, orDash(string(st.Phase)), st.Message)
	w := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "WAVE\tCLUSTER\tROLLOUT\tPHASE\tMESSAGE")
	for _, c := range st.Clusters {
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\n", wave(c.GroupIndex, c.Group), c.Name, orDash(c.Rollout), orDash(c.Phase), c.Message)
	}
	_ = w.Flush()
}
