package machineconfig

import (
	"fmt"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kubevirt/virt-advisor/pkg/apis/advisor/v1alpha1"
)

// Change is a MachineConfig or KubeletConfig that a plan creates, changes
// or deletes (ChangeOf), with what the pools that render it are found by
// (for a Delete, the live object's): a MachineConfig's labels, which a
// pool's machineConfigSelector selects, or a KubeletConfig's
// machineConfigPoolSelector, which selects the pools it is generated for
// by their labels; the MachineConfigs generated for them (role <pool>)
// are then rendered by every pool that selects them (Rendered).
type Change struct {
	Name   string
	Labels map[string]string
	// KubeletConfig: the change is a KubeletConfig's; PoolSelector is its
	// spec.machineConfigPoolSelector.
	KubeletConfig bool
	PoolSelector  map[string]interface{}
	// Suffix is the KubeletConfig's recorded suffix (MCNameSuffixAnnotation)
	// of the MachineConfigs generated from it; "" before it has one.
	Suffix string
}

// SameObject is true when o changes the same object as c: the same
// MachineConfig, or the same KubeletConfig.
func (c Change) SameObject(o Change) bool {
	return c.Name == o.Name && c.KubeletConfig == o.KubeletConfig
}

// Reboot is what applying changes does to one MachineConfigPool: the
// MachineConfig operator renders the changed MachineConfigs it selects
// and reboots each of its nodes.
type Reboot struct {
	Pool     string
	Machines int64
	Paused   bool
	Configs  []string // the changed MachineConfigs the pool selects
}

// Rolls returns, sorted by pool name, every pool that selects at least
// one of the changes: the pools whose nodes the changes reboot.
func Rolls(pools []unstructured.Unstructured, changes []Change) ([]Reboot, error) {
	var out []Reboot
	for i := range pools {
		pool := &pools[i]
		r := Reboot{Pool: pool.GetName(), Machines: Count(pool, "machineCount")}
		r.Paused, _, _ = unstructured.NestedBool(pool.Object, "spec", "paused")
		for _, c := range changes {
			selects, err := c.RolledBy(pool, pools)
			if err != nil {
				return nil, err
			}
			if selects {
				r.Configs = append(r.Configs, c.Name)
			}
		}
		if len(r.Configs) > 0 {
			out = append(out, r)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Pool < out[j].Pool })
	return out, nil
}

// FormatReboots says in one line which nodes the changes reboot, e.g.
// "pool worker, 3 nodes, once". The MachineConfigs of an approved plan are
// written into a paused pool (the coalescing window), so several of them
// roll out together and reboot each node once.
func FormatReboots(changes []Change, reboots []Reboot) string {
	if len(changes) == 0 {
		return "none"
	}
	if len(reboots) == 0 {
		names := make([]string, len(changes))
		for i, c := range changes {
			names[i] = c.Name
		}
		return "none (no MachineConfigPool selects " + strings.Join(names, ", ") + ")"
	}
	parts := make([]string, len(reboots))
	for i, r := range reboots {
		nodes := fmt.Sprintf("%d nodes", r.Machines)
		if r.Machines == 1 {
			nodes = "1 node"
		}
		times := "once"
		if n := len(r.Configs); n > 1 {
			times = fmt.Sprintf("once (%d MachineConfigs rolled out together: %s)", n, strings.Join(r.Configs, ", "))
		}
		parts[i] = fmt.Sprintf("pool %s, %s, %s", r.Pool, nodes, times)
		if r.Paused {
			parts[i] += ", when the pool is unpaused"
		}
	}
	return strings.Join(parts, "; ")
}

// ItemReboots is the reboot part of one plan item that writes or deletes
// a MachineConfig: the pools it rolls, for status, and the note of its
// message ("reboots: pool worker, 3 nodes, once").
func ItemReboots(pools []unstructured.Unstructured, change Change) ([]v1alpha1.PoolReboot, string) {
	out, err := PoolReboots(pools, change)
	if err != nil {
		return nil, "reboots: unknown (" + err.Error() + ")"
	}
	return out, "reboots: " + FormatReboots([]Change{change}, rebootsOf(out))
}

// PoolReboots are the pools a change rolls out on, sorted by name; nil
// when no pool selects it.
func PoolReboots(pools []unstructured.Unstructured, change Change) ([]v1alpha1.PoolReboot, error) {
	reboots, err := Rolls(pools, []Change{change})
	if err != nil {
		return nil, err
	}
	var out []v1alpha1.PoolReboot
	for _, r := range reboots {
		out = append(out, v1alpha1.PoolReboot{Pool: r.Pool, Nodes: r.Machines, Paused: r.Paused})
	}
	return out, nil
}

func rebootsOf(prs []v1alpha1.PoolReboot) []Reboot {
	out := make([]Reboot, len(prs))
	for i, r := range prs {
		out[i] = Reboot{Pool: r.Pool, Machines: r.Nodes, Paused: r.Paused}
	}
	return out
}
