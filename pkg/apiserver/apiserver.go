// Package apiserver assembles the virt-advisor API server: scheme, storage
// of the advisor.kubevirt.io group and post-start hooks.
package apiserver

import (
	"context"
	"fmt"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apiserver/pkg/registry/rest"
	genericapiserver "k8s.io/apiserver/pkg/server"
	"k8s.io/apiserver/pkg/storage/storagebackend"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/metadata/metadatainformer"
	restclient "k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	componentbaseconfig "k8s.io/component-base/config"
	"k8s.io/klog/v2"

	"github.com/kubevirt/virt-advisor/pkg/apis/advisor"
	"github.com/kubevirt/virt-advisor/pkg/apis/advisor/install"
	"github.com/kubevirt/virt-advisor/pkg/cluster"
	"github.com/kubevirt/virt-advisor/pkg/controller"
	"github.com/kubevirt/virt-advisor/pkg/generated/clientset/versioned"
	"github.com/kubevirt/virt-advisor/pkg/generated/informers/externalversions"
	"github.com/kubevirt/virt-advisor/pkg/maintenance"
	"github.com/kubevirt/virt-advisor/pkg/metrics"
	"github.com/kubevirt/virt-advisor/pkg/plan"
	"github.com/kubevirt/virt-advisor/pkg/profiles/catalog"
	"github.com/kubevirt/virt-advisor/pkg/registry/approvalpolicy"
	"github.com/kubevirt/virt-advisor/pkg/registry/maintenancewindow"
	"github.com/kubevirt/virt-advisor/pkg/registry/virtplatformconfig"
	"github.com/kubevirt/virt-advisor/pkg/sharedstorage"
	"github.com/kubevirt/virt-advisor/pkg/version"
)

var (
	// Scheme holds every kind the server serves; the OpenAPI definition
	// namer is built from it too.
	Scheme = runtime.NewScheme()
	// Codecs serializes the kinds of Scheme.
	Codecs = serializer.NewCodecFactory(Scheme)
)

func init() {
	install.Install(Scheme)
	// The generic server decodes options (GetOptions, ListOptions, …) as v1.
	metav1.AddToGroupVersion(Scheme, schema.GroupVersion{Version: "v1"})
	unversioned := schema.GroupVersion{Group: "", Version: "v1"}
	Scheme.AddUnversionedTypes(unversioned,
		&metav1.Status{},
		&metav1.APIVersions{},
		&metav1.APIGroupList{},
		&metav1.APIGroup{},
		&metav1.APIResourceList{},
	)
}

// ExtraConfig is what the server needs beyond the generic configuration:
// options only; Complete builds the clients and the plan engine from them,
// and Server.Run starts what needs starting.
type ExtraConfig struct {
	// ClientConfig reaches the main cluster (--kubeconfig, or in-cluster).
	ClientConfig *restclient.Config
	// LeaderElection configures the controller's Lease.
	LeaderElection componentbaseconfig.LeaderElectionConfiguration
	// MaxConcurrentPlans and PlanWaitTimeout bound the plan computations
	// of API requests (see virtplatformconfig.Gate).
	MaxConcurrentPlans int
	PlanWaitTimeout    time.Duration
	// RequireDistinctApprover refuses approvals by the author of the spec
	// and keeps action Apply from approving by itself (four eyes).
	RequireDistinctApprover bool
	// RolloutCoalesceWindow is the controller's pool pause (0: none).
	RolloutCoalesceWindow time.Duration
	// TransientErrorDeadline bounds the retries of a transiently failing write.
	TransientErrorDeadline time.Duration
	// Storage is how the server reaches its etcd; EmbeddedEtcd: that etcd
	// is the embedded one. Replicas compare their stores' etcd cluster
	// IDs (see package sharedstorage).
	Storage      storagebackend.TransportConfig
	EmbeddedEtcd bool
}

// Config is the configuration of the server.
type Config struct {
	GenericConfig *genericapiserver.RecommendedConfig
	ExtraConfig   ExtraConfig
}

// CompletedConfig is a Config with defaults filled in and the clients and
// plan engine built.
type CompletedConfig struct {
	GenericConfig genericapiserver.CompletedConfig
	ExtraConfig   ExtraConfig
	deps          *dependencies
}

