package plan

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kubevirt/virt-advisor/pkg/apis/advisor/v1alpha1"
	"github.com/kubevirt/virt-advisor/pkg/cluster"
	"github.com/kubevirt/virt-advisor/pkg/disruption"
	"github.com/kubevirt/virt-advisor/pkg/kubevirt"
	"github.com/kubevirt/virt-advisor/pkg/machineconfig"
)

// clusterReads are what the disruption of a plan's MachineConfig items is
// read from: the Nodes, the VirtualMachineInstances, the node disruption
// policies and, when a VMI has no eviction strategy of its own, the
// HyperConverged. Each is read at most once per plan: the Nodes and VMIs
// from their caches (Engine.NodeVMs) for a plan, live for DrainImpact.
type clusterReads struct {
	// at: the resourceVersions of the caches the Nodes and VMIs came from.
	at       *readAt
	nodes    func() ([]unstructured.Unstructured, error)
	vmis     func() ([]kubevirt.VMI, bool, error)
	policies func() (*disruption.Policies, string, error)
	hco      func() (*unstructured.Unstructured, error)
	// pods are the launchers and the requests per node (capacity.go).
	pods func() (cluster.PodRequests, error)
	// placement is what the capacity check keeps across plans (capacity.go).
	placement *placementMemo
	// memo keeps assessments made from the caches (assessmemo.go); nil
	// for reads that are live.
	memo *assessMemo
	// podsCached says whether pods reads the pod cache (synced).
	podsCached func() bool
	// capacityChecked records the time of a capacity check's computation
	// (nil: not recorded).
	capacityChecked func(time.Duration)
}

// timeCapacityCheck records the time since start as capacity check time.
func (r *clusterReads) timeCapacityCheck(start time.Time) {
	if r.capacityChecked != nil {
		r.capacityChecked(time.Since(start))
	}
}

// newClusterReads reads through inputs where it can (the HyperConverged a
// profile reads as an input is read once), the Nodes and VMIs from their
// caches when cached, everything else live.
func (e *Engine) newClusterReads(ctx context.Context, get func(ctx context.Context, gvk schema.GroupVersionKind, ns, name string) (*unstructured.Unstructured, error), cached bool) *clusterReads {
	c := e.Cluster
	at := &readAt{}
	nodes, vmis := e.nodeReads(ctx, cached, at)
	var checked func(time.Duration)
	if e.Metrics != nil {
		checked = e.Metrics.CapacityChecked
	}
	return &clusterReads{
		capacityChecked: checked,
		at:              at,
		nodes:           sync.OnceValues(nodes),
		vmis:            onceValues3(vmis),
		policies: onceValues3(func() (*disruption.Policies, string, error) {
			mc, err := c.Get(ctx, machineconfig.MachineConfigurationGVK, "", machineconfig.MachineConfigurationName)
			if err != nil {
				return nil, "", err
			}
			if mc == nil && !c.ServedNow(machineconfig.MachineConfigurationGVK) {
				return nil, "the cluster does not serve operator.openshift.io/v1 MachineConfiguration (no node disruption policies)", nil
			}
			p, why := disruption.ReadPolicies(mc)
			return p, why, nil
		}),
		pods:      sync.OnceValues(e.podReads(ctx, cached)),
		placement: &e.placement,
		memo:      e.assessMemo(cached),
		podsCached: func() bool {
			if !cached || e.Pods == nil {
				return false
			}
			_, ok := e.Pods.Pods()
			return ok
		},
		hco: sync.OnceValues(func() (*unstructured.Unstructured, error) {
			return get(ctx, kubevirt.HyperConvergedGVK, kubevirt.HCONamespace, kubevirt.HCOName)
		}),
	}
}

// start begins the reads a plan that writes a MachineConfig will need, so
// that they go out together with the items' own.
func (r *clusterReads) start() {
	go func() { _, _ = r.nodes() }()
	go func() { _, _, _ = r.vmis() }()
	go func() { _, _, _ = r.policies() }()
	go func() { _, _ = r.pods() }()
}

func onceValues3[A, B any](f func() (A, B, error)) func() (A, B, error) {
	type result struct {
		a   A
		b   B
		err error
	}
	g := sync.OnceValue(func() result { a, b, err := f(); return result{a, b, err} })
	return func() (A, B, error) { r := g(); return r.a, r.b, r.err }
}

