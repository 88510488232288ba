// Package livemigration implements the live-migration-limits profile: the
// HyperConverged liveMigrationConfig sized to the cluster, so that a pool
// drain is neither throttled by the cluster-wide default of 5 migrations nor
// floods a node's migration link. No reboot: the HCO hands the values to
// KubeVirt, which applies them to the next migrations.
//
// The fields, their meaning and their v1beta1 defaults are those of
// kubevirt/hyperconverged-cluster-operator, api/v1beta1/hyperconverged_types.go,
// LiveMigrationConfigurations: parallelMigrationsPerCluster (default 5),
// parallelOutboundMigrationsPerNode (default 2), bandwidthPerMigration
// (a quantity of bytes per second, "2048Mi = 2048MiB/sec"; unset: no
// limit), completionTimeoutPerGiB (seconds per GiB of guest memory,
// default 150) and progressTimeout (seconds, default 150); in v1 they sit
// under spec.virtualization, and HCO 1.20 defaults parallelOutboundMigrationsPerNode
// to 1 and completionTimeoutPerGiB to 20 there (pkg/kubevirt).
package livemigration

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"

	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/kubevirt/virt-advisor/pkg/apis/advisor/v1alpha1"
	"github.com/kubevirt/virt-advisor/pkg/apis/advisor/validation"
	"github.com/kubevirt/virt-advisor/pkg/kubevirt"
	"github.com/kubevirt/virt-advisor/pkg/machineconfig"
	"github.com/kubevirt/virt-advisor/pkg/profiles"
)

// Name is the profile name; ItemName its one item; OptionsBlock the JSON
// name of its block of spec.options (ProfileOptions.LiveMigrationLimits).
const (
	Name         = "live-migration-limits"
	ItemName     = "configure-live-migration-limits"
	OptionsBlock = "liveMigrationLimits"
)

// The options' bounds (validated with their field paths) and the bounds of
// what the profile writes (the admission policy's constants).
var (
	NetworkGbps             = validation.OptionRange(OptionsBlock + ".migrationNetworkGbps")
	NetworkSharePercent     = validation.OptionRange(OptionsBlock + ".networkSharePercent")
	OutboundPerNode         = validation.OptionRange(OptionsBlock + ".parallelOutboundMigrationsPerNode")
	CompletionTimeoutPerGiB = validation.OptionRange(OptionsBlock + ".completionTimeoutPerGiB")
	ProgressTimeout         = validation.OptionRange(OptionsBlock + ".progressTimeout")
	// PerCluster bounds parallelMigrationsPerCluster.
	PerCluster = validation.Range{Min: 1, Max: 1000}
	// BandwidthMiB bounds bandwidthPerMigration, in MiB/s: from 1 Gbit/s at
	// 10 % over 10 migrations to 800 Gbit/s for one.
	BandwidthMiB = validation.Range{Min: 1, Max: 95367}
)

// The fields of liveMigrationConfig the profile sets.
var fields = []string{"parallelMigrationsPerCluster", "parallelOutboundMigrationsPerNode", "bandwidthPerMigration", "completionTimeoutPerGiB", "progressTimeout"}

// Fields are the fields of liveMigrationConfig the profile sets.
func Fields() []string { return append([]string(nil), fields...) }

// hcoDefaultPerCluster is the HyperConverged's parallelMigrationsPerCluster
// default: the floor of the derived value where the links allow it.
const hcoDefaultPerCluster = 5

type profile struct{}

// New returns the live-migration-limits profile.
func New() profiles.Profile { return profile{} }

func (profile) Metadata() profiles.Metadata {
	return profiles.Metadata{
		Name:          Name,
		Category:      "migration",
		Description:   "Sizes live-migration limits to the nodes, the pools and the migration network",
		ImpactSummary: "Low - changes the HyperConverged liveMigrationConfig; no reboot, running migrations keep their limits",
		Level:         v1alpha1.ImpactMedium,
		Advertised:    true,
		Options:       OptionsBlock,
		Writes: []profiles.Write{{
			Resource:  schema.GroupResource{Group: kubevirt.HyperConvergedGVK.Group, Resource: "hyperconvergeds"},
			Namespace: kubevirt.HCONamespace, Name: kubevirt.HCOName,
			Fields: []string{"liveMigrationConfig"},
			Why:    "live-migration limits (parallelMigrationsPerCluster, parallelOutboundMigrationsPerNode, bandwidthPerMigration, completionTimeoutPerGiB, progressTimeout)",
		}},
		Reads: []profiles.Read{
			{Resource: profiles.NodesResource, Why: "the schedulable nodes and those of each pool"},
			{Resource: profiles.PoolsResource, Why: "how many nodes each pool drains at once"},
			{Resource: profiles.VMIsResource, Why: "the VMs' guest memory, for the drain estimate"},
		},
		Examples: examples(),
		SampleNote: "Live-migration limits sized to the cluster: the HyperConverged\n" +
			"liveMigrationConfig derived from the schedulable nodes, the pool that\n" +
			"drains the most nodes at once and each node's migration link. No reboot.\n" +
			"Every option may be left out (the defaults are shown; unset,\n" +
			"parallelOutboundMigrationsPerNode and completionTimeoutPerGiB keep the\n" +
			"installed HyperConverged's defaults).\n",
	}
}

