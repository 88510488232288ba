// Package app holds the flags and options of virt-advisor-apiserver.
package app

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/pflag"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apiserver/pkg/endpoints/openapi"
	genericapiserver "k8s.io/apiserver/pkg/server"
	genericoptions "k8s.io/apiserver/pkg/server/options"
	"k8s.io/client-go/tools/leaderelection"
	componentbaseconfig "k8s.io/component-base/config"
	componentbaseoptions "k8s.io/component-base/config/options"
	netutils "k8s.io/utils/net"

	"github.com/kubevirt/virt-advisor/pkg/alertsource"
	"github.com/kubevirt/virt-advisor/pkg/apis/advisor/v1alpha1"
	"github.com/kubevirt/virt-advisor/pkg/apiserver"
	"github.com/kubevirt/virt-advisor/pkg/embeddedetcd"
	generatedopenapi "github.com/kubevirt/virt-advisor/pkg/generated/openapi"
	"github.com/kubevirt/virt-advisor/pkg/plan"
	"github.com/kubevirt/virt-advisor/pkg/version"
)

const etcdPathPrefix = "/registry/advisor.kubevirt.io"

// Options are the command-line options of virt-advisor-apiserver.
type Options struct {
	ServerRun   *genericoptions.ServerRunOptions
	Recommended *genericoptions.RecommendedOptions
	// EmbeddedEtcdDir is the data dir of the embedded etcd, used when
	// --etcd-servers is not set.
	EmbeddedEtcdDir string
	// embeddedEtcd: Complete pointed the storage at the embedded etcd.
	embeddedEtcd bool
	// LeaderElection elects the replica that runs the controller; every
	// replica serves the API.
	LeaderElection componentbaseconfig.LeaderElectionConfiguration
	// RequireDistinctApprover refuses approvals by the author of the spec.
	RequireDistinctApprover bool
	// ClusterName is this cluster's name on a fleet's hub (--cluster-name).
	ClusterName string
	// FleetHub serves FleetConfigs (--fleet-hub).
	FleetHub bool
	// MaxConcurrentPlans bounds the plan computations API requests run at
	// once; PlanWaitTimeout is how long a request waits for one to start
	// before it is answered 429.
	MaxConcurrentPlans int
	PlanWaitTimeout    time.Duration
	// RolloutCoalesceWindow is how long MachineConfigPools stay paused
	// after a MachineConfig write so that changes approved meanwhile roll
	// out with it (one reboot per node); 0 disables the pause.
	RolloutCoalesceWindow time.Duration
	// TransientErrorDeadline bounds the retries of an approved write that
	// fails transiently, for items without a waitTimeout.
	TransientErrorDeadline time.Duration
	// Gates are the cluster-wide defaults of spec.rollout.gates.
	Gates GateOptions
}

// GateOptions are the defaults of the gates between two steps of a pool's
// rollout, and where the alert gate reads the alerts. The alert source is
// the server's alone (a config cannot name an endpoint, nor a Secret for
// the server to send its token to).
type GateOptions struct {
	NodeReadyTimeout time.Duration
	Soak             time.Duration
	// AlertSourceURL and AlertSourceKind: the API the alerts are read
	// from; TokenFile and CAFile: its bearer token and CA (a mounted
	// Secret).
	AlertSourceURL       string
	AlertSourceKind      string
	AlertSourceTokenFile string
	AlertSourceCAFile    string
	// AlertGate puts the alert gate in force for every rollout, with
	// AlertMatchers, unless a config sets its own.
	AlertGate     bool
	AlertMatchers []string
}

