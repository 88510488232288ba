package fakemco

// The kubelet-config controller of the MachineConfig operator
// (openshift/machine-config-operator, pkg/controller/kubelet-config,
// syncKubeletConfig in kubelet_config_controller.go and the helpers of
// helpers.go), as far as the API shows it:
//
//   - a KubeletConfig whose spec sets a field the controller refuses
//     (validateUserKubeletConfig) gets a Failure condition "Error: …" and
//     nothing is rendered;
//   - one that selects no pool by the pools' labels gets a Failure
//     condition too ("KubeletConfig <name> does not match any
//     MachineConfigPools");
//   - otherwise, for every pool whose labels its machineConfigPoolSelector
//     selects, it is rendered into the MachineConfig
//     99-<pool>-generated-kubelet (a second KubeletConfig of the pool into
//     …-1, and so on up to …-9: getManagedKubeletConfigKey), with the role
//     label of the pool, an owner reference to the KubeletConfig and the
//     kubelet's configuration file; the suffix is recorded in the
//     annotation machineconfiguration.openshift.io/mc-name-suffix, the
//     MachineConfig's name in a finalizer, and a Success condition is
//     appended (at most three kept: cleanUpStatusConditions);
//   - a deleted KubeletConfig's generated MachineConfigs are deleted, then
//     its finalizers removed (cascadeDelete).
//
// The pool controller then rolls the generated MachineConfig as any other.

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/retry"
	"k8s.io/client-go/util/workqueue"

	"github.com/kubevirt/virt-advisor/test/names"
)

const (
	kcCRDName = "kubeletconfigs.machineconfiguration.openshift.io"
	// MCNameSuffixAnnotation is ctrlcommon.MCNameSuffixAnnotationKey.
	MCNameSuffixAnnotation = "machineconfiguration.openshift.io/mc-name-suffix"
	// maxMCNameSuffix is ctrlcommon.MaxMCNameSuffix: up to 10
	// KubeletConfigs per pool ("" and 1…9).
	maxMCNameSuffix = 9
	roleLabel       = "machineconfiguration.openshift.io/role"
	kubeletConfFile = "/etc/kubernetes/kubelet.conf"
)

var kcGVR = names.KubeletConfigs

// originalKubeletConfig stands for the kubelet configuration the MCO's
// templates render for a role (generateOriginalKubeletConfigWithFeatureGates);
// a KubeletConfig's kubeletConfig is merged over it.
var originalKubeletConfig = map[string]any{
	"apiVersion":             "kubelet.config.k8s.io/v1beta1",
	"kind":                   "KubeletConfiguration",
	"cgroupDriver":           "systemd",
	"clusterDNS":             []any{"172.30.0.10"},
	"clusterDomain":          "cluster.local",
	"cpuManagerPolicy":       "none",
	"maxPods":                int64(250),
	"protectKernelDefaults":  true,
	"staticPodPath":          "/etc/kubernetes/manifests",
	"systemReserved":         map[string]any{"ephemeral-storage": "1Gi"},
	"systemCgroups":          "/system.slice",
	"systemReservedCgroup":   "/system.slice",
	"enforceNodeAllocatable": []any{"pods", "system-reserved"},
}

// kubeletController renders KubeletConfigs; it runs next to the pool
// controller while the KubeletConfig CRD is Established.
type kubeletController struct {
	m     *fakeMCO
	queue workqueue.TypedRateLimitingInterface[string]
	kcs   cache.GenericLister
	pools cache.GenericLister
}

