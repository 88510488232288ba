package machineconfig

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kubevirt/virt-advisor/pkg/apis/advisor/v1alpha1"
)

// Rollout is how far a MachineConfigPool has rolled out one MachineConfig.
type Rollout struct {
	Done     bool
	Degraded bool
	Message  string
}

// EvaluateRollout follows the MachineConfig operator's protocol
// (docs/upstream-behaviour.md): the render controller writes the pool's
// spec.configuration, the node controller walks the status, and only when
// every node is updated and ready does status.configuration follow. A
// MachineConfig has rolled out when the pool runs a rendered config that
// includes it (or, after a delete, excludes it) and, for a changed
// MachineConfig, is another rendered config than the one noted before the
// apply. Right after an apply the pool still reads Updated=True for the old
// config: that is never "done".
func EvaluateRollout(pool *unstructured.Unstructured, poolName, mcName string, op v1alpha1.Operation, before string) Rollout {
	if pool == nil {
		return Rollout{Message: fmt.Sprintf("MachineConfigPool '%s' not found", poolName)}
	}
	c := countMachines(pool)
	if _, reported, _ := unstructured.NestedInt64(pool.Object, "status", "machineCount"); reported && c.machines == 0 {
		// No node to reboot: the pool has nothing to roll out.
		return Rollout{Done: true, Message: fmt.Sprintf("MachineConfigPool '%s' has no machines", poolName)}
	}
	if c.degraded > 0 || ConditionTrue(pool, "Degraded") || ConditionTrue(pool, "NodeDegraded") || ConditionTrue(pool, "RenderDegraded") {
		return Rollout{Degraded: true, Message: fmt.Sprintf("MachineConfigPool '%s' is degraded (%d degraded machines)", poolName, c.degraded)}
	}
	return rolloutProgress(pool, poolName, mcName, op, before, c)
}

// machineCounts are the machine counts of a pool's status.
type machineCounts struct{ machines, updated, ready, degraded int64 }

func countMachines(pool *unstructured.Unstructured) machineCounts {
	num := func(f string) int64 { v, _, _ := unstructured.NestedInt64(pool.Object, "status", f); return v }
	return machineCounts{num("machineCount"), num("updatedMachineCount"), num("readyMachineCount"), num("degradedMachineCount")}
}

func (c machineCounts) String() string {
	return fmt.Sprintf("(Updated: %d/%d, Ready: %d/%d)", c.updated, c.machines, c.ready, c.machines)
}

// rolloutSteps reports whether the render controller picked the
// MachineConfig up (the pool's spec has, or after a delete lacks, it; a
// changed one in another rendered config than before), whether the node
// controller rolled it out to every node, and whether the pool's status
// is of its current generation.
func rolloutSteps(pool *unstructured.Unstructured, mcName string, op v1alpha1.Operation, before string, c machineCounts) (picked, rolled, current bool) {
	specName, _, _ := unstructured.NestedString(pool.Object, "spec", "configuration", "name")
	statusName, _, _ := unstructured.NestedString(pool.Object, "status", "configuration", "name")
	wantIn := op != v1alpha1.OperationDelete
	picked = HasSource(pool, "spec", mcName) == wantIn && (op != v1alpha1.OperationUpdate || (specName != "" && specName != before))
	observed, _, _ := unstructured.NestedInt64(pool.Object, "status", "observedGeneration")
	current = observed == pool.GetGeneration()
	rolled = current && statusName == specName && HasSource(pool, "status", mcName) == wantIn &&
		ConditionTrue(pool, "Updated") && !ConditionTrue(pool, "Updating") &&
		c.updated == c.machines && c.ready == c.machines
	return picked, rolled, current
}