// dependencies are what Complete builds from ExtraConfig.
type dependencies struct {
	profiles *catalog.Catalog
	engine   *plan.Engine
	// metrics records what the engine and the controller measure.
	metrics *metrics.Recorder
	// cluster is the main cluster, as the engine and the controller use it.
	cluster *cluster.Cluster
	kube    kubernetes.Interface
	// leaderElectionKube renews the Lease on a client of its own.
	leaderElectionKube kubernetes.Interface
	dynamic            dynamic.Interface
	metadata           metadata.Interface
	// broadcaster delivers the recorder's events once Run starts it.
	broadcaster record.EventBroadcaster
	recorder    record.EventRecorder
}

// controllerWorkers reconcile configs in parallel.
const controllerWorkers = 2

// crdGVR: the controller looks at every config again when a CRD changes.
var crdGVR = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}

// Server is the virt-advisor API server, built by New and started by Run.
type Server struct {
	GenericAPIServer *genericapiserver.GenericAPIServer
	deps             *dependencies
}

// Complete fills in the defaults of the generic configuration and builds
// the clients of the main cluster, the event recorder and the plan engine.
// It starts nothing: Server.Run does.
func (c *Config) Complete() (CompletedConfig, error) {
	deps, err := c.ExtraConfig.build()
	if err != nil {
		return CompletedConfig{}, err
	}
	return CompletedConfig{GenericConfig: c.GenericConfig.Complete(), ExtraConfig: c.ExtraConfig, deps: deps}, nil
}

func (x ExtraConfig) build() (*dependencies, error) {
	if x.ClientConfig == nil {
		return nil, fmt.Errorf("no client configuration for the main cluster")
	}
	clientConfig := restclient.CopyConfig(x.ClientConfig)
	clientConfig.UserAgent = "virt-advisor-apiserver/" + version.Version
	// Plans are computed on user requests: a client-side token bucket
	// (client-go's default is 5 requests/s) would queue every plan behind
	// the others. The plan gate bounds them, and the main cluster's API
	// Priority and Fairness protects it, as it does from any other client.
	clientConfig.QPS = -1
	dyn, err := dynamic.NewForConfig(clientConfig)
	if err != nil {
		return nil, err
	}
	// Discovery has no context: bound it so a slow cluster cannot hang a plan.
	discoveryConfig := restclient.CopyConfig(clientConfig)
	discoveryConfig.Timeout = 10 * time.Second
	disc, err := discovery.NewDiscoveryClientForConfig(discoveryConfig)
	if err != nil {
		return nil, err
	}
	mapper := restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(disc))
	meta, err := metadata.NewForConfig(clientConfig)
	if err != nil {
		return nil, err
	}
	kube, err := kubernetes.NewForConfig(clientConfig)
	if err != nil {
		return nil, err
	}
	// The Lease is renewed on a client of its own, with its own rate limit
	// and each request bounded by the renew deadline, so that plan requests
	// can never hold a renewal back.
	leaderElectionConfig := restclient.CopyConfig(x.ClientConfig)
	leaderElectionConfig.UserAgent = clientConfig.UserAgent + "/leader-election"
	leaderElectionConfig.QPS, leaderElectionConfig.Burst = 5, 10
	leaderElectionConfig.Timeout = x.LeaderElection.RenewDeadline.Duration
	leaderElectionKube, err := kubernetes.NewForConfig(leaderElectionConfig)
	if err != nil {
		return nil, err
	}
	mainCluster, err := cluster.NewCluster(dyn, mapper, meta)
	if err != nil {
		return nil, err
	}
	// The VMI list is read raw and decoded field by field (cluster.ListVMIs).
	mainCluster.Raw = kube.Discovery().RESTClient()
	broadcaster := record.NewBroadcaster()
	profiles := catalog.Default()
	recorder := &metrics.Recorder{}
	return &dependencies{
		profiles: profiles,
		cluster:  mainCluster,
		engine: &plan.Engine{
			Cluster:  mainCluster,
			Profiles: profiles,
			Metrics:  recorder,
			NodeVMs:  mainCluster.NodeVMs,
			Pods:     mainCluster.Pods,
		},
		metrics:            recorder,
		kube:               kube,
		leaderElectionKube: leaderElectionKube,
		dynamic:            dyn,
		metadata:           meta,
		broadcaster:        broadcaster,
		recorder:           broadcaster.NewRecorder(Scheme, corev1.EventSource{Component: "virt-advisor"}),
	}, nil
}