// refusal is what validateUserKubeletConfig says of a KubeletConfig's
// spec, "" when it accepts it.
func refusal(spec map[string]any) string {
	if level, found, _ := unstructured.NestedInt64(spec, "logLevel"); found && (level < 1 || level > 10) {
		return fmt.Sprintf("KubeletConfig's LogLevel is not valid [1,10]: %d", level)
	}
	kc, _, _ := unstructured.NestedMap(spec, "kubeletConfig")
	if kc == nil {
		return ""
	}
	notAllowed := func(field string, v any) string {
		return fmt.Sprintf("KubeletConfiguration: %s is not allowed to be set, but contains: %v", field, v)
	}
	for _, f := range []string{"cgroupDriver", "clusterDomain", "staticPodPath"} {
		if s, _ := kc[f].(string); s != "" {
			return notAllowed(f, s)
		}
	}
	if l, _ := kc["clusterDNS"].([]any); len(l) > 0 {
		return notAllowed("clusterDNS", l)
	}
	if m, _ := kc["featureGates"].(map[string]any); len(m) > 0 {
		return notAllowed("featureGates", m)
	}
	if v, found := kc["failSwapOn"]; found && v != nil {
		return notAllowed("failSwapOn", v)
	}
	if s, _, _ := unstructured.NestedString(kc, "memorySwap", "swapBehavior"); s != "" {
		return notAllowed("swapBehavior", s)
	}
	if r, _ := kc["systemReserved"].(map[string]any); len(r) > 0 {
		if auto, _, _ := unstructured.NestedBool(spec, "autoSizingReserved"); auto {
			return "KubeletConfiguration: autoSizingReserved and systemdReserved cannot be set together"
		}
	}
	reservedCgroup, _ := kc["systemReservedCgroup"].(string)
	systemCgroups, _ := kc["systemCgroups"].(string)
	if reservedCgroup != "" && systemCgroups != "" && reservedCgroup != systemCgroups {
		return fmt.Sprintf("KubeletConfiguration: systemReservedCgroup (%s) must match systemCgroups (%s)", reservedCgroup, systemCgroups)
	}
	return ""
}

// poolSelects is true when the KubeletConfig's machineConfigPoolSelector
// selects the pool's labels; an empty or missing selector selects none.
func poolSelects(kc, pool *unstructured.Unstructured) (bool, error) {
	m, _, _ := unstructured.NestedMap(kc.Object, "spec", "machineConfigPoolSelector")
	if len(m) == 0 {
		return false, nil
	}
	var ls metav1.LabelSelector
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(m, &ls); err != nil {
		return false, err
	}
	sel, err := metav1.LabelSelectorAsSelector(&ls)
	if err != nil {
		return false, err
	}
	return !sel.Empty() && sel.Matches(labels.Set(pool.GetLabels())), nil
}

// generatedName is getManagedKubeletConfigKey: the recorded suffix, else
// no suffix for the only KubeletConfig of the pool, else one more than
// the largest suffix the pool's KubeletConfigs record.
func generatedName(pool string, kc *unstructured.Unstructured, ofPool []*unstructured.Unstructured) (string, error) {
	base := "99-" + pool + "-generated-kubelet"
	if suffix, ok := kc.GetAnnotations()[MCNameSuffixAnnotation]; ok {
		if suffix == "" {
			return base, nil
		}
		return base + "-" + suffix, nil
	}
	if len(ofPool) <= 1 {
		return base, nil
	}
	max := 0
	for _, other := range ofPool {
		if v := other.GetAnnotations()[MCNameSuffixAnnotation]; v != "" {
			n, err := strconv.Atoi(v)
			if err != nil {
				return "", fmt.Errorf("error converting %s to int: %w", v, err)
			}
			max = maxInt(max, n)
		}
	}
	if max+1 > maxMCNameSuffix {
		return "", fmt.Errorf("max number of supported kubelet config (10) has been reached. Please delete old kubelet configs before retrying")
	}
	return base + "-" + strconv.Itoa(max+1), nil
}

func maxInt(a, b int) int {
	if a > b {
		return a
	}
	return b
}

// renderKubelet is the generated MachineConfig's Ignition config: the
// original configuration with the KubeletConfig's merged over it
// (generateKubeletIgnFiles; reservedSystemCPUs clears
// systemReservedCgroup and enforces node allocatable on pods only).
func renderKubelet(spec map[string]any) (map[string]any, error) {
	merged := runtime.DeepCopyJSON(originalKubeletConfig)
	kc, _, _ := unstructured.NestedMap(spec, "kubeletConfig")
	for k, v := range kc {
		if k == "featureGates" || k == "apiVersion" || k == "kind" {
			continue
		}
		merged[k] = v
	}
	if s, _ := merged["reservedSystemCPUs"].(string); s != "" {
		merged["systemReservedCgroup"] = ""
		merged["enforceNodeAllocatable"] = []any{"pods"}
	}
	b, err := json.Marshal(merged)
	if err != nil {
		return nil, err
	}
	return map[string]any{
		"ignition": map[string]any{"version": "3.5.0"},
		"storage": map[string]any{"files": []any{map[string]any{
			"path": kubeletConfFile, "overwrite": true, "mode": int64(0o644),
			"contents": map[string]any{"source": "data:," + url.PathEscape(string(b))},
		}}},
	}, nil
}

