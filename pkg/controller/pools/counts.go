package pools

import (
	"sync"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
)

// pauseCounts counts the window pauses of the pools of each written item
// whose rollout a config asked about: stored, what its status said when
// the count began, and made, the pauses since. A status write that fails
// loses nothing: the next Rollout says stored+made again. It is the one
// fact of an item the configs' status does not hold yet.
type pauseCounts struct {
	mu     sync.Mutex
	counts map[itemKey]*pauseCount
}

type pauseCount struct{ stored, made int32 }

func newPauseCounts() *pauseCounts { return &pauseCounts{counts: map[itemKey]*pauseCount{}} }

// follow begins to count the window pauses of item k, whose status says
// stored, and returns its count.
func (p *pauseCounts) follow(k itemKey, stored int32) int32 {
	p.mu.Lock()
	defer p.mu.Unlock()
	pc := p.counts[k]
	if pc == nil {
		pc = &pauseCount{stored: stored}
		p.counts[k] = pc
	}
	return pc.stored + pc.made
}

// paused counts a window pause for these items (those rolling out on the
// pool paused).
func (p *pauseCounts) paused(keys []itemKey) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, k := range keys {
		if pc := p.counts[k]; pc != nil {
			pc.made++
		}
	}
}

// keepItems drops the counts of config's items other than rolling (its
// items still rolling out).
func (p *pauseCounts) keepItems(config string, uid types.UID, rolling sets.Set[string]) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for k := range p.counts {
		if k.config == config && k.uid == uid && !rolling.Has(k.item) {
			delete(p.counts, k)
		}
	}
}

// keepConfigs drops the counts of the configs live does not hold (by
// name and uid: deleted).
func (p *pauseCounts) keepConfigs(live sets.Set[itemKey]) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for k := range p.counts {
		if !live.Has(itemKey{config: k.config, uid: k.uid}) {
			delete(p.counts, k)
		}
	}
}
