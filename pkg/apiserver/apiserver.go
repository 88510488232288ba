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
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
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

	"github.com/kubevirt/virt-advisor/pkg/alertsource"
	"github.com/kubevirt/virt-advisor/pkg/apis/advisor"
	"github.com/kubevirt/virt-advisor/pkg/apis/advisor/install"
	"github.com/kubevirt/virt-advisor/pkg/apis/advisor/v1alpha1"
	"github.com/kubevirt/virt-advisor/pkg/cluster"
	"github.com/kubevirt/virt-advisor/pkg/controller"
	"github.com/kubevirt/virt-advisor/pkg/fleet"
	"github.com/kubevirt/virt-advisor/pkg/fleethub"
	"github.com/kubevirt/virt-advisor/pkg/gates"
	"github.com/kubevirt/virt-advisor/pkg/generated/clientset/versioned"
	"github.com/kubevirt/virt-advisor/pkg/generated/informers/externalversions"
	"github.com/kubevirt/virt-advisor/pkg/kubevirt"
	"github.com/kubevirt/virt-advisor/pkg/maintenance"
	"github.com/kubevirt/virt-advisor/pkg/metrics"
	"github.com/kubevirt/virt-advisor/pkg/plan"
	"github.com/kubevirt/virt-advisor/pkg/profiles"
	"github.com/kubevirt/virt-advisor/pkg/profiles/catalog"
	"github.com/kubevirt/virt-advisor/pkg/registry/approvalpolicy"
	"github.com/kubevirt/virt-advisor/pkg/registry/fleetconfig"
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
	// ClusterName is this cluster's name on a fleet's hub: which plan
	// hash of a delegated approval is its own.
	ClusterName string
	// FleetHub serves FleetConfigs and runs their controller.
	FleetHub bool
	// RolloutCoalesceWindow is the controller's pool pause (0: none).
	RolloutCoalesceWindow time.Duration
	// TransientErrorDeadline bounds the retries of a transiently failing write.
	TransientErrorDeadline time.Duration
	// Gates are the defaults of the gates between the steps of a pool's
	// rollout; Alerts reads the alert gate's alerts (nil: none).
	Gates  plan.GateDefaults
	Alerts *alertsource.Reader
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
	d, err := newClients(x.ClientConfig)
	if err != nil {
		return nil, err
	}
	if d.leaderElectionKube, err = leaderElectionClient(x.ClientConfig, x.LeaderElection.RenewDeadline.Duration); err != nil {
		return nil, err
	}
	d.broadcaster = record.NewBroadcaster()
	d.recorder = d.broadcaster.NewRecorder(Scheme, corev1.EventSource{Component: "virt-advisor"})
	d.profiles = catalog.Default()
	d.metrics = &metrics.Recorder{}
	d.engine = &plan.Engine{
		Cluster:  d.cluster,
		Profiles: d.profiles,
		Metrics:  d.metrics,
		NodeVMs:  d.cluster.NodeVMs,
		Pods:     d.cluster.Pods,
		Gates:    x.Gates,
	}
	return d, nil
}

// userAgent is the server's on the main cluster.
func userAgent() string { return "virt-advisor-apiserver/" + version.Version }

// newClients builds the clients of the main cluster that plans, the
// controller and the checks use: the dependencies with them filled in.
func newClients(config *restclient.Config) (*dependencies, error) {
	clientConfig := restclient.CopyConfig(config)
	clientConfig.UserAgent = userAgent()
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
	// The VMIs are listed and watched raw, decoded field by field
	// (cluster.ListVMIs, the VMI cache).
	raw, err := cluster.NewRawClient(clientConfig)
	if err != nil {
		return nil, err
	}
	mainCluster, err := cluster.NewCluster(dyn, raw, mapper, meta)
	if err != nil {
		return nil, err
	}
	return &dependencies{cluster: mainCluster, kube: kube, dynamic: dyn, metadata: meta}, nil
}

// leaderElectionClient is the client the Lease is renewed on: its own,
// with its own rate limit and each request bounded by the renew
// deadline, so that plan requests can never hold a renewal back.
func leaderElectionClient(config *restclient.Config, renewDeadline time.Duration) (kubernetes.Interface, error) {
	leaderElectionConfig := restclient.CopyConfig(config)
	leaderElectionConfig.UserAgent = userAgent() + "/leader-election"
	leaderElectionConfig.QPS, leaderElectionConfig.Burst = 5, 10
	leaderElectionConfig.Timeout = renewDeadline
	return kubernetes.NewForConfig(leaderElectionConfig)
}

