package machineconfig

import (
	"encoding/json"
	"fmt"
	"net/url"
	"sort"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kubevirt/virt-advisor/pkg/apis/advisor/v1alpha1"
)

// A KubeletConfig rolls pools indirectly: the MachineConfig operator's
// kubelet-config controller (openshift/machine-config-operator,
// pkg/controller/kubelet-config, syncKubeletConfig) renders it, for every
// pool whose labels its spec.machineConfigPoolSelector selects, into a
// MachineConfig 99-<pool>-generated-kubelet with the role label of that
// pool, and that MachineConfig rolls every pool whose
// machineConfigSelector selects it, as any other: one for worker also
// rolls a custom pool such as worker-cnv that selects role worker.

// The KubeletConfig kind and resource.
var (
	KubeletConfigGVK = schema.GroupVersionKind{Group: "machineconfiguration.openshift.io", Version: "v1", Kind: "KubeletConfig"}
	KubeletConfigs   = schema.GroupVersionResource{Group: "machineconfiguration.openshift.io", Version: "v1", Resource: "kubeletconfigs"}
)

const (
	// MCNameSuffixAnnotation on a KubeletConfig records which of a pool's
	// generated MachineConfigs it renders into: "" for
	// 99-<pool>-generated-kubelet, "N" for 99-<pool>-generated-kubelet-N
	// (ctrlcommon.MCNameSuffixAnnotationKey; getManagedKubeletConfigKey in
	// pkg/controller/kubelet-config/helpers.go).
	MCNameSuffixAnnotation = "machineconfiguration.openshift.io/mc-name-suffix"
	// MaxKubeletConfigsPerPool: the suffix goes up to 9, so a pool renders
	// at most 10 KubeletConfigs ("max number of supported kubelet config
	// (10) has been reached", ctrlcommon.MaxMCNameSuffix).
	MaxKubeletConfigsPerPool = 10
	// KubeletConfigFile is the file the generated MachineConfig writes
	// (createNewKubeletIgnition); changing it reboots the node unless a
	// node disruption policy covers it.
	KubeletConfigFile = "/etc/kubernetes/kubelet.conf"
	// PoolLabelPrefix + pool is the label every pool carries for
	// KubeletConfigs and ContainerRuntimeConfigs to select it by, e.g.
	// pools.operator.machineconfiguration.openshift.io/worker: "".
	PoolLabelPrefix = "pools.operator.machineconfiguration.openshift.io/"
)

// Condition types of a KubeletConfig's status (mcfgv1.KubeletConfigSuccess
// and KubeletConfigFailure; wrapErrorWithCondition in helpers.go).
const (
	KubeletConfigSuccess = "Success"
	KubeletConfigFailure = "Failure"
)

// IsKubeletConfig is true for a target that is a KubeletConfig.
func IsKubeletConfig(ref v1alpha1.ObjectReference) bool {
	return ref.Kind == KubeletConfigGVK.Kind && strings.HasPrefix(ref.APIVersion, KubeletConfigGVK.Group+"/")
}

// RollsPools is true for a target whose change rolls MachineConfigPools:
// a MachineConfig, or a KubeletConfig rendered into one. Everything that
// holds for MachineConfig items (reboot notes, windows, waits, pauses,
// rollout tracking) holds for such items.
func RollsPools(ref v1alpha1.ObjectReference) bool {
	return IsMachineConfig(ref) || IsKubeletConfig(ref)
}

// GeneratedKubeletName is the MachineConfig a pool renders a KubeletConfig
// into, from its suffix annotation ("" or absent: no suffix).
func GeneratedKubeletName(pool, suffix string) string {
	if suffix == "" {
		return "99-" + pool + "-generated-kubelet"
	}
	return "99-" + pool + "-generated-kubelet-" + suffix
}

// ChangeOf is what a target rolls pools by, from the object written or
// deleted (the desired state, or the live object for a Delete; nil when
// there is neither: a MachineConfig is then taken to be for the worker
// pool, a KubeletConfig selects no pool).
func ChangeOf(ref v1alpha1.ObjectReference, obj map[string]interface{}) Change {
	c := Change{Name: ref.Name}
	if IsKubeletConfig(ref) {
		c.KubeletConfig = true
		c.PoolSelector, _, _ = unstructured.NestedMap(obj, "spec", "machineConfigPoolSelector")
		c.Suffix, _, _ = unstructured.NestedString(obj, "metadata", "annotations", MCNameSuffixAnnotation)
		return c
	}
	c.Labels, _, _ = unstructured.NestedStringMap(obj, "metadata", "labels")
	if len(c.Labels) == 0 {
		c.Labels = map[string]string{RoleLabel: WorkerPool}
	}
	return c
}

