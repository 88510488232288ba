package cluster

import (
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// cachingDiscovery is a deferred discovery mapper of one kind: a lookup
// reads the server's preferred version once and keeps it until Reset.
type cachingDiscovery struct {
	meta.ResettableRESTMapper
	server string // the version the server's discovery prefers now
	cached string
	reads  int
}

func (d *cachingDiscovery) Reset() { d.cached = "" }

func (d *cachingDiscovery) RESTMapping(gk schema.GroupKind, _ ...string) (*meta.RESTMapping, error) {
	if d.cached == "" {
		d.cached = d.server
		d.reads++
	}
	return &meta.RESTMapping{GroupVersionKind: gk.WithVersion(d.cached)}, nil
}

var hyperConverged = schema.GroupKind{Group: "hco.kubevirt.io", Kind: "HyperConverged"}

func TestSettlingMapperFollowsDiscoveryThatLagsTheCRDEvent(t *testing.T) {
	type step struct {
		at          time.Duration // since the start
		crdEvent    bool          // a CRD event arrives
		server      string        // the server's discovery now prefers this version
		wantVersion string        // a lookup answers this version
		wantReads   int           // discovery reads so far
	}
	tests := []struct {
		name  string
		steps []step
	}{{
		name: "no CRD change: discovery is read once",
		steps: []step{
			{at: 0, wantVersion: "v1beta1", wantReads: 1},
			{at: time.Minute, wantVersion: "v1beta1", wantReads: 1},
		},
	}, {
		name: "the event arrives before the server's discovery changes: the stale answer lasts one recheck",
		steps: []step{
			{at: 0, wantVersion: "v1beta1", wantReads: 1},
			{at: time.Second, crdEvent: true},
			{at: time.Second + time.Millisecond, wantVersion: "v1beta1", wantReads: 2},
			{at: time.Second + 10*time.Millisecond, server: "v1"},
			{at: time.Second + 20*time.Millisecond, wantVersion: "v1beta1", wantReads: 2},
			{at: time.Second + discoveryRecheck, wantVersion: "v1", wantReads: 3},
			{at: time.Minute, wantVersion: "v1", wantReads: 4},
			{at: 2 * time.Minute, wantVersion: "v1", wantReads: 4},
		},
	}, {
		name: "no lookup while discovery settles: the first one after reads it",
		steps: []step{
			{at: 0, wantVersion: "v1beta1", wantReads: 1},
			{at: time.Second, crdEvent: true, server: "v1"},
			{at: time.Minute, wantVersion: "v1", wantReads: 2},
			{at: 2 * time.Minute, wantVersion: "v1", wantReads: 2},
		},
	}, {
		name: "a lookup exactly when discovery has settled reads it once more",
		steps: []step{
			{at: 0, crdEvent: true},
			{at: time.Millisecond, wantVersion: "v1beta1", wantReads: 1},
			{at: 5 * time.Millisecond, server: "v1"},
			{at: DiscoverySettle, wantVersion: "v1", wantReads: 2},
			{at: DiscoverySettle + time.Millisecond, wantVersion: "v1", wantReads: 2},
		},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			start := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
			now := start
			d := &cachingDiscovery{server: "v1beta1"}
			m := newSettlingMapper(d, func() time.Time { return now })
			for i, s := range tt.steps {
				now = start.Add(s.at)
				if s.server != "" {
					d.server = s.server
				}
				if s.crdEvent {
					m.Changed()
				}
				if s.wantVersion == "" {
					continue
				}
				mapping, err := m.RESTMapping(hyperConverged)
				if err != nil {
					t.Fatalf("step %d: %v", i, err)
				}
				if got := mapping.GroupVersionKind.Version; got != s.wantVersion {
					t.Errorf("step %d (%v): version %q, want %q", i, s.at, got, s.wantVersion)
				}
				if d.reads != s.wantReads {
					t.Errorf("step %d (%v): %d discovery reads, want %d", i, s.at, d.reads, s.wantReads)
				}
			}
		})
	}
}

func TestSettlingMapperReadsDiscoveryAFewTimesPerCRDChange(t *testing.T) {
	start := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	now := start
	d := &cachingDiscovery{server: "v1beta1"}
	m := newSettlingMapper(d, func() time.Time { return now })
	m.Changed()
	// A plan every 10 ms while discovery settles, and after.
	for at := time.Duration(0); at < 2*DiscoverySettle; at += 10 * time.Millisecond {
		now = start.Add(at)
		for i := 0; i < 5; i++ { // a plan looks up several kinds
			if _, err := m.RESTMapping(hyperConverged); err != nil {
				t.Fatal(err)
			}
		}
	}
	if max := int(DiscoverySettle/discoveryRecheck) + 1; d.reads > max {
		t.Errorf("%d discovery reads for one CRD change, want at most %d", d.reads, max)
	}
}

// TestSettlingMapperKeepsMappingsUntilTheCacheIsDropped: a kind is looked
// up beneath once per state of the cache; a CRD change looks it up again,
// and a mapping looked up while the cache was dropped is not kept.
func TestSettlingMapperKeepsMappingsUntilTheCacheIsDropped(t *testing.T) {
	now := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	d := &countingMapper{cachingDiscovery: cachingDiscovery{server: "v1beta1"}}
	m := newSettlingMapper(d, func() time.Time { return now })
	lookup := func() string {
		t.Helper()
		mapping, err := m.RESTMapping(hyperConverged)
		if err != nil {
			t.Fatal(err)
		}
		return mapping.GroupVersionKind.Version
	}
	for i := 0; i < 5; i++ {
		lookup()
	}
	if d.calls != 1 {
		t.Errorf("%d lookups beneath for 5 of one kind, want 1", d.calls)
	}
	d.server = "v1"
	m.Changed()
	if got := lookup(); got != "v1" || d.calls != 2 {
		t.Errorf("after a CRD change: version %s after %d lookups beneath, want v1 after 2", got, d.calls)
	}
	// A drop while a lookup is under way: its answer is not kept.
	d.during = func() { d.server = "v2"; m.Changed() }
	now = now.Add(2 * DiscoverySettle)
	m.Changed()
	lookup()
	d.during = nil
	if got := lookup(); got != "v2" {
		t.Errorf("after a drop during a lookup: version %s, want v2", got)
	}
}

// countingMapper counts the lookups that reach it; during runs in the
// middle of one.
type countingMapper struct {
	cachingDiscovery
	calls  int
	during func()
}

func (d *countingMapper) RESTMapping(gk schema.GroupKind, versions ...string) (*meta.RESTMapping, error) {
	d.calls++
	mapping, err := d.cachingDiscovery.RESTMapping(gk, versions...)
	if d.during != nil {
		d.during()
	}
	return mapping, err
}
