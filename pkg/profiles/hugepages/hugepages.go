// Package hugepages implements the hugepages profile: a MachineConfig of
// kernel arguments that reserve huge pages at boot on the nodes of one
// MachineConfigPool, their count a share of the nodes' memory that never
// leaves less than the kubelet's reservations plus a floor for ordinary
// pods and VMs. The nodes reboot one by one as the pool rolls it out.
//
// The kernel arguments are those of the Linux kernel's
// Documentation/admin-guide/mm/hugetlbpage.rst and
// Documentation/admin-guide/kernel-parameters.txt: hugepagesz=<size>
// followed by hugepages=<count> reserves count pages of that size at boot
// (1G pages can only be reserved there, not at run time, as memory
// fragments), and default_hugepagesz=<size> makes that size the default
// (the one of /dev/hugepages and of a hugetlbfs mount without pagesize).
// The kubelet then reports them as the node's hugepages-1Gi or
// hugepages-2Mi capacity, taken out of its allocatable memory.
package hugepages

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/kubevirt/virt-advisor/pkg/apis/advisor"
	"github.com/kubevirt/virt-advisor/pkg/apis/advisor/v1alpha1"
	"github.com/kubevirt/virt-advisor/pkg/apis/advisor/validation"
	"github.com/kubevirt/virt-advisor/pkg/hardware"
	"github.com/kubevirt/virt-advisor/pkg/machineconfig"
	"github.com/kubevirt/virt-advisor/pkg/profiles"
)

// Name is the profile name; ItemName its one item; OptionsBlock the JSON
// name of its block of spec.options (ProfileOptions.Hugepages).
const (
	Name         = "hugepages"
	ItemName     = "configure-hugepages"
	OptionsBlock = "hugepages"
)

// NamePrefix and NameSuffix frame the pool's name in the MachineConfig's
// name: 50-<pool>-virt-advisor-hugepages.
const (
	NamePrefix = "50-"
	NameSuffix = "-virt-advisor-hugepages"
)

// MachineConfigName is the MachineConfig of a pool.
func MachineConfigName(pool string) string { return NamePrefix + pool + NameSuffix }

// The options' bounds. Above MemoryPercent.Max any node is left less than
// the floor (default 8 GiB) at once for all but the largest nodes: refused
// from the options alone.
var (
	MemoryPercent = validation.OptionRange("hugepages.memoryPercent")
	FloorGiB      = validation.OptionRange("hugepages.floorGiB")
	// PageSizes are the sizes of options.hugepages.pageSize.
	PageSizes = validation.OptionValues("hugepages.pageSize")
	// MaxCount bounds the count written (hugepages=): 1 PiB of 1G pages;
	// the admission policy's pattern admits 1 to MaxCount exactly.
	MaxCount = int64(1 << 20)
)

// pageBytes are the sizes in bytes.
var pageBytes = map[string]int64{"1G": 1 << 30, "2M": 2 << 20}

const gib = int64(1) << 30

// KernelArgumentPatterns are the regular expressions of the kernel
// arguments the profile writes: the admission policy admits no other.
func KernelArgumentPatterns() []string {
	return []string{
		"^default_hugepagesz=(" + strings.Join(PageSizes, "|") + ")$",
		"^hugepagesz=(" + strings.Join(PageSizes, "|") + ")$",
		"^hugepages=" + countPattern(MaxCount) + "$",
	}
}

// countPattern is a regular expression of the decimal numbers 1 to max
// (max ≥ 10), no leading zero: the numbers of fewer digits than max,
// then, digit by digit, those of as many digits that start like max and
// are below it at that digit, and max itself.
func countPattern(max int64) string {
	d := strconv.FormatInt(max, 10)
	alts := []string{"[1-9]" + repeat(len(d)-2, true)}
	for i := range len(d) {
		low := byte('0')
		if i == 0 {
			low = '1'
		}
		if d[i] <= low {
			continue
		}
		alt := d[:i] + digits(low, d[i]-1)
		alts = append(alts, alt+repeat(len(d)-i-1, false))
	}
	return "(" + strings.Join(append(alts, d), "|") + ")"
}

