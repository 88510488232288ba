package machineconfig

import (
	"encoding/json"
	"strings"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kubevirt/virt-advisor/pkg/apis/advisor/v1alpha1"
)

// The MachineConfig operator's kinds and resources.
var (
	MachineConfigGVK     = schema.GroupVersionKind{Group: "machineconfiguration.openshift.io", Version: "v1", Kind: "MachineConfig"}
	MachineConfigPoolGVK = schema.GroupVersionKind{Group: "machineconfiguration.openshift.io", Version: "v1", Kind: "MachineConfigPool"}
	MachineConfigs       = schema.GroupVersionResource{Group: "machineconfiguration.openshift.io", Version: "v1", Resource: "machineconfigs"}
	MachineConfigPools   = schema.GroupVersionResource{Group: "machineconfiguration.openshift.io", Version: "v1", Resource: "machineconfigpools"}
)

// MachineConfigurationGVK is the operator's configuration, whose node
// disruption policies say what applying a MachineConfig change does to a
// node.
var MachineConfigurationGVK = schema.GroupVersionKind{Group: "operator.openshift.io", Version: "v1", Kind: "MachineConfiguration"}

// MachineConfigurationName is the MachineConfiguration singleton.
const MachineConfigurationName = "cluster"

const (
	// RoleLabel on a MachineConfig names the role (pool) it is for.
	RoleLabel = "machineconfiguration.openshift.io/role"
	// WorkerPool and MasterPool are the pools every cluster has.
	WorkerPool = "worker"
	MasterPool = "master"
)

// IsMachineConfig is true for a target that is a MachineConfig.
func IsMachineConfig(ref v1alpha1.ObjectReference) bool {
	return ref.Kind == MachineConfigGVK.Kind && strings.HasPrefix(ref.APIVersion, MachineConfigGVK.Group+"/")
}

// DesiredLabels are metadata.labels of a desired state (none when it is
// unset or not an object).
func DesiredLabels(raw *runtime.RawExtension) map[string]string {
	if raw == nil {
		return nil
	}
	var obj struct {
		Metadata struct {
			Labels map[string]string `json:"labels"`
		} `json:"metadata"`
	}
	_ = json.Unmarshal(raw.Raw, &obj)
	return obj.Metadata.Labels
}

// ItemLabels are the labels of a MachineConfig item's desired state;
// without one (a Delete), the role of its pool, worker by default.
func ItemLabels(desired *runtime.RawExtension) map[string]string {
	if l := DesiredLabels(desired); len(l) > 0 {
		return l
	}
	return map[string]string{RoleLabel: WorkerPool}
}

// RoleOf is the pool a desired MachineConfig is for: its role label,
// worker by default.
func RoleOf(desired *runtime.RawExtension) string {
	if role := DesiredLabels(desired)[RoleLabel]; role != "" {
		return role
	}
	return WorkerPool
}
