package advisor

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/cli-runtime/pkg/printers"

	"github.com/kubevirt/virt-advisor/pkg/apis/advisor/v1alpha1"
	"github.com/kubevirt/virt-advisor/pkg/cmd/advisor/internal/pools"
)

const planExitCodes = `Exit status, as diff(1):
  0  nothing to change: every item's operation is None
  1  the plan changes something, an item could not be planned, or a prerequisite is missing
  2  error (unknown name, no permission, server unreachable)`

type planOptions struct {
	*options
	output string
}

func newCmdPlan(o *options) *cobra.Command {
	po := &planOptions{options: o}
	cmd := &cobra.Command{
		Use:   "plan NAME",
		Short: "Show the live plan of a VirtPlatformConfig as a diff per item",
		Long: `Show the live plan of a VirtPlatformConfig: for each item the operation, its
impact and a unified diff of the live object against a server-side apply
dry-run, then which MachineConfigPools' nodes applying it reboots, and
whether an ApprovalPolicy would approve it (and, if not, which bound it
exceeds).

With -o yaml or -o json the Plan object is printed as the server returned it.

` + planExitCodes,
		Example: `  kubectl advisor plan load-aware-rebalancing
  kubectl advisor plan load-aware-rebalancing -o yaml`,
		Args: nameArg("plan"),
		RunE: func(cmd *cobra.Command, args []string) error {
			return po.run(cmd.Context(), args[0])
		},
	}
	cmd.Flags().StringVarP(&po.output, "output", "o", "", "Output format: yaml or json (the Plan object). Default: a readable diff.")
	return cmd
}

// nameArg requires exactly one VirtPlatformConfig name.
func nameArg(command string) cobra.PositionalArgs {
	return func(_ *cobra.Command, args []string) error {
		if len(args) != 1 {
			return fmt.Errorf("give the name of one VirtPlatformConfig: kubectl advisor %s NAME (kubectl advisor status lists them)", command)
		}
		return nil
	}
}

func (o *planOptions) run(ctx context.Context, name string) error {
	var printer printers.ResourcePrinter
	switch o.output {
	case "":
	case "yaml":
		printer = &printers.YAMLPrinter{}
	case "json":
		printer = &printers.JSONPrinter{}
	default:
		return fmt.Errorf("unknown output format %q: use -o yaml or -o json", o.output)
	}
	c, err := o.newClients()
	if err != nil {
		return err
	}
	p, err := c.advisor.AdvisorV1alpha1().VirtPlatformConfigs().GetPlan(ctx, name, metav1.GetOptions{})
	if err != nil {
		return err
	}
	if printer != nil {
		p.SetGroupVersionKind(v1alpha1.SchemeGroupVersion.WithKind("Plan"))
		if err := printer.PrintObj(p, o.streams.Out); err != nil {
			return err
		}
	} else {
		printPlan(o.streams.Out, p, pools.Summary(ctx, c.dynamic, p.Status.Items), o.color())
		if line := policyVerdict(ctx, c, name, p); line != "" {
			fmt.Fprintln(o.streams.Out, line)
		}
	}
	if code := planExitCode(p); code != exitOK {
		return &exitCodeError{code: code}
	}
	return nil
}

// planExitCode is 0 when applying the plan would change nothing, 1 when it
// would change something or cannot be applied as it is.
func planExitCode(p *v1alpha1.Plan) int {
	for _, pr := range p.Status.Prerequisites {
		if !pr.Satisfied {
			return exitChanges
		}
	}
	for _, it := range p.Status.Items {
		if it.Error != "" || (it.Operation != v1alpha1.OperationNone && it.Operation != "") {
			return exitChanges
		}
	}
	return exitOK
}

// target is "Kind namespace/name" or "Kind name".
func target(ref v1alpha1.ObjectReference) string {
	if ref.Namespace != "" {
		return ref.Kind + " " + ref.Namespace + "/" + ref.Name
	}
	return ref.Kind + " " + ref.Name
}

