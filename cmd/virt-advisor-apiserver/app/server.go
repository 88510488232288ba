package app

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/klog/v2"

	"github.com/kubevirt/virt-advisor/pkg/embeddedetcd"
)

// NewCommand returns the virt-advisor-apiserver command.
func NewCommand(ctx context.Context) *cobra.Command {
	o := NewOptions()
	cmd := &cobra.Command{
		Use:   "virt-advisor-apiserver",
		Short: "Serves advisor.kubevirt.io: live plans and approvals for tuning the virtualization platform",
		RunE: func(c *cobra.Command, args []string) error {
			if len(args) > 0 {
				return fmt.Errorf("unexpected arguments: %q", args)
			}
			return Run(c.Context(), o)
		},
		SilenceUsage: true,
	}
	cmd.SetContext(ctx)
	o.AddFlags(cmd.Flags())
	return cmd
}

// Run validates the options, starts the embedded etcd when no external
// one is given, then serves until ctx is done.
func Run(ctx context.Context, o *Options) error {
	if err := o.Complete(); err != nil {
		return err
	}
	if err := o.Validate(); err != nil {
		return err
	}
	if o.UsesEmbeddedEtcd() {
		etcd, err := embeddedetcd.Start(o.EmbeddedEtcdDir, time.Minute)
		if err != nil {
			return err
		}
		// Closed after the server has drained its requests (Run returns).
		defer etcd.Close()
		klog.InfoS("Embedded etcd serving", "dir", o.EmbeddedEtcdDir, "url", etcd.ClientURL, "clusterID", etcd.ClusterID())
	}
	config, err := o.Config()
	if err != nil {
		return err
	}
	completed, err := config.Complete()
	if err != nil {
		return err
	}
	server, err := completed.New()
	if err != nil {
		return err
	}
	return server.GenericAPIServer.PrepareRun().RunWithContext(ctx)
}