// repeat is n decimal digits, or up to n.
func repeat(n int, upTo bool) string {
	switch {
	case n == 0:
		return ""
	case n == 1 && upTo:
		return "[0-9]?"
	case n == 1:
		return "[0-9]"
	case upTo:
		return fmt.Sprintf("[0-9]{0,%d}", n)
	}
	return fmt.Sprintf("[0-9]{%d}", n)
}

// digits is the character class of the digits from to to.
func digits(from, to byte) string {
	if from == to {
		return string(from)
	}
	return "[" + string(from) + "-" + string(to) + "]"
}

type profile struct{}

// New returns the hugepages profile.
func New() profiles.Profile { return profile{} }

var machineConfigs = schema.GroupResource{Group: machineconfig.MachineConfigGVK.Group, Resource: "machineconfigs"}

func (profile) Metadata() profiles.Metadata {
	return profiles.Metadata{
		Name:            Name,
		Category:        "performance",
		Description:     "Reserves huge pages at boot on the nodes of a MachineConfigPool, a share of their memory",
		ImpactSummary:   "High - kernel arguments of a MachineConfig: the pool's nodes reboot one by one",
		Level:           v1alpha1.ImpactHigh,
		Advertised:      true,
		Options:         OptionsBlock,
		ValidateOptions: validateOptions,
		Writes: []profiles.Write{{
			Resource: machineConfigs, Name: MachineConfigName(profiles.PoolPlaceholder), Create: true, Delete: true,
			Fields:          []string{"kernelArguments"},
			KernelArguments: KernelArgumentPatterns(),
			Why:             "the huge page kernel arguments (default_hugepagesz, hugepagesz, hugepages) of the chosen pool",
		}},
		Reads: []profiles.Read{
			{Resource: profiles.PoolsResource, Why: "the chosen pool"},
			{Resource: profiles.NodesResource, Why: "the memory of its nodes"},
		},
		Examples: examples(),
		SampleNote: "Huge pages reserved at boot on the nodes of one MachineConfigPool: a\n" +
			"MachineConfig with the kernel arguments default_hugepagesz, hugepagesz and\n" +
			"hugepages, the count a share of each node's memory that leaves at least\n" +
			"floorGiB (beyond the kubelet's reservations) to ordinary pods and VMs.\n" +
			"The pool's nodes reboot one by one during the rollout.\n",
	}
}

func (profile) Prerequisites(v1alpha1.ProfileOptions) []profiles.Prerequisite {
	return []profiles.Prerequisite{{GVK: machineconfig.MachineConfigGVK, Description: "MachineConfig CRD is required for kernel arguments (available on OpenShift)"}}
}

// options are the options with every default resolved.
type options struct {
	pool, size     string
	percent, floor int64
}

func resolve(c *v1alpha1.HugepagesConfig) options {
	o := options{pool: machineconfig.WorkerPool, size: "1G", percent: 50, floor: 8}
	if c == nil {
		return o
	}
	if c.Pool != "" {
		o.pool = c.Pool
	}
	if c.PageSize != "" {
		o.size = c.PageSize
	}
	if c.MemoryPercent != nil {
		o.percent = int64(*c.MemoryPercent)
	}
	if c.FloorGiB != nil {
		o.floor = int64(*c.FloorGiB)
	}
	return o
}

// Items reads the nodes the MachineConfig lands on and derives the count.
func (profile) Items(ctx context.Context, in profiles.Inputs) ([]profiles.Item, error) {
	o := resolve(in.Options.Hugepages)
	labels := map[string]string{machineconfig.RoleLabel: o.pool}
	sel, err := hardware.ReadSelected(ctx, in.Cluster, o.pool, labels)
	if err != nil {
		return []profiles.Item{refused(o.pool, err)}, nil
	}
	c, err := derive(o, sel.Pool)
	if err != nil {
		return []profiles.Item{refused(o.pool, sel.Explain(err, fmt.Sprintf("MachineConfig '%s' (role '%s')", MachineConfigName(o.pool), o.pool)))}, nil
	}
	return []profiles.Item{item(o, c, sel)}, nil
}

