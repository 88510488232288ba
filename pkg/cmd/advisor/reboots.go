package advisor

import (
	"context"
	"fmt"
	"sort"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	"github.com/kubevirt/virt-advisor/pkg/apis/advisor/v1alpha1"
	"github.com/kubevirt/virt-advisor/pkg/profiles"
)

var (
	machineConfigGVR     = schema.GroupVersionResource{Group: "machineconfiguration.openshift.io", Version: "v1", Resource: "machineconfigs"}
	machineConfigPoolGVR = schema.GroupVersionResource{Group: "machineconfiguration.openshift.io", Version: "v1", Resource: "machineconfigpools"}
)

// machineConfigChange is a MachineConfig that a plan creates, changes or deletes.
type machineConfigChange struct {
	name   string
	labels map[string]string
}

// poolReboot is what applying a plan does to one MachineConfigPool: the
// MCO renders the changed MachineConfigs it selects and reboots its nodes.
type poolReboot struct {
	pool     string
	machines int64
	paused   bool
	configs  []string // the changed MachineConfigs the pool selects
}

// poolCount reads an integer of a pool's status, 0 when unset.
func poolCount(pool *unstructured.Unstructured, field string) int64 {
	v, _, _ := unstructured.NestedInt64(pool.Object, "status", field)
	return v
}

// rebootsOf returns, sorted by pool name, every pool that selects at least
// one of the changes.
func rebootsOf(pools []unstructured.Unstructured, changes []machineConfigChange) ([]poolReboot, error) {
	var out []poolReboot
	for i := range pools {
		pool := &pools[i]
		sel, err := profiles.PoolSelector(pool, "machineConfigSelector")
		if err != nil {
			return nil, fmt.Errorf("MachineConfigPool %s has an invalid machineConfigSelector: %w", pool.GetName(), err)
		}
		r := poolReboot{pool: pool.GetName(), machines: poolCount(pool, "machineCount")}
		r.paused, _, _ = unstructured.NestedBool(pool.Object, "spec", "paused")
		for _, c := range changes {
			if sel.Matches(labels.Set(c.labels)) {
				r.configs = append(r.configs, c.name)
			}
		}
		if len(r.configs) > 0 {
			out = append(out, r)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].pool < out[j].pool })
	return out, nil
}

// formatReboots says in one line which nodes reboot, e.g.
// "pool worker, 3 nodes, once". The server writes the MachineConfigs of an
// approved plan into a paused pool (--rollout-coalesce-window), so several
// of them roll out together and reboot each node once.
func formatReboots(changes []machineConfigChange, reboots []poolReboot) string {
	if len(changes) == 0 {
		return "none"
	}
	if len(reboots) == 0 {
		names := make([]string, len(changes))
		for i, c := range changes {
			names[i] = c.name
		}
		return "none (no MachineConfigPool selects " + strings.Join(names, ", ") + ")"
	}
	parts := make([]string, len(reboots))
	for i, r := range reboots {
		nodes := fmt.Sprintf("%d nodes", r.machines)
		if r.machines == 1 {
			nodes = "1 node"
		}
		times := "once"
		if n := len(r.configs); n > 1 {
			times = fmt.Sprintf("once (%d MachineConfigs rolled out together: %s)", n, strings.Join(r.configs, ", "))
		}
		parts[i] = fmt.Sprintf("pool %s, %s, %s", r.pool, nodes, times)
		if r.paused {
			parts[i] += ", when the pool is unpaused"
		}
	}
	return strings.Join(parts, "; ")
}

// machineConfigChanges lists the MachineConfigs a plan writes or deletes
// (with all, also those it leaves as they are). A deleted MachineConfig has
// no desired state: its labels are read from the cluster, and once it is
// gone it is left out.
func machineConfigChanges(ctx context.Context, dyn dynamic.Interface, items []v1alpha1.PlanItem, all bool) ([]machineConfigChange, error) {
	var out []machineConfigChange
	for _, it := range items {
		changes := it.Operation != v1alpha1.OperationNone && it.Operation != "" && it.Error == ""
		if !profiles.IsMachineConfig(it.TargetRef) || !(changes || all) {
			continue
		}
		l := profiles.DesiredLabels(it.DesiredState)
		if it.DesiredState == nil || len(it.DesiredState.Raw) == 0 {
			live, err := dyn.Resource(machineConfigGVR).Get(ctx, it.TargetRef.Name, metav1.GetOptions{})
			if apierrors.IsNotFound(err) && all {
				continue
			}
			if err != nil {
				return nil, fmt.Errorf("cannot read MachineConfig %s: %s", it.TargetRef.Name, briefly(err))
			}
			l = live.GetLabels()
		}
		out = append(out, machineConfigChange{name: it.TargetRef.Name, labels: l})
	}
	return out, nil
}

// listPools lists the MachineConfigPools.
func listPools(ctx context.Context, dyn dynamic.Interface) ([]unstructured.Unstructured, error) {
	list, err := dyn.Resource(machineConfigPoolGVR).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("cannot read MachineConfigPools: %s", briefly(err))
	}
	return list.Items, nil
}

// rebootSummary is the "reboots:" line of a plan. It never fails: a user
// who cannot read pools still gets the plan, with the reason.
func rebootSummary(ctx context.Context, dyn dynamic.Interface, items []v1alpha1.PlanItem) string {
	changes, err := machineConfigChanges(ctx, dyn, items, false)
	if err != nil {
		return "unknown (" + err.Error() + ")"
	}
	if len(changes) == 0 {
		return formatReboots(nil, nil)
	}
	pools, err := listPools(ctx, dyn)
	if err != nil {
		return "unknown (" + err.Error() + ")"
	}
	reboots, err := rebootsOf(pools, changes)
	if err != nil {
		return "unknown (" + err.Error() + ")"
	}
	return formatReboots(changes, reboots)
}