// New builds the server and installs the advisor.kubevirt.io group.
func (c CompletedConfig) New() (*Server, error) {
	generic, err := c.GenericConfig.New("virt-advisor-apiserver", genericapiserver.NewEmptyDelegate())
	if err != nil {
		return nil, err
	}
	s := &Server{GenericAPIServer: generic, deps: c.deps}
	storage, fleets, err := c.installAPIGroup(generic)
	if err != nil {
		return nil, err
	}

	// One post-start hook, in order: the storage's identity, the main
	// cluster's watches (synced), the advertised profiles, then the
	// controller. It returns at once and retries in the background; until
	// it is done, /readyz says why.
	st := &starter{c: c, storage: storage, fleets: fleets, startup: &startup{}}
	st.shared, st.leases = sharedStorageCheck(c.ExtraConfig, c.deps.kube)
	// Nothing the shipped admission policies confine is written until
	// they are in force; /readyz/virt-advisor-admission-policies says
	// which are not (the StatefulSet's probe leaves that check out: the
	// API stays up to say on each config why it waits).
	if st.confined, err = newGuard(c.deps.kube, c.deps.cluster.Mapper); err != nil {
		return nil, err
	}
	if err := generic.AddReadyzChecks(st.startup, st.shared, st.confined); err != nil {
		return nil, err
	}
	generic.AddPostStartHookOrDie("virt-advisor-start", st.start)
	return s, nil
}

// installAPIGroup installs the storage of the advisor.kubevirt.io group's
// resources; it returns the VirtPlatformConfigs' and, on a fleet's hub,
// the FleetConfigs'.
func (c CompletedConfig) installAPIGroup(generic *genericapiserver.GenericAPIServer) (*virtplatformconfig.Storage, *fleetconfig.Storage, error) {
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
		return nil, nil, err
	}
	windows, err := maintenancewindow.NewREST(Scheme, c.GenericConfig.RESTOptionsGetter, maintenancewindow.Options{})
	if err != nil {
		return nil, nil, err
	}
	policies, err := approvalpolicy.NewREST(Scheme, c.GenericConfig.RESTOptionsGetter, approvalpolicy.Options{
		Authorizer: c.GenericConfig.Authorization.Authorizer,
		Configs:    storage.Config,
	})
	if err != nil {
		return nil, nil, err
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
	var fleets *fleetconfig.Storage
	if c.ExtraConfig.FleetHub {
		fleets, err = fleetconfig.NewStorage(Scheme, c.GenericConfig.RESTOptionsGetter, fleetconfig.Options{
			Profiles:   d.profiles.Validation(),
			Planner:    c.fleetReader(),
			Authorizer: c.GenericConfig.Authorization.Authorizer,
		})
		if err != nil {
			return nil, nil, err
		}
		resources := apiGroupInfo.VersionedResourcesStorageMap["v1alpha1"]
		resources["fleetconfigs"] = fleets.Fleet
		resources["fleetconfigs/plan"] = fleets.Plan
		resources["fleetconfigs/approve"] = fleets.Approve
		resources["fleetconfigs/abort"] = fleets.Abort
	}
	if err := generic.InstallAPIGroup(&apiGroupInfo); err != nil {
		return nil, nil, err
	}
	return storage, fleets, nil
}

// fleetReader reads fleets from the main cluster, the fleet's hub.
func (c CompletedConfig) fleetReader() *fleet.Reader {
	return &fleet.Reader{Hub: c.deps.dynamic, Defaults: func(cfg *v1alpha1.VirtPlatformConfig) { Scheme.Default(cfg) }}
}

// starter is the post-start hook: what it starts, and the readyz checks
// that say how far it is.
type starter struct {
	c        CompletedConfig
	storage  *virtplatformconfig.Storage
	fleets   *fleetconfig.Storage // nil: not a fleet's hub
	startup  *startup
	shared   *sharedstorage.Check
	leases   informers.SharedInformerFactory // nil: no leader election
	confined *guard
}

// start builds the informers and the controller, then starts them in the
// background once the startup steps are done.
func (st *starter) start(ctx genericapiserver.PostStartHookContext) error {
	d := st.c.deps
	client, err := versioned.NewForConfig(ctx.LoopbackClientConfig)
	if err != nil {
		return err
	}
	// The informers run on every replica, leader or not: a standby's
	// cache is warm when it takes over.
	configs := externalversions.NewSharedInformerFactory(client, 10*time.Minute)
	crds := metadatainformer.NewSharedInformerFactory(d.metadata, 0)
	ctrl := st.newController(configs, crds)
	var fleetHub *fleethub.Controller
	if st.fleets != nil {
		fleetHub = fleethub.New(configs.Advisor().V1alpha1().FleetConfigs().Informer(), st.c.fleetReader(), st.fleets.Stored)
	}
	st.confined.Start(ctx)
	st.storage.Abort.SetPauser(ctrl)
	metrics.RegisterConfigs(configs.Advisor().V1alpha1().VirtPlatformConfigs().Lister(), ctrl.Leading)
	if st.leases != nil {
		st.leases.Start(ctx.Done())
	}
	go st.startup.run(ctx, st.steps(client, ctrl), func(ctx context.Context) {
		configs.Start(ctx.Done())
		crds.Start(ctx.Done())
		if !cache.WaitForCacheSync(ctx.Done(), ctrl.Informer.HasSynced, ctrl.WindowInformer.HasSynced, ctrl.PolicyInformer.HasSynced) {
			return
		}
		if fleetHub != nil {
			// Every replica runs it: its writes are server-side applies
			// of the same object and status writes that retry.
			go fleetHub.Run(ctx)
		}
		ctrl.Run(ctx, controllerWorkers)
	})
	return nil
}

