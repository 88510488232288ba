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

// Run validates the options and builds the server's configuration, and
// only then starts anything: the embedded etcd when no external one is
// given, then the server, until ctx is done.
func Run(ctx context.Context, o *Options) error {
	return run(ctx, o, embeddedetcd.Start)
}

// startEtcd starts the embedded etcd in dir and waits until it serves.
type startEtcd func(dir string, readyTimeout time.Duration) (*embeddedetcd.Etcd, error)

func run(ctx context.Context, o *Options, startEtcd startEtcd) error {
	if err := o.Complete(); err != nil {
		return err
	}
	if err := o.Validate(); err != nil {
		return err
	}
	// Building the configuration reads what the flags name (kubeconfigs,
	// certificates, policy files): a flag naming a missing or bad one
	// fails here, before the embedded etcd touches its data directory.
	config, err := o.Config()
	if err != nil {
		return err
	}
	if o.UsesEmbeddedEtcd() {
		etcd, err := startEtcd(o.EmbeddedEtcdDir, time.Minute)
		if err != nil {
			return err
		}
		// Closed after the server has drained its requests (Run returns).
		defer etcd.Close()
		klog.FromContext(ctx).Info("Embedded etcd serving", "dir", o.EmbeddedEtcdDir, "url", etcd.ClientURL, "clusterID", etcd.ClusterID())
	}
	if err := o.ApplyStorage(config); err != nil {
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
	return server.Run(ctx)
}
