package plan

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kubevirt/virt-advisor/pkg/apis/advisor/v1alpha1"
	"github.com/kubevirt/virt-advisor/pkg/disruption"
	"github.com/kubevirt/virt-advisor/pkg/machineconfig"
	"github.com/kubevirt/virt-advisor/pkg/maintenance"
	"github.com/kubevirt/virt-advisor/pkg/profiles"
)

// addRebootNotes ends the message of every MachineConfig item that writes
// with what it does to nodes and the VMs on them, e.g. "reboots: pool
// worker, 3 nodes, once; 2 VMs live-migrate, 1 shuts down: …", and fills
// its reboots: the pools that select the labels of what it writes (for a
// Delete, those of the live object it deletes) go through the disruption
// of its change, each node once, the MachineConfig changes approved
// together rolling out together. changes are the items' changes, in order.
// The pools, Nodes and VMs are read only for a plan that writes a
// MachineConfig (most plans, the controller's drift checks among them,
// write none). The note never fails the plan. It returns the plan's
// warnings about VMs that drains shut down or would block on, and those
// VMs per item: what approving the plan accepts.
func addRebootNotes(ctx context.Context, items []v1alpha1.PlanItem, changes []itemChange, listPools func() ([]unstructured.Unstructured, error), reads *clusterReads, allowBlocking bool) ([]string, map[string][]v1alpha1.DisruptedVM) {
	var warnings []string
	disrupted := map[string][]v1alpha1.DisruptedVM{}
	for i := range items {
		it := &items[i]
		if !machineconfig.RollsPools(it.TargetRef) || it.Operation == v1alpha1.OperationNone || it.Error != "" {
			continue
		}
		pools, err := listPools()
		if err != nil {
			it.Message += "; reboots: unknown (" + err.Error() + ")"
			continue
		}
		var note string
		it.Reboots, note = machineconfig.ItemReboots(pools, changes[i].rolls)
		if len(it.Reboots) > 0 && reads != nil {
			note, _ = reads.assess(ctx, it.Reboots, pools, changes[i].spec, false)
			if w := disruption.Warning(it.Name, it.Reboots, allowBlocking); w != "" {
				warnings = append(warnings, w)
			}
			if d := disruption.Disrupted(it.Reboots); len(d) > 0 {
				disrupted[it.Name] = d
			}
		}
		it.Message += "; " + note
	}
	return warnings, disrupted
}

// itemChange is what a planned item changes: what the pools that render
// it are found by and, for a MachineConfig or KubeletConfig, the rendered
// spec before and after.
type itemChange struct {
	rolls machineconfig.Change
	spec  mcChange
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
	if from.live() && (readsPools || writesMachineConfigs(profile)) {
		go func() { _, _ = list() }()
	}
	return list
}

// addWindowNotes ends the message of every MachineConfig item whose pools
// maintenance windows govern with when it would be written, e.g.
// "maintenance windows: pool 'worker': window 'weekend' opens Sat 28 Nov
// 22:00 CET (21:00 UTC), in 3d4h; it is written then". Like the reboot
// note it never fails the plan.
func addWindowNotes(ctx context.Context, items []v1alpha1.PlanItem, listPools func() ([]unstructured.Unstructured, error), windows maintenance.Lister, now time.Time) {
	// Listed at most once per plan, and only for a plan that rolls a pool.
	listWindows := sync.OnceValues(windows.Windows)
	for i := range items {
		it := &items[i]
		if len(it.Reboots) == 0 {
			continue
		}
		pools, err := listPools()
		if err != nil {
			continue // the reboot note said so
		}
		ws, err := listWindows()
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
				d, err := maintenance.Evaluate(ctx, now, maintenance.Pool{Name: r.Pool, Labels: pools[p].GetLabels()}, ws)
				switch {
				case err != nil:
					notes = append(notes, fmt.Sprintf("pool '%s': unknown (%s)", r.Pool, err))
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

// writesMachineConfigs is true for a profile that manages MachineConfigs
// or KubeletConfigs (rendered into MachineConfigs).
func writesMachineConfigs(profile profiles.Profile) bool {
	return slices.ContainsFunc(profile.ManagedKinds(), func(gvk schema.GroupVersionKind) bool {
		return gvk.GroupKind() == machineconfig.MachineConfigGVK.GroupKind() || gvk.GroupKind() == machineconfig.KubeletConfigGVK.GroupKind()
	})
}
