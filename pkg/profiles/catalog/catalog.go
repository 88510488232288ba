// Package catalog lists the profiles this build knows. Adding a profile is
// one package under pkg/profiles and one entry in Default: validation's
// list of profiles, the options defaults, the plan engine, the controller
// and the advertised configs all read the catalogue. (Package registry,
// in k8s.io/apiserver's sense, is the REST storage: pkg/registry.)
package catalog

import (
	"sort"

	"github.com/kubevirt/virt-advisor/pkg/apis/advisor/v1alpha1"
	"github.com/kubevirt/virt-advisor/pkg/apis/advisor/validation"
	"github.com/kubevirt/virt-advisor/pkg/profiles"
	"github.com/kubevirt/virt-advisor/pkg/profiles/dedicatedcpus"
	"github.com/kubevirt/virt-advisor/pkg/profiles/evictionstrategy"
	"github.com/kubevirt/virt-advisor/pkg/profiles/example"
	"github.com/kubevirt/virt-advisor/pkg/profiles/higherdensity"
	"github.com/kubevirt/virt-advisor/pkg/profiles/hugepages"
	"github.com/kubevirt/virt-advisor/pkg/profiles/livemigration"
	"github.com/kubevirt/virt-advisor/pkg/profiles/loadaware"
	"github.com/kubevirt/virt-advisor/pkg/profiles/pcipassthrough"
)

// Catalog maps profile names to profiles.
type Catalog struct {
	byName map[string]profiles.Profile
	// ordered are the profiles in the order they were given, the order
	// validation messages list them in.
	ordered []profiles.Profile
}

// New returns a catalogue of the given profiles.
func New(ps ...profiles.Profile) *Catalog {
	c := &Catalog{byName: map[string]profiles.Profile{}}
	for _, p := range ps {
		if _, dup := c.byName[p.Metadata().Name]; !dup {
			c.ordered = append(c.ordered, p)
		}
		c.byName[p.Metadata().Name] = p
	}
	return c
}

// Default returns the catalogue of every profile of this build.
func Default() *Catalog {
	return New(loadaware.New(), higherdensity.New(), example.New(), livemigration.New(), hugepages.New(), pcipassthrough.New(), dedicatedcpus.New(), evictionstrategy.New())
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

// Validation is what validation needs to know of the profiles: their
// names, in catalogue order, and the options block each reads.
func (c *Catalog) Validation() validation.Profiles {
	out := make(validation.Profiles, 0, len(c.ordered))
	for _, p := range c.ordered {
		md := p.Metadata()
		out = append(out, validation.Profile{Name: md.Name, Options: md.Options, Validate: md.ValidateOptions})
	}
	return out
}

// ResolveOptions returns the options a config of spec.profile runs with,
// every default applied (profiles.ResolveOptions).
func (c *Catalog) ResolveOptions(spec v1alpha1.VirtPlatformConfigSpec) v1alpha1.ProfileOptions {
	var block string
	if p, ok := c.Get(spec.Profile); ok {
		block = p.Metadata().Options
	}
	return profiles.ResolveOptions(block, spec)
}
