package disruption

import (
	"fmt"
	"strings"

	"github.com/kubevirt/virt-advisor/pkg/apis/advisor/v1alpha1"
)

// Note is what a MachineConfig item's message says about its nodes and
// VMs, from its assessed pools (at least one), e.g. "reboots: pool worker,
// 3 nodes, once; 14 VMs live-migrate, 1 shuts down: …", or for a change a
// node disruption policy applies in place "reboots: none; pool worker, 3
// nodes: not drained, None (node disruption policies: …); no VM is
// affected". The disruption is that of the change, the same on every pool.
func Note(reboots []v1alpha1.PoolReboot) string {
	d := reboots[0]
	pools := make([]string, len(reboots))
	for i, r := range reboots {
		nodes := fmt.Sprintf("%d nodes", r.Nodes)
		if r.Nodes == 1 {
			nodes = "1 node"
		}
		pools[i] = fmt.Sprintf("pool %s, %s", r.Pool, nodes)
		if d.Disruption == v1alpha1.NodeDisruptionReboot || d.Disruption == v1alpha1.NodeDisruptionDrain {
			pools[i] += ", once"
		}
		if r.Paused {
			pools[i] += ", when the pool is unpaused"
		}
	}
	var b strings.Builder
	switch d.Disruption {
	case v1alpha1.NodeDisruptionReboot:
		b.WriteString("reboots: " + strings.Join(pools, "; "))
	case v1alpha1.NodeDisruptionDrain:
		fmt.Fprintf(&b, "reboots: none; drains: %s (%s)", strings.Join(pools, "; "), d.DisruptionReason)
	default:
		fmt.Fprintf(&b, "reboots: none; %s: not drained, %s (%s)", strings.Join(pools, "; "), d.Disruption, d.DisruptionReason)
	}
	if vms := vmNote(reboots); vms != "" {
		b.WriteString("; " + vms)
	}
	return b.String()
}

// vmNote sums up the VMs of every pool; "" when the nodes drain and no VM
// runs there.
func vmNote(reboots []v1alpha1.PoolReboot) string {
	var all []v1alpha1.VMImpact
	var migrating int
	for _, r := range reboots {
		if r.VMImpactUnknown != "" {
			return "VM impact unknown: " + r.VMImpactUnknown
		}
		if !r.Drains {
			return r.VMSummary
		}
		all = append(all, r.VMImpacts...)
		migrating += int(r.LiveMigrations)
	}
	return Summarize(migrating, all)
}

// Warning is the plan's warning about an item whose drains shut VMs down
// or would block on them (disrupted: Disrupted of its reboots); "" when
// every VM migrates.
func Warning(item string, disrupted []v1alpha1.DisruptedVM, allowBlocking bool) string {
	var shut, block []v1alpha1.DisruptedVM
	for _, v := range disrupted {
		if v.Fate == v1alpha1.VMFateShutDown {
			shut = append(shut, v)
		} else {
			block = append(block, v)
		}
	}
	var parts []string
	if len(shut) > 0 {
		parts = append(parts, fmt.Sprintf("shuts down %s: %s", vmCount(len(shut)), DescribeVMs(shut)))
	}
	if len(block) > 0 {
		what := "waits, unwritten, until no VM blocks: migrate, stop, or change the eviction strategy of each"
		if allowBlocking {
			what = "is written anyway (spec.rollout.allowBlockingDrains: true) and the drain of their nodes waits until each is stopped, moved or changed, the nodes cordoned meanwhile"
		}
		parts = append(parts, fmt.Sprintf("would block on %s: %s; the change %s", vmCount(len(block)), DescribeVMs(block), what))
	}
	if len(parts) == 0 {
		return ""
	}
	return fmt.Sprintf("item '%s': draining the nodes %s", item, strings.Join(parts, "; it "))
}

func vmCount(n int) string {
	if n == 1 {
		return "1 VM"
	}
	return fmt.Sprintf("%d VMs", n)
}