// count is the pages each node gets, and what each node keeps.
type count struct {
	pages int64
	// base is what each node has before huge pages (allocatable memory
	// plus the huge pages it has now), left what it keeps after, by node.
	nodes []nodeCount
}

type nodeCount struct {
	name       string
	base, left int64
}

// derive sizes the count from the pool's smallest node (they agree to the
// GiB, or the pool is refused): percent of the memory a node has before
// huge pages, which is its allocatable memory (capacity less the
// kubelet's reservations and eviction threshold) plus the huge pages it
// already has. Counting those back makes the count stable once the pool
// has rolled it out. Whatever is left must cover the floor.
func derive(o options, p hardware.Pool) (count, error) {
	if len(p.Nodes) == 0 {
		return count{}, fmt.Errorf("MachineConfigPool '%s' has no nodes: the huge page count is derived from their memory", p.Name)
	}
	for _, n := range p.Nodes {
		if err := withinCapacity(n); err != nil {
			return count{}, err
		}
	}
	before := hardware.Pool{Name: p.Name}
	for _, n := range p.Nodes {
		n.Memory += sum(n.HugePages)
		n.HugePages = nil
		before.Nodes = append(before.Nodes, n)
	}
	if err := before.Uniform(hardware.Memory); err != nil {
		return count{}, fmt.Errorf("%w (memory before huge pages: allocatable memory plus the huge pages a node has)", err)
	}
	smallest := before.Nodes[0].Memory
	for _, n := range before.Nodes {
		smallest = min(smallest, n.Memory)
	}
	if smallest <= 0 {
		return count{}, fmt.Errorf("the nodes of MachineConfigPool '%s' report no allocatable memory (status.allocatable.memory): the huge page count is derived from it", p.Name)
	}
	page := pageBytes[o.size]
	c := count{pages: smallest * o.percent / 100 / page}
	if c.pages < 1 {
		return count{}, fmt.Errorf("%d%% of %s is less than one %s page: raise options.hugepages.memoryPercent or choose pageSize 2M", o.percent, gibString(smallest), o.size)
	}
	c.pages = min(c.pages, MaxCount)
	for _, n := range before.Nodes {
		nc := nodeCount{name: n.Name, base: n.Memory, left: n.Memory - c.pages*page}
		if nc.left < o.floor*gib {
			return count{}, fmt.Errorf("%d%% of node '%s''s %s is %d %s pages, leaving %s for ordinary pods and VMs beyond the kubelet's reservations, less than the floor of %d GiB (options.hugepages.floorGiB): lower options.hugepages.memoryPercent to at most %d",
				o.percent, n.Name, gibString(n.Memory), c.pages, o.size, gibString(nc.left), o.floor, maxPercent(smallest, o.floor))
		}
		c.nodes = append(c.nodes, nc)
	}
	return c, nil
}

// withinCapacity checks what the count is sized from against the
// node's memory: its kubelet takes huge pages and its reservations out of
// the memory capacity to report allocatable memory, so allocatable memory
// plus huge pages above the capacity is a report that cannot be true, and
// a count sized from it could reserve memory the node lacks (a node that
// does not boot, or boots with no memory left).
func withinCapacity(n hardware.Node) error {
	pages := sum(n.HugePages)
	switch {
	case n.MemoryCapacity <= 0:
		return fmt.Errorf("node '%s' reports no memory capacity (status.capacity.memory): the huge page count is sized from its allocatable memory only within it; check the node's kubelet", n.Name)
	case n.Memory+pages > n.MemoryCapacity:
		return fmt.Errorf("node '%s' reports %s of allocatable memory and %s of huge pages, more than its memory capacity of %s (status.allocatable.memory, the hugepages-* and memory of status.capacity): the huge page count is not sized from a report that cannot be true; check the node's kubelet",
			n.Name, gibString(n.Memory), gibString(pages), gibString(n.MemoryCapacity))
	}
	return nil
}

// maxPercent is the largest percentage that leaves the floor on a node of
// this memory (0 when none does).
func maxPercent(memory, floor int64) int64 {
	return max(0, (memory-floor*gib)*100/memory)
}

func sum(m map[string]int64) int64 {
	var s int64
	for _, v := range m {
		s += v
	}
	return s
}

