// Package catalog lists the profiles this build knows. (Package registry,
// in k8s.io/apiserver's sense, is the REST storage: pkg/registry.)
package catalog

import (
	"sort"

	"github.com/kubevirt/virt-advisor/pkg/profiles"
	"github.com/kubevirt/virt-advisor/pkg/profiles/example"
	"github.com/kubevirt/virt-advisor/pkg/profiles/higherdensity"
	"github.com/kubevirt/virt-advisor/pkg/profiles/loadaware"
)

// Catalog maps profile names to profiles.
type Catalog struct {
	byName map[string]profiles.Profile
}

// New returns a catalogue of the given profiles.
func New(ps ...profiles.Profile) *Catalog {
	c := &Catalog{byName: map[string]profiles.Profile{}}
	for _, p := range ps {
		c.byName[p.Metadata().Name] = p
	}
	return c
}

// Default returns the catalogue of every profile of this build.
func Default() *Catalog {
	return New(example.New(), loadaware.New(), higherdensity.New())
}

// Get returns a profile by name.
func (c *Catalog) Get(name string) (profiles.Profile, bool) {
	p, ok := c.byName[name]
	return p, ok
}

// Names returns every profile name, sorted.
func (c *Catalog) Names() []string {
	names := make([]string, 0, len(c.byName))
	for n := range c.byName {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// Advertised returns the advertised profiles, sorted by name.
func (c *Catalog) Advertised() []profiles.Profile {
	var out []profiles.Profile
	for _, p := range c.byName {
		if p.Metadata().Advertised {
			out = append(out, p)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Metadata().Name < out[j].Metadata().Name })
	return out
}