func (k *kubeletController) run(ctx context.Context) {
	for k.processNext(ctx) {
	}
}

func (k *kubeletController) processNext(ctx context.Context) bool {
	name, quit := k.queue.Get()
	if quit {
		return false
	}
	defer k.queue.Done(name)
	if err := k.sync(ctx, name); err != nil {
		if ctx.Err() != nil {
			return true
		}
		k.m.logf("KubeletConfig %s: %v (retrying)", name, err)
		k.queue.AddRateLimited(name)
		return true
	}
	k.queue.Forget(name)
	return true
}

func (k *kubeletController) list() []*unstructured.Unstructured {
	objs, _ := k.kcs.List(labels.Everything())
	out := make([]*unstructured.Unstructured, 0, len(objs))
	for _, o := range objs {
		if u, ok := o.(*unstructured.Unstructured); ok {
			out = append(out, u)
		}
	}
	return out
}

func (k *kubeletController) sync(ctx context.Context, name string) error {
	obj, err := k.kcs.Get(name)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	kc := obj.(*unstructured.Unstructured).DeepCopy()
	if kc.GetDeletionTimestamp() != nil {
		return k.cascadeDelete(ctx, kc)
	}
	spec, _, _ := unstructured.NestedMap(kc.Object, "spec")
	if why := refusal(spec); why != "" {
		return k.setStatus(ctx, kc, fmt.Errorf("%s", why))
	}
	objs, err := k.pools.List(labels.Everything())
	if err != nil {
		return err
	}
	var pools []*unstructured.Unstructured
	for _, o := range objs {
		pool := o.(*unstructured.Unstructured)
		ok, err := poolSelects(kc, pool)
		if err != nil {
			return k.setStatus(ctx, kc, fmt.Errorf("invalid label selector: %w", err))
		}
		if ok {
			pools = append(pools, pool)
		}
	}
	slices.SortFunc(pools, func(a, b *unstructured.Unstructured) int { return strings.Compare(a.GetName(), b.GetName()) })
	if len(pools) == 0 {
		return k.setStatus(ctx, kc, fmt.Errorf("KubeletConfig %s does not match any MachineConfigPools", name))
	}
	config, err := renderKubelet(spec)
	if err != nil {
		return k.setStatus(ctx, kc, err)
	}
	all := k.list()
	for _, pool := range pools {
		var ofPool []*unstructured.Unstructured
		for _, other := range all {
			if ok, _ := poolSelects(other, pool); ok {
				ofPool = append(ofPool, other)
			}
		}
		mcName, err := generatedName(pool.GetName(), kc, ofPool)
		if err != nil {
			return k.setStatus(ctx, kc, fmt.Errorf("could not get kubelet config key: %w", err))
		}
		if _, ok := kc.GetAnnotations()[MCNameSuffixAnnotation]; !ok {
			suffix := strings.TrimPrefix(strings.TrimPrefix(mcName, "99-"+pool.GetName()+"-generated-kubelet"), "-")
			if kc, err = k.update(ctx, kc, func(u *unstructured.Unstructured) {
				a := u.GetAnnotations()
				if a == nil {
					a = map[string]string{}
				}
				a[MCNameSuffixAnnotation] = suffix
				u.SetAnnotations(a)
			}); err != nil {
				return err
			}
		}
		mc := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": mcoAPIVersion,
			"kind":       "MachineConfig",
			"metadata": map[string]any{
				"name":        mcName,
				"labels":      map[string]any{roleLabel: pool.GetName()},
				"annotations": map[string]any{generatedByAnnotation: generatedByValue},
				"ownerReferences": []any{map[string]any{
					"apiVersion": mcoAPIVersion, "kind": "KubeletConfig", "name": kc.GetName(), "uid": string(kc.GetUID()),
					"controller": true, "blockOwnerDeletion": true,
				}},
			},
			"spec": map[string]any{"config": config},
		}}
		if _, err := k.m.dyn.Resource(mcGVR).Apply(ctx, mcName, mc, metav1.ApplyOptions{FieldManager: mcoFieldManager, Force: true}); err != nil {
			return fmt.Errorf("writing MachineConfig %s: %w", mcName, err)
		}
		if !slices.Contains(kc.GetFinalizers(), mcName) {
			if kc, err = k.update(ctx, kc, func(u *unstructured.Unstructured) {
				u.SetFinalizers(append(u.GetFinalizers(), mcName))
			}); err != nil {
				return err
			}
		}
		k.m.logf("KubeletConfig %s: rendered into MachineConfig %s for pool %s", name, mcName, pool.GetName())
	}
	return k.setStatus(ctx, kc, nil)
}