// NewOptions returns the default options.
func NewOptions() *Options {
	o := &Options{
		ServerRun: genericoptions.NewServerRunOptions(),
		Recommended: genericoptions.NewRecommendedOptions(etcdPathPrefix,
			apiserver.Codecs.LegacyCodec(v1alpha1.SchemeGroupVersion)),
		EmbeddedEtcdDir:        "/var/lib/virt-advisor/etcd",
		RolloutCoalesceWindow:  30 * time.Second,
		TransientErrorDeadline: 10 * time.Minute,
		LeaderElection: componentbaseconfig.LeaderElectionConfiguration{
			LeaderElect:       true,
			LeaseDuration:     metav1.Duration{Duration: 15 * time.Second},
			RenewDeadline:     metav1.Duration{Duration: 10 * time.Second},
			RetryPeriod:       metav1.Duration{Duration: 2 * time.Second},
			ResourceLock:      "leases",
			ResourceName:      "virt-advisor-controller",
			ResourceNamespace: "virt-advisor",
		},
		MaxConcurrentPlans: 8,
		PlanWaitTimeout:    5 * time.Second,
		Gates:              GateOptions{NodeReadyTimeout: plan.DefaultNodeReadyTimeout, AlertSourceKind: string(alertsource.Prometheus)},
	}
	o.Recommended.Etcd.StorageConfig.EncodeVersioner = runtime.NewMultiGroupVersioner(
		v1alpha1.SchemeGroupVersion, schema.GroupKind{Group: v1alpha1.GroupName})
	o.Recommended.SecureServing.BindPort = 8443
	// No watch cache by default: it keeps a second decoded copy of every
	// object and of at least its last 100 events, to spare an etcd that
	// many clients share. This server's etcd is its own (embedded, in
	// process) and holds a few dozen objects, read by a few watchers;
	// in the bench's run of approvals and plans on a cluster of 10 000
	// VMs, the cache's copies of recent events were 3 MiB of the server's
	// growth. --watch-cache turns it back on.
	o.Recommended.Etcd.EnableWatchCache = false
	return o
}

// AddFlags adds the flags of every option group.
func (o *Options) AddFlags(fs *pflag.FlagSet) {
	o.ServerRun.AddUniversalFlags(fs)
	o.Recommended.AddFlags(fs)
	fs.StringVar(&o.EmbeddedEtcdDir, "embedded-etcd-dir", o.EmbeddedEtcdDir,
		"Data directory of the embedded etcd, used when --etcd-servers is not set. Mount a volume here. "+
			"The server reaches it through a unix socket in this directory ("+embeddedetcd.SocketName+", mode 0600); it opens no TCP port. "+
			"One replica per directory: for more replicas, use --etcd-servers.")
	componentbaseoptions.BindLeaderElectionFlags(&o.LeaderElection, fs)
	fs.BoolVar(&o.RequireDistinctApprover, "require-distinct-approver", o.RequireDistinctApprover,
		"Four eyes: refuse an approval by the user who made the last spec change, and never let action Apply approve by itself (it stops at ReviewRequired).")
	fs.StringVar(&o.ClusterName, "cluster-name", o.ClusterName,
		"This cluster's name on the hub of an Open Cluster Management fleet (its ManagedCluster): a fleet's delegated approval approves the plan hash it names for this name. Unset, delegated approvals approve nothing.")
	fs.BoolVar(&o.FleetHub, "fleet-hub", o.FleetHub,
		"Serve FleetConfigs: this cluster is an Open Cluster Management hub, and fleet plans are reviewed and approved here (docs/fleet.md).")
	fs.IntVar(&o.MaxConcurrentPlans, "max-concurrent-plans", o.MaxConcurrentPlans,
		"Plan computations (GET …/plan, approvals) run at once; each sends a GET and a dry-run per item to the main API server. "+
			"Concurrent GETs of the same config revision share one computation. The controller's own plans are not counted.")
	fs.DurationVar(&o.PlanWaitTimeout, "plan-wait-timeout", o.PlanWaitTimeout,
		"How long a plan request waits for a computation slot (see --max-concurrent-plans) before it is answered 429 Too Many Requests with Retry-After. Must be shorter than --request-timeout.")
	fs.DurationVar(&o.RolloutCoalesceWindow, "rollout-coalesce-window", o.RolloutCoalesceWindow,
		"How long a MachineConfigPool stays paused after virt-advisor writes a MachineConfig it renders, so that MachineConfig changes approved meanwhile roll out together and every node reboots once. 0 disables the pause: each change rolls out on its own.")
	o.Gates.addFlags(fs)
	fs.DurationVar(&o.TransientErrorDeadline, "transient-error-deadline", o.TransientErrorDeadline,
		"How long an approved write that fails transiently (the main API server unreachable, restarting or overloaded: connection refused or reset, timeouts, 429, 5xx) is retried, with exponential backoff, before its item fails with the last error. A config's spec.waitTimeout, when set, is used instead.")
}

