package advisor

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/duration"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/cli-runtime/pkg/printers"
	"k8s.io/client-go/tools/cache"
	watchtools "k8s.io/client-go/tools/watch"

	"github.com/kubevirt/virt-advisor/pkg/apis/advisor/v1alpha1"
	"github.com/kubevirt/virt-advisor/pkg/cmd/advisor/internal/pools"
	advisorv1alpha1 "github.com/kubevirt/virt-advisor/pkg/generated/clientset/versioned/typed/advisor/v1alpha1"
	"github.com/kubevirt/virt-advisor/pkg/machineconfig"
	"github.com/kubevirt/virt-advisor/pkg/status"
)

type statusOptions struct {
	*options
	watch   bool
	timeout time.Duration
}

func newCmdStatus(o *options) *cobra.Command {
	so := &statusOptions{options: o}
	cmd := &cobra.Command{
		Use:   "status [NAME]",
		Short: "Show the phase, approval, items and MachineConfigPool progress of VirtPlatformConfigs",
		Long: `Without NAME, list every VirtPlatformConfig with its phase and last approval.
With NAME, show its phase and message, the last approval (who, when, which
plan), each item's state and message, and the node progress of every
MachineConfigPool that selects one of its MachineConfigs.

With -w, follow NAME and print it again whenever it changes, until it
reaches a phase where it waits for nobody but you: Completed,
CompletedWithErrors, CompletedWithUpgrade, Failed, Aborted, Drifted, Ignored,
PrerequisiteFailed, or ReviewRequired (waiting for a review and an
approval; an approval the controller has not acted on yet is followed).
A status that still describes an older spec generation is followed too.

Exit status: 0 shown (with -w: a phase above was reached), 2 error or --timeout.`,
		Example: `  kubectl advisor status
  kubectl advisor status load-aware-rebalancing -w --timeout=30m`,
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) > 1 {
				return fmt.Errorf("give at most one VirtPlatformConfig name: kubectl advisor status [NAME]")
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				if so.watch {
					return fmt.Errorf("-w follows one VirtPlatformConfig: kubectl advisor status NAME -w")
				}
				return so.list(cmd.Context())
			}
			if so.watch {
				return so.follow(cmd.Context(), args[0])
			}
			return so.show(cmd.Context(), args[0])
		},
	}
	cmd.Flags().BoolVarP(&so.watch, "watch", "w", false, "Follow NAME until it reaches a phase where it waits for you (see above).")
	cmd.Flags().DurationVar(&so.timeout, "timeout", 0, "With -w, give up after this long (e.g. 30m); 0 waits forever.")
	return cmd
}

func (o *statusOptions) list(ctx context.Context) error {
	c, err := o.newClients()
	if err != nil {
		return err
	}
	list, err := c.advisor.AdvisorV1alpha1().VirtPlatformConfigs().List(ctx, metav1.ListOptions{})
	if err != nil {
		return err
	}
	printList(o.streams.Out, list.Items, time.Now())
	return nil
}

func (o *statusOptions) show(ctx context.Context, name string) error {
	c, err := o.newClients()
	if err != nil {
		return err
	}
	cfg, err := c.advisor.AdvisorV1alpha1().VirtPlatformConfigs().Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return err
	}
	printStatus(o.streams.Out, cfg, poolProgress(ctx, c, cfg), o.color())
	return nil
}

// follow prints the config whenever what it shows changes, until settled.
func (o *statusOptions) follow(ctx context.Context, name string) error {
	c, err := o.newClients()
	if err != nil {
		return err
	}
	if o.timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, o.timeout)
		defer cancel()
	}
	configs := c.advisor.AdvisorV1alpha1().VirtPlatformConfigs()
	// A plain GET first: an unknown name or a missing permission is an
	// error now, not a watch retrying until --timeout.
	if _, err := configs.Get(ctx, name, metav1.GetOptions{}); err != nil {
		return err
	}
	lw := oneConfig(configs, name)
	exists := func(store cache.Store) (bool, error) {
		if _, found, err := store.GetByKey(name); err != nil || !found {
			return true, errors.Join(err, apierrors.NewNotFound(v1alpha1.Resource("virtplatformconfigs"), name))
		}
		return false, nil
	}
	var last, lastPhase string
	_, err = watchtools.UntilWithSync(ctx, cache.ToListWatcherWithWatchListSemantics(lw, c.advisor), &v1alpha1.VirtPlatformConfig{}, exists, func(ev watch.Event) (bool, error) {
		if ev.Type == watch.Deleted {
			return false, fmt.Errorf("VirtPlatformConfig %q was deleted", name)
		}
		cfg, ok := ev.Object.(*v1alpha1.VirtPlatformConfig)
		if !ok {
			return false, nil
		}
		var b strings.Builder
		printStatus(&b, cfg, poolProgress(ctx, c, cfg), o.color())
		if text := b.String(); text != last {
			if last != "" {
				fmt.Fprintln(o.streams.Out)
			}
			fmt.Fprint(o.streams.Out, text)
			last = text
		}
		lastPhase = string(cfg.Status.Phase)
		return settled(cfg), nil
	})
	return o.followEnded(ctx, err, name, lastPhase)
}

