package higherdensity

import (
	"context"
	"fmt"
	"strings"
	"sync"

	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/kubevirt/virt-advisor/pkg/machineconfig"
	"github.com/kubevirt/virt-advisor/pkg/profiles"
)

// coverage says, per pool of VM nodes, whether the swap the nodes report
// backs the requested overcommit: a node needs at least
// RAM × (ratio/100 − 1) of swap (seed 002). It never blocks the plan.
type coverage struct {
	message  string
	warnings []string
}

// nodeSwap is what a Node reports: memory capacity and, with swap on
// (Kubernetes ≥ 1.30), status.nodeInfo.swap.capacity.
type nodeSwap struct {
	name      string
	memory    int64
	swap      int64
	swapKnown bool
}

func readNode(n *unstructured.Unstructured) nodeSwap {
	ns := nodeSwap{name: n.GetName()}
	if s, ok, _ := unstructured.NestedString(n.Object, "status", "capacity", "memory"); ok {
		if q, err := resource.ParseQuantity(s); err == nil {
			ns.memory = q.Value()
		}
	}
	if v, ok, _ := unstructured.NestedFieldNoCopy(n.Object, "status", "nodeInfo", "swap", "capacity"); ok {
		switch x := v.(type) {
		case int64:
			ns.swap, ns.swapKnown = x, true
		case float64:
			ns.swap, ns.swapKnown = int64(x), true
		}
	}
	return ns
}

func swapCoverage(ctx context.Context, cluster profiles.Cluster, mcLabels map[string]string, ratio int32) (coverage, error) {
	// Pools and nodes are independent reads: send them together.
	var all, nodes []unstructured.Unstructured
	var poolsErr, nodesErr error
	var wg sync.WaitGroup
	wg.Go(func() { all, poolsErr = cluster.List(ctx, machineconfig.MachineConfigPoolGVK) })
	wg.Go(func() { nodes, nodesErr = cluster.List(ctx, profiles.NodeGVK) })
	wg.Wait()
	if poolsErr != nil {
		return coverage{}, poolsErr
	}
	pools, err := machineconfig.SelectingPools(all, mcLabels)
	if err != nil {
		return coverage{}, err
	}
	if len(pools) == 0 {
		return coverage{message: "Swap coverage: cannot verify, no MachineConfigPool selects the swap MachineConfig"}, nil
	}
	if nodesErr != nil {
		return coverage{}, nodesErr
	}
	var c coverage
	var lines []string
	for i := range pools {
		line, warning, err := poolCoverage(&pools[i], nodes, ratio)
		if err != nil {
			return coverage{}, err
		}
		lines = append(lines, line)
		if warning {
			c.warnings = append(c.warnings, line)
		}
	}
	c.message = "Swap coverage: " + strings.Join(lines, "; ")
	return c, nil
}

func swapCheckFailed(err error) coverage {
	return coverage{message: fmt.Sprintf("Swap coverage: cannot verify: %v", err)}
}

// poolCoverage describes one pool; warning is true when some node reports
// less swap than the ratio needs.
func poolCoverage(pool *unstructured.Unstructured, nodes []unstructured.Unstructured, ratio int32) (string, bool, error) {
	sel, err := machineconfig.PoolSelector(pool, "nodeSelector")
	if err != nil {
		return "", false, fmt.Errorf("MachineConfigPool '%s' has an invalid nodeSelector: %w", pool.GetName(), err)
	}
	var members []nodeSwap
	for i := range nodes {
		if sel.Matches(labels.Set(nodes[i].GetLabels())) {
			members = append(members, readNode(&nodes[i]))
		}
	}
	name := pool.GetName()
	if len(members) == 0 {
		return fmt.Sprintf("cannot verify MachineConfigPool '%s': no Node matches its nodeSelector", name), false, nil
	}
	var short []string
	unknown := 0
	for _, n := range members {
		needed := n.memory * int64(ratio-100) / 100
		switch {
		case !n.swapKnown || n.memory == 0:
			unknown++
		case n.swap < needed:
			short = append(short, fmt.Sprintf("node '%s' has %s of swap, %s needed (%s of memory)", n.name, gib(n.swap), gib(needed), gib(n.memory)))
		}
	}
	switch {
	case len(short) > 0:
		return fmt.Sprintf("WARNING: swap in MachineConfigPool '%s' does not cover memoryToRequestRatio %d: %s", name, ratio, strings.Join(short, ", ")), true, nil
	case unknown > 0:
		return fmt.Sprintf("cannot verify MachineConfigPool '%s': %d of %d nodes report no swap (status.nodeInfo.swap, Kubernetes 1.30+ once swap is on)", name, unknown, len(members)), false, nil
	default:
		return fmt.Sprintf("swap in MachineConfigPool '%s' covers memoryToRequestRatio %d on all %d nodes", name, ratio, len(members)), false, nil
	}
}

// gib prints bytes in GiB: 4 GiB, 2.5 GiB.
func gib(b int64) string {
	g := float64(b) / (1 << 30)
	if g == float64(int64(g)) {
		return fmt.Sprintf("%d GiB", int64(g))
	}
	return fmt.Sprintf("%.1f GiB", g)
}
