// Package registry lists the profiles this build knows.
package registry

import (
	"sort"

	"github.com/kubevirt/virt-advisor/pkg/profiles"
	"github.com/kubevirt/virt-advisor/pkg/profiles/example"
	"github.com/kubevirt/virt-advisor/pkg/profiles/higherdensity"
	"github.com/kubevirt/virt-advisor/pkg/profiles/loadaware"
)

// Registry maps profile names to profiles.
type Registry struct {
	byName map[string]profiles.Profile
}

// New returns a registry of the given profiles.
func New(ps ...profiles.Profile) *Registry {
	r := &Registry{byName: map[string]profiles.Profile{}}
	for _, p := range ps {
		r.byName[p.Metadata().Name] = p
	}
	return r
}

// Default returns the registry of every profile of this build.
func Default() *Registry {
	return New(example.New(), loadaware.New(), higherdensity.New())
}

// Get returns a profile by name.
func (r *Registry) Get(name string) (profiles.Profile, bool) {
	p, ok := r.byName[name]
	return p, ok
}

// Names returns every profile name, sorted.
func (r *Registry) Names() []string {
	names := make([]string, 0, len(r.byName))
	for n := range r.byName {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// Advertised returns the advertised profiles, sorted by name.
func (r *Registry) Advertised() []profiles.Profile {
	var out []profiles.Profile
	for _, p := range r.byName {
		if p.Metadata().Advertised {
			out = append(out, p)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Metadata().Name < out[j].Metadata().Name })
	return out
}
