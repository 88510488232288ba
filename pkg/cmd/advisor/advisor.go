// Package advisor implements kubectl-advisor, the kubectl plugin that
// shows a VirtPlatformConfig's live plan, approves exactly the plan it
// showed, and follows the rollout.
package advisor

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"
	"golang.org/x/term"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"

	"github.com/kubevirt/virt-advisor/pkg/generated/clientset/versioned"
	"github.com/kubevirt/virt-advisor/pkg/version"
)

// clients are the APIs the commands use: virt-advisor's, the
// MachineConfigPools of the cluster for reboot and rollout figures, and
// (for the dashboard) access reviews, nodes and events.
type clients struct {
	advisor versioned.Interface
	dynamic dynamic.Interface
	kube    kubernetes.Interface
	// host is the API server's address.
	host string
}

// options are shared by every command.
type options struct {
	streams genericiooptions.IOStreams
	noColor bool
	// newClients builds the clients from the kubeconfig flags; tests
	// replace it with fakes.
	newClients func() (*clients, error)
	// openBrowser opens an address in the desktop's browser; tests
	// replace it.
	openBrowser func(url string) error
	// namespace is that of -n or the kubeconfig's context (FleetConfigs).
	namespace func() (string, error)
}

// color says whether to colour output: only on a terminal, unless --no-color.
func (o *options) color() bool {
	if o.noColor {
		return false
	}
	f, ok := o.streams.Out.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// NewCmdAdvisor returns the root command, with the usual kubeconfig flags
// (--kubeconfig, --context, --as, ...). VirtPlatformConfigs are
// cluster-scoped: -n is accepted and ignored.
func NewCmdAdvisor(streams genericiooptions.IOStreams) *cobra.Command {
	configFlags := genericclioptions.NewConfigFlags(true)
	o := &options{streams: streams}
	o.newClients = func() (*clients, error) {
		cfg, err := configFlags.ToRESTConfig()
		if err != nil {
			return nil, err
		}
		return newClients(cfg)
	}
	o.namespace = func() (string, error) {
		ns, _, err := configFlags.ToRawKubeConfigLoader().Namespace()
		return ns, err
	}
	cmd := newRootCmd(o)
	configFlags.AddFlags(cmd.PersistentFlags())
	cmd.PersistentFlags().Lookup("namespace").Usage = "The namespace of FleetConfigs (kubectl advisor fleet); VirtPlatformConfigs are cluster-scoped."
	return cmd
}

// newRootCmd builds the command tree on o, without the kubeconfig flags.
func newRootCmd(o *options) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "advisor",
		Short: "Review, approve and follow virt-advisor plans",
		Long: `Review, approve and follow the plans of virt-advisor VirtPlatformConfigs.

  kubectl advisor plan NAME       the live plan as a diff per item, with the nodes it reboots
  kubectl advisor approve NAME    show the plan, ask, approve exactly that plan
  kubectl advisor revert NAME     the revert plan (what virt-advisor wrote, back as it was), ask, approve it
  kubectl advisor abort NAME      ask, then stop the approved plan being applied
  kubectl advisor status [NAME]   phase, approval, items and MachineConfigPool progress
  kubectl advisor dashboard       the same in a web page on this computer, with buttons to approve and abort
  kubectl advisor fleet ...       on a fleet's hub: one plan for many clusters, approved once, rolled out in waves`,
		Annotations:   map[string]string{cobra.CommandDisplayNameAnnotation: "kubectl advisor"},
		SilenceErrors: true,
		SilenceUsage:  true,
		Version:       version.Version,
	}
	cmd.CompletionOptions.DisableDefaultCmd = true
	cmd.SetIn(o.streams.In)
	cmd.SetOut(o.streams.Out)
	cmd.SetErr(o.streams.ErrOut)
	cmd.PersistentFlags().BoolVar(&o.noColor, "no-color", false, "Never colour the output (by default it is coloured only on a terminal).")
	// -v and --v are the log verbosity, as in kubectl (-v=6 logs every
	// request): defined before cobra adds --version, which then gets no
	// shorthand.
	klogFlags := flag.NewFlagSet("klog", flag.ContinueOnError)
	klog.InitFlags(klogFlags)
	cmd.PersistentFlags().AddGoFlag(klogFlags.Lookup("v"))
	cmd.AddCommand(newCmdPlan(o), newCmdApprove(o), newCmdRevert(o), newCmdAbort(o), newCmdStatus(o), newCmdDashboard(o), newCmdFleet(o))
	return cmd
}

func newClients(cfg *rest.Config) (*clients, error) {
	cfg = rest.CopyConfig(cfg)
	cfg.UserAgent = "kubectl-advisor/" + version.Version
	// The server's warnings are the plan's (status.warnings): the plugin
	// prints them with the plan, not as log lines.
	cfg.WarningHandler = rest.NoWarnings{}
	a, err := versioned.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	d, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	k, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	return &clients{advisor: a, dynamic: d, kube: k, host: cfg.Host}, nil
}

// Main runs the plugin with args and returns its exit code; every error is
// printed as one line.
func Main(ctx context.Context, streams genericiooptions.IOStreams, args []string) int {
	return execute(ctx, NewCmdAdvisor(streams), args, streams.ErrOut)
}

func execute(ctx context.Context, cmd *cobra.Command, args []string, errOut io.Writer) int {
	cmd.SetArgs(args)
	return exitCode(cmd.ExecuteContext(ctx), errOut)
}

// exitCode prints err and maps it to an exit code.
func exitCode(err error, errOut io.Writer) int {
	if err == nil {
		return exitOK
	}
	var e *exitCodeError
	if errors.As(err, &e) {
		return e.code
	}
	fmt.Fprintln(errOut, "Error: "+oneLine(err))
	return exitError
}
