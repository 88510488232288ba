// Package dedicatedcpus implements the dedicated-cpus profile: a
// KubeletConfig for one MachineConfigPool whose nodes run VMs with
// dedicatedCpuPlacement, so that KubeVirt's pinned vCPUs get whole cores of
// one NUMA zone. The kubelet gets the static CPU manager, a topology
// manager policy and the static memory manager, with CPUs and memory
// reserved for the system in every NUMA zone, derived from the pool's
// nodes (pkg/hardware). The MachineConfig operator renders the
// KubeletConfig into 99-<pool>-generated-kubelet, which drains and reboots
// the pool's nodes one by one.
//
// The shape follows the reference KubeletConfig of
// openshift-virtualization/virt-platform-autopilot (its virt-cpu-manager
// asset: cpuManagerPolicy static, cpuManagerPolicyOptions full-pcpus-only,
// cpuManagerReconcilePeriod 5s, reservedSystemCPUs "0-1", memoryManagerPolicy
// Static, reservedMemory 1124Mi on NUMA node 0), with the reserved CPUs and
// memory spread over the NUMA zones the pool's nodes have instead of fixed.
// The KubeletConfig is selected by the pool's own label,
// pools.operator.machineconfiguration.openshift.io/<pool> (the label the
// MachineConfig operator's kubelet-config controller documents for
// machineConfigPoolSelector; openshift/machine-config-operator,
// pkg/controller/kubelet-config).
package dedicatedcpus

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilvalidation "k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/kubevirt/virt-advisor/pkg/apis/advisor"
	"github.com/kubevirt/virt-advisor/pkg/apis/advisor/v1alpha1"
	"github.com/kubevirt/virt-advisor/pkg/apis/advisor/validation"
	"github.com/kubevirt/virt-advisor/pkg/hardware"
	"github.com/kubevirt/virt-advisor/pkg/machineconfig"
	"github.com/kubevirt/virt-advisor/pkg/profiles"
)

// Name is the profile name; ItemName its one item; KubeletConfigName the
// KubeletConfig it makes (one name, whatever the pool: the server's RBAC
// names it); OptionsBlock the JSON name of its block of spec.options.
const (
	Name              = "dedicated-cpus"
	ItemName          = "configure-dedicated-cpus"
	KubeletConfigName = "virt-advisor-dedicated-cpus"
	OptionsBlock      = "dedicatedCPUs"
)

// TopologyManagerPolicies are the topology manager policies a pinned VM
// can live with: none would place its CPUs and memory on any zone.
var TopologyManagerPolicies = validation.OptionValues("dedicatedCPUs.topologyManagerPolicy")

// ReservedCoresPerZone bounds the option of that name.
var ReservedCoresPerZone = validation.OptionRange("dedicatedCPUs.reservedCoresPerZone")

// What the KubeletConfig sets besides the derived values.
const (
	cpuManagerReconcilePeriod = "5s"
	// The memory reserved for the system, the kubelet and the hard
	// eviction threshold, as the autopilot's reference KubeletConfig does.
	// The kubelet's memory manager (policy Static) refuses to start unless
	// the reservedMemory of all NUMA nodes adds up to kubeReserved +
	// systemReserved + evictionHard memory.available
	// (kubernetes.io/docs/tasks/administer-cluster/memory-manager/,
	// "Reserved memory flag"; validateReservedMemory in
	// pkg/kubelet/cm/memorymanager): the profile sets all three.
	systemReservedMiB = 512
	kubeReservedMiB   = 512
	evictionHardMiB   = 100
)

// evictionHard is the kubelet's default hard eviction thresholds (those
// the MachineConfig operator's templates write too), memory.available
// included: the profile sets the whole map so that none is lost when it
// sets the one that reservedMemory depends on.
func evictionHard() map[string]interface{} {
	return map[string]interface{}{
		"memory.available":  fmt.Sprintf("%dMi", evictionHardMiB),
		"nodefs.available":  "10%",
		"nodefs.inodesFree": "5%",
		"imagefs.available": "15%",
	}
}

// Pinned is what the KubeletConfig's kubeletConfig holds whatever the
// options and the nodes (the admission policy pins these values).
func Pinned() map[string]interface{} {
	return map[string]interface{}{
		"cpuManagerPolicy": "static",
		// Whole cores only: a pinned vCPU never shares a core with another
		// container's thread (the reserved CPUs are whole cores too).
		"cpuManagerPolicyOptions":   map[string]interface{}{"full-pcpus-only": "true"},
		"cpuManagerReconcilePeriod": cpuManagerReconcilePeriod,
		"memoryManagerPolicy":       "Static",
		"systemReserved":            map[string]interface{}{"memory": fmt.Sprintf("%dMi", systemReservedMiB)},
		"kubeReserved":              map[string]interface{}{"memory": fmt.Sprintf("%dMi", kubeReservedMiB)},
		"evictionHard":              evictionHard(),
	}
}