func (profile) Prerequisites(v1alpha1.ProfileOptions) []profiles.Prerequisite {
	return []profiles.Prerequisite{{GVK: kubevirt.HyperConvergedGVK, Description: "Install OpenShift Virtualization via OLM"}}
}

// options are the options with every default resolved.
type options struct {
	gbps, sharePercent, perNode int32
	completionPerGiB, progress  int64
}

// resolve applies the defaults: those of the API, and for the per-node
// migrations and the completion timeout those of the installed
// HyperConverged version (its CRD defaults, pkg/kubevirt), so that unset
// they stay what the HCO would have.
func resolve(c *v1alpha1.LiveMigrationLimitsConfig, version string) options {
	_, perNode := kubevirt.HCOMigrationDefaults(version)
	o := options{gbps: 10, sharePercent: 50, perNode: int32(perNode), completionPerGiB: kubevirt.HCOCompletionTimeoutPerGiBDefault(version), progress: 150}
	if c == nil {
		return o
	}
	if c.MigrationNetworkGbps != nil {
		o.gbps = *c.MigrationNetworkGbps
	}
	if c.NetworkSharePercent != nil {
		o.sharePercent = *c.NetworkSharePercent
	}
	if c.ParallelOutboundMigrationsPerNode != nil {
		o.perNode = *c.ParallelOutboundMigrationsPerNode
	}
	if c.CompletionTimeoutPerGiB != nil {
		o.completionPerGiB = *c.CompletionTimeoutPerGiB
	}
	if c.ProgressTimeout != nil {
		o.progress = *c.ProgressTimeout
	}
	return o
}

// Items reads the nodes, the pools and the VMIs, derives the limits and
// writes them through the HyperConverged version discovery prefers.
func (profile) Items(ctx context.Context, in profiles.Inputs) ([]profiles.Item, error) {
	version, err := in.Cluster.PreferredVersion(kubevirt.HyperConvergedGVK.GroupKind())
	if err != nil {
		return nil, err
	}
	if version != kubevirt.HCOVersionV1 && version != kubevirt.HCOVersionV1beta1 {
		return []profiles.Item{{Name: ItemName, Err: kubevirt.HCOVersionError(version)}}, nil
	}
	// Independent reads: send them together (the plan's snapshot shares
	// the list of Nodes with its drain assessment).
	var nodes, pools, vmis []unstructured.Unstructured
	var nodesErr, poolsErr, vmisErr error
	var wg sync.WaitGroup
	wg.Go(func() { nodes, nodesErr = in.Cluster.List(ctx, profiles.NodeGVK) })
	wg.Go(func() { pools, poolsErr = in.Cluster.List(ctx, machineconfig.MachineConfigPoolGVK) })
	wg.Go(func() { vmis, vmisErr = in.Cluster.List(ctx, kubevirt.VirtualMachineInstanceGVK) })
	wg.Wait()
	for _, err := range []error{nodesErr, poolsErr, vmisErr} {
		if err != nil {
			return nil, err
		}
	}
	w, err := readWorld(nodes, pools, vmis)
	if err != nil {
		return []profiles.Item{{Name: ItemName, Err: err}}, nil
	}
	l, err := derive(resolve(in.Options.LiveMigrationLimits, version), w)
	if err != nil {
		return []profiles.Item{{Name: ItemName, Err: err}}, nil
	}
	return []profiles.Item{hcoItem(version, l, w)}, nil
}

// world is what the limits are derived from.
type world struct {
	schedulable int
	pools       []pool
}

// pool is a MachineConfigPool: its nodes, how many it drains at once and
// the guest memory running on them.
type pool struct {
	name        string
	nodes       int
	maxDraining int
	memory      []int64 // guest memory of each node's running VMIs, by node
}

