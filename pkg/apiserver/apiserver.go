// Package apiserver assembles the virt-advisor API server: scheme, storage
// of the advisor.kubevirt.io group and post-start hooks.
package apiserver

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apiserver/pkg/registry/rest"
	genericapiserver "k8s.io/apiserver/pkg/server"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/tools/record"
	componentbaseconfig "k8s.io/component-base/config"

	"github.com/kubevirt/virt-advisor/pkg/apis/advisor"
	"github.com/kubevirt/virt-advisor/pkg/apis/advisor/install"
	"github.com/kubevirt/virt-advisor/pkg/controller"
	"github.com/kubevirt/virt-advisor/pkg/generated/clientset/versioned"
	"github.com/kubevirt/virt-advisor/pkg/plan"
	"github.com/kubevirt/virt-advisor/pkg/profiles/registry"
	"github.com/kubevirt/virt-advisor/pkg/registry/virtplatformconfig"
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

// ExtraConfig is what the server needs beyond the generic configuration.
type ExtraConfig struct {
	// Engine computes plans against the main cluster.
	Engine *plan.Engine
	// Profiles are the profiles of this build.
	Profiles *registry.Registry
	// Kube, Dynamic and Metadata reach the main cluster.
	Kube     kubernetes.Interface
	Dynamic  dynamic.Interface
	Metadata metadata.Interface
	// Recorder emits Events about VirtPlatformConfigs.
	Recorder record.EventRecorder
	// LeaderElection configures the controller's Lease.
	LeaderElection componentbaseconfig.LeaderElectionConfiguration
	// RequireDistinctApprover refuses approvals by the author of the spec
	// and keeps action Apply from approving by itself (four eyes).
	RequireDistinctApprover bool
	// RolloutCoalesceWindow is the controller's pool pause (0: none).
	RolloutCoalesceWindow time.Duration
}

// Config is the configuration of the server.
type Config struct {
	GenericConfig *genericapiserver.RecommendedConfig
	ExtraConfig   ExtraConfig
}

// CompletedConfig is a Config with defaults filled in.
type CompletedConfig struct {
	GenericConfig genericapiserver.CompletedConfig
	ExtraConfig   ExtraConfig
}

// Server is the running virt-advisor API server.
type Server struct {
	GenericAPIServer *genericapiserver.GenericAPIServer
}

// Complete fills in the defaults of the generic configuration.
func (c *Config) Complete() CompletedConfig {
	return CompletedConfig{GenericConfig: c.GenericConfig.Complete(), ExtraConfig: c.ExtraConfig}
}

// New builds the server and installs the advisor.kubevirt.io group.
func (c CompletedConfig) New() (*Server, error) {
	generic, err := c.GenericConfig.New("virt-advisor-apiserver", genericapiserver.NewEmptyDelegate())
	if err != nil {
		return nil, err
	}
	s := &Server{GenericAPIServer: generic}

	storage, err := virtplatformconfig.NewStorage(Scheme, c.GenericConfig.RESTOptionsGetter, virtplatformconfig.Options{
		Engine:                  c.ExtraConfig.Engine,
		Recorder:                c.ExtraConfig.Recorder,
		Authorizer:              c.GenericConfig.Authorization.Authorizer,
		RequireDistinctApprover: c.ExtraConfig.RequireDistinctApprover,
	})
	if err != nil {
		return nil, err
	}
	apiGroupInfo := genericapiserver.NewDefaultAPIGroupInfo(advisor.GroupName, Scheme, metav1.ParameterCodec, Codecs)
	apiGroupInfo.VersionedResourcesStorageMap["v1alpha1"] = map[string]rest.Storage{
		"virtplatformconfigs":         storage.Config,
		"virtplatformconfigs/status":  storage.Status,
		"virtplatformconfigs/plan":    storage.Plan,
		"virtplatformconfigs/approve": storage.Approve,
	}
	if err := s.GenericAPIServer.InstallAPIGroup(&apiGroupInfo); err != nil {
		return nil, err
	}
	s.GenericAPIServer.AddPostStartHookOrDie("virt-advisor-watch-crds", func(ctx genericapiserver.PostStartHookContext) error {
		c.ExtraConfig.Engine.Cluster.Watches.Start(ctx)
		return c.ExtraConfig.Engine.Cluster.WatchCRDs(ctx, c.ExtraConfig.Metadata)
	})
	// The controller runs beside the API; the hook returns at once.
	s.GenericAPIServer.AddPostStartHookOrDie("virt-advisor-controller", func(ctx genericapiserver.PostStartHookContext) error {
		client, err := versioned.NewForConfig(ctx.LoopbackClientConfig)
		if err != nil {
			return err
		}
		x := c.ExtraConfig
		go controller.New(controller.Config{
			Client: client, Status: storage.StatusWriter, Kube: x.Kube, Dynamic: x.Dynamic, Metadata: x.Metadata,
			Engine: x.Engine, Profiles: x.Profiles, Recorder: x.Recorder,
			LeaderElection: x.LeaderElection, Version: version.Version,
			RequireDistinctApprover: x.RequireDistinctApprover,
			CoalesceWindow:          x.RolloutCoalesceWindow,
		}).Run(ctx)
		return nil
	})
	s.GenericAPIServer.AddPostStartHookOrDie("virt-advisor-advertise-profiles", func(ctx genericapiserver.PostStartHookContext) error {
		client, err := versioned.NewForConfig(ctx.LoopbackClientConfig)
		if err != nil {
			return err
		}
		return advertiseProfiles(ctx, client, c.ExtraConfig.Profiles)
	})
	return s, nil
}