// Fields are the keys of the KubeletConfig's spec the profile sets.
var Fields = []string{"kubeletConfig", "machineConfigPoolSelector"}

// CPUSetPattern is what reservedSystemCPUs may hold: a cpuset list.
const CPUSetPattern = `^[0-9]{1,4}(-[0-9]{1,4})?(,[0-9]{1,4}(-[0-9]{1,4})?)*$`

// values are the value rules of what the profile writes into
// kubeletConfig: its pinned values, the topology manager policies it
// offers, a cpuset list of reserved CPUs (reservedMemory's rule, a sum
// over NUMA nodes, is the admission policy's own).
func values() []profiles.Value {
	var out []profiles.Value
	pinned := Pinned()
	keys := make([]string, 0, len(pinned))
	for k := range pinned {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		out = append(out, profiles.Value{Path: "kubeletConfig." + k, Pinned: pinned[k]})
	}
	return append(out,
		profiles.Value{Path: "kubeletConfig.topologyManagerPolicy", OneOf: TopologyManagerPolicies},
		profiles.Value{Path: "kubeletConfig.reservedSystemCPUs", Pattern: CPUSetPattern})
}

type profile struct{}

// New returns the dedicated-cpus profile.
func New() profiles.Profile { return profile{} }

func (profile) Metadata() profiles.Metadata {
	return profiles.Metadata{
		Name:            Name,
		Category:        "performance",
		Description:     "Static CPU, topology and memory managers on one pool for VMs with dedicatedCpuPlacement, with reserved CPUs and memory per NUMA zone",
		ImpactSummary:   "High - a KubeletConfig for one pool: its nodes are drained and rebooted one by one",
		Level:           v1alpha1.ImpactHigh,
		Advertised:      true,
		Options:         OptionsBlock,
		ValidateOptions: validateOptions,
		Writes: []profiles.Write{{
			Resource: schema.GroupResource{Group: machineconfig.KubeletConfigGVK.Group, Resource: machineconfig.KubeletConfigs.Resource},
			Name:     KubeletConfigName, Create: true, Delete: true,
			Fields: Fields, Values: values(),
			Why: "the kubelet's CPU, topology and memory managers for the chosen pool",
		}},
		Reads: []profiles.Read{
			{Resource: profiles.PoolsResource, Why: "the chosen pool"},
			{Resource: profiles.NodesResource, Why: "its nodes, followed as they join or change"},
			{Resource: schema.GroupResource{Group: hardware.NodeResourceTopologyGVK.Group, Resource: "noderesourcetopologies"}, Why: "the NUMA zones of its nodes (the topology exporter's NodeResourceTopology)"},
		},
		Examples: examples(),
		SampleNote: "Dedicated CPUs for VMs with dedicatedCpuPlacement on one pool: a\n" +
			"KubeletConfig with the static CPU manager, a topology manager policy and\n" +
			"the static memory manager, CPUs and memory reserved per NUMA zone from\n" +
			"the pool's nodes (which must be alike). Its nodes reboot one by one.\n" +
			"pool is required; worker needs allowAllWorkers: true.\n",
	}
}

func (profile) Prerequisites(v1alpha1.ProfileOptions) []profiles.Prerequisite {
	return []profiles.Prerequisite{
		{GVK: machineconfig.KubeletConfigGVK, Description: "KubeletConfig CRD is required (available on OpenShift)"},
		{GVK: machineconfig.MachineConfigPoolGVK, Description: "MachineConfigPool CRD is required (available on OpenShift)"},
	}
}

// options are the options with every default resolved.
type options struct {
	enabled         bool
	pool            string
	allowAllWorkers bool
	topologyPolicy  string
	coresPerZone    int
}

func resolve(c *v1alpha1.DedicatedCPUsConfig) options {
	o := options{enabled: true, topologyPolicy: TopologyManagerPolicies[0], coresPerZone: 1}
	if c == nil {
		return o
	}
	if c.Enabled != nil {
		o.enabled = *c.Enabled
	}
	o.pool = c.Pool
	if c.AllowAllWorkers != nil {
		o.allowAllWorkers = *c.AllowAllWorkers
	}
	if c.TopologyManagerPolicy != "" {
		o.topologyPolicy = c.TopologyManagerPolicy
	}
	if c.ReservedCoresPerZone != nil {
		o.coresPerZone = int(*c.ReservedCoresPerZone)
	}
	return o
}

