package disruption

import (
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kubevirt/virt-advisor/pkg/apis/advisor/v1alpha1"
	"github.com/kubevirt/virt-advisor/pkg/kubevirt"
)

// KubeVirt's eviction strategies (kubevirt.io/api core/v1 EvictionStrategy).
const (
	StrategyNone                  = "None"
	StrategyLiveMigrate           = "LiveMigrate"
	StrategyLiveMigrateIfPossible = "LiveMigrateIfPossible"
	StrategyExternal              = "External"
)

// Reasons a VM's fate carries besides its LiveMigratable condition's own.
const (
	ReasonStrategyNone     = "EvictionStrategyNone"
	ReasonExternal         = "External"
	ReasonConditionMissing = "LiveMigratableConditionMissing"
	ReasonNotMigratable    = "NotLiveMigratable"
)

// Default is the cluster's default eviction strategy, which applies to a
// VMI whose own is unset.
type Default struct {
	Strategy string
	// Source says where it comes from, for messages.
	Source string
}

// ClusterDefault is the eviction strategy KubeVirt applies to a VMI
// without one: the HyperConverged's spec.evictionStrategy (v1:
// spec.virtualization.evictionStrategy) when it sets one, else the HCO's
// own default, LiveMigrate with two or more worker nodes and None with
// fewer (on a single node there is nowhere to migrate to).
func ClusterDefault(hco *unstructured.Unstructured, workers int) Default {
	if hco != nil {
		path := kubevirt.HCOFieldPath(kubevirt.VersionOf(hco), "evictionStrategy")
		if s, _, _ := unstructured.NestedString(hco.Object, path...); s != "" {
			return Default{Strategy: s, Source: "the HyperConverged's evictionStrategy"}
		}
	}
	if workers >= 2 {
		return Default{Strategy: StrategyLiveMigrate, Source: "the default with 2 or more worker nodes"}
	}
	return Default{Strategy: StrategyNone, Source: "the default with fewer than 2 worker nodes"}
}

// Fate is what draining its node does to a VMI, as KubeVirt's eviction
// webhook decides (pod-eviction-admitter.go): LiveMigrate migrates a
// migratable VMI and refuses the eviction of one that is not (the drain
// blocks); LiveMigrateIfPossible migrates or lets the VMI shut down;
// External always refuses (an outside controller is to remove the VMI);
// None, and a strategy KubeVirt does not act on, lets the eviction shut it
// down. A VMI without a LiveMigratable condition counts as not migratable.
func Fate(v kubevirt.VMI, def Default) (v1alpha1.VMFate, string) {
	strategy, suffix := v.Strategy, ""
	if strategy == "" {
		strategy, suffix = def.Strategy, " (cluster default "+def.Strategy+")"
	}
	why := v.Reason
	switch {
	case !v.Condition:
		why = ReasonConditionMissing
	case why == "":
		why = ReasonNotMigratable
	}
	switch strategy {
	case StrategyLiveMigrate:
		if v.Migratable {
			return v1alpha1.VMFateLiveMigrate, ""
		}
		return v1alpha1.VMFateBlocksDrain, why + suffix
	case StrategyLiveMigrateIfPossible:
		if v.Migratable {
			return v1alpha1.VMFateLiveMigrate, ""
		}
		return v1alpha1.VMFateShutDown, why + suffix
	case StrategyExternal:
		return v1alpha1.VMFateBlocksDrain, ReasonExternal + suffix
	case StrategyNone:
		return v1alpha1.VMFateShutDown, ReasonStrategyNone + suffix
	default:
		return v1alpha1.VMFateShutDown, "EvictionStrategy" + strategy + suffix
	}
}