// update changes the KubeletConfig's metadata from a fresh read.
func (k *kubeletController) update(ctx context.Context, kc *unstructured.Unstructured, change func(*unstructured.Unstructured)) (*unstructured.Unstructured, error) {
	var out *unstructured.Unstructured
	err := retry.RetryOnConflict(retry.DefaultBackoff, func() error {
		fresh, err := k.m.dyn.Resource(kcGVR).Get(ctx, kc.GetName(), metav1.GetOptions{})
		if err != nil {
			return err
		}
		change(fresh)
		out, err = k.m.dyn.Resource(kcGVR).Update(ctx, fresh, metav1.UpdateOptions{FieldManager: mcoFieldManager})
		return err
	})
	return out, err
}

// setStatus appends the condition of a sync (wrapErrorWithCondition),
// or refreshes the last one when its message is the same, keeping three.
func (k *kubeletController) setStatus(ctx context.Context, kc *unstructured.Unstructured, syncErr error) error {
	cond := map[string]any{"type": "Success", "status": "True", "message": "Success"}
	if syncErr != nil {
		cond = map[string]any{"type": "Failure", "status": "False", "message": "Error: " + syncErr.Error()}
		k.m.logf("KubeletConfig %s: %s", kc.GetName(), cond["message"])
	}
	return retry.RetryOnConflict(retry.DefaultBackoff, func() error {
		fresh, err := k.m.dyn.Resource(kcGVR).Get(ctx, kc.GetName(), metav1.GetOptions{})
		if err != nil {
			return err
		}
		conds, _, _ := unstructured.NestedSlice(fresh.Object, "status", "conditions")
		now := time.Now().UTC().Format(time.RFC3339)
		cond["lastTransitionTime"] = now
		if n := len(conds); n > 0 {
			if last, _ := conds[n-1].(map[string]any); last["message"] == cond["message"] && last["type"] == cond["type"] {
				observed, _, _ := unstructured.NestedInt64(fresh.Object, "status", "observedGeneration")
				if observed == fresh.GetGeneration() {
					return nil // nothing new to say
				}
				conds = conds[:n-1]
			}
		}
		conds = append(conds, cond)
		if len(conds) > 3 {
			conds = conds[len(conds)-3:]
		}
		status := map[string]any{"observedGeneration": fresh.GetGeneration(), "conditions": conds}
		if reflect.DeepEqual(fresh.Object["status"], status) {
			return nil
		}
		fresh.Object["status"] = status
		_, err = k.m.dyn.Resource(kcGVR).UpdateStatus(ctx, fresh, metav1.UpdateOptions{FieldManager: mcoFieldManager})
		return err
	})
}

// cascadeDelete deletes the MachineConfigs a deleted KubeletConfig was
// rendered into (its finalizers), then the finalizers.
func (k *kubeletController) cascadeDelete(ctx context.Context, kc *unstructured.Unstructured) error {
	if len(kc.GetFinalizers()) == 0 {
		return nil
	}
	for _, mc := range kc.GetFinalizers() {
		if err := k.m.dyn.Resource(mcGVR).Delete(ctx, mc, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("deleting MachineConfig %s: %w", mc, err)
		}
		k.m.logf("KubeletConfig %s deleted: deleted MachineConfig %s", kc.GetName(), mc)
	}
	_, err := k.update(ctx, kc, func(u *unstructured.Unstructured) { u.SetFinalizers(nil) })
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}
