package hardware

import (
	"fmt"
	"sort"
	"strings"
)

// Fact is one thing a node is made of that a derived value may depend on.
type Fact string

const (
	CPUs         Fact = "CPU count"
	Memory       Fact = "allocatable memory"
	HugePages    Fact = "huge pages"
	Vendor       Fact = "CPU vendor"
	Architecture Fact = "architecture"
	NUMAZones    Fact = "NUMA zones"
	SMT          Fact = "hardware multithreading"
)

// gib is memory compared in whole GiB: the kernel and firmware reserve a
// few MiB that differ between nodes of one model.
const gib = int64(1) << 30

// value is how a fact reads on a node, as compared and shown.
func (n Node) value(f Fact) string {
	switch f {
	case CPUs:
		return fmt.Sprintf("%d", n.CPUs)
	case Memory:
		return fmt.Sprintf("%d GiB", n.Memory/gib)
	case HugePages:
		if len(n.HugePages) == 0 {
			return "none"
		}
		var parts []string
		for name, bytes := range n.HugePages {
			parts = append(parts, fmt.Sprintf("%s %s", strings.TrimPrefix(name, hugePagesPrefix), bytesString(bytes)))
		}
		sort.Strings(parts)
		return strings.Join(parts, ", ")
	case Vendor:
		return n.Vendor
	case Architecture:
		if n.Architecture == "" {
			return "unknown"
		}
		return n.Architecture
	case SMT:
		return n.SMT
	case NUMAZones:
		per := make([]string, len(n.Zones))
		for i, z := range n.Zones {
			per[i] = fmt.Sprintf("%d", z.CPUs)
		}
		return fmt.Sprintf("%d (CPUs %s)", len(n.Zones), strings.Join(per, "+"))
	}
	return ""
}

func bytesString(b int64) string {
	if b%gib == 0 {
		return fmt.Sprintf("%dGi", b/gib)
	}
	return fmt.Sprintf("%dMi", b>>20)
}

// NotUniformError says that a pool's nodes differ in a fact a value
// depends on, naming the nodes of each value.
type NotUniformError struct {
	Pool string
	Fact Fact
	// Groups are the nodes of each value, the largest group first.
	Groups []Group
}

// Group is the nodes that share a value.
type Group struct {
	Value string
	Nodes []string
}

func (e *NotUniformError) Error() string {
	parts := make([]string, len(e.Groups))
	for i, g := range e.Groups {
		verb := "has"
		if len(g.Nodes) > 1 {
			verb = "have"
		}
		parts[i] = fmt.Sprintf("%s %s %s", strings.Join(g.Nodes, ", "), verb, g.Value)
	}
	return fmt.Sprintf("the nodes of MachineConfigPool '%s' differ in %s: %s; split the pool so that its nodes are alike, or set the value explicitly",
		e.Pool, e.Fact, strings.Join(parts, "; "))
}

// Uniform returns nil when every node of the pool reads the same for each
// of the facts, else a NotUniformError for the first fact that differs.
func (p Pool) Uniform(facts ...Fact) error {
	for _, f := range facts {
		byValue := map[string][]string{}
		for _, n := range p.Nodes {
			v := n.value(f)
			byValue[v] = append(byValue[v], n.Name)
		}
		if len(byValue) <= 1 {
			continue
		}
		e := &NotUniformError{Pool: p.Name, Fact: f}
		for v, nodes := range byValue {
			e.Groups = append(e.Groups, Group{Value: v, Nodes: nodes})
		}
		sort.Slice(e.Groups, func(i, j int) bool {
			if len(e.Groups[i].Nodes) != len(e.Groups[j].Nodes) {
				return len(e.Groups[i].Nodes) > len(e.Groups[j].Nodes)
			}
			return e.Groups[i].Value < e.Groups[j].Value
		})
		return e
	}
	return nil
}

// Describe says what the pool's nodes are, for a plan's "derived from":
// "3 nodes with 64 CPUs in 2 NUMA zones". It describes the first node;
// call it on a pool found Uniform in CPUs and NUMAZones. A topology that
// was assumed says so.
func (p Pool) Describe() string {
	if len(p.Nodes) == 0 {
		return fmt.Sprintf("MachineConfigPool '%s' has no nodes", p.Name)
	}
	n := p.Nodes[0]
	nodes := fmt.Sprintf("%d nodes", len(p.Nodes))
	if len(p.Nodes) == 1 {
		nodes = "1 node"
	}
	zones := fmt.Sprintf("%d NUMA zones", len(n.Zones))
	if len(n.Zones) == 1 {
		zones = "1 NUMA zone"
	}
	out := fmt.Sprintf("%s with %d CPUs in %s", nodes, n.CPUs, zones)
	if n.ZonesAssumed != "" {
		out += " (" + n.ZonesAssumed + ")"
	}
	return out
}