func readWorld(nodes, pools, vmis []unstructured.Unstructured) (world, error) {
	var w world
	memByNode := map[string]int64{}
	for i := range vmis {
		v := kubevirt.ReadVMI(&vmis[i])
		if v.Running() {
			memByNode[v.Node] += guestMemory(&vmis[i])
		}
	}
	for i := range nodes {
		if unschedulable, _, _ := unstructured.NestedBool(nodes[i].Object, "spec", "unschedulable"); !unschedulable {
			w.schedulable++
		}
	}
	if w.schedulable == 0 {
		return world{}, fmt.Errorf("no schedulable node: the limits are derived from the nodes that receive migrations")
	}
	for i := range pools {
		sel, err := machineconfig.PoolSelector(&pools[i], "nodeSelector")
		if err != nil {
			return world{}, fmt.Errorf("MachineConfigPool '%s' has an invalid nodeSelector: %w", pools[i].GetName(), err)
		}
		p := pool{name: pools[i].GetName()}
		for j := range nodes {
			if sel.Matches(labels.Set(nodes[j].GetLabels())) {
				p.nodes++
				p.memory = append(p.memory, memByNode[nodes[j].GetName()])
			}
		}
		if p.nodes == 0 {
			continue
		}
		if p.maxDraining, err = maxUnavailable(&pools[i], p.nodes); err != nil {
			return world{}, err
		}
		w.pools = append(w.pools, p)
	}
	sort.Slice(w.pools, func(i, j int) bool { return w.pools[i].name < w.pools[j].name })
	return w, nil
}

// maxUnavailable is how many of a pool's nodes the MachineConfig operator
// drains at once: spec.maxUnavailable (a number or a percentage of the
// pool's nodes, rounded down), 1 when unset or 0, as getMaxUnavailable in
// openshift/machine-config-operator, pkg/controller/node/node_controller.go.
func maxUnavailable(p *unstructured.Unstructured, nodes int) (int, error) {
	raw, found, _ := unstructured.NestedFieldNoCopy(p.Object, "spec", "maxUnavailable")
	if !found || raw == nil {
		return 1, nil
	}
	var v intstr.IntOrString
	switch x := raw.(type) {
	case int64:
		v = intstr.FromInt(int(x))
	case float64:
		v = intstr.FromInt(int(x))
	case string:
		v = intstr.FromString(x)
	default:
		return 0, fmt.Errorf("MachineConfigPool '%s' has spec.maxUnavailable %v: want a number or a percentage", p.GetName(), raw)
	}
	n, err := intstr.GetScaledValueFromIntOrPercent(&v, nodes, false)
	if err != nil {
		return 0, fmt.Errorf("MachineConfigPool '%s': spec.maxUnavailable: %w", p.GetName(), err)
	}
	return max(1, min(n, nodes)), nil
}

// guestMemory is the memory a migration copies: spec.domain.memory.guest,
// else the memory request.
func guestMemory(vmi *unstructured.Unstructured) int64 {
	for _, path := range [][]string{{"spec", "domain", "memory", "guest"}, {"spec", "domain", "resources", "requests", "memory"}} {
		if s, ok, _ := unstructured.NestedString(vmi.Object, path...); ok {
			if q, err := resource.ParseQuantity(s); err == nil {
				return q.Value()
			}
		}
	}
	return 0
}

// limits are the values written, and what they were derived from.
type limits struct {
	perCluster, perNode int32
	bandwidthMiB        int64
	completionPerGiB    int64
	progress            int64
	// draining is the most nodes one pool drains at once (its name in
	// drainingPool); receivers the schedulable nodes left to take the VMs.
	draining     int
	drainingPool string
	receivers    int
}

// derive sizes the limits:
//   - bandwidthPerMigration: the share of a node's link over the migrations
//     it sends at once, so a draining node never floods its own link;
//   - parallelMigrationsPerCluster: what the pool that drains the most
//     nodes at once sends (perNode each), so its drain is not throttled by
//     the cluster-wide limit, and at least the HCO default of 5 (the
//     descheduler's migrations), but no more than the nodes left to
//     receive can take at perNode each: inbound traffic then stays within
//     every receiving link's share too.
func derive(o options, w world) (limits, error) {
	l := limits{perNode: o.perNode, completionPerGiB: o.completionPerGiB, progress: o.progress, draining: 1}
	for _, p := range w.pools {
		if p.maxDraining > l.draining || l.drainingPool == "" && p.maxDraining == l.draining {
			l.draining, l.drainingPool = p.maxDraining, p.name
		}
	}
	l.receivers = w.schedulable - l.draining
	if l.receivers < 1 {
		return limits{}, fmt.Errorf("pool %s drains %d node(s) at once and only %d node(s) are schedulable: no node is left to receive its VMs",
			l.drainingPool, l.draining, w.schedulable)
	}
	bytesPerSecond := int64(o.gbps) * 1_000_000_000 / 8 * int64(o.sharePercent) / 100
	l.bandwidthMiB = max(int64(BandwidthMiB.Min), bytesPerSecond/(1<<20)/int64(o.perNode))
	want := max(int(o.perNode)*l.draining, hcoDefaultPerCluster)
	l.perCluster = int32(max(int(PerCluster.Min), min(want, int(o.perNode)*l.receivers, int(PerCluster.Max))))
	return l, nil
}

