package plan

import (
	"context"
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kubevirt/virt-advisor/pkg/apis/advisor/v1alpha1"
	"github.com/kubevirt/virt-advisor/pkg/profiles"
)

// addRebootNotes ends the message of every MachineConfig item that writes
// with what it does to nodes, e.g. "reboots: pool worker, 3 nodes, once":
// the pools that render it (by selector) reboot each of their nodes once,
// the MachineConfig changes approved together rolling out together. The
// pools are listed only for a plan that writes a MachineConfig (most plans,
// the controller's drift checks among them, write none). The note never
// fails the plan.
func (e *Engine) addRebootNotes(ctx context.Context, items []v1alpha1.PlanItem) {
	var (
		pools  []unstructured.Unstructured
		listed bool
		err    error
	)
	for i := range items {
		it := &items[i]
		if !profiles.IsMachineConfig(it.TargetRef) || it.Operation == v1alpha1.OperationNone || it.Error != "" {
			continue
		}
		if !listed {
			pools, err = e.Cluster.List(ctx, profiles.MachineConfigPoolGVK)
			listed = true
		}
		note := "reboots: unknown (" + fmt.Sprint(err) + ")"
		if err == nil {
			note = rebootNote(pools, profiles.DesiredLabels(it.DesiredState))
		}
		it.Message += "; " + note
	}
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
