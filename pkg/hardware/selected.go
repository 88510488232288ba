package hardware

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kubevirt/virt-advisor/pkg/machineconfig"
)

// Selected is what a MachineConfig for one pool lands on: the nodes of
// every pool whose machineConfigSelector selects its labels (a custom
// pool such as worker-cnv usually selects the worker role too).
type Selected struct {
	// Pool holds the nodes of all the selecting pools, named after the
	// pool asked for.
	Pool Pool
	// Others are the selecting pools other than the one asked for.
	Others []string
	// PoolOf is the pool of each node.
	PoolOf map[string]string
}

// ReadSelected reads the facts of the nodes a MachineConfig with mcLabels
// for the named pool is rendered into. The named pool must exist and
// select those labels. NUMA zones are not read (one zone is assumed).
func ReadSelected(ctx context.Context, l Lister, poolName string, mcLabels map[string]string) (Selected, error) {
	pools, err := l.List(ctx, machineconfig.MachineConfigPoolGVK)
	if err != nil {
		return Selected{}, fmt.Errorf("listing MachineConfigPools: %w", err)
	}
	selecting, err := machineconfig.SelectingPools(pools, mcLabels)
	if err != nil {
		return Selected{}, err
	}
	var names []string
	found := false
	for i := range pools {
		found = found || pools[i].GetName() == poolName
	}
	for i := range selecting {
		names = append(names, selecting[i].GetName())
	}
	switch {
	case !found:
		return Selected{}, fmt.Errorf("there is no MachineConfigPool '%s'", poolName)
	case !contains(names, poolName):
		return Selected{}, fmt.Errorf("MachineConfigPool '%s' does not select MachineConfigs labelled %s (its spec.machineConfigSelector): give it a selector that matches its own role", poolName, labelString(mcLabels))
	}
	nodes, err := l.List(ctx, NodeGVK)
	if err != nil {
		return Selected{}, fmt.Errorf("listing Nodes: %w", err)
	}
	return selectedOf(poolName, selecting, pools, nodes, Topologies{NotServed: "NUMA zones not read"})
}

// selectedOf gathers the nodes of the pools that render a change meant
// for the named pool, each once, sorted by name, recording each node's
// pool.
func selectedOf(poolName string, rendering, pools, nodes []unstructured.Unstructured, topo Topologies) (Selected, error) {
	out := Selected{Pool: Pool{Name: poolName}}
	seen := map[string]bool{}
	for i := range rendering {
		p, err := ForPool(&rendering[i], pools, nodes, topo)
		if err != nil {
			return Selected{}, err
		}
		out.PoolOf = appendPool(out.PoolOf, p)
		if p.Name != poolName {
			out.Others = append(out.Others, p.Name)
		}
		for _, n := range p.Nodes {
			if !seen[n.Name] {
				seen[n.Name] = true
				out.Pool.Nodes = append(out.Pool.Nodes, n)
			}
		}
	}
	sort.Slice(out.Pool.Nodes, func(i, j int) bool { return out.Pool.Nodes[i].Name < out.Pool.Nodes[j].Name })
	return out, nil
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

func labelString(l map[string]string) string {
	var parts []string
	for k, v := range l {
		parts = append(parts, k+"="+v)
	}
	sort.Strings(parts)
	return strings.Join(parts, ",")
}
