package plan

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kubevirt/virt-advisor/pkg/apis/advisor/v1alpha1"
	"github.com/kubevirt/virt-advisor/pkg/profiles"
)

// addRebootNotes ends the message of every MachineConfig item that writes
// with what it does to nodes, e.g. "reboots: pool worker, 3 nodes, once",
// and fills its reboots: the pools that select the labels of what it
// writes (for a Delete, those of the live object it deletes) reboot each
// of their nodes once, the MachineConfig changes approved together rolling
// out together. labels are the items' labels, in order. The pools are read
// only for a plan that writes a MachineConfig (most plans, the
// controller's drift checks among them, write none). The note never fails
// the plan.
func addRebootNotes(items []v1alpha1.PlanItem, labels []map[string]string, listPools func() ([]unstructured.Unstructured, error)) {
	for i := range items {
		it := &items[i]
		if !profiles.IsMachineConfig(it.TargetRef) || it.Operation == v1alpha1.OperationNone || it.Error != "" {
			continue
		}
		pools, err := listPools()
		if err != nil {
			it.Message += "; reboots: unknown (" + err.Error() + ")"
			continue
		}
		var note string
		it.Reboots, note = poolReboots(pools, labels[i])
		it.Message += "; " + note
	}
}

// poolLister lists the MachineConfigPools at most once per plan, for the
// reboot notes and, in a plan a user waits for (live inputs), the
// profile's pool inputs. That plan starts the list as it starts, when the
// profile reads pools or manages MachineConfigs, rather than after its
// items; the controller's plans list only when an item writes a
// MachineConfig.
func (e *Engine) poolLister(ctx context.Context, profile profiles.Profile, inputs []profiles.ObjectRef, from inputSource) func() ([]unstructured.Unstructured, error) {
	list := sync.OnceValues(func() ([]unstructured.Unstructured, error) {
		return e.Cluster.List(ctx, profiles.MachineConfigPoolGVK)
	})
	readsPools := slices.ContainsFunc(inputs, func(ref profiles.ObjectRef) bool {
		return ref.GVK.GroupKind() == profiles.MachineConfigPoolGVK.GroupKind()
	})
	writesMachineConfigs := slices.ContainsFunc(profile.ManagedKinds(), func(gvk schema.GroupVersionKind) bool {
		return gvk.GroupKind() == profiles.MachineConfigGVK.GroupKind()
	})
	if from == liveInputs && (readsPools || writesMachineConfigs) {
		go func() { _, _ = list() }()
	}
	return list
}

// poolReboots says which pools writing or deleting a MachineConfig with
// these labels rolls out, and the note that says so.
func poolReboots(pools []unstructured.Unstructured, mcLabels map[string]string) ([]v1alpha1.PoolReboot, string) {
	names, err := profiles.SelectingPools(pools, mcLabels)
	if err != nil {
		return nil, "reboots: unknown (" + err.Error() + ")"
	}
	if len(names) == 0 {
		return nil, "reboots: none (no MachineConfigPool selects it)"
	}
	var reboots []v1alpha1.PoolReboot
	parts := make([]string, 0, len(names))
	for _, name := range names {
		for i := range pools {
			if pools[i].GetName() != name {
				continue
			}
			r := v1alpha1.PoolReboot{Pool: name}
			r.Nodes, _, _ = unstructured.NestedInt64(pools[i].Object, "status", "machineCount")
			r.Paused, _, _ = unstructured.NestedBool(pools[i].Object, "spec", "paused")
			reboots = append(reboots, r)
			parts = append(parts, RebootPart(r))
		}
	}
	return reboots, "reboots: " + strings.Join(parts, "; ")
}

// RebootPart is one pool's part of a reboot note: "pool worker, 3 nodes, once".
func RebootPart(r v1alpha1.PoolReboot) string {
	nodes := fmt.Sprintf("%d nodes", r.Nodes)
	if r.Nodes == 1 {
		nodes = "1 node"
	}
	part := fmt.Sprintf("pool %s, %s, once", r.Pool, nodes)
	if r.Paused {
		part += ", when the pool is unpaused"
	}
	return part
}
