package plan

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kubevirt/virt-advisor/pkg/apis/advisor/v1alpha1"
	"github.com/kubevirt/virt-advisor/pkg/disruption"
	"github.com/kubevirt/virt-advisor/pkg/machineconfig"
	"github.com/kubevirt/virt-advisor/pkg/maintenance"
)

// annotate adds to a computed plan what its MachineConfig items do to
// nodes and VMs and when they would be written (see notes), and the VMs
// that approving it accepts to disrupt.
func (e *Engine) annotate(ctx context.Context, res *Result, planned []plannedItem, snap *inputReader, allowBlocking bool) {
	n := notes{pools: snap.pools, reads: snap.reads, allowBlocking: allowBlocking}
	if l := e.windows.Load(); l != nil {
		// Listed at most once per plan, and only for a plan that rolls a pool.
		n.windows, n.now = sync.OnceValues(func() ([]*maintenance.Window, error) { return (*l).Windows(ctx) }), e.now()
	}
	warnings, disrupted := n.annotate(ctx, res.Status.Items, rollChanges(planned))
	res.Status.Warnings = append(res.Status.Warnings, warnings...)
	res.Disrupted = disrupted
	// Where the Nodes and VMs came from: the caches' resourceVersions.
	if res.ReadAt = snap.reads.at.get(); res.ReadAt != (ReadAt{}) {
		res.Status.ReadFrom = &v1alpha1.PlanReadFrom{NodesResourceVersion: res.ReadAt.Nodes, VirtualMachineInstancesResourceVersion: res.ReadAt.VMIs}
	}
}

// notes are what annotating a plan reads: the pools, the nodes and VMs on
// them, and the maintenance windows, each at most once per plan and only
// for a plan that writes a MachineConfig (most plans, the controller's
// drift checks among them, write none). A note never fails the plan.
type notes struct {
	pools func() ([]unstructured.Unstructured, error)
	// reads are the Nodes, VMIs and policies; nil: the VMs are not assessed.
	reads *clusterReads
	// windows are the maintenance windows; nil: the plan says nothing of them.
	windows       func() ([]*maintenance.Window, error)
	now           time.Time
	allowBlocking bool
}

// annotate annotates the items in one pass (changes are theirs, in
// order) and returns the plan's warnings about VMs that drains shut down
// or would block on, and those VMs per item: what approving the plan
// accepts.
func (n notes) annotate(ctx context.Context, items []v1alpha1.PlanItem, changes []itemChange) ([]string, map[string][]v1alpha1.DisruptedVM) {
	var warnings []string
	disrupted := map[string][]v1alpha1.DisruptedVM{}
	for i := range items {
		warning, vms := n.annotateItem(ctx, &items[i], changes[i])
		if warning != "" {
			warnings = append(warnings, warning)
		}
		if len(vms) > 0 {
			disrupted[items[i].Name] = vms
		}
	}
	return warnings, disrupted
}

// annotateItem ends the message of a MachineConfig item that writes with
// what it does to nodes and the VMs on them, e.g. "reboots: pool worker,
// 3 nodes, once; 2 VMs live-migrate, 1 shuts down: …", and with when
// maintenance windows let it be written, and fills its reboots: the pools
// that select the labels of what it writes (for a Delete, those of the
// live object it deletes) go through the disruption of its change, each
// node once, the MachineConfig changes approved together rolling out
// together.
func (n notes) annotateItem(ctx context.Context, it *v1alpha1.PlanItem, change itemChange) (warning string, vms []v1alpha1.DisruptedVM) {
	if !machineconfig.RollsPools(it.TargetRef) || it.Operation == v1alpha1.OperationNone || it.Error != "" {
		return "", nil
	}
	pools, err := n.pools()
	if err != nil {
		it.Message += "; reboots: unknown (" + err.Error() + ")"
		return "", nil
	}
	var note string
	it.Reboots, note = machineconfig.ItemReboots(pools, change.rolls)
	if len(it.Reboots) > 0 && n.reads != nil {
		note, _ = n.reads.assess(ctx, it.Reboots, pools, change.spec, false)
		vms = disruption.Disrupted(it.Reboots)
		warning = disruption.Warning(it.Name, vms, n.allowBlocking)
	}
	it.Message += "; " + note
	if n.windows != nil {
		it.Message += windowNote(ctx, it.Reboots, pools, n.windows, n.now)
	}
	return warning, vms
}

// windowNote says, for the pools an item reboots that maintenance windows
// govern, when it would be written, e.g. "; maintenance windows: pool
// 'worker': window 'weekend' opens Sat 28 Nov 22:00 CET (21:00 UTC), in
// 3d4h; it is written then"; nothing if no window governs them.
func windowNote(ctx context.Context, reboots []v1alpha1.PoolReboot, pools []unstructured.Unstructured, listWindows func() ([]*maintenance.Window, error), now time.Time) string {
	if len(reboots) == 0 {
		return ""
	}
	ws, err := listWindows()
	if err != nil {
		return "; maintenance windows: unknown (" + err.Error() + ")"
	}
	var notes []string
	for _, r := range reboots {
		i := slices.IndexFunc(pools, func(p unstructured.Unstructured) bool { return p.GetName() == r.Pool })
		if i < 0 {
			continue
		}
		if note := poolWindowNote(ctx, now, maintenance.Pool{Name: r.Pool, Labels: pools[i].GetLabels()}, ws); note != "" {
			notes = append(notes, note)
		}
	}
	if len(notes) == 0 {
		return ""
	}
	return "; maintenance windows: " + strings.Join(notes, "; ")
}

// poolWindowNote is what the windows say of one pool now.
func poolWindowNote(ctx context.Context, now time.Time, pool maintenance.Pool, ws []*maintenance.Window) string {
	d, err := maintenance.Evaluate(ctx, now, pool, ws)
	switch {
	case err != nil:
		return fmt.Sprintf("pool '%s': unknown (%s)", pool.Name, err)
	case len(d.Windows) == 0:
		return ""
	case d.Allowed:
		return fmt.Sprintf("pool '%s': %s", pool.Name, d.Reason)
	}
	return fmt.Sprintf("pool '%s': %s; it is written then", pool.Name, d.Reason)
}

// itemChange is what a planned item changes: what the pools that render
// it are found by and, for a MachineConfig or KubeletConfig, the rendered
// spec before and after.
type itemChange struct {
	rolls machineconfig.Change
	spec  mcChange
}

// rollChanges are the labels and changes of each planned item that is
// kept, in order.
func rollChanges(planned []plannedItem) []itemChange {
	out := make([]itemChange, 0, len(planned))
	for _, p := range planned {
		if !p.skip {
			out = append(out, itemChange{rolls: p.rolls, spec: p.change})
		}
	}
	return out
}
