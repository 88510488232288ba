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
// with what it does to nodes, e.g. "reboots: pool worker, 3 nodes, once":
// the pools that render it (by selector) reboot each of their nodes once,
// the MachineConfig changes approved together rolling out together. The
// pools are read only for a plan that writes a MachineConfig (most plans,
// the controller's drift checks among them, write none). The note never
// fails the plan.
func addRebootNotes(items []v1alpha1.PlanItem, listPools func() ([]unstructured.Unstructured, error)) {
	for i := range items {
		it := &items[i]
		if !profiles.IsMachineConfig(it.TargetRef) || it.Operation == v1alpha1.OperationNone || it.Error != "" {
			continue
		}
		pools, err := listPools()
		note := "reboots: unknown (" + fmt.Sprint(err) + ")"
		if err == nil {
			note = rebootNote(pools, profiles.DesiredLabels(it.DesiredState))
		}
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

// rebootNote says which nodes writing a MachineConfig with these labels
// reboots.
func rebootNote(pools []unstructured.Unstructured, mcLabels map[string]string) string {
	names, err := profiles.SelectingPools(pools, mcLabels)
	if err != nil {
		return "reboots: unknown (" + err.Error() + ")"
	}
	if len(names) == 0 {
		return "reboots: none (no MachineConfigPool selects it)"
	}
	parts := make([]string, 0, len(names))
	for _, name := range names {
		for i := range pools {
			if pools[i].GetName() != name {
				continue
			}
			machines, _, _ := unstructured.NestedInt64(pools[i].Object, "status", "machineCount")
			nodes := fmt.Sprintf("%d nodes", machines)
			if machines == 1 {
				nodes = "1 node"
			}
			part := fmt.Sprintf("pool %s, %s, once", name, nodes)
			if paused, _, _ := unstructured.NestedBool(pools[i].Object, "spec", "paused"); paused {
				part += ", when the pool is unpaused"
			}
			parts = append(parts, part)
		}
	}
	return "reboots: " + strings.Join(parts, "; ")
}