// Items reads the pool's nodes and derives the KubeletConfig; disabled,
// it asks for the KubeletConfig to be gone (deleted only if the profile
// made it).
func (profile) Items(ctx context.Context, in profiles.Inputs) ([]profiles.Item, error) {
	o := resolve(in.Options.DedicatedCPUs)
	if !o.enabled {
		return []profiles.Item{absentItem()}, nil
	}
	if o.pool == "" {
		return []profiles.Item{failedItem(fmt.Errorf("options.%s.pool is required: name the MachineConfigPool whose nodes run VMs with dedicatedCpuPlacement", OptionsBlock))}, nil
	}
	// Every node the KubeletConfig lands on: those of the pools that
	// render the MachineConfig generated from it (role <pool>), which
	// custom pools selecting that role render too.
	sel, err := hardware.ReadRolled(ctx, in.Cluster, o.pool, kubeletChange(o.pool))
	if err != nil {
		return []profiles.Item{failedItem(err)}, nil
	}
	r, err := derive(sel.Pool, o.coresPerZone)
	if err != nil {
		what := fmt.Sprintf("KubeletConfig '%s' (rendered as MachineConfig '%s' with role '%s')", KubeletConfigName, machineconfig.GeneratedKubeletName(o.pool, ""), o.pool)
		return []profiles.Item{failedItem(sel.Explain(err, what))}, nil
	}
	r.others = sel.Others
	return []profiles.Item{kubeletItem(o, r)}, nil
}

// poolSelector selects the pool by its own label.
func poolSelector(pool string) map[string]interface{} {
	return map[string]interface{}{"matchLabels": map[string]interface{}{machineconfig.PoolLabelPrefix + pool: ""}}
}

// kubeletChange is what the pools the KubeletConfig rolls are found by.
func kubeletChange(pool string) machineconfig.Change {
	return machineconfig.Change{Name: KubeletConfigName, KubeletConfig: true, PoolSelector: poolSelector(pool)}
}

// identity is the KubeletConfig's apiVersion, kind and name.
func identity() *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]interface{}{
		"apiVersion": machineconfig.KubeletConfigGVK.GroupVersion().String(), "kind": machineconfig.KubeletConfigGVK.Kind,
		"metadata": map[string]interface{}{"name": KubeletConfigName},
	}}
}

// failedItem says why the KubeletConfig cannot be derived.
func failedItem(err error) profiles.Item {
	return profiles.Item{Name: ItemName, Desired: identity(), Impact: v1alpha1.ImpactHigh, Owned: true, Err: err}
}

func absentItem() profiles.Item {
	return profiles.Item{
		Name:    ItemName,
		Desired: identity(),
		Impact:  v1alpha1.ImpactHigh,
		Message: fmt.Sprintf("KubeletConfig '%s' will be removed: dedicated CPUs are disabled (the pool's nodes reboot back to the shared CPU pool)", KubeletConfigName),
		Owned:   true,
		Absent:  true,
	}
}

// kubeletItem is the KubeletConfig, with what each derived value was
// derived from in its message.
func kubeletItem(o options, r reservation) profiles.Item {
	zones := make([]interface{}, len(r.memory))
	for i, z := range r.memory {
		zones[i] = map[string]interface{}{"numaNode": int64(z.numaNode), "limits": map[string]interface{}{"memory": fmt.Sprintf("%dMi", z.mib)}}
	}
	kubelet := Pinned()
	kubelet["topologyManagerPolicy"] = o.topologyPolicy
	kubelet["reservedSystemCPUs"] = r.cpus
	kubelet["reservedMemory"] = zones
	return profiles.Item{
		Name: ItemName,
		Desired: &unstructured.Unstructured{Object: map[string]interface{}{
			"apiVersion": machineconfig.KubeletConfigGVK.GroupVersion().String(), "kind": machineconfig.KubeletConfigGVK.Kind,
			"metadata": map[string]interface{}{"name": KubeletConfigName},
			"spec": map[string]interface{}{
				"machineConfigPoolSelector": poolSelector(o.pool),
				"kubeletConfig":             kubelet,
			},
		}},
		ManagedFields: []string{"spec.kubeletConfig", "spec.machineConfigPoolSelector"},
		Impact:        v1alpha1.ImpactHigh,
		Message:       message(o, r),
		Owned:         true,
		Warnings: []string{fmt.Sprintf("the kubelet's CPU manager state is reset on the nodes of MachineConfigPool %s (its policy changes): each node is drained and rebooted, and the VMs running there move; check the CPU numbering assumed (%s) against lscpu -e on one node",
			quoted(append([]string{o.pool}, r.others...)), r.numbering)},
	}
}