// Complete fills in what follows from the flags. Without --etcd-servers
// the storage is the embedded etcd's socket, whose path is known before
// it starts: every option is validated before anything runs.
func (o *Options) Complete() error {
	transport := &o.Recommended.Etcd.StorageConfig.Transport
	if len(transport.ServerList) > 0 && !o.embeddedEtcd {
		return nil // external etcd
	}
	o.embeddedEtcd = true
	if o.EmbeddedEtcdDir != "" {
		dir, err := filepath.Abs(o.EmbeddedEtcdDir)
		if err != nil {
			return fmt.Errorf("--embedded-etcd-dir: %w", err)
		}
		o.EmbeddedEtcdDir = dir
	}
	transport.ServerList = []string{embeddedetcd.ClientURL(o.EmbeddedEtcdDir)}
	return nil
}

// UsesEmbeddedEtcd is true when no external etcd was given (after Complete).
func (o *Options) UsesEmbeddedEtcd() bool { return o.embeddedEtcd }

// Validate checks the completed options.
func (o *Options) Validate() error {
	var errs []error
	if o.embeddedEtcd {
		if err := embeddedetcd.ValidateDir(o.EmbeddedEtcdDir); err != nil {
			errs = append(errs, err)
		}
	}
	errs = append(errs, validateLeaderElection(o.LeaderElection)...)
	errs = append(errs, o.validatePlanLimits()...)
	if o.RolloutCoalesceWindow < 0 {
		errs = append(errs, fmt.Errorf("--rollout-coalesce-window must be 0 (no pause) or more, got %s", o.RolloutCoalesceWindow))
	}
	errs = append(errs, o.Gates.validate()...)
	if o.ClusterName != "" {
		for _, msg := range validation.IsDNS1123Label(o.ClusterName) {
			errs = append(errs, fmt.Errorf("--cluster-name %q: %s (it is the cluster's ManagedCluster name on the hub)", o.ClusterName, msg))
		}
	}
	if o.TransientErrorDeadline <= 0 {
		errs = append(errs, fmt.Errorf("--transient-error-deadline must be more than 0, got %s", o.TransientErrorDeadline))
	}
	// The storage is applied once etcd serves (ApplyStorage), and reads
	// this file only then.
	if f := o.Recommended.Etcd.EncryptionProviderConfigFilepath; f != "" {
		if _, err := os.Stat(f); err != nil {
			errs = append(errs, fmt.Errorf("--encryption-provider-config: %w", err))
		}
	}
	errs = append(errs, o.ServerRun.Validate()...)
	errs = append(errs, o.Recommended.Validate()...)
	return utilerrors.NewAggregate(errs)
}

// ApplyStorage points the configuration at etcd, which must serve by now.
func (o *Options) ApplyStorage(c *apiserver.Config) error {
	return o.Recommended.Etcd.ApplyTo(&c.GenericConfig.Config)
}

// validateLeaderElection rejects what client-go's leader election would
// panic on once the server runs.
func validateLeaderElection(le componentbaseconfig.LeaderElectionConfiguration) []error {
	if !le.LeaderElect {
		return nil
	}
	var errs []error
	if le.ResourceLock != "leases" {
		errs = append(errs, fmt.Errorf("--leader-elect-resource-lock must be leases, not %q", le.ResourceLock))
	}
	if le.ResourceName == "" || le.ResourceNamespace == "" {
		errs = append(errs, fmt.Errorf("--leader-elect-resource-name and --leader-elect-resource-namespace must not be empty"))
	}
	lease, renew, retry := le.LeaseDuration.Duration, le.RenewDeadline.Duration, le.RetryPeriod.Duration
	for _, d := range []struct {
		flag  string
		value time.Duration
	}{{"--leader-elect-lease-duration", lease}, {"--leader-elect-renew-deadline", renew}, {"--leader-elect-retry-period", retry}} {
		if d.value <= 0 {
			errs = append(errs, fmt.Errorf("%s must be greater than zero, got %v", d.flag, d.value))
		}
	}
	if len(errs) > 0 {
		return errs
	}
	if lease <= renew {
		errs = append(errs, fmt.Errorf("--leader-elect-lease-duration (%v) must be greater than --leader-elect-renew-deadline (%v)", lease, renew))
	}
	// The retry period is jittered up to this factor: a renewal must fit
	// in the deadline even then.
	if renew <= time.Duration(leaderelection.JitterFactor*float64(retry)) {
		errs = append(errs, fmt.Errorf("--leader-elect-renew-deadline (%v) must be greater than %.1f × --leader-elect-retry-period (%v), the retry period with jitter",
			renew, leaderelection.JitterFactor, retry))
	}
	return errs
}

