// Package pools finds the MachineConfigPools a plan's MachineConfigs roll
// through, read with the user's own credentials: which pools reboot their
// nodes, and how far their rollouts are.
package pools

import (
	"context"
	"fmt"
	"slices"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"

	"github.com/kubevirt/virt-advisor/pkg/apis/advisor/v1alpha1"
	"github.com/kubevirt/virt-advisor/pkg/cmd/advisor/internal/explain"
	"github.com/kubevirt/virt-advisor/pkg/machineconfig"
)

// Changes lists the MachineConfigs and KubeletConfigs a plan writes or
// deletes (with all, also those it leaves as they are). A deleted one has
// no desired state: it is read from the cluster, and once it is gone it
// is left out.
func Changes(ctx context.Context, dyn dynamic.Interface, items []v1alpha1.PlanItem, all bool) ([]machineconfig.Change, error) {
	var out []machineconfig.Change
	for _, it := range items {
		changes := it.Operation != v1alpha1.OperationNone && it.Operation != "" && it.Error == "" && reboots(it)
		if !machineconfig.RollsPools(it.TargetRef) || !(changes || all) {
			continue
		}
		change := machineconfig.ItemChange(it.TargetRef, it.DesiredState)
		if it.DesiredState == nil || len(it.DesiredState.Raw) == 0 {
			resource := machineconfig.MachineConfigs
			if machineconfig.IsKubeletConfig(it.TargetRef) {
				resource = machineconfig.KubeletConfigs
			}
			live, err := dyn.Resource(resource).Get(ctx, it.TargetRef.Name, metav1.GetOptions{})
			if apierrors.IsNotFound(err) && all {
				continue
			}
			if err != nil {
				return nil, fmt.Errorf("cannot read %s %s: %s", it.TargetRef.Kind, it.TargetRef.Name, explain.Brief(err))
			}
			change = machineconfig.ChangeOf(it.TargetRef, live.Object)
		}
		out = append(out, change)
	}
	return out, nil
}

// WithHeld adds to changes those an abort holds its pools paused for
// (status.abort.held), once each: a new draft may no longer have them.
func WithHeld(changes []machineconfig.Change, abort *v1alpha1.AbortRecord) []machineconfig.Change {
	if abort == nil {
		return changes
	}
	for _, h := range abort.Held {
		c := machineconfig.HeldChange(h)
		if !slices.ContainsFunc(changes, c.SameObject) {
			changes = append(changes, c)
		}
	}
	return changes
}

// reboots is false for an item the server says reboots no node (a node
// disruption policy applies its change in place); a server that does not
// say is taken to reboot.
func reboots(it v1alpha1.PlanItem) bool {
	for _, r := range it.Reboots {
		if r.Disruption == "" || r.Disruption == v1alpha1.NodeDisruptionReboot {
			return true
		}
	}
	return len(it.Reboots) == 0
}

// List lists the MachineConfigPools.
func List(ctx context.Context, dyn dynamic.Interface) ([]unstructured.Unstructured, error) {
	list, err := dyn.Resource(machineconfig.MachineConfigPools).List(ctx, metav1.ListOptions{})
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
		return machineconfig.FormatReboots(nil, nil)
	}
	pools, err := List(ctx, dyn)
	if err != nil {
		return "unknown (" + err.Error() + ")"
	}
	reboots, err := machineconfig.Rolls(pools, changes)
	if err != nil {
		return "unknown (" + err.Error() + ")"
	}
	return machineconfig.FormatReboots(changes, reboots)
}
