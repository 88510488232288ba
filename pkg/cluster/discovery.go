package cluster

import (
	"strings"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// DiscoverySettle is how long after a CRD event the main API server's
// discovery may still describe the CRDs as they were before it: the
// informer event and the server's discovery update race.
const DiscoverySettle = 2 * time.Second

// discoveryRecheck is how often discovery is read again while it settles.
const discoveryRecheck = 250 * time.Millisecond

// settlingMapper is a RESTMapper whose cached discovery follows CRD
// changes. A reset on the CRD event alone can read discovery a moment
// before the server updated it, and would then keep that answer (a
// HyperConverged still mapped to a version just removed) until the next
// CRD event. So until DiscoverySettle after the last change, a lookup
// reads discovery again if discoveryRecheck has passed since it was last
// read, and the first lookup after that once more: a stale answer lasts
// at most discoveryRecheck, and a CRD change costs a handful of discovery
// reads, not one per lookup.
type settlingMapper struct {
	meta.ResettableRESTMapper
	now func() time.Time

	mu sync.Mutex
	// settledAt is when discovery is current again after the last change;
	// due, if set, is when the cache is dropped next.
	settledAt, due time.Time
	// mappings are the RESTMappings found since the cache was last
	// dropped: the mapper beneath tries every group version it knows and
	// builds an error for each that does not match, on every lookup, and
	// a plan or a write looks up several kinds.
	mappings map[mappingKey]meta.RESTMapping
	// resets counts the drops: a mapping looked up across one is not kept.
	resets int
}

type mappingKey struct {
	kind     schema.GroupKind
	versions string
}

var _ meta.ResettableRESTMapper = &settlingMapper{}

func newSettlingMapper(m meta.ResettableRESTMapper, now func() time.Time) *settlingMapper {
	return &settlingMapper{ResettableRESTMapper: m, now: now}
}

// Changed records a CRD event.
func (m *settlingMapper) Changed() {
	m.mu.Lock()
	defer m.mu.Unlock()
	now := m.now()
	m.settledAt = now.Add(DiscoverySettle)
	m.resetLocked(now)
}

// fresh drops the cache when it is due.
func (m *settlingMapper) fresh() {
	m.mu.Lock()
	defer m.mu.Unlock()
	if now := m.now(); !m.due.IsZero() && !now.Before(m.due) {
		m.resetLocked(now)
	}
}

// resetLocked drops the cache and says when to drop it next: while
// discovery settles, after discoveryRecheck, and once when it has settled.
func (m *settlingMapper) resetLocked(now time.Time) {
	m.ResettableRESTMapper.Reset()
	m.mappings = nil
	m.resets++
	switch next := now.Add(discoveryRecheck); {
	case !now.Before(m.settledAt):
		m.due = time.Time{}
	case next.Before(m.settledAt):
		m.due = next
	default:
		m.due = m.settledAt
	}
}

func (m *settlingMapper) Reset() {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.resetLocked(m.now())
}

func (m *settlingMapper) KindFor(r schema.GroupVersionResource) (schema.GroupVersionKind, error) {
	m.fresh()
	return m.ResettableRESTMapper.KindFor(r)
}

func (m *settlingMapper) KindsFor(r schema.GroupVersionResource) ([]schema.GroupVersionKind, error) {
	m.fresh()
	return m.ResettableRESTMapper.KindsFor(r)
}

func (m *settlingMapper) ResourceFor(r schema.GroupVersionResource) (schema.GroupVersionResource, error) {
	m.fresh()
	return m.ResettableRESTMapper.ResourceFor(r)
}

func (m *settlingMapper) ResourcesFor(r schema.GroupVersionResource) ([]schema.GroupVersionResource, error) {
	m.fresh()
	return m.ResettableRESTMapper.ResourcesFor(r)
}

func (m *settlingMapper) RESTMapping(gk schema.GroupKind, versions ...string) (*meta.RESTMapping, error) {
	m.fresh()
	key := mappingKey{kind: gk, versions: strings.Join(versions, ",")}
	m.mu.Lock()
	found, ok := m.mappings[key]
	resets := m.resets
	m.mu.Unlock()
	if ok {
		return &found, nil // a copy: callers may keep or change theirs
	}
	mapping, err := m.ResettableRESTMapper.RESTMapping(gk, versions...)
	if err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.resets == resets {
		if m.mappings == nil {
			m.mappings = map[mappingKey]meta.RESTMapping{}
		}
		m.mappings[key] = *mapping
	}
	return mapping, nil
}

func (m *settlingMapper) RESTMappings(gk schema.GroupKind, versions ...string) ([]*meta.RESTMapping, error) {
	m.fresh()
	return m.ResettableRESTMapper.RESTMappings(gk, versions...)
}

func (m *settlingMapper) ResourceSingularizer(resource string) (string, error) {
	m.fresh()
	return m.ResettableRESTMapper.ResourceSingularizer(resource)
}
