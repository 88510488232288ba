// Package app holds the flags and options of virt-advisor-apiserver.
package app

import (
	"fmt"
	"net"
	"time"

	"github.com/spf13/pflag"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	"k8s.io/apiserver/pkg/endpoints/openapi"
	genericapiserver "k8s.io/apiserver/pkg/server"
	genericoptions "k8s.io/apiserver/pkg/server/options"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
	"k8s.io/client-go/tools/record"
	componentbaseconfig "k8s.io/component-base/config"
	componentbaseoptions "k8s.io/component-base/config/options"
	netutils "k8s.io/utils/net"

	"github.com/kubevirt/virt-advisor/pkg/apis/advisor/v1alpha1"
	"github.com/kubevirt/virt-advisor/pkg/apiserver"
	generatedopenapi "github.com/kubevirt/virt-advisor/pkg/generated/openapi"
	"github.com/kubevirt/virt-advisor/pkg/metrics"
	"github.com/kubevirt/virt-advisor/pkg/plan"
	"github.com/kubevirt/virt-advisor/pkg/profiles/registry"
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
	// LeaderElection elects the replica that runs the controller; every
	// replica serves the API.
	LeaderElection componentbaseconfig.LeaderElectionConfiguration
	// RequireDistinctApprover refuses approvals by the author of the spec.
	RequireDistinctApprover bool
	// RolloutCoalesceWindow is how long MachineConfigPools stay paused
	// after a MachineConfig write so that changes approved meanwhile roll
	// out with it (one reboot per node); 0 disables the pause.
	RolloutCoalesceWindow time.Duration
}

// NewOptions returns the default options.
func NewOptions() *Options {
	o := &Options{
		ServerRun: genericoptions.NewServerRunOptions(),
		Recommended: genericoptions.NewRecommendedOptions(etcdPathPrefix,
			apiserver.Codecs.LegacyCodec(v1alpha1.SchemeGroupVersion)),
		EmbeddedEtcdDir:       "/var/lib/virt-advisor/etcd",
		RolloutCoalesceWindow: 30 * time.Second,
		LeaderElection: componentbaseconfig.LeaderElectionConfiguration{
			LeaderElect:       true,
			LeaseDuration:     metav1.Duration{Duration: 15 * time.Second},
			RenewDeadline:     metav1.Duration{Duration: 10 * time.Second},
			RetryPeriod:       metav1.Duration{Duration: 2 * time.Second},
			ResourceLock:      "leases",
			ResourceName:      "virt-advisor-controller",
			ResourceNamespace: "virt-advisor",
		},
	}
	o.Recommended.Etcd.StorageConfig.EncodeVersioner = runtime.NewMultiGroupVersioner(
		v1alpha1.SchemeGroupVersion, schema.GroupKind{Group: v1alpha1.GroupName})
	o.Recommended.SecureServing.BindPort = 8443
	return o
}

// AddFlags adds the flags of every option group.
func (o *Options) AddFlags(fs *pflag.FlagSet) {
	o.ServerRun.AddUniversalFlags(fs)
	o.Recommended.AddFlags(fs)
	fs.StringVar(&o.EmbeddedEtcdDir, "embedded-etcd-dir", o.EmbeddedEtcdDir,
		"Data directory of the embedded etcd, used when --etcd-servers is not set. Mount a volume here.")
	componentbaseoptions.BindLeaderElectionFlags(&o.LeaderElection, fs)
	fs.BoolVar(&o.RequireDistinctApprover, "require-distinct-approver", o.RequireDistinctApprover,
		"Four eyes: refuse an approval by the user who made the last spec change, and never let action Apply approve by itself (it stops at ReviewRequired).")
	fs.DurationVar(&o.RolloutCoalesceWindow, "rollout-coalesce-window", o.RolloutCoalesceWindow,
		"How long a MachineConfigPool stays paused after virt-advisor writes a MachineConfig it renders, so that MachineConfig changes approved meanwhile roll out together and every node reboots once. 0 disables the pause: each change rolls out on its own.")
}