// cluster is the disruption package's view of the cluster. Failures to
// read Nodes or VMIs are said, not returned (a plan never fails for them);
// strict returns them instead (the controller's check before a write
// retries rather than guess).
func (r *clusterReads) cluster(ctx context.Context, pools []unstructured.Unstructured, strict bool) (*disruption.Cluster, error) {
	c := &disruption.Cluster{Pools: pools}
	nodes, err := r.nodes()
	switch {
	case err != nil && strict:
		return nil, fmt.Errorf("listing Nodes: %w", err)
	case err != nil:
		c.NodesUnknown = "cannot list Nodes: " + apiMessage(err)
	default:
		c.Nodes = nodes
	}
	vmis, served, err := r.vmis()
	switch {
	case err != nil && strict:
		return nil, fmt.Errorf("listing VirtualMachineInstances: %w", err)
	case err != nil:
		c.VMIsUnknown = "cannot list VirtualMachineInstances: " + apiMessage(err)
	case !served:
		c.VMIsUnknown = disruption.VMIsNotServed
	}
	c.VMIs = vmis
	if r.memo.unsetStrategy(vmis) {
		// Only then does the cluster default matter.
		hco, err := r.hco()
		if err != nil && strict {
			return nil, fmt.Errorf("reading the HyperConverged for the default eviction strategy: %w", err)
		}
		c.Default = disruption.ClusterDefault(hco, disruption.WorkerNodes(c.Nodes))
	}
	return c, nil
}

// apiMessage is the API server's own words for an error.
func apiMessage(err error) string {
	var status apierrors.APIStatus
	if errors.As(err, &status) && status.Status().Message != "" {
		return status.Status().Message
	}
	return err.Error()
}

// mcChange is what a MachineConfig item changes: the spec before (nil for
// a Create) and after (nil for a Delete).
type mcChange struct {
	before, after map[string]interface{}
	// updatedTo: a pool's rendered config a paused rollout resumes to
	// (disruption.Cluster.UpdatedTo).
	updatedTo string
}

// renderedSpecOf is the MachineConfig spec an object that rolls pools
// puts on the nodes: a MachineConfig's own, or the part of the generated
// MachineConfig a KubeletConfig decides.
func renderedSpecOf(ref v1alpha1.ObjectReference, obj *unstructured.Unstructured) map[string]interface{} {
	if machineconfig.IsKubeletConfig(ref) {
		return machineconfig.KubeletRenderedSpec(specOf(obj))
	}
	return specOf(obj)
}

func specOf(obj *unstructured.Unstructured) map[string]interface{} {
	if obj == nil {
		return nil
	}
	spec, _, _ := unstructured.NestedMap(obj.Object, "spec")
	if spec == nil {
		spec = map[string]interface{}{}
	}
	return spec
}

// assess fills what an item's change does to the nodes and VMs of each
// pool it rolls out on, and returns the note of its message.
func (r *clusterReads) assess(ctx context.Context, reboots []v1alpha1.PoolReboot, pools []unstructured.Unstructured, change mcChange, strict bool) (string, error) {
	policies, why, err := r.policies()
	if err != nil {
		if strict {
			return "", fmt.Errorf("reading the node disruption policies: %w", err)
		}
		policies, why = nil, "the node disruption policies cannot be read ("+apiMessage(err)+")"
	}
	decision := disruption.Decide(change.before, change.after, policies, why)
	c, err := r.cluster(ctx, pools, strict)
	if err != nil {
		return "", err
	}
	c.UpdatedTo = change.updatedTo
	key, keep := r.assessKey(c, decision)
	for i := range reboots {
		if keep && r.memo.get(key, &reboots[i]) {
			continue
		}
		in := reboots[i].DeepCopy()
		pool := poolByName(pools, reboots[i].Pool)
		var kept *capacityInputs
		if keep {
			kept = r.memo.inputs(key, in)
		}
		// What the capacity check kept of the same views needs no
		// assessment: its simulation runs meanwhile.
		early := r.startSimulation(kept, pool, c)
		c.Assess(&reboots[i], pool, decision)
		inputs, err := r.checkCapacity(&reboots[i], pool, c, kept, early, keep, strict)
		if err != nil {
			return "", err
		}
		disruption.Bound(&reboots[i])
		if keep {
			r.memo.put(key, in, &reboots[i], inputs)
		}
	}
	return disruption.Note(reboots) + capacityNote(reboots), nil
}

// assessMemo is the engine's memo for reads from the caches, nil for live
// reads.
func (e *Engine) assessMemo(cached bool) *assessMemo {
	if !cached {
		return nil
	}
	return &e.assessed
}

// assessKey is the key of the assessments of c with decision, when every
// read came from a cache.
func (r *clusterReads) assessKey(c *disruption.Cluster, decision disruption.Decision) (assessKey, bool) {
	if r.memo == nil || r.podsCached == nil || !r.podsCached() {
		return assessKey{}, false
	}
	if at := r.at.get(); at.Nodes == "" || at.VMIs == "" {
		return assessKey{}, false
	}
	pods, err := r.pods()
	if err != nil {
		return assessKey{}, false
	}
	return assessKeyOf(c, pods.Version, decision)
}

func poolByName(pools []unstructured.Unstructured, name string) *unstructured.Unstructured {
	i := slices.IndexFunc(pools, func(p unstructured.Unstructured) bool { return p.GetName() == name })
	if i < 0 {
		return &unstructured.Unstructured{Object: map[string]interface{}{"metadata": map[string]interface{}{"name": name}}}
	}
	return &pools[i]
}