func (o *Options) validatePlanLimits() []error {
	var errs []error
	if o.MaxConcurrentPlans <= 0 {
		errs = append(errs, fmt.Errorf("--max-concurrent-plans must be greater than zero, got %d", o.MaxConcurrentPlans))
	}
	if o.PlanWaitTimeout <= 0 {
		errs = append(errs, fmt.Errorf("--plan-wait-timeout must be greater than zero, got %v", o.PlanWaitTimeout))
	} else if rt := o.ServerRun.RequestTimeout; rt > 0 && o.PlanWaitTimeout >= rt {
		// A request that waits that long times out (504) before it can
		// be told to come back later (429).
		errs = append(errs, fmt.Errorf("--plan-wait-timeout (%v) must be shorter than --request-timeout (%v)", o.PlanWaitTimeout, rt))
	}
	return errs
}

// Config builds the server configuration from the flags, all but the
// storage (ApplyStorage): it reads every file the flags name and binds the
// serving port, and contacts no etcd, so it runs before the embedded etcd
// starts.
func (o *Options) Config() (*apiserver.Config, error) {
	if err := o.ServerRun.Complete(); err != nil {
		return nil, err
	}
	if err := o.Recommended.SecureServing.MaybeDefaultWithSelfSignedCerts("localhost", nil,
		[]net.IP{netutils.ParseIPSloppy("127.0.0.1")}); err != nil {
		return nil, fmt.Errorf("creating self-signed serving certificates: %w", err)
	}

	cfg := genericapiserver.NewRecommendedConfig(apiserver.Codecs)
	namer := openapi.NewDefinitionNamer(apiserver.Scheme)
	cfg.OpenAPIConfig = genericapiserver.DefaultOpenAPIConfig(generatedopenapi.GetOpenAPIDefinitions, namer)
	cfg.OpenAPIConfig.Info.Title = "virt-advisor"
	cfg.OpenAPIConfig.Info.Version = version.Version
	cfg.OpenAPIV3Config = genericapiserver.DefaultOpenAPIV3Config(generatedopenapi.GetOpenAPIDefinitions, namer)
	cfg.OpenAPIV3Config.Info.Title = "virt-advisor"
	cfg.OpenAPIV3Config.Info.Version = version.Version

	if err := o.ServerRun.ApplyTo(&cfg.Config); err != nil {
		return nil, err
	}
	// The storage's health checks connect to etcd as they are built.
	withoutStorage := *o.Recommended
	withoutStorage.Etcd = nil
	if err := withoutStorage.ApplyTo(cfg); err != nil {
		return nil, err
	}
	// The delegated authenticator admits anonymous requests everywhere and
	// leaves them to authorization (a SubjectAccessReview each); anonymous
	// requests reach only the probes here, and nothing else is even asked.
	cfg.Authentication.Authenticator = probesOnlyForAnonymous(cfg.Authentication.Authenticator)
	if cfg.ClientConfig == nil {
		return nil, fmt.Errorf("no client configuration for the main cluster: set --kubeconfig or run in a cluster")
	}
	alerts, err := o.Gates.reader()
	if err != nil {
		return nil, err
	}
	gateDefaults := o.Gates.defaults()
	return &apiserver.Config{GenericConfig: cfg, ExtraConfig: apiserver.ExtraConfig{
		ClientConfig:            cfg.ClientConfig,
		LeaderElection:          o.LeaderElection,
		MaxConcurrentPlans:      o.MaxConcurrentPlans,
		PlanWaitTimeout:         o.PlanWaitTimeout,
		RequireDistinctApprover: o.RequireDistinctApprover,
		ClusterName:             o.ClusterName,
		FleetHub:                o.FleetHub,
		RolloutCoalesceWindow:   o.RolloutCoalesceWindow,
		TransientErrorDeadline:  o.TransientErrorDeadline,
		Gates:                   gateDefaults,
		Alerts:                  alerts,
		Storage:                 o.Recommended.Etcd.StorageConfig.Transport,
		EmbeddedEtcd:            o.UsesEmbeddedEtcd(),
	}}, nil
}