// oneConfig lists and watches the config name alone.
func oneConfig(configs advisorv1alpha1.VirtPlatformConfigInterface, name string) *cache.ListWatch {
	byName := fields.OneTermEqualSelector("metadata.name", name).String()
	return &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
			opts.FieldSelector = byName
			return configs.List(ctx, opts)
		},
		WatchFuncWithContext: func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
			opts.FieldSelector = byName
			return configs.Watch(ctx, opts)
		},
	}
}

// followEnded is what following a config that ended with err returns:
// err, or, when --timeout or an interrupt ended it, the phase it was in.
func (o *statusOptions) followEnded(ctx context.Context, err error, name, lastPhase string) error {
	switch {
	case err == nil || apierrors.IsNotFound(err):
		return err
	case errors.Is(ctx.Err(), context.DeadlineExceeded):
		return fmt.Errorf("gave up after --timeout=%s: %s is still in phase %s", o.timeout, name, orDash(lastPhase))
	case ctx.Err() != nil:
		return fmt.Errorf("interrupted: %s is still in phase %s", name, orDash(lastPhase))
	}
	return err
}

// settled says whether a config waits for nobody but the user. A
// ReviewRequired config that holds an approval newer than that phase is
// about to be applied, and a status of an older spec generation is about
// to be replaced: neither is settled.
func settled(cfg *v1alpha1.VirtPlatformConfig) bool {
	if cfg.Status.ObservedGeneration < cfg.Generation {
		return false
	}
	switch cfg.Status.Phase {
	case v1alpha1.PhaseCompleted, v1alpha1.PhaseCompletedWithErrors, v1alpha1.PhaseCompletedWithUpgrade,
		v1alpha1.PhaseFailed, v1alpha1.PhaseAborted, v1alpha1.PhaseDrifted, v1alpha1.PhaseIgnored, v1alpha1.PhasePrerequisiteFailed:
		return true
	case v1alpha1.PhaseReviewRequired:
		a := cfg.Status.Approval
		cond := meta.FindStatusCondition(cfg.Status.Conditions, string(v1alpha1.PhaseReviewRequired))
		pending := a != nil && a.Generation == cfg.Generation && cond != nil && !a.ApprovedAt.Before(&cond.LastTransitionTime)
		return !pending
	}
	return false
}

// poolStatus is the node progress of one MachineConfigPool.
type poolStatus struct {
	name                               string
	updated, ready, machines, degraded int64
	paused                             bool
	// halt is the halt of its rollout, step the step in flight; nil
	// when there is none.
	halt *pools.Halt
	step *pools.Step
}

// progress is the pools of a config's MachineConfig items, or why they
// could not be read.
type progress struct {
	pools []poolStatus
	err   string
}

// poolProgress reads the pools that select the config's MachineConfigs;
// none when it has no MachineConfig items.
func poolProgress(ctx context.Context, c *clients, cfg *v1alpha1.VirtPlatformConfig) progress {
	items := make([]v1alpha1.PlanItem, 0, len(cfg.Status.Items))
	for _, it := range cfg.Status.Items {
		items = append(items, v1alpha1.PlanItem{Name: it.Name, TargetRef: it.TargetRef, Operation: it.Operation, DesiredState: it.DesiredState})
	}
	mcs, err := pools.Changes(ctx, c.dynamic, items, true)
	if err != nil {
		return progress{err: err.Error()}
	}
	mcs = pools.WithHeld(mcs, cfg.Status.Abort)
	if len(mcs) == 0 {
		return progress{}
	}
	all, err := pools.List(ctx, c.dynamic)
	if err != nil {
		return progress{err: err.Error()}
	}
	selecting, err := machineconfig.Rolls(all, mcs)
	if err != nil {
		return progress{err: err.Error()}
	}
	var out progress
	for _, s := range selecting {
		for i := range all {
			if all[i].GetName() != s.Pool {
				continue
			}
			p := &all[i]
			out.pools = append(out.pools, poolStatus{
				name: s.Pool, machines: machineconfig.Count(p, "machineCount"), updated: machineconfig.Count(p, "updatedMachineCount"),
				ready: machineconfig.Count(p, "readyMachineCount"), degraded: machineconfig.Count(p, "degradedMachineCount"), paused: s.Paused,
				halt: pools.ReadHalt(p, cfg), step: pools.ReadStep(p),
			})
		}
	}
	return out
}

