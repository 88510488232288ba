package pools

import (
	"cmp"
	"slices"
	"strings"
	"sync"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/sets"

	"github.com/kubevirt/virt-advisor/pkg/machineconfig"
	"github.com/kubevirt/virt-advisor/pkg/maintenance"
)

// itemKey names an item of a config.
type itemKey struct{ config, item string }

// index is which approved items wait on which pool (asked Admit, not
// written yet) and which written items roll out on which pool (asked
// Rollout): a pool's reconcile needs no list of configs.
type index struct {
	mu sync.Mutex
	// waiting and rolling: pool -> items.
	waiting, rolling map[string]sets.Set[itemKey]
	// expected: approved items of the configs in progress at the start of
	// a term, by what the pools that render them are found by: due ones
	// until they ask Admit, written ones until they ask Rollout.
	expected map[itemKey]expectedItem
	// pauses: the window pauses of each written item's pools.
	pauses map[itemKey]*pauseCount
	// pools: every pool a config's items were evaluated on (watched).
	pools map[string]sets.Set[string]
	// aborts: by aborted config, the changes whose pools it holds paused.
	aborts map[string]AbortHold
	// allowBlocking: by config, spec.rollout.allowBlockingDrains.
	allowBlocking map[string]bool
	// resumeHolds: by pool, why our pause of it outlasts its end
	// (resume.go).
	resumeHolds map[string]string
	// trusts: by config whose plan an approval policy approved, the
	// Allow windows its rollout may go on in (windows.go).
	trusts map[string]func(*maintenance.Window) bool
}

func newIndex() *index {
	return &index{
		waiting: map[string]sets.Set[itemKey]{}, rolling: map[string]sets.Set[itemKey]{},
		expected: map[itemKey]expectedItem{}, pauses: map[itemKey]*pauseCount{},
		pools: map[string]sets.Set[string]{}, aborts: map[string]AbortHold{},
		allowBlocking: map[string]bool{}, resumeHolds: map[string]string{},
		trusts: map[string]func(*maintenance.Window) bool{},
	}
}

func add(m map[string]sets.Set[itemKey], pool string, k itemKey) {
	if m[pool] == nil {
		m[pool] = sets.New[itemKey]()
	}
	m[pool].Insert(k)
}

// setWaiting records that item k waits to write to pools.
func (x *index) setWaiting(k itemKey, pools []string) {
	x.mu.Lock()
	defer x.mu.Unlock()
	delete(x.expected, k)
	for _, p := range pools {
		add(x.waiting, p, k)
	}
	x.see(k.config, pools)
}

// setRolling records that item k, written, rolls out on pool; false when
// it was known.
func (x *index) setRolling(k itemKey, pool string) bool {
	x.mu.Lock()
	defer x.mu.Unlock()
	delete(x.expected, k)
	if x.rolling[pool].Has(k) {
		return false
	}
	add(x.rolling, pool, k)
	return true
}

// see remembers pools of a config (mu held).
func (x *index) see(config string, pools []string) {
	if x.pools[config] == nil {
		x.pools[config] = sets.New[string]()
	}
	x.pools[config].Insert(pools...)
}

func (x *index) seeLocked(config string, pools []string) {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.see(config, pools)
}

func (x *index) seen(config string) []string {
	x.mu.Lock()
	defer x.mu.Unlock()
	return sets.List(x.pools[config])
}

// expectedItem is an item known at the start of a term: its change, and
// whether it was written (it rolls out) or is due (it waits to write).
type expectedItem struct {
	change  machineconfig.Change
	written bool
}

func (x *index) expect(k itemKey, e expectedItem) {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.expected[k] = e
}

// expectedRollingOn lists the written items known at the start of the
// term that roll out on pool and have not asked Rollout yet.
func (x *index) expectedRollingOn(pool *unstructured.Unstructured, pools []unstructured.Unstructured) []itemKey {
	x.mu.Lock()
	defer x.mu.Unlock()
	var out []itemKey
	for k, e := range x.expected {
		if ok, err := e.change.RolledBy(pool, pools); e.written && err == nil && ok {
			out = append(out, k)
		}
	}
	sortKeys(out)
	return out
}

// due lists the configs of the items waiting to write to pool (expected
// ones included), sorted; pools are all the pools (what a KubeletConfig
// is rendered as depends on them).
func (x *index) due(pool *unstructured.Unstructured, pools []unstructured.Unstructured) []string {
	x.mu.Lock()
	defer x.mu.Unlock()
	configs := sets.New[string]()
	for k := range x.waiting[pool.GetName()] {
		configs.Insert(k.config)
	}
	for k, e := range x.expected {
		if ok, err := e.change.RolledBy(pool, pools); !e.written && err == nil && ok {
			configs.Insert(k.config)
		}
	}
	return sets.List(configs)
}

// rollingOn lists the items rolling out on pool.
func (x *index) rollingOn(pool string) []itemKey {
	x.mu.Lock()
	defer x.mu.Unlock()
	out := x.rolling[pool].UnsortedList()
	sortKeys(out)
	return out
}

// pauseCount counts the window pauses of a written item's pools: stored,
// what its status said when this index began to follow it, and made, the
// pauses since. A status write that fails loses nothing: the next
// reconcile says stored+made again.
type pauseCount struct{ stored, made int32 }

// follow begins to count the window pauses of item k, whose status says
// stored, and returns its count.
func (x *index) follow(k itemKey, stored int32) int32 {
	x.mu.Lock()
	defer x.mu.Unlock()
	pc := x.pauses[k]
	if pc == nil {
		pc = &pauseCount{stored: stored}
		x.pauses[k] = pc
	}
	return pc.stored + pc.made
}

// paused counts a window pause of pool for the items rolling out on it.
func (x *index) paused(pool string) {
	x.mu.Lock()
	defer x.mu.Unlock()
	for k := range x.rolling[pool] {
		if pc := x.pauses[k]; pc != nil {
			pc.made++
		}
	}
}

// keep drops the entries of config's items other than these.
func (x *index) keep(config string, waiting, rolling []string) {
	x.mu.Lock()
	defer x.mu.Unlock()
	w, r := sets.New(waiting...), sets.New(rolling...)
	drop := func(m map[string]sets.Set[itemKey], keep sets.Set[string]) {
		for pool, items := range m {
			for k := range items {
				if k.config == config && !keep.Has(k.item) {
					items.Delete(k)
				}
			}
			if items.Len() == 0 {
				delete(m, pool)
			}
		}
	}
	drop(x.waiting, w)
	drop(x.rolling, r)
	for k, e := range x.expected {
		if k.config == config && (e.written && !r.Has(k.item) || !e.written && !w.Has(k.item)) {
			delete(x.expected, k)
		}
	}
	for k := range x.pauses {
		if k.config == config && !r.Has(k.item) {
			delete(x.pauses, k)
		}
	}
}

// forget drops a config.
func (x *index) forget(config string) {
	x.keep(config, nil, nil)
	x.mu.Lock()
	defer x.mu.Unlock()
	delete(x.pools, config)
	delete(x.aborts, config)
	delete(x.trusts, config)
	delete(x.allowBlocking, config)
}

func sortKeys(keys []itemKey) {
	slices.SortFunc(keys, func(a, b itemKey) int {
		return cmp.Or(strings.Compare(a.config, b.config), strings.Compare(a.item, b.item))
	})
}