// DrainImpact assesses an approved MachineConfig item again from the live
// cluster, just before it is written: the pools its change rolls out on
// and, for each, the disruption and what draining the nodes does to the
// VMs there now. The change is the item's desired state over the live
// MachineConfig (nothing after a Delete). Unlike a plan, a failure to read
// the Nodes or VMs is returned: the caller looks again rather than write
// on a guess. A cluster that does not serve VMIs says so in the result.
func (e *Engine) DrainImpact(ctx context.Context, it *v1alpha1.VirtPlatformConfigItem) ([]v1alpha1.PoolReboot, error) {
	live, err := e.Cluster.Get(ctx, TargetGVK(it.TargetRef), "", it.TargetRef.Name)
	if err != nil {
		return nil, err
	}
	rolls := machineconfig.ItemChange(it.TargetRef, it.DesiredState)
	change := mcChange{before: renderedSpecOf(it.TargetRef, live)}
	if it.Operation == v1alpha1.OperationDelete {
		if live != nil {
			rolls = machineconfig.ChangeOf(it.TargetRef, live.Object)
		}
	} else {
		desired := &unstructured.Unstructured{}
		if it.DesiredState == nil || desired.UnmarshalJSON(it.DesiredState.Raw) != nil {
			return nil, fmt.Errorf("item '%s' has no readable desired state", it.Name)
		}
		after := overlay(specOf(live), specOf(desired))
		if machineconfig.IsKubeletConfig(it.TargetRef) {
			after = machineconfig.KubeletRenderedSpec(after)
		}
		change.after = after
	}
	pools, err := e.Cluster.List(ctx, machineconfig.MachineConfigPoolGVK)
	if err != nil {
		return nil, err
	}
	reboots, err := machineconfig.PoolReboots(pools, rolls)
	if err != nil || len(reboots) == 0 {
		return nil, err
	}
	return e.assessLive(ctx, reboots, pools, change)
}

// assessLive is the last look before a drain: the VMs are read live,
// never from a cache that may lag behind (docs/disruption.md).
func (e *Engine) assessLive(ctx context.Context, reboots []v1alpha1.PoolReboot, pools []unstructured.Unstructured, change mcChange) ([]v1alpha1.PoolReboot, error) {
	reads := e.newClusterReads(ctx, e.Cluster.Get, false)
	if _, err := reads.assess(ctx, reboots, pools, change, true); err != nil {
		return nil, err
	}
	return reboots, nil
}

// PendingDrainImpact assesses, from the live cluster, what resuming the
// rollout of a paused pool does now: its nodes go from the rendered
// MachineConfig they run (status.configuration) to the one the pool
// names (spec.configuration), the change the Machine Config Daemon
// decides from, and are drained for it or not; with the VMs there now on
// the nodes not updated yet (a rollout paused mid-way).
// Nil when the pool has nothing to roll out. A rendered MachineConfig
// that cannot be read is an error: the caller looks again rather than
// resume a rollout on a guess.
func (e *Engine) PendingDrainImpact(ctx context.Context, pool *unstructured.Unstructured) ([]v1alpha1.PoolReboot, error) {
	from, _, _ := unstructured.NestedString(pool.Object, "status", "configuration", "name")
	to, _, _ := unstructured.NestedString(pool.Object, "spec", "configuration", "name")
	if to == "" || to == from {
		return nil, nil
	}
	change := mcChange{updatedTo: to}
	for _, r := range []struct {
		name string
		spec *map[string]interface{}
	}{{from, &change.before}, {to, &change.after}} {
		if r.name == "" {
			return nil, fmt.Errorf("MachineConfigPool '%s' reports no status.configuration.name: what its nodes run is unknown", pool.GetName())
		}
		mc, err := e.Cluster.Get(ctx, machineconfig.MachineConfigGVK, "", r.name)
		if err != nil {
			return nil, fmt.Errorf("reading the rendered MachineConfig '%s' of MachineConfigPool '%s': %w", r.name, pool.GetName(), err)
		}
		if mc == nil {
			return nil, fmt.Errorf("the rendered MachineConfig '%s' of MachineConfigPool '%s' does not exist", r.name, pool.GetName())
		}
		*r.spec = specOf(mc)
	}
	pools, err := e.Cluster.List(ctx, machineconfig.MachineConfigPoolGVK)
	if err != nil {
		return nil, err
	}
	reboots := []v1alpha1.PoolReboot{{Pool: pool.GetName(), Nodes: machineconfig.Count(pool, "machineCount")}}
	return e.assessLive(ctx, reboots, pools, change)
}

// overlay is the spec after applying the desired fields over the live
// ones: what our server-side apply leaves, the fields we manage replaced.
func overlay(live, desired map[string]interface{}) map[string]interface{} {
	out := make(map[string]interface{}, len(live)+len(desired))
	for k, v := range live {
		out[k] = v
	}
	for k, v := range desired {
		out[k] = v
	}
	return out
}