// New builds the server and installs the advisor.kubevirt.io group.
func (c CompletedConfig) New() (*Server, error) {
	generic, err := c.GenericConfig.New("virt-advisor-apiserver", genericapiserver.NewEmptyDelegate())
	if err != nil {
		return nil, err
	}
	s := &Server{GenericAPIServer: generic, deps: c.deps}
	d := c.deps

	storage, err := virtplatformconfig.NewStorage(Scheme, c.GenericConfig.RESTOptionsGetter, virtplatformconfig.Options{
		Planner:                 d.engine,
		Gate:                    virtplatformconfig.NewGate(c.ExtraConfig.MaxConcurrentPlans, c.ExtraConfig.PlanWaitTimeout),
		Recorder:                d.recorder,
		Authorizer:              c.GenericConfig.Authorization.Authorizer,
		RequireDistinctApprover: c.ExtraConfig.RequireDistinctApprover,
		Profiles:                d.profiles.Validation(),
	})
	if err != nil {
		return nil, err
	}
	windows, err := maintenancewindow.NewREST(Scheme, c.GenericConfig.RESTOptionsGetter, maintenancewindow.Options{})
	if err != nil {
		return nil, err
	}
	policies, err := approvalpolicy.NewREST(Scheme, c.GenericConfig.RESTOptionsGetter, approvalpolicy.Options{
		Authorizer: c.GenericConfig.Authorization.Authorizer,
		Configs:    storage.Config,
	})
	if err != nil {
		return nil, err
	}
	apiGroupInfo := genericapiserver.NewDefaultAPIGroupInfo(advisor.GroupName, Scheme, metav1.ParameterCodec, Codecs)
	apiGroupInfo.VersionedResourcesStorageMap["v1alpha1"] = map[string]rest.Storage{
		"virtplatformconfigs":         storage.Config,
		"virtplatformconfigs/status":  storage.Status,
		"virtplatformconfigs/plan":    storage.Plan,
		"virtplatformconfigs/revert":  storage.Revert,
		"virtplatformconfigs/approve": storage.Approve,
		"virtplatformconfigs/abort":   storage.Abort,
		"maintenancewindows":          windows,
		"approvalpolicies":            policies,
	}
	if err := s.GenericAPIServer.InstallAPIGroup(&apiGroupInfo); err != nil {
		return nil, err
	}

	// One post-start hook, in order: the storage's identity, the main
	// cluster's watches (synced), the advertised profiles, then the
	// controller. It returns at once and retries in the background; until
	// it is done, /readyz says why.
	startup := &startup{}
	shared, leases := sharedStorageCheck(c.ExtraConfig, d.kube)
	// Nothing the shipped admission policies confine is written until
	// they are in force; /readyz/virt-advisor-admission-policies says
	// which are not (the StatefulSet's probe leaves that check out: the
	// API stays up to say on each config why it waits).
	confined, err := newGuard(d.kube, d.cluster.Mapper)
	if err != nil {
		return nil, err
	}
	if err := s.GenericAPIServer.AddReadyzChecks(startup, shared, confined); err != nil {
		return nil, err
	}
	s.GenericAPIServer.AddPostStartHookOrDie("virt-advisor-start", func(ctx genericapiserver.PostStartHookContext) error {
		client, err := versioned.NewForConfig(ctx.LoopbackClientConfig)
		if err != nil {
			return err
		}
		// The informers run on every replica, leader or not: a standby's
		// cache is warm when it takes over.
		configs := externalversions.NewSharedInformerFactory(client, 10*time.Minute)
		crds := metadatainformer.NewSharedInformerFactory(d.metadata, 0)
		windows := configs.Advisor().V1alpha1().MaintenanceWindows()
		windowLister := &maintenance.CacheLister{Lister: windows.Lister()}
		d.engine.SetMaintenanceWindows(windowLister)
		approvalPolicies := configs.Advisor().V1alpha1().ApprovalPolicies()
		ctrl := controller.New(controller.Config{
			Informer:           configs.Advisor().V1alpha1().VirtPlatformConfigs().Informer(),
			MaintenanceWindows: windowLister, WindowInformer: windows.Informer(),
			CRDs:   crds.ForResource(crdGVR).Informer(),
			Status: storage.StatusWriter, Planner: d.engine, Cluster: d.cluster, Pools: d.cluster, Watches: d.cluster.Watches, Kinds: d.cluster.Kinds,
			Profiles: d.profiles, Recorder: d.recorder, Metrics: d.metrics,
			LeaderElection: c.ExtraConfig.LeaderElection, LeaseClient: d.leaderElectionKube, Version: version.Version,
			RequireDistinctApprover: c.ExtraConfig.RequireDistinctApprover,
			CoalesceWindow:          c.ExtraConfig.RolloutCoalesceWindow,
			TransientErrorDeadline:  c.ExtraConfig.TransientErrorDeadline,
			ApprovalPolicies: controller.ApprovalPolicies{PolicyLister: approvalPolicies.Lister(), PolicyInformer: approvalPolicies.Informer(),
				PolicyAuthorizer: c.GenericConfig.Authorization.Authorizer},
			Confinement: confined, AdmissionInformers: confined.informers,
		})
		confined.Start(ctx.Done())
		storage.Abort.SetPauser(ctrl)
		metrics.RegisterConfigs(configs.Advisor().V1alpha1().VirtPlatformConfigs().Lister(), ctrl.Leading)
		if leases != nil {
			leases.Start(ctx.Done())
		}
		go startup.run(ctx, []startStep{
			{"identify the storage", func(ctx context.Context) error {
				id, err := sharedstorage.ClusterID(ctx, c.ExtraConfig.Storage)
				if err != nil {
					return err
				}
				klog.InfoS("Storage identified", "etcdClusterID", id, "embedded", c.ExtraConfig.EmbeddedEtcd)
				shared.SetClusterID(id)
				ctrl.LeaseLabels = map[string]string{sharedstorage.LeaseLabel: id}
				return nil
			}},
			{"watch the main cluster", d.cluster.Start},
			{"advertise the profiles", func(ctx context.Context) error { return advertiseProfiles(ctx, client, d.profiles) }},
		}, func(ctx context.Context) {
			configs.Start(ctx.Done())
			crds.Start(ctx.Done())
			if !cache.WaitForCacheSync(ctx.Done(), ctrl.Informer.HasSynced, ctrl.WindowInformer.HasSynced, ctrl.PolicyInformer.HasSynced) {
				return
			}
			ctrl.Run(ctx, controllerWorkers)
		})
		return nil
	})
	return s, nil
}

