package pools

// What the pool controller reads of the configs: their status, in the
// informer's cache. Which approved items wait to write to a pool, which
// written items roll out on it, which aborts hold it and which windows a
// rollout trusts are all there; nothing of it is kept here, so nothing is
// rebuilt when a term of leadership starts. The one exception is an abort
// stored but not cached yet (aborting): its pools are paused before the
// abort is answered, and no reconcile in between may end that pause.

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"sync"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apiserver/pkg/storage"

	"github.com/kubevirt/virt-advisor/pkg/apis/advisor/v1alpha1"
	"github.com/kubevirt/virt-advisor/pkg/approval"
	"github.com/kubevirt/virt-advisor/pkg/machineconfig"
	"github.com/kubevirt/virt-advisor/pkg/status"
)

// itemKey names an item of a config (uid: the config's, so that a config
// deleted and created again under its name is another).
type itemKey struct {
	config, item string
	uid          types.UID
}

// configView is the configs as one reconcile reads them.
type configView struct {
	configs []*v1alpha1.VirtPlatformConfig
}

// readConfigs reads the configs from the cache, an abort stored but not
// cached yet in place of its config's cached version.
func (c *Controller) readConfigs() (configView, error) {
	var cached []*v1alpha1.VirtPlatformConfig
	if c.Configs != nil {
		var err error
		if cached, err = c.Configs.List(labels.Everything()); err != nil {
			return configView{}, err
		}
	}
	return configView{configs: c.aborting.over(cached)}, nil
}

// named is the config of that name, nil when there is none.
func (v configView) named(name string) *v1alpha1.VirtPlatformConfig {
	for _, cfg := range v.configs {
		if cfg.Name == name {
			return cfg
		}
	}
	return nil
}

// followed is true when the pools of cfg's items are ours to follow: not
// under action Ignore.
func followed(cfg *v1alpha1.VirtPlatformConfig) bool {
	return cfg.Spec.Action != v1alpha1.PlanActionIgnore
}

// writePending is true for an item whose write has not been confirmed:
// not started, or started before a crash (its intent recorded), or
// retrying.
func writePending(it *v1alpha1.VirtPlatformConfigItem) bool {
	return it.State == v1alpha1.ItemStatePending || (it.State == v1alpha1.ItemStateInProgress && (it.Message == status.ItemApplying || it.Retry != nil))
}

// dueOnPools is true for an approved item of an InProgress config that
// rolls pools and whose write is pending: it waits on its pools.
func dueOnPools(cfg *v1alpha1.VirtPlatformConfig, it *v1alpha1.VirtPlatformConfigItem) bool {
	return cfg.Status.Phase == v1alpha1.PhaseInProgress && machineconfig.RollsPools(it.TargetRef) && writePending(it) && it.Operation != v1alpha1.OperationNone
}

// rollingOut is true for a written item whose rollout is followed.
func rollingOut(cfg *v1alpha1.VirtPlatformConfig, it *v1alpha1.VirtPlatformConfigItem) bool {
	return it.State == v1alpha1.ItemStateInProgress && machineconfig.RollsPools(it.TargetRef) && !dueOnPools(cfg, it)
}

// rollingOn lists the written items that roll out on pool: on the pools
// noted when they were written, else on those rendering their change.
func (v configView) rollingOn(pool *unstructured.Unstructured, all []unstructured.Unstructured) []itemKey {
	var out []itemKey
	for _, cfg := range v.configs {
		if !followed(cfg) {
			continue
		}
		for i := range cfg.Status.Items {
			if it := &cfg.Status.Items[i]; rollingOut(cfg, it) && rollsOn(it, pool, all) {
				out = append(out, itemKey{cfg.Name, it.Name, cfg.UID})
			}
		}
	}
	sortKeys(out)
	return out
}

