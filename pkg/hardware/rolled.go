package hardware

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/kubevirt/virt-advisor/pkg/machineconfig"
)

// ReadRolled reads the facts, NUMA zones included, of every node a change
// meant for the named pool lands on: the nodes of every pool that renders
// it (machineconfig.RolledPools; a KubeletConfig for worker is rendered as
// a MachineConfig with role worker, which a custom pool such as worker-cnv
// renders too). The named pool must be one of them.
func ReadRolled(ctx context.Context, l Lister, poolName string, change machineconfig.Change) (Selected, error) {
	pools, err := l.List(ctx, machineconfig.MachineConfigPoolGVK)
	if err != nil {
		return Selected{}, fmt.Errorf("listing MachineConfigPools: %w", err)
	}
	rolled, err := machineconfig.RolledPools(pools, change)
	if err != nil {
		return Selected{}, err
	}
	found, rolls := false, false
	for i := range pools {
		found = found || pools[i].GetName() == poolName
	}
	for i := range rolled {
		rolls = rolls || rolled[i].GetName() == poolName
	}
	switch {
	case !found:
		return Selected{}, fmt.Errorf("there is no MachineConfigPool '%s'", poolName)
	case !rolls:
		return Selected{}, fmt.Errorf("MachineConfigPool '%s' does not render what %s '%s' is rendered as (its spec.machineConfigSelector does not select role '%s'): give it a selector that matches its own role", poolName, kindOf(change), change.Name, poolName)
	}
	nodes, err := l.List(ctx, NodeGVK)
	if err != nil {
		return Selected{}, fmt.Errorf("listing Nodes: %w", err)
	}
	topo, err := readTopologies(ctx, l)
	if err != nil {
		return Selected{}, err
	}
	return selectedOf(poolName, rolled, pools, nodes, topo)
}

func kindOf(c machineconfig.Change) string {
	if c.KubeletConfig {
		return machineconfig.KubeletConfigGVK.Kind
	}
	return machineconfig.MachineConfigGVK.Kind
}

// appendPool records which pool each of p's nodes is in.
func appendPool(m map[string]string, p Pool) map[string]string {
	if m == nil {
		m = map[string]string{}
	}
	for _, n := range p.Nodes {
		if _, ok := m[n.Name]; !ok {
			m[n.Name] = p.Name
		}
	}
	return m
}

// Explain says, of an error of Uniform over the nodes of several pools,
// which pools render what (what: e.g. "MachineConfig '50-worker-hugepages'")
// and which pool each node is in: a custom pool that inherits the named
// pool's MachineConfigs is no pool to split, the choice of pool is. Any
// other error is returned as it is.
func (s Selected) Explain(err error, what string) error {
	var nu *NotUniformError
	if len(s.Others) == 0 || !errors.As(err, &nu) {
		return err
	}
	parts := make([]string, len(nu.Groups))
	for i, g := range nu.Groups {
		verb := "has"
		if len(g.Nodes) > 1 {
			verb = "have"
		}
		parts[i] = fmt.Sprintf("%s %s %s", s.byPool(g.Nodes), verb, g.Value)
	}
	// What the caller said around the NotUniformError stays.
	before, after, _ := strings.Cut(err.Error(), nu.Error())
	all := append([]string{s.Pool.Name}, s.Others...)
	return fmt.Errorf("%s%s for MachineConfigPool '%s' is rendered by MachineConfigPools %s (each one's machineConfigSelector selects it), whose nodes differ in %s: %s; "+
		"choose a pool whose nodes are alike and whose MachineConfigs no other pool renders (a custom pool such as %s), or make the nodes alike%s",
		before, what, s.Pool.Name, quoteAll(all), nu.Fact, strings.Join(parts, "; "), s.Others[0], after)
}

// byPool names nodes by pool: "cnv-0, cnv-1 of pool worker-cnv and
// worker-0 of pool worker", pools in the order their first node comes.
func (s Selected) byPool(nodes []string) string {
	var order []string
	of := map[string][]string{}
	for _, n := range nodes {
		p := s.PoolOf[n]
		if _, ok := of[p]; !ok {
			order = append(order, p)
		}
		of[p] = append(of[p], n)
	}
	parts := make([]string, len(order))
	for i, p := range order {
		parts[i] = fmt.Sprintf("%s of pool %s", strings.Join(of[p], ", "), p)
	}
	return strings.Join(parts, " and ")
}

func quoteAll(names []string) string {
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = "'" + n + "'"
	}
	return strings.Join(q, ", ")
}