// printPlan writes the plan for a reader: a header, per item what it does
// and its diff, the reboot summary and a count.
func printPlan(w io.Writer, p *v1alpha1.Plan, reboots string, color bool) {
	s := p.Status
	c := painter(color)
	fmt.Fprintln(w, c.bold(fmt.Sprintf("Plan %s for %s (generation %d), impact %s", v1alpha1.ShortHash(s.PlanHash), p.Name, s.Generation, orDash(string(s.ImpactSeverity)))))
	fmt.Fprintln(w, "Approving it also approves "+s.Settings.Summary())
	if gates := pools.Gates(s.Settings.Gates); gates != "" {
		fmt.Fprintln(w, "Gates between node reboots: "+gates)
	}

	missing := printMissing(w, s.Prerequisites, c)
	changed, failed := printItems(w, s.Items, c)

	fmt.Fprintln(w)
	for _, warning := range s.Warnings {
		fmt.Fprintln(w, c.red("warning: "+warning))
	}
	fmt.Fprintln(w, "reboots: "+reboots)
	switch {
	case len(s.Items) == 0 && missing == 0:
		fmt.Fprintln(w, "No items: nothing to change.")
	case len(s.Items) > 0:
		line := fmt.Sprintf("%d of %d items change something", changed, len(s.Items))
		if failed > 0 {
			line += fmt.Sprintf(", %d could not be planned", failed)
		}
		fmt.Fprintln(w, line+".")
	}
}

// printMissing writes the prerequisites not satisfied, and returns how
// many there are.
func printMissing(w io.Writer, prerequisites []v1alpha1.Prerequisite, c painter) int {
	var missing []v1alpha1.Prerequisite
	for _, pr := range prerequisites {
		if !pr.Satisfied {
			missing = append(missing, pr)
		}
	}
	if len(missing) > 0 {
		fmt.Fprintln(w)
		fmt.Fprintln(w, c.red("Missing prerequisites: nothing can be planned until they are installed"))
		for _, pr := range missing {
			fmt.Fprintf(w, "  %s %s: %s\n", pr.Kind, pr.APIVersion, pr.Description)
		}
	}
	return len(missing)
}

// printItems writes what each item does and its diff, and returns how
// many change something and how many could not be planned.
func printItems(w io.Writer, items []v1alpha1.PlanItem, c painter) (changed, failed int) {
	for i, it := range items {
		op := string(it.Operation)
		if op == "" {
			op = "?"
		}
		fmt.Fprintln(w)
		fmt.Fprintln(w, c.bold(fmt.Sprintf("[%d/%d] %s: %s %s, impact %s", i+1, len(items), it.Name, op, target(it.TargetRef), orDash(string(it.ImpactSeverity)))))
		if it.Message != "" {
			fmt.Fprintln(w, "      "+it.Message)
		}
		if it.Error != "" {
			failed++
			fmt.Fprintln(w, c.red("      error: "+flatten(it.Error)))
		}
		if it.Operation != v1alpha1.OperationNone && it.Operation != "" {
			changed++
			printDiff(w, it.Diff, c)
		}
	}
	return changed, failed
}

// printDiff colours a unified diff line by line.
func printDiff(w io.Writer, diff string, c painter) {
	diff = strings.TrimRight(diff, "\n")
	if diff == "" {
		return
	}
	for _, text := range strings.Split(diff, "\n") {
		switch {
		case strings.HasPrefix(text, "+++"), strings.HasPrefix(text, "---"):
			text = c.bold(text)
		case strings.HasPrefix(text, "+"):
			text = c.green(text)
		case strings.HasPrefix(text, "-"):
			text = c.red(text)
		case strings.HasPrefix(text, "@@"):
			text = c.cyan(text)
		}
		fmt.Fprintln(w, text)
	}
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