// gibString is bytes in GiB with one decimal.
func gibString(b int64) string {
	return fmt.Sprintf("%.1f GiB", float64(b)/float64(gib))
}

// KernelArguments are the kernel arguments of count pages of size.
func KernelArguments(size string, pages int64) []string {
	return []string{"default_hugepagesz=" + size, "hugepagesz=" + size, fmt.Sprintf("hugepages=%d", pages)}
}

func item(o options, c count, sel hardware.Selected) profiles.Item {
	name := MachineConfigName(o.pool)
	args := KernelArguments(o.size, c.pages)
	var list []interface{}
	for _, a := range args {
		list = append(list, a)
	}
	return profiles.Item{
		Name: ItemName,
		Desired: &unstructured.Unstructured{Object: map[string]interface{}{
			"apiVersion": machineconfig.MachineConfigGVK.GroupVersion().String(),
			"kind":       machineconfig.MachineConfigGVK.Kind,
			"metadata": map[string]interface{}{
				"name":   name,
				"labels": map[string]interface{}{machineconfig.RoleLabel: o.pool},
			},
			"spec": map[string]interface{}{"kernelArguments": list},
		}},
		ManagedFields: []string{"spec.kernelArguments"},
		Impact:        v1alpha1.ImpactHigh,
		Owned:         true,
		Message:       message(name, args, o, c, sel),
	}
}

func message(name string, args []string, o options, c count, sel hardware.Selected) string {
	var b strings.Builder
	fmt.Fprintf(&b, "MachineConfig '%s' will be configured with kernel arguments %s for MachineConfigPool '%s'",
		name, strings.Join(args, " "), o.pool)
	if len(sel.Others) > 0 {
		fmt.Fprintf(&b, " (also rendered into MachineConfigPool(s) %s, whose machineConfigSelector selects role '%s'; their nodes are counted)",
			quoted(sel.Others), o.pool)
	}
	fmt.Fprintf(&b, ": %d%% of each node's memory before huge pages, %d x %s pages per node; per node:", o.percent, c.pages, o.size)
	var parts []string
	for _, n := range c.nodes {
		parts = append(parts, fmt.Sprintf(" %s %d x %s of %s, %s left for ordinary pods and VMs", n.name, c.pages, o.size, gibString(n.base), gibString(n.left)))
	}
	b.WriteString(strings.Join(parts, ";"))
	fmt.Fprintf(&b, " (floor %d GiB, beyond the kubelet's reservations)", o.floor)
	return b.String()
}

func quoted(l []string) string {
	q := make([]string, len(l))
	for i, s := range l {
		q[i] = "'" + s + "'"
	}
	return strings.Join(q, ", ")
}

// InputObjects: the count is derived from the lists of pools and Nodes,
// read at every plan (a node that joins with other memory changes the
// desired state: a new review); the MachineConfig is the target.
func (profile) InputObjects(v1alpha1.ProfileOptions) []profiles.ObjectRef { return nil }

func (profile) DescribeInputChange(string, map[string]interface{}, map[string]interface{}) string {
	return "the memory of the pool's nodes changed (a node joined, left or was resized)"
}

func validateOptions(opts *advisor.ProfileOptions, fldPath *field.Path) field.ErrorList {
	o := opts.Hugepages
	var errs field.ErrorList
	// Bounds and values are the markers' (validation's declared checks).
	errs = append(errs, validation.ValidatePool(fldPath.Child("pool"), o.Pool, MachineConfigName)...)
	return errs
}

// refused is the item that cannot be planned: its MachineConfig's identity
// (the plan names its target) and why.
func refused(pool string, err error) profiles.Item {
	return profiles.Item{Name: ItemName, Err: err, Impact: v1alpha1.ImpactHigh, Desired: &unstructured.Unstructured{Object: map[string]interface{}{
		"apiVersion": machineconfig.MachineConfigGVK.GroupVersion().String(),
		"kind":       machineconfig.MachineConfigGVK.Kind,
		"metadata": map[string]interface{}{
			"name":   MachineConfigName(pool),
			"labels": map[string]interface{}{machineconfig.RoleLabel: pool},
		},
	}}}
}