// Run registers the metrics, starts recording events to the main cluster
// and serves until ctx is done; the post-start hook then starts the
// watches and the controller.
func (s *Server) Run(ctx context.Context) error {
	metrics.Register(s.deps.profiles.Names()...)
	// Events of cluster-scoped VirtPlatformConfigs land in "default".
	s.deps.broadcaster.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: s.deps.kube.CoreV1().Events("")})
	defer s.deps.broadcaster.Shutdown()
	return s.GenericAPIServer.PrepareRun().RunWithContext(ctx)
}

// sharedStorageCheck is the readyz check that fails while the replica
// leading the controller runs on another store, and the informer on the
// controller's Lease it reads (nil without leader election: a replica
// that does not take part in the election runs alone).
func sharedStorageCheck(x ExtraConfig, kube kubernetes.Interface) (*sharedstorage.Check, informers.SharedInformerFactory) {
	check := &sharedstorage.Check{Embedded: x.EmbeddedEtcd}
	le := x.LeaderElection
	if !le.LeaderElect {
		return check, nil
	}
	factory := informers.NewSharedInformerFactoryWithOptions(kube, 0, informers.WithNamespace(le.ResourceNamespace),
		informers.WithTweakListOptions(func(o *metav1.ListOptions) {
			o.FieldSelector = fields.OneTermEqualSelector("metadata.name", le.ResourceName).String()
		}))
	leases := factory.Coordination().V1().Leases()
	informer := leases.Informer()
	check.Lease = func() (*coordinationv1.Lease, error) {
		if !informer.HasSynced() {
			return nil, fmt.Errorf("the Lease %s/%s is not read yet", le.ResourceNamespace, le.ResourceName)
		}
		lease, err := leases.Lister().Leases(le.ResourceNamespace).Get(le.ResourceName)
		if apierrors.IsNotFound(err) {
			return nil, nil
		}
		return lease, err
	}
	return check, factory
}