func message(o options, r reservation) string {
	var b strings.Builder
	fmt.Fprintf(&b, "KubeletConfig '%s' will configure MachineConfigPool '%s': cpuManagerPolicy static (full-pcpus-only), topologyManagerPolicy %s, memoryManagerPolicy Static. ",
		KubeletConfigName, o.pool, o.topologyPolicy)
	if len(r.others) > 0 {
		fmt.Fprintf(&b, "It is rendered as MachineConfig '%s' with role '%s', which MachineConfigPool %s renders too (its machineConfigSelector selects that role): its nodes are counted below and reboot too. ",
			machineconfig.GeneratedKubeletName(o.pool, ""), o.pool, quoted(r.others))
	}
	fmt.Fprintf(&b, "reservedSystemCPUs %s: %s, from %s (CPU numbering assumed: %s). ", r.cpus, r.cpusWhy, r.from, r.numbering)
	fmt.Fprintf(&b, "reservedMemory %s: systemReserved %dMi + kubeReserved %dMi + evictionHard memory.available %dMi spread over the NUMA zones. ",
		r.memoryString(), systemReservedMiB, kubeReservedMiB, evictionHardMiB)
	b.WriteString("The CPU and memory manager policies change: the kubelet's CPU and memory manager state is reset on these nodes, which are drained and rebooted; VMs running there move first")
	return b.String()
}

// InputObjects: the values are derived from the pool's Nodes and their
// NodeResourceTopologies, every one of each kind (a node that joins the
// pool is one not named before): a change of them is looked at again,
// and asks for a review only when a derived value changes.
func (profile) InputObjects(v1alpha1.ProfileOptions) []profiles.ObjectRef {
	return []profiles.ObjectRef{{GVK: profiles.NodeGVK}, {GVK: hardware.NodeResourceTopologyGVK}}
}

// DescribeInputChange names the derived values that changed.
func (profile) DescribeInputChange(_ string, applied, desired map[string]interface{}) string {
	var changed []string
	for _, f := range []string{"reservedSystemCPUs", "reservedMemory"} {
		a, _, _ := unstructured.NestedFieldNoCopy(applied, "spec", "kubeletConfig", f)
		d, _, _ := unstructured.NestedFieldNoCopy(desired, "spec", "kubeletConfig", f)
		if fmt.Sprint(a) != fmt.Sprint(d) {
			changed = append(changed, fmt.Sprintf("%s %s -> %s", f, show(a), show(d)))
		}
	}
	if len(changed) == 0 {
		return ""
	}
	return "the nodes of the pool changed: " + strings.Join(changed, ", ")
}

// show is a derived value as the plan writes it.
func show(v interface{}) string {
	if s, ok := v.(string); ok {
		return s
	}
	list, _ := v.([]interface{})
	var parts []string
	for _, z := range list {
		m, _ := z.(map[string]interface{})
		mem, _, _ := unstructured.NestedString(m, "limits", "memory")
		parts = append(parts, fmt.Sprintf("NUMA %v %s", m["numaNode"], mem))
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ", ")
}

func validateOptions(opts *advisor.ProfileOptions, fldPath *field.Path) field.ErrorList {
	o := opts.DedicatedCPUs
	var errs field.ErrorList
	enabled := o.Enabled == nil || *o.Enabled
	switch {
	case o.Pool == "" && enabled:
		errs = append(errs, field.Required(fldPath.Child("pool"), "name the MachineConfigPool whose nodes run VMs with dedicatedCpuPlacement (e.g. worker-cnv)"))
	case o.Pool == machineconfig.WorkerPool && (o.AllowAllWorkers == nil || !*o.AllowAllWorkers):
		errs = append(errs, field.Forbidden(fldPath.Child("pool"), "pinning CPUs on every worker node is rarely meant: use a custom pool for the nodes of pinned VMs, or set allowAllWorkers: true"))
	case o.Pool == "master":
		errs = append(errs, field.Forbidden(fldPath.Child("pool"), "the control plane's pool is not for VMs: use a custom pool for the nodes of pinned VMs"))
	}
	if o.Pool != "" {
		// The pool's name is the name part of the label its KubeletConfig
		// selects it by.
		for _, msg := range utilvalidation.IsQualifiedName(machineconfig.PoolLabelPrefix + o.Pool) {
			errs = append(errs, field.Invalid(fldPath.Child("pool"), o.Pool, "not a MachineConfigPool name: "+msg))
		}
	}
	return errs
}

// quoted names pools: 'worker', 'worker-cnv'.
func quoted(names []string) string {
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = "'" + n + "'"
	}
	return strings.Join(q, ", ")
}

func contains(list []string, v string) bool {
	for _, s := range list {
		if s == v {
			return true
		}
	}
	return false
}