// unrendered says why pool, which has nodes to update, must stay paused
// because the MachineConfig operator has not rendered an item written to
// it yet ("" when it renders every item rolling out on it): its
// spec.configuration still names the configuration before the write, so
// an unpause would roll that one out, rebooting nodes into what the item
// changes (after a revert, into what it takes back) and again once it
// renders. A pool with nothing to roll out is never held for it: nothing
// reboots, whatever the render.
func (v configView) unrendered(pool *unstructured.Unstructured, rolling []itemKey) string {
	if !machineconfig.RollingOut(pool) {
		return ""
	}
	for _, k := range rolling {
		cfg := v.named(k.config)
		if cfg == nil {
			continue
		}
		for i := range cfg.Status.Items {
			if it := &cfg.Status.Items[i]; it.Name == k.item && !machineconfig.Renders(pool, it) {
				spec, _, _ := unstructured.NestedString(pool.Object, "spec", "configuration", "name")
				return fmt.Sprintf("the MachineConfig operator has not rendered item '%s' of VirtPlatformConfig '%s' (%s %s '%s') for MachineConfigPool '%s' yet: its spec.configuration still names %s; the pool stays paused until it does, so that no node is updated to that configuration",
					it.Name, cfg.Name, strings.ToLower(string(it.Operation)), it.TargetRef.Kind, it.TargetRef.Name, pool.GetName(), spec)
			}
		}
	}
	return ""
}

// rollsOn is true when a written item rolls out on pool.
func rollsOn(it *v1alpha1.VirtPlatformConfigItem, pool *unstructured.Unstructured, all []unstructured.Unstructured) bool {
	if len(it.PoolConfigsBefore) > 0 {
		return slices.ContainsFunc(it.PoolConfigsBefore, func(pc v1alpha1.PoolConfiguration) bool { return pc.Pool == pool.GetName() })
	}
	ok, err := machineconfig.ItemChange(it.TargetRef, it.DesiredState).RolledBy(pool, all)
	return err == nil && ok
}

// dueOn lists the configs, sorted, whose approved items wait to write to
// pool; changeOf is what an item's write changes (writeChange).
func (v configView) dueOn(pool *unstructured.Unstructured, all []unstructured.Unstructured, changeOf func(*v1alpha1.VirtPlatformConfigItem) (machineconfig.Change, error)) []string {
	configs := sets.New[string]()
	for _, cfg := range v.configs {
		if !followed(cfg) {
			continue
		}
		for i := range cfg.Status.Items {
			it := &cfg.Status.Items[i]
			if !dueOnPools(cfg, it) {
				continue
			}
			change, err := changeOf(it)
			if ok, rerr := change.RolledBy(pool, all); err == nil && rerr == nil && ok {
				configs.Insert(cfg.Name)
			}
		}
	}
	return sets.List(configs)
}

// abortedOn lists the configs whose abort holds pool paused, sorted.
func (v configView) abortedOn(pool *unstructured.Unstructured, all []unstructured.Unstructured) []string {
	var out []string
	for _, cfg := range v.configs {
		if holds(abortHold(cfg), pool, all) {
			out = append(out, cfg.Name)
		}
	}
	slices.Sort(out)
	return out
}

// holds is true when one of the changes an abort holds rolls on pool. A
// change that cannot be matched holds the pool: a pause kept too long is
// safer than a drain resumed.
func holds(changes []machineconfig.Change, pool *unstructured.Unstructured, all []unstructured.Unstructured) bool {
	for _, change := range changes {
		if ok, err := change.RolledBy(pool, all); err != nil || ok {
			return true
		}
	}
	return false
}

// abortHold are the MachineConfig changes of cfg's aborted plan that were
// written or being written, as the abort recorded them (never the items,
// which a spec change replaces); none without an abort. Only a new
// approval (which clears status.abort) or the config's deletion ends it.
func abortHold(cfg *v1alpha1.VirtPlatformConfig) []machineconfig.Change {
	a := cfg.Status.Abort
	if a == nil {
		return nil
	}
	held := a.Held
	if held == nil && len(a.Written)+len(a.InFlight) > 0 {
		// Recorded by a server that kept no held configs: the items.
		held = approval.Held(cfg.Status.Items)
	}
	var out []machineconfig.Change
	for _, h := range held {
		out = append(out, machineconfig.HeldChange(h))
	}
	return out
}

