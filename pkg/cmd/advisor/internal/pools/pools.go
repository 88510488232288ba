// Package pools finds the MachineConfigPools a plan's MachineConfigs roll
// through, read with the user's own credentials: which pools reboot their
// nodes, and how far their rollouts are.
package pools

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
	"github.com/kubevirt/virt-advisor/pkg/cmd/advisor/internal/explain"
	"github.com/kubevirt/virt-advisor/pkg/profiles"
)

// The MachineConfig operator's resources.
var (
	MachineConfigs     = schema.GroupVersionResource{Group: "machineconfiguration.openshift.io", Version: "v1", Resource: "machineconfigs"}
	MachineConfigPools = schema.GroupVersionResource{Group: "machineconfiguration.openshift.io", Version: "v1", Resource: "machineconfigpools"}
)

// Change is a MachineConfig that a plan creates, changes or deletes.
type Change struct {
	Name   string
	Labels map[string]string
}

// Reboot is what applying a plan does to one MachineConfigPool: the
// MCO renders the changed MachineConfigs it selects and reboots its nodes.
type Reboot struct {
	Pool     string
	Machines int64
	Paused   bool
	Configs  []string // the changed MachineConfigs the pool selects
}

// Count reads an integer of a pool's status, 0 when unset.
func Count(pool *unstructured.Unstructured, field string) int64 {
	v, _, _ := unstructured.NestedInt64(pool.Object, "status", field)
	return v
}

// Selecting returns, sorted by pool name, every pool that selects at least
// one of the changes.
func Selecting(pools []unstructured.Unstructured, changes []Change) ([]Reboot, error) {
	var out []Reboot
	for i := range pools {
		pool := &pools[i]
		sel, err := profiles.PoolSelector(pool, "machineConfigSelector")
		if err != nil {
			return nil, fmt.Errorf("MachineConfigPool %s has an invalid machineConfigSelector: %w", pool.GetName(), err)
		}
		r := Reboot{Pool: pool.GetName(), Machines: Count(pool, "machineCount")}
		r.Paused, _, _ = unstructured.NestedBool(pool.Object, "spec", "paused")
		for _, c := range changes {
			if sel.Matches(labels.Set(c.Labels)) {
				r.Configs = append(r.Configs, c.Name)
			}
		}
		if len(r.Configs) > 0 {
			out = append(out, r)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Pool < out[j].Pool })
	return out, nil
}

// Format says in one line which nodes reboot, e.g.
// "pool worker, 3 nodes, once". The server writes the MachineConfigs of an
// approved plan into a paused pool (--rollout-coalesce-window), so several
// of them roll out together and reboot each node once.
func Format(changes []Change, reboots []Reboot) string {
	if len(changes) == 0 {
		return "none"
	}
	if len(reboots) == 0 {
		names := make([]string, len(changes))
		for i, c := range changes {
			names[i] = c.Name
		}
		return "none (no MachineConfigPool selects " + strings.Join(names, ", ") + ")"
	}
	parts := make([]string, len(reboots))
	for i, r := range reboots {
		nodes := fmt.Sprintf("%d nodes", r.Machines)
		if r.Machines == 1 {
			nodes = "1 node"
		}
		times := "once"
		if n := len(r.Configs); n > 1 {
			times = fmt.Sprintf("once (%d MachineConfigs rolled out together: %s)", n, strings.Join(r.Configs, ", "))
		}
		parts[i] = fmt.Sprintf("pool %s, %s, %s", r.Pool, nodes, times)
		if r.Paused {
			parts[i] += ", when the pool is unpaused"
		}
	}
	return strings.Join(parts, "; ")
}

// Changes lists the MachineConfigs a plan writes or deletes (with all,
// also those it leaves as they are). A deleted MachineConfig has no
// desired state: its labels are read from the cluster, and once it is
// gone it is left out.
func Changes(ctx context.Context, dyn dynamic.Interface, items []v1alpha1.PlanItem, all bool) ([]Change, error) {
	var out []Change
	for _, it := range items {
		changes := it.Operation != v1alpha1.OperationNone && it.Operation != "" && it.Error == ""
		if !profiles.IsMachineConfig(it.TargetRef) || !(changes || all) {
			continue
		}
		l := profiles.DesiredLabels(it.DesiredState)
		if it.DesiredState == nil || len(it.DesiredState.Raw) == 0 {
			live, err := dyn.Resource(MachineConfigs).Get(ctx, it.TargetRef.Name, metav1.GetOptions{})
			if apierrors.IsNotFound(err) && all {
				continue
			}
			if err != nil {
				return nil, fmt.Errorf("cannot read MachineConfig %s: %s", it.TargetRef.Name, explain.Brief(err))
			}
			l = live.GetLabels()
		}
		out = append(out, Change{Name: it.TargetRef.Name, Labels: l})
	}
	return out, nil
}

// List lists the MachineConfigPools.
func List(ctx context.Context, dyn dynamic.Interface) ([]unstructured.Unstructured, error) {
	list, err := dyn.Resource(MachineConfigPools).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("cannot read MachineConfigPools: %s", explain.Brief(err))
	}
	return list.Items, nil
}

// Summary is the "reboots:" line of a plan. It never fails: a user
// who cannot read pools still gets the plan, with the reason.
func Summary(ctx context.Context, dyn dynamic.Interface, items []v1alpha1.PlanItem) string {
	changes, err := Changes(ctx, dyn, items, false)
	if err != nil {
		return "unknown (" + err.Error() + ")"
	}
	if len(changes) == 0 {
		return Format(nil, nil)
	}
	pools, err := List(ctx, dyn)
	if err != nil {
		return "unknown (" + err.Error() + ")"
	}
	reboots, err := Selecting(pools, changes)
	if err != nil {
		return "unknown (" + err.Error() + ")"
	}
	return Format(changes, reboots)
}
