package dedicatedcpus

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/kubevirt/virt-advisor/pkg/hardware"
)

// The CPU numbering assumed. A NodeResourceTopology gives each NUMA zone's
// CPU count, not its CPU ids, and the kubelet's reservedSystemCPUs takes
// ids. The profile assumes the numbering Linux gives common x86 servers
// (the ACPI MADT order, which firmware lists socket by socket, first
// threads first): the first thread of every core, zone by zone, then their
// SMT siblings in the same order, each at +N/2 of its core (N the node's
// logical CPUs). A 2-zone node with 64 CPUs and SMT thus has cores 0-15
// (siblings 32-47) in zone 0 and 16-31 (siblings 48-63) in zone 1, as
// `lscpu -e` shows on such machines. Not every machine is numbered so
// (some firmware interleaves zones: even CPUs in zone 0, odd in zone 1);
// the plan says what it assumed, and the kubelet checks nothing of it. A
// node without multithreading has its CPUs zone by zone.
const (
	numberingSMT   = "cores zone by zone, SMT siblings at +%d"
	numberingNoSMT = "CPUs zone by zone, no SMT"
)

// totalReservedMiB is what reservedMemory must add up to (the kubelet's
// memory manager requires it).
const totalReservedMiB = systemReservedMiB + kubeReservedMiB + evictionHardMiB

// ReservedMemoryMiB is what the reservedMemory the profile writes adds up
// to: the admission policy admits no other sum.
const ReservedMemoryMiB = totalReservedMiB

// MaxNUMANode is the highest NUMA node reservedMemory may name: the
// admission policy admits the nodes 0 to MaxNUMANode, each once.
const MaxNUMANode = 63

// reservation is what the profile derives from a pool's nodes.
type reservation struct {
	// cpus is reservedSystemCPUs; cpusWhy says how many cores of which
	// zones; from describes the pool; numbering the CPU numbering assumed.
	cpus, cpusWhy, from, numbering string
	memory                         []zoneMemory
	// others are the pools other than the one asked for that render the
	// KubeletConfig (their nodes are counted in from).
	others []string
}

// zoneMemory is one reservedMemory entry.
type zoneMemory struct {
	numaNode int
	mib      int
}

func (r reservation) memoryString() string {
	parts := make([]string, len(r.memory))
	for i, z := range r.memory {
		parts[i] = fmt.Sprintf("%dMi on NUMA node %d", z.mib, z.numaNode)
	}
	return strings.Join(parts, ", ")
}

// derive reserves coresPerZone cores of every NUMA zone (with their SMT
// siblings) and spreads the reserved memory over the zones. The pool's
// nodes must agree on every fact a value depends on: CPUs, NUMA zones,
// multithreading and architecture; a pool that does not refuses, naming
// its nodes and what differs.
func derive(pool hardware.Pool, coresPerZone int) (reservation, error) {
	if len(pool.Nodes) == 0 {
		return reservation{}, fmt.Errorf("MachineConfigPool '%s' has no nodes: the reserved CPUs are derived from its nodes' CPUs and NUMA zones", pool.Name)
	}
	if err := pool.Uniform(hardware.CPUs, hardware.NUMAZones, hardware.SMT, hardware.Architecture); err != nil {
		return reservation{}, err
	}
	n := pool.Nodes[0]
	if n.Architecture != "" && n.Architecture != "amd64" {
		return reservation{}, fmt.Errorf("the nodes of MachineConfigPool '%s' are %s: the CPU numbering the reserved CPUs are derived with is known for amd64 only", pool.Name, n.Architecture)
	}
	threads := 1
	if n.SMT != hardware.SMTOff {
		threads = 2 // on, or unknown: reserving both threads of a core is the safe side
	}
	zones := len(n.Zones)
	perZone := n.CPUs / int64(zones)
	for _, z := range n.Zones {
		if z.CPUs != perZone || perZone*int64(zones) != n.CPUs {
			return reservation{}, fmt.Errorf("node '%s' of MachineConfigPool '%s' has %d CPUs in NUMA zones of %s CPUs: the reserved CPUs are derived for zones of equal size only",
				n.Name, pool.Name, n.CPUs, zoneSizes(n.Zones))
		}
	}
	if perZone%int64(threads) != 0 {
		return reservation{}, fmt.Errorf("node '%s' of MachineConfigPool '%s' has %d CPUs per NUMA zone, not a whole number of 2-thread cores", n.Name, pool.Name, perZone)
	}
	cores := int(perZone) / threads
	if coresPerZone >= cores {
		return reservation{}, fmt.Errorf("reservedCoresPerZone %d leaves no core to pin in the %d-core NUMA zones of MachineConfigPool '%s': reserve fewer", coresPerZone, cores, pool.Name)
	}
	r := reservation{from: pool.Describe(), cpus: cpuList(int(n.CPUs), zones, cores, threads, coresPerZone), numbering: numberingNoSMT}
	if threads == 2 {
		r.numbering = fmt.Sprintf(numberingSMT, n.CPUs/2)
		if n.SMT == hardware.SMTUnknown {
			r.numbering += "; multithreading assumed on, no node-feature-discovery label says otherwise"
		}
	}
	r.cpusWhy = reservedCoresWhy(coresPerZone, threads)
	r.memory = spreadMemory(n.Zones)
	return r, nil
}

// reservedCoresWhy says which CPUs of each zone are reserved: "1 core per
// NUMA zone with its SMT sibling".
func reservedCoresWhy(coresPerZone, threads int) string {
	unit := "core"
	if coresPerZone > 1 {
		unit = "cores"
	}
	sibling := ""
	if threads == 2 {
		sibling = " with its SMT sibling"
		if coresPerZone > 1 {
			sibling = " with their SMT siblings"
		}
	}
	return fmt.Sprintf("%d %s per NUMA zone%s", coresPerZone, unit, sibling)
}

// cpuList is reservedSystemCPUs in the assumed numbering: the first
// reserve cores of every zone, and their siblings.
func cpuList(total, zones, cores, threads, reserve int) string {
	var ids []int
	for t := 0; t < threads; t++ {
		for z := 0; z < zones; z++ {
			for c := 0; c < reserve; c++ {
				ids = append(ids, t*total/threads+z*cores+c)
			}
		}
	}
	return ranges(ids)
}

// ranges writes sorted CPU ids as the kubelet's cpuset list: 0-1,16-17.
func ranges(ids []int) string {
	var parts []string
	for i := 0; i < len(ids); {
		j := i
		for j+1 < len(ids) && ids[j+1] == ids[j]+1 {
			j++
		}
		if j == i {
			parts = append(parts, strconv.Itoa(ids[i]))
		} else {
			parts = append(parts, fmt.Sprintf("%d-%d", ids[i], ids[j]))
		}
		i = j + 1
	}
	return strings.Join(parts, ",")
}

// spreadMemory spreads totalReservedMiB evenly over the zones (the
// remainder on the first), each on the NUMA node of its zone (the
// hardware package checked the ids: 0 to zones-1, each once).
func spreadMemory(zones []hardware.Zone) []zoneMemory {
	out := make([]zoneMemory, len(zones))
	each := totalReservedMiB / len(zones)
	for i, z := range zones {
		out[i] = zoneMemory{numaNode: z.NUMAID, mib: each}
	}
	out[0].mib += totalReservedMiB - each*len(zones)
	return out
}

func zoneSizes(zones []hardware.Zone) string {
	parts := make([]string, len(zones))
	for i, z := range zones {
		parts[i] = strconv.FormatInt(z.CPUs, 10)
	}
	return strings.Join(parts, "+")
}