// allowsBlocking is true when every one of configs, at least one, says
// spec.rollout.allowBlockingDrains; a config not in the cache does not.
func (v configView) allowsBlocking(configs []string) bool {
	for _, name := range configs {
		if cfg := v.named(name); cfg == nil || !cfg.Spec.AllowsBlockingDrains() {
			return false
		}
	}
	return len(configs) > 0
}

// resyncIfHeld looks at every pool again when a config's change bears on
// pools: its abort's hold, or which of its items wait on or roll out on
// pools (the pool's reconcile sets the timer of its window's close).
func (t *term) resyncIfHeld(oldObj, newObj interface{}) {
	if poolFacts(oldObj) != poolFacts(newObj) {
		t.resync()
	}
}

// poolFacts sums up what a config says of pools, to compare two of its
// versions; "" for none.
func poolFacts(obj interface{}) string {
	if d, ok := obj.(interface{ GetObj() interface{} }); ok {
		obj = d.GetObj()
	}
	cfg, ok := obj.(*v1alpha1.VirtPlatformConfig)
	if !ok || cfg == nil {
		return ""
	}
	var b strings.Builder
	if a := cfg.Status.Abort; a != nil {
		b.WriteString("abort " + a.PlanHash + " " + a.AbortedAt.String())
	}
	for i := range cfg.Status.Items {
		it := &cfg.Status.Items[i]
		switch {
		case !followed(cfg):
		case dueOnPools(cfg, it):
			b.WriteString(" due " + it.Name)
		case rollingOut(cfg, it):
			b.WriteString(" rolling " + it.Name)
		}
	}
	return b.String()
}

func sortKeys(keys []itemKey) {
	slices.SortFunc(keys, func(a, b itemKey) int {
		return cmp.Or(strings.Compare(a.config, b.config), strings.Compare(a.item, b.item))
	})
}

// aborting are the configs whose abort is stored and whose pools were
// paused (PauseAborted), until the cache holds that version or a newer
// one: a reconcile from a cache behind the abort would end the pause.
type aborting struct {
	mu      sync.Mutex
	configs map[string]*v1alpha1.VirtPlatformConfig
}

func newAborting() *aborting {
	return &aborting{configs: map[string]*v1alpha1.VirtPlatformConfig{}}
}

func (a *aborting) put(cfg *v1alpha1.VirtPlatformConfig) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.configs[cfg.Name] = cfg.DeepCopy()
}

// over returns cached with the aborts not cached yet in place of their
// configs; one the cache caught up with (or that is gone) is dropped.
func (a *aborting) over(cached []*v1alpha1.VirtPlatformConfig) []*v1alpha1.VirtPlatformConfig {
	a.mu.Lock()
	defer a.mu.Unlock()
	if len(a.configs) == 0 {
		return cached
	}
	out := make([]*v1alpha1.VirtPlatformConfig, 0, len(cached))
	for _, cfg := range cached {
		stored, ok := a.configs[cfg.Name]
		switch {
		case !ok:
		case stored.UID == cfg.UID && olderThan(cfg.ResourceVersion, stored.ResourceVersion):
			cfg = stored
		default:
			delete(a.configs, cfg.Name)
		}
		out = append(out, cfg)
	}
	for name := range a.configs {
		if !slices.ContainsFunc(cached, func(cfg *v1alpha1.VirtPlatformConfig) bool { return cfg.Name == name }) {
			delete(a.configs, name) // deleted since
		}
	}
	return out
}

// olderThan is true when resourceVersion rv comes before other: both are
// revisions of the server's own storage, which the server may compare.
func olderThan(rv, other string) bool {
	if rv == "" || other == "" {
		return false
	}
	var versioner storage.APIObjectVersioner
	a, errA := versioner.ParseResourceVersion(rv)
	b, errB := versioner.ParseResourceVersion(other)
	return errA == nil && errB == nil && a < b
}
