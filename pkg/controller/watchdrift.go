package controller

// Drift from the watch: an applied config is looked at again on every
// watch event of its targets and inputs. When only targets changed, what
// the event brought is compared with what was applied (the managed fields
// of each item and the values it set there) in the watch caches, without
// a dry-run (plan.Engine.DriftFromCaches); a full plan, with a dry-run per
// item, is computed only when an input changed, when the comparison cannot
// tell, or when no event says what changed (a resync, a restart).

import (
	"context"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/klog/v2"

	"github.com/kubevirt/virt-advisor/pkg/apis/advisor/v1alpha1"
	"github.com/kubevirt/virt-advisor/pkg/cluster"
)

// objectEvents records, per config, the objects whose watch events came
// since its last reconcile.
type objectEvents struct {
	mu   sync.Mutex
	keys map[string]sets.Set[cluster.ObjectKey]
}

func newObjectEvents() *objectEvents {
	return &objectEvents{keys: map[string]sets.Set[cluster.ObjectKey]{}}
}

func (e *objectEvents) seen(config string, key cluster.ObjectKey) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.keys[config] == nil {
		e.keys[config] = sets.New[cluster.ObjectKey]()
	}
	e.keys[config].Insert(key)
}

// take returns and forgets the objects seen since the last take.
func (e *objectEvents) take(config string) sets.Set[cluster.ObjectKey] {
	e.mu.Lock()
	defer e.mu.Unlock()
	keys := e.keys[config]
	delete(e.keys, config)
	return keys
}

// fromWatch decides the drift of an applied config from the watch
// caches when the events since its last reconcile were all of targets of
// applied items; decided is false when a full plan must (an event of an
// input, none at all, a profile logic to compare, a drift that would be
// corrected at once, or a comparison that cannot tell).
func (d *driftChecker) fromWatch(ctx context.Context, cfg *v1alpha1.VirtPlatformConfig, events sets.Set[cluster.ObjectKey]) (changes, bool) {
	st := &cfg.Status
	if events.Len() == 0 || st.OperatorVersion != d.version ||
		(cfg.Spec.Action == v1alpha1.PlanActionApply && cfg.Spec.BypassOptimisticLock) {
		return changes{}, false
	}
	applied := appliedItems(st)
	targets := sets.New[cluster.ObjectKey]()
	for _, it := range applied {
		targets.Insert(unversioned(it.TargetRef.APIVersion, it.TargetRef.Kind, it.TargetRef.Namespace, it.TargetRef.Name))
	}
	for key := range events {
		if !targets.Has(cluster.ObjectKey{GVK: key.GVK.GroupKind().WithVersion(""), Namespace: key.Namespace, Name: key.Name}) {
			return changes{}, false
		}
	}
	drifted, decided, err := d.planner.DriftFromCaches(ctx, cfg, applied)
	if err != nil {
		klog.FromContext(ctx).V(2).Info("Drift not decided from the watch caches; computing the plan", "config", cfg.Name, "reason", err)
		return changes{}, false
	}
	if !decided {
		return changes{}, false
	}
	return changes{drifted: drifted}, true
}

// unversioned is the key of an object whatever the version it is read in.
func unversioned(apiVersion, kind, namespace, name string) cluster.ObjectKey {
	gv, _ := schema.ParseGroupVersion(apiVersion)
	return cluster.ObjectKey{GVK: schema.GroupVersionKind{Group: gv.Group, Kind: kind}, Namespace: namespace, Name: name}
}

// seenPools records, per config, the pools its items were evaluated on
// (the pool controller's Admit and Rollout name them), so that the config
// is looked at again when one of them changes: a pool busy, or paused by
// someone else, holds a write with no timer of its own.
type seenPools struct {
	mu    sync.Mutex
	names map[string]sets.Set[string]
}

func newSeenPools() *seenPools { return &seenPools{names: map[string]sets.Set[string]{}} }

func (s *seenPools) add(config string, pools []string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.names[config] == nil {
		s.names[config] = sets.New[string]()
	}
	s.names[config].Insert(pools...)
}

func (s *seenPools) pools(config string) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return sets.List(s.names[config])
}

// forget drops a deleted config.
func (s *seenPools) forget(config string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.names, config)
}

// soonest is the soonest of durations, 0 meaning none: when to look again
// of several reasons to.
func soonest(ds ...time.Duration) time.Duration {
	var out time.Duration
	for _, d := range ds {
		if d > 0 && (out == 0 || d < out) {
			out = d
		}
	}
	return out
}