// hcoItem is the HyperConverged patch, with the drain estimates of each pool
// in its message.
func hcoItem(version string, l limits, w world) profiles.Item {
	lm := map[string]interface{}{
		"parallelMigrationsPerCluster":      int64(l.perCluster),
		"parallelOutboundMigrationsPerNode": int64(l.perNode),
		"bandwidthPerMigration":             fmt.Sprintf("%dMi", l.bandwidthMiB),
		"completionTimeoutPerGiB":           l.completionPerGiB,
		"progressTimeout":                   l.progress,
	}
	var spec map[string]interface{} = map[string]interface{}{"liveMigrationConfig": lm}
	if version == kubevirt.HCOVersionV1 {
		spec = map[string]interface{}{"virtualization": spec}
	}
	var managed []string
	for _, f := range fields {
		managed = append(managed, strings.Join(kubevirt.HCOFieldPath(version, "liveMigrationConfig", f), "."))
	}
	gv := schema.GroupVersion{Group: kubevirt.HyperConvergedGVK.Group, Version: version}
	return profiles.Item{
		Name:        ItemName,
		ShowVersion: true,
		Desired: &unstructured.Unstructured{Object: map[string]interface{}{
			"apiVersion": gv.String(),
			"kind":       kubevirt.HyperConvergedGVK.Kind,
			"metadata":   map[string]interface{}{"name": kubevirt.HCOName, "namespace": kubevirt.HCONamespace},
			"spec":       spec,
		}},
		ManagedFields: managed,
		Impact:        v1alpha1.ImpactMedium,
		Message:       message(gv, l, w),
	}
}

func message(gv schema.GroupVersion, l limits, w world) string {
	var b strings.Builder
	fmt.Fprintf(&b, "HyperConverged '%s' (%s) will be configured with liveMigrationConfig parallelMigrationsPerCluster=%d, parallelOutboundMigrationsPerNode=%d, bandwidthPerMigration=%dMi, completionTimeoutPerGiB=%d, progressTimeout=%d",
		kubevirt.HCOName, gv, l.perCluster, l.perNode, l.bandwidthMiB, l.completionPerGiB, l.progress)
	drainer := "a pool drains 1 node at once"
	if l.drainingPool != "" {
		drainer = fmt.Sprintf("pool %s drains %d node(s) at once", l.drainingPool, l.draining)
	}
	fmt.Fprintf(&b, " (from %d schedulable node(s): %s, %d left to receive its VMs)", l.draining+l.receivers, drainer, l.receivers)
	if len(w.pools) > 0 {
		var parts []string
		for _, p := range w.pools {
			parts = append(parts, drainEstimate(p, l))
		}
		b.WriteString(". Drain estimate (guest memory over the bandwidth chosen, one copy pass): " + strings.Join(parts, "; "))
	}
	return b.String()
}

// drainEstimate is how long a pool's drain copies memory: each node sends
// perNode VMs at once at bandwidthPerMigration each, maxDraining nodes at
// once, so the pool takes the sum of its nodes' times over maxDraining.
func drainEstimate(p pool, l limits) string {
	var total, seconds int64
	rate := l.bandwidthMiB << 20 * int64(l.perNode)
	for _, m := range p.memory {
		total += m
		seconds += (m + rate - 1) / rate
	}
	seconds = (seconds + int64(p.maxDraining) - 1) / int64(p.maxDraining)
	return fmt.Sprintf("pool %s: %s of VM memory on %d node(s), %d at a time, about %s",
		p.name, resource.NewQuantity(total, resource.BinarySI).String(), p.nodes, p.maxDraining, duration(seconds))
}

func duration(s int64) string {
	switch {
	case s < 60:
		return fmt.Sprintf("%ds", s)
	case s < 3600:
		return fmt.Sprintf("%dm%02ds", s/60, s%60)
	default:
		return fmt.Sprintf("%dh%02dm", s/3600, s%3600/60)
	}
}

// InputObjects: the limits are derived from lists (Nodes, pools, VMIs), read
// at every plan; the HyperConverged is the target, whose edits are drift.
func (profile) InputObjects(v1alpha1.ProfileOptions) []profiles.ObjectRef { return nil }

func (profile) DescribeInputChange(string, map[string]interface{}, map[string]interface{}) string {
	return "the number of schedulable nodes or of nodes a pool drains at once changed"
}