// rolloutProgress is EvaluateRollout for a pool with machines, none
// degraded.
func rolloutProgress(pool *unstructured.Unstructured, poolName, mcName string, op v1alpha1.Operation, before string, c machineCounts) Rollout {
	picked, rolled, current := rolloutSteps(pool, mcName, op, before, c)
	if paused, _, _ := unstructured.NestedBool(pool.Object, "spec", "paused"); paused && !(picked && rolled) {
		return Rollout{Message: fmt.Sprintf("MachineConfigPool '%s' is paused: it will not roll out until it is unpaused %s", poolName, c)}
	}
	switch {
	case picked && rolled:
		return Rollout{Done: true, Message: fmt.Sprintf("MachineConfigPool '%s' is ready (all %d nodes updated)", poolName, c.machines)}
	case ConditionTrue(pool, "Updating"):
		return Rollout{Message: fmt.Sprintf("MachineConfigPool '%s' is updating %s", poolName, c)}
	case !picked || !current:
		return Rollout{Message: fmt.Sprintf("MachineConfigPool '%s' is processing changes %s", poolName, c)}
	default:
		return Rollout{Message: fmt.Sprintf("Waiting for MachineConfigPool '%s' to stabilize %s", poolName, c)}
	}
}

func ConditionTrue(obj *unstructured.Unstructured, condType string) bool {
	conds, _, _ := unstructured.NestedSlice(obj.Object, "status", "conditions")
	for _, c := range conds {
		m, ok := c.(map[string]interface{})
		if ok && m["type"] == condType {
			return m["status"] == "True"
		}
	}
	return false
}

// Renders is true when the render controller rendered a written item for
// pool: the configuration its spec names includes the MachineConfig the
// item creates and excludes the one it deletes; for a changed
// MachineConfig and for a KubeletConfig (whose generated MachineConfig
// keeps its name), the spec names another rendered configuration than
// the one noted before the write. An item with nothing noted for the pool
// is taken as rendered.
func Renders(pool *unstructured.Unstructured, it *v1alpha1.VirtPlatformConfigItem) bool {
	if !IsKubeletConfig(it.TargetRef) {
		switch it.Operation {
		case v1alpha1.OperationCreate:
			return HasSource(pool, "spec", it.TargetRef.Name)
		case v1alpha1.OperationDelete:
			return !HasSource(pool, "spec", it.TargetRef.Name)
		}
	}
	before := ConfigBefore(it, pool.GetName())
	spec, _, _ := unstructured.NestedString(pool.Object, "spec", "configuration", "name")
	return before == "" || spec != before
}

// HasSource reports whether <part>.configuration.source lists the MachineConfig.
func HasSource(pool *unstructured.Unstructured, part, mcName string) bool {
	sources, _, _ := unstructured.NestedSlice(pool.Object, part, "configuration", "source")
	for _, s := range sources {
		if m, ok := s.(map[string]interface{}); ok && m["name"] == mcName {
			return true
		}
	}
	return false
}

// CombineRollouts: a MachineConfig has rolled out when every pool that
// renders it has; the message names each pool still rolling out (or, when
// done, each pool).
func CombineRollouts(mcName string, results []Rollout) Rollout {
	if len(results) == 0 {
		return Rollout{Message: fmt.Sprintf("No MachineConfigPool selects MachineConfig '%s': nothing will roll it out", mcName)}
	}
	all := Rollout{Done: true}
	var pending, ready []string
	for _, r := range results {
		if r.Done {
			ready = append(ready, r.Message)
			continue
		}
		all.Done = false
		all.Degraded = all.Degraded || r.Degraded
		pending = append(pending, r.Message)
	}
	if all.Done {
		all.Message = strings.Join(ready, "; ")
	} else {
		all.Message = strings.Join(pending, "; ")
	}
	return all
}

// ConfigBefore is the rendered config a pool was on when a MachineConfig
// item was applied (recorded in its poolConfigsBefore).
func ConfigBefore(it *v1alpha1.VirtPlatformConfigItem, pool string) string {
	for _, pc := range it.PoolConfigsBefore {
		if pc.Pool == pool {
			return pc.Configuration
		}
	}
	if pool == RoleOf(it.DesiredState) {
		return it.PoolConfigBefore // recorded by earlier versions, for one pool
	}
	return ""
}
