// Package names holds the resources and objects of the main cluster that
// the test environment, the fake MachineConfig operator, the e2e suite and
// the bench all refer to, so each is spelled out once.
package names

import "k8s.io/apimachinery/pkg/runtime/schema"

// Resources of the main cluster.
var (
	MachineConfigs          = schema.GroupVersionResource{Group: "machineconfiguration.openshift.io", Version: "v1", Resource: "machineconfigs"}
	MachineConfigPools      = schema.GroupVersionResource{Group: "machineconfiguration.openshift.io", Version: "v1", Resource: "machineconfigpools"}
	KubeletConfigs          = schema.GroupVersionResource{Group: "machineconfiguration.openshift.io", Version: "v1", Resource: "kubeletconfigs"}
	KubeDeschedulers        = schema.GroupVersionResource{Group: "operator.openshift.io", Version: "v1", Resource: "kubedeschedulers"}
	HyperConvergedsV1beta1  = schema.GroupVersionResource{Group: "hco.kubevirt.io", Version: "v1beta1", Resource: "hyperconvergeds"}
	Schedulers              = schema.GroupVersionResource{Group: "config.openshift.io", Version: "v1", Resource: "schedulers"}
	CRDs                    = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}
	ConfigMaps              = schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
	APIServices             = schema.GroupVersionResource{Group: "apiregistration.k8s.io", Version: "v1", Resource: "apiservices"}
	VirtualMachineInstances = schema.GroupVersionResource{Group: "kubevirt.io", Version: "v1", Resource: "virtualmachineinstances"}
	MachineConfigurations   = schema.GroupVersionResource{Group: "operator.openshift.io", Version: "v1", Resource: "machineconfigurations"}
	ClusterVersions         = schema.GroupVersionResource{Group: "config.openshift.io", Version: "v1", Resource: "clusterversions"}
)

// CRDs of the VMI, MachineConfiguration and ClusterVersion APIs
// (artifacts/crds).
const (
	VirtualMachineInstanceCRD = "virtualmachineinstances.kubevirt.io"
	MachineConfigurationCRD   = "machineconfigurations.operator.openshift.io"
	ClusterVersionCRD         = "clusterversions.config.openshift.io"
)

// Objects of artifacts/testdata/baseline.yaml.
const (
	DeschedulerNamespace = "openshift-kube-descheduler-operator"
	DeschedulerName      = "cluster"
	HCONamespace         = "openshift-cnv"
	HCOName              = "kubevirt-hyperconverged"
	WorkerPool           = "worker"
	// BaselinePoolMachines is the size of the baseline worker pool.
	BaselinePoolMachines = 3
)

// MCOFieldManager is the field manager of the MachineConfig operator's
// controllers (the fake one uses it too).
const MCOFieldManager = "machine-config-controller"
