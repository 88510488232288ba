package plan

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/kubevirt/virt-advisor/pkg/maintenance"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kubevirt/virt-advisor/pkg/apis/advisor/v1alpha1"
	"github.com/kubevirt/virt-advisor/pkg/machineconfig"
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
		if !machineconfig.IsMachineConfig(it.TargetRef) || it.Operation == v1alpha1.OperationNone || it.Error != "" {
			continue
		}
		pools, err := listPools()
		if err != nil {
			it.Message += "; reboots: unknown (" + err.Error() + ")"
			continue
		}
		var note string
		it.Reboots, note = machineconfig.ItemReboots(pools, machineconfig.Change{Name: it.TargetRef.Name, Labels: labels[i]})
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
		return e.Cluster.List(ctx, machineconfig.MachineConfigPoolGVK)
	})
	readsPools := slices.ContainsFunc(inputs, func(ref profiles.ObjectRef) bool {
		return ref.GVK.GroupKind() == machineconfig.MachineConfigPoolGVK.GroupKind()
	})
	writesMachineConfigs := slices.ContainsFunc(profile.ManagedKinds(), func(gvk schema.GroupVersionKind) bool {
		return gvk.GroupKind() == machineconfig.MachineConfigGVK.GroupKind()
	})
	if (from == liveInputs || from == optimisticInputs) && (readsPools || writesMachineConfigs) {
		go func() { _, _ = list() }()
	}
	return list
}

// addWindowNotes ends the message of every MachineConfig item whose pools
// maintenance windows govern with when it would be written, e.g.
// "maintenance windows: pool 'worker': window 'weekend' opens Sat 28 Nov
// 22:00 CET (21:00 UTC), in 3d4h; it is written then". Like the reboot
// note it never fails the plan.
func addWindowNotes(items []v1alpha1.PlanItem, listPools func() ([]unstructured.Unstructured, error), windows maintenance.Lister, now time.Time) {
	for i := range items {
		it := &items[i]
		if len(it.Reboots) == 0 {
			continue
		}
		pools, err := listPools()
		if err != nil {
			continue // the reboot note said so
		}
		ws, err := windows.Windows()
		if err != nil {
			it.Message += "; maintenance windows: unknown (" + err.Error() + ")"
			continue
		}
		var notes []string
		for _, r := range it.Reboots {
			for p := range pools {
				if pools[p].GetName() != r.Pool {
					continue
				}
				d := maintenance.Evaluate(now, maintenance.Pool{Name: r.Pool, Labels: pools[p].GetLabels()}, ws)
				switch {
				case len(d.Windows) == 0:
				case d.Allowed:
					notes = append(notes, fmt.Sprintf("pool '%s': %s", r.Pool, d.Reason))
				default:
					notes = append(notes, fmt.Sprintf("pool '%s': %s; it is written then", r.Pool, d.Reason))
				}
			}
		}
		if len(notes) > 0 {
			it.Message += "; maintenance windows: " + strings.Join(notes, "; ")
		}
	}
}