// newController builds the controller on the informers of configs and
// crds; the plan engine reads the maintenance windows from the same cache.
func (st *starter) newController(configs externalversions.SharedInformerFactory, crds metadatainformer.SharedInformerFactory) *controller.Controller {
	c, d := st.c, st.c.deps
	windows := configs.Advisor().V1alpha1().MaintenanceWindows()
	windowLister := &maintenance.CacheLister{Lister: windows.Lister()}
	d.engine.SetMaintenanceWindows(windowLister)
	approvalPolicies := configs.Advisor().V1alpha1().ApprovalPolicies()
	return controller.New(controller.Config{
		Informer:           configs.Advisor().V1alpha1().VirtPlatformConfigs().Informer(),
		MaintenanceWindows: windowLister, WindowInformer: windows.Informer(),
		CRDs:   crds.ForResource(crdGVR).Informer(),
		Status: st.storage.StatusWriter, Planner: d.engine, Cluster: d.cluster, Pools: d.cluster, Watches: d.cluster.Watches, Kinds: d.cluster.Kinds,
		Profiles: d.profiles, Recorder: d.recorder, Metrics: d.metrics,
		LeaderElection: c.ExtraConfig.LeaderElection, LeaseClient: d.leaderElectionKube, Version: version.Version,
		RequireDistinctApprover: c.ExtraConfig.RequireDistinctApprover,
		ClusterName:             c.ExtraConfig.ClusterName,
		CoalesceWindow:          c.ExtraConfig.RolloutCoalesceWindow,
		TransientErrorDeadline:  c.ExtraConfig.TransientErrorDeadline,
		ApprovalPolicies: controller.ApprovalPolicies{PolicyLister: approvalPolicies.Lister(), PolicyInformer: approvalPolicies.Informer(),
			PolicyAuthorizer: c.GenericConfig.Authorization.Authorizer},
		Confinement: st.confined, AdmissionInformers: st.confined.informers,
		Alerts: firingAlerts(c.ExtraConfig.Alerts), Nodes: cachedNodes(d.cluster), OnNodeChange: nodeChanges(d.cluster), Migrations: cachedMigrations(d.cluster), VMIs: cachedVMIs(d.cluster),
	})
}

// steps are the startup's steps before the controller starts: identify
// the storage, watch the main cluster, advertise the profiles.
func (st *starter) steps(client versioned.Interface, ctrl *controller.Controller) []startStep {
	x, d := st.c.ExtraConfig, st.c.deps
	return []startStep{
		{"identify the storage", func(ctx context.Context) error {
			id, err := sharedstorage.ClusterID(ctx, x.Storage)
			if err != nil {
				return err
			}
			klog.FromContext(ctx).Info("Storage identified", "etcdClusterID", id, "embedded", x.EmbeddedEtcd)
			st.shared.SetClusterID(id)
			ctrl.LeaseLabels = map[string]string{sharedstorage.LeaseLabel: id}
			return nil
		}},
		{"watch the main cluster", d.cluster.Start},
		{"advertise the profiles", func(ctx context.Context) error { return advertiseProfiles(ctx, client, d.profiles) }},
	}
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

// firingAlerts reads the alert gate's alerts from r; nil without a source.
func firingAlerts(r *alertsource.Reader) func(context.Context) ([]gates.Alert, error) {
	if r == nil {
		return nil
	}
	return func(ctx context.Context) ([]gates.Alert, error) {
		firing, err := r.Firing(ctx)
		if err != nil {
			return nil, err
		}
		out := make([]gates.Alert, len(firing))
		for i, labels := range firing {
			out[i] = gates.Alert{Labels: labels}
		}
		return out, nil
	}
}

// cachedNodes reads the Nodes from the cluster's cache once it synced,
// else live.
func cachedNodes(c *cluster.Cluster) func(context.Context) ([]unstructured.Unstructured, error) {
	return func(ctx context.Context) ([]unstructured.Unstructured, error) {
		if c.NodeVMs != nil {
			if nodes, _, ok := c.NodeVMs.Nodes(); ok {
				return nodes, nil
			}
		}
		return c.List(ctx, profiles.NodeGVK)
	}
}

// nodeChanges tells of the Node cache's changes; nil without a cache.
func nodeChanges(c *cluster.Cluster) func(func()) (func(), error) {
	if c.NodeVMs == nil {
		return nil
	}
	return c.NodeVMs.OnNodeChange
}

// cachedMigrations are the Node cache's live migrations; nil without one.
func cachedMigrations(c *cluster.Cluster) func() ([]cluster.Migration, bool) {
	if c.NodeVMs == nil {
		return nil
	}
	return c.NodeVMs.Migrations
}

// cachedVMIs are the Node cache's VMIs; nil without one.
func cachedVMIs(c *cluster.Cluster) func() ([]kubevirt.VMI, bool) {
	if c.NodeVMs == nil {
		return nil
	}
	return func() ([]kubevirt.VMI, bool) {
		vmis, _, ok := c.NodeVMs.VMIs()
		return vmis, ok
	}
}
