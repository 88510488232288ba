package disruption

import (
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// ClusterVersionGVK is OpenShift's ClusterVersion; its singleton is
// ClusterVersionName.
var ClusterVersionGVK = schema.GroupVersionKind{Group: "config.openshift.io", Version: "v1", Kind: "ClusterVersion"}

const ClusterVersionName = "version"

// UpgradeInProgress says why no MachineConfig change should start rolling
// out now: the ClusterVersion is Progressing (an update is being applied,
// or the cluster is still installing), and the update rolls the pools
// itself; a change written meanwhile would reboot the nodes a second time.
// "" when no upgrade is under way (or the cluster has no ClusterVersion).
func UpgradeInProgress(cv *unstructured.Unstructured) string {
	if cv == nil {
		return ""
	}
	conds, _, _ := unstructured.NestedSlice(cv.Object, "status", "conditions")
	for _, c := range conds {
		m, ok := c.(map[string]interface{})
		if !ok || m["type"] != "Progressing" || m["status"] != "True" {
			continue
		}
		msg, _ := m["message"].(string)
		if msg == "" {
			msg, _ = m["reason"].(string)
		}
		return fmt.Sprintf("cluster upgrade in progress (ClusterVersion %s Progressing: %s); the change is written when it is done", cv.GetName(), msg)
	}
	return ""
}