// UsesEmbeddedEtcd is true when no external etcd was given.
func (o *Options) UsesEmbeddedEtcd() bool {
	return len(o.Recommended.Etcd.StorageConfig.Transport.ServerList) == 0
}

// Validate checks the options; call it after the embedded etcd, if any,
// filled in --etcd-servers.
func (o *Options) Validate() error {
	var errs []error
	if o.LeaderElection.LeaderElect && o.LeaderElection.ResourceLock != "leases" {
		errs = append(errs, fmt.Errorf("--leader-elect-resource-lock must be leases"))
	}
	if o.RolloutCoalesceWindow < 0 {
		errs = append(errs, fmt.Errorf("--rollout-coalesce-window must be 0 (no pause) or more, got %s", o.RolloutCoalesceWindow))
	}
	errs = append(errs, o.ServerRun.Validate()...)
	errs = append(errs, o.Recommended.Validate()...)
	return utilerrors.NewAggregate(errs)
}

// Config builds the server configuration.
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
	if err := o.Recommended.ApplyTo(cfg); err != nil {
		return nil, err
	}
	// The delegated authenticator admits anonymous requests everywhere and
	// leaves them to authorization (a SubjectAccessReview each); anonymous
	// requests reach only the probes here, and nothing else is even asked.
	cfg.Authentication.Authenticator = probesOnlyForAnonymous(cfg.Authentication.Authenticator)
	extra, err := o.extraConfig(cfg)
	if err != nil {
		return nil, err
	}
	return &apiserver.Config{GenericConfig: cfg, ExtraConfig: extra}, nil
}

// extraConfig builds the plan engine on the main cluster's client (the
// --kubeconfig of the core API, in-cluster config when unset).
func (o *Options) extraConfig(cfg *genericapiserver.RecommendedConfig) (apiserver.ExtraConfig, error) {
	if cfg.ClientConfig == nil {
		return apiserver.ExtraConfig{}, fmt.Errorf("no client configuration for the main cluster: set --kubeconfig or run in a cluster")
	}
	clientConfig := rest.CopyConfig(cfg.ClientConfig)
	clientConfig.UserAgent = "virt-advisor-apiserver/" + version.Version
	// Plans are computed on user requests: a client-side token bucket
	// (client-go's default is 5 requests/s) would queue every plan behind
	// the others. The main cluster's API Priority and Fairness protects it
	// instead, as it does from any other client.
	clientConfig.QPS = -1
	dyn, err := dynamic.NewForConfig(clientConfig)
	if err != nil {
		return apiserver.ExtraConfig{}, err
	}
	// Discovery has no context: bound it so a slow cluster cannot hang a plan.
	discoveryConfig := rest.CopyConfig(clientConfig)
	discoveryConfig.Timeout = 10 * time.Second
	disc, err := discovery.NewDiscoveryClientForConfig(discoveryConfig)
	if err != nil {
		return apiserver.ExtraConfig{}, err
	}
	mapper := restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(disc))
	meta, err := metadata.NewForConfig(clientConfig)
	if err != nil {
		return apiserver.ExtraConfig{}, err
	}
	kube, err := kubernetes.NewForConfig(clientConfig)
	if err != nil {
		return apiserver.ExtraConfig{}, err
	}
	// Events of cluster-scoped VirtPlatformConfigs land in "default".
	broadcaster := record.NewBroadcaster()
	broadcaster.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: kube.CoreV1().Events("")})
	recorder := broadcaster.NewRecorder(apiserver.Scheme, corev1.EventSource{Component: "virt-advisor"})
	profiles := registry.Default()
	metrics.Register(profiles.Names()...)
	return apiserver.ExtraConfig{
		Engine: &plan.Engine{
			Cluster:  &plan.Cluster{Dynamic: dyn, Mapper: mapper, Watches: plan.NewWatches(dyn, mapper)},
			Profiles: profiles,
		},
		Profiles:       profiles,
		Kube:           kube,
		Dynamic:        dyn,
		Metadata:       meta,
		Recorder:       recorder,
		LeaderElection: o.LeaderElection,

		RequireDistinctApprover: o.RequireDistinctApprover,
		RolloutCoalesceWindow:   o.RolloutCoalesceWindow,
	}, nil
}