// ItemChange is ChangeOf an item's desired state.
func ItemChange(ref v1alpha1.ObjectReference, desired *runtime.RawExtension) Change {
	var obj map[string]interface{}
	if desired != nil {
		_ = json.Unmarshal(desired.Raw, &obj)
	}
	return ChangeOf(ref, obj)
}

// Generated is a MachineConfig a change is rendered as: the MachineConfig
// itself, or one the kubelet-config controller generates from a
// KubeletConfig for a pool it selects.
type Generated struct {
	Name   string
	Labels map[string]string
	// For is the pool a KubeletConfig's MachineConfig is generated for
	// ("" for a MachineConfig).
	For string
}

// Rendered returns the MachineConfigs the change is rendered as, among
// these pools: a MachineConfig is itself; a KubeletConfig is a
// MachineConfig 99-<pool>-generated-kubelet (with its suffix) labelled
// with the role <pool> for every pool its machineConfigPoolSelector
// selects (syncKubeletConfig: role := pool.Name). An empty or missing
// selector selects no pool, as getPoolsForKubeletConfig and
// getManagedKubeletConfigKey skip selector.Empty().
func (c Change) Rendered(pools []unstructured.Unstructured) ([]Generated, error) {
	if !c.KubeletConfig {
		return []Generated{{Name: c.Name, Labels: c.Labels}}, nil
	}
	if len(c.PoolSelector) == 0 {
		return nil, nil
	}
	var ls metav1.LabelSelector
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(c.PoolSelector, &ls); err != nil {
		return nil, fmt.Errorf("KubeletConfig '%s' has an invalid machineConfigPoolSelector: %w", c.Name, err)
	}
	sel, err := metav1.LabelSelectorAsSelector(&ls)
	if err != nil {
		return nil, fmt.Errorf("KubeletConfig '%s' has an invalid machineConfigPoolSelector: %w", c.Name, err)
	}
	if sel.Empty() {
		return nil, nil
	}
	var out []Generated
	for i := range pools {
		name := pools[i].GetName()
		if sel.Matches(labels.Set(pools[i].GetLabels())) {
			out = append(out, Generated{Name: GeneratedKubeletName(name, c.Suffix), Labels: map[string]string{RoleLabel: name}, For: name})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].For < out[j].For })
	return out, nil
}

// RenderedBy names the MachineConfigs of the change that the pool renders
// (its machineConfigSelector selects their labels), sorted; pools are all
// the pools, which decide what a KubeletConfig is rendered as. A custom
// pool that selects role worker thus renders the MachineConfig generated
// from a KubeletConfig for the worker pool, and rolls its nodes too.
func (c Change) RenderedBy(pool *unstructured.Unstructured, pools []unstructured.Unstructured) ([]string, error) {
	rendered, err := c.Rendered(pools)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, g := range rendered {
		selects, err := Selects(pool, g.Labels)
		if err != nil {
			return nil, err
		}
		if selects {
			out = append(out, g.Name)
		}
	}
	sort.Strings(out)
	return out, nil
}

// RolledBy is true when the pool renders the change (RenderedBy): a
// MachineConfig, or one generated from a KubeletConfig.
func (c Change) RolledBy(pool *unstructured.Unstructured, pools []unstructured.Unstructured) (bool, error) {
	names, err := c.RenderedBy(pool, pools)
	return len(names) > 0, err
}

// RolledPools returns the pools that render the change, sorted by name.
func RolledPools(pools []unstructured.Unstructured, c Change) ([]unstructured.Unstructured, error) {
	var out []unstructured.Unstructured
	for i := range pools {
		rolls, err := c.RolledBy(&pools[i], pools)
		if err != nil {
			return nil, err
		}
		if rolls {
			out = append(out, pools[i])
		}
	}
	sortByName(out)
	return out, nil
}

// PoolHint is the pool a change is meant for before any pool was read:
// the role of a MachineConfig, the pool a KubeletConfig selects by the
// pool label (PoolLabelPrefix); "" when it cannot be told.
func (c Change) PoolHint() string {
	if !c.KubeletConfig {
		if role := c.Labels[RoleLabel]; role != "" {
			return role
		}
		return WorkerPool
	}
	ml, _, _ := unstructured.NestedStringMap(c.PoolSelector, "matchLabels")
	for k := range ml {
		if pool, ok := strings.CutPrefix(k, PoolLabelPrefix); ok {
			return pool
		}
	}
	return ""
}