// printList writes one line per config.
func printList(w io.Writer, cfgs []v1alpha1.VirtPlatformConfig, now time.Time) {
	if len(cfgs) == 0 {
		fmt.Fprintln(w, "No VirtPlatformConfigs found.")
		return
	}
	tw := printers.GetNewTabWriter(w)
	defer tw.Flush()
	fmt.Fprintln(tw, "NAME\tACTION\tPHASE\tIMPACT\tAPPROVED\tAGE")
	for _, cfg := range cfgs {
		approved := "-"
		if a := cfg.Status.Approval; a != nil {
			approved = v1alpha1.ShortHash(a.PlanHash) + " by " + a.ApprovedBy
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", cfg.Name, orDash(string(cfg.Spec.Action)), orDash(string(cfg.Status.Phase)),
			orDash(string(cfg.Status.ImpactSeverity)), approved, duration.HumanDuration(now.Sub(cfg.CreationTimestamp.Time)))
	}
}

// printStatus writes one config: phase, approval, items and pools.
func printStatus(w io.Writer, cfg *v1alpha1.VirtPlatformConfig, pr progress, color bool) {
	c := painter(color)
	s := cfg.Status
	phase := orDash(string(s.Phase))
	if cond := meta.FindStatusCondition(s.Conditions, string(s.Phase)); cond != nil && cond.Message != "" {
		phase += ": " + cond.Message
	}
	fmt.Fprintln(w, c.bold(cfg.Name)+"  (action "+orDash(string(cfg.Spec.Action))+")")
	fmt.Fprintln(w, "Phase:     "+phase)
	if s.ObservedGeneration < cfg.Generation {
		fmt.Fprintf(w, "           (status of generation %d; the spec is at %d and is being planned)\n", s.ObservedGeneration, cfg.Generation)
	}
	for _, t := range []string{"InputDependencyDrift", "UpgradeAvailable"} {
		if cond := meta.FindStatusCondition(s.Conditions, t); cond != nil && cond.Status == metav1.ConditionTrue {
			fmt.Fprintf(w, "           %s: %s\n", t, cond.Message)
		}
	}
	printApproval(w, cfg, phase)
	printItemsAndPools(w, s.Items, pr, c)
}

// printApproval writes the approval of a config and its abort, if any.
func printApproval(w io.Writer, cfg *v1alpha1.VirtPlatformConfig, phase string) {
	s := cfg.Status
	if a := s.Approval; a != nil {
		fmt.Fprintf(w, "Approval:  plan %s by %s at %s (generation %d)\n", v1alpha1.ShortHash(a.PlanHash), a.ApprovedBy, a.ApprovedAt.UTC().Format(time.RFC3339), a.Generation)
	} else {
		fmt.Fprintln(w, "Approval:  none")
	}
	if a := s.Abort; a != nil {
		fmt.Fprintf(w, "Abort:     plan %s by %s at %s\n", v1alpha1.ShortHash(a.PlanHash), a.AbortedBy, a.AbortedAt.UTC().Format(time.RFC3339))
		if note := status.AbortHoldNote(cfg); note != "" && !strings.Contains(phase, note) {
			fmt.Fprintln(w, "           "+note)
		}
	}
}

// printItemsAndPools writes the table of a config's items and that of
// its pools' progress.
func printItemsAndPools(w io.Writer, items []v1alpha1.VirtPlatformConfigItem, pr progress, c painter) {
	if len(items) > 0 {
		fmt.Fprintln(w, c.bold("Items:"))
		tw := printers.GetNewTabWriter(w)
		fmt.Fprintln(tw, "  ITEM\tTARGET\tOPERATION\tSTATE\tMESSAGE")
		for _, it := range items {
			fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%s\n", it.Name, target(it.TargetRef), orDash(string(it.Operation)), orDash(string(it.State)), flatten(it.Message))
		}
		tw.Flush()
	}
	switch {
	case pr.err != "":
		fmt.Fprintln(w, c.bold("Pools:")+" unknown ("+pr.err+")")
	case len(pr.pools) > 0:
		fmt.Fprintln(w, c.bold("Pools:"))
		tw := printers.GetNewTabWriter(w)
		fmt.Fprintln(tw, "  POOL\tUPDATED\tREADY\tMACHINES\tDEGRADED\tPAUSED")
		for _, p := range pr.pools {
			fmt.Fprintf(tw, "  %s\t%d\t%d\t%d\t%d\t%t\n", p.name, p.updated, p.ready, p.machines, p.degraded, p.paused)
		}
		tw.Flush()
		printSteps(w, pr.pools, c)
	}
}

// printSteps writes, below the pools, each halted rollout (which gate
// tripped on which node, when, why, and who ends it) and each step in
// flight.
func printSteps(w io.Writer, ps []poolStatus, c painter) {
	const indent = "           "
	for _, p := range ps {
		if h := p.halt; h != nil {
			fmt.Fprintln(w, c.red("Halted:    "+h.Headline()))
			fmt.Fprintln(w, indent+flatten(h.Message))
			if len(h.Evidence) > 0 {
				fmt.Fprintln(w, indent+"evidence: "+flatten(strings.Join(h.Evidence, "; ")))
			}
			fmt.Fprintln(w, indent+h.End)
		}
	}
	for _, p := range ps {
		if s := p.step; s != nil {
			fmt.Fprintln(w, "Step:      "+s.Line())
		}
	}
}