// KubeletConfigRefusal is what the kubelet-config controller said when it
// refused the KubeletConfig's current generation: its last condition (it
// appends one per sync and keeps three, cleanUpStatusConditions) is
// Failure. "" when it did not refuse it (or did not look at it yet).
func KubeletConfigRefusal(kc *unstructured.Unstructured) string {
	if kc == nil {
		return ""
	}
	observed, _, _ := unstructured.NestedInt64(kc.Object, "status", "observedGeneration")
	if observed < kc.GetGeneration() {
		return ""
	}
	conds, _, _ := unstructured.NestedSlice(kc.Object, "status", "conditions")
	if len(conds) == 0 {
		return ""
	}
	last, _ := conds[len(conds)-1].(map[string]interface{})
	if last["type"] != KubeletConfigFailure {
		return ""
	}
	msg, _ := last["message"].(string)
	return msg
}

// EvaluateTargetRollout is EvaluateRollout for any item that rolls pools.
// A KubeletConfig rolls out through the MachineConfigs generated from it
// that the pool renders (generated: RenderedBy of the live KubeletConfig,
// whose suffix annotation names them; the one generated for the pool
// itself when none is known). live is the KubeletConfig as read now, nil
// after a Delete; a KubeletConfig the kubelet-config controller refused
// never rolls out (degraded, with its message). After a Delete the
// generated MachineConfigs are gone too (cascadeDelete): the pool has
// rolled out once it left the configuration noted before.
func EvaluateTargetRollout(pool *unstructured.Unstructured, poolName string, ref v1alpha1.ObjectReference, live *unstructured.Unstructured, op v1alpha1.Operation, before string, generated []string) Rollout {
	if !IsKubeletConfig(ref) {
		return EvaluateRollout(pool, poolName, ref.Name, op, before)
	}
	if msg := KubeletConfigRefusal(live); msg != "" && op != v1alpha1.OperationDelete {
		return Rollout{Degraded: true, Message: fmt.Sprintf("the MachineConfig operator refused KubeletConfig '%s': %s", ref.Name, msg)}
	}
	if len(generated) == 0 {
		suffix := ""
		if live != nil {
			suffix = live.GetAnnotations()[MCNameSuffixAnnotation]
		}
		generated = []string{GeneratedKubeletName(poolName, suffix)}
	}
	if op == v1alpha1.OperationDelete && pool != nil && before != "" {
		if spec, _, _ := unstructured.NestedString(pool.Object, "spec", "configuration", "name"); spec == before {
			return Rollout{Message: fmt.Sprintf("MachineConfigPool '%s' is processing changes (the MachineConfig generated from KubeletConfig '%s' is not removed yet)", poolName, ref.Name)}
		}
	}
	var r Rollout
	for _, mc := range generated {
		if r = EvaluateRollout(pool, poolName, mc, op, before); !r.Done {
			return r
		}
	}
	return r
}

// KubeletRenderedSpec is the part of the generated MachineConfig's spec a
// KubeletConfig spec decides (generateKubeletIgnFiles): the kubelet's
// configuration file, the node-sizing file when autoSizingReserved or
// systemReserved is set, and the logging drop-in for logLevel; nil for
// nil. What a change does to the nodes is decided from it as from any
// MachineConfig change (the node disruption policies may cover these
// files; none does by default, so a change reboots).
func KubeletRenderedSpec(kcSpec map[string]interface{}) map[string]interface{} {
	if kcSpec == nil {
		return nil
	}
	file := func(path string, v interface{}) interface{} {
		b, _ := json.Marshal(v)
		return map[string]interface{}{"path": path, "contents": map[string]interface{}{"source": "data:," + url.PathEscape(string(b))}}
	}
	kubelet, _, _ := unstructured.NestedMap(kcSpec, "kubeletConfig")
	files := []interface{}{file(KubeletConfigFile, kubelet)}
	reserved, _, _ := unstructured.NestedMap(kubelet, "systemReserved")
	if auto, found, _ := unstructured.NestedBool(kcSpec, "autoSizingReserved"); found || len(reserved) > 0 {
		files = append(files, file("/etc/node-sizing-enabled.env", map[string]interface{}{"auto": auto, "reserved": reserved}))
	}
	if level, found, _ := unstructured.NestedFieldNoCopy(kcSpec, "logLevel"); found {
		files = append(files, file("/etc/systemd/system/kubelet.service.d/20-logging.conf", level))
	}
	return map[string]interface{}{"config": map[string]interface{}{"storage": map[string]interface{}{"files": files}}}
}
