// Package samples holds a sample VirtPlatformConfig of every advertised
// profile, generated from the profile's package: its SampleNote and its
// first example, with every default shown. go test ./artifacts/samples
// -update writes them.
package samples

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/kubevirt/virt-advisor/pkg/apis/advisor/v1alpha1"
	"github.com/kubevirt/virt-advisor/pkg/profiles"
	"github.com/kubevirt/virt-advisor/pkg/profiles/catalog"
)

var update = flag.Bool("update", false, "write the samples")

// sample is the sample of a profile: spec.profile first, then the
// action and the options (sorted), as a person writes it.
func sample(md profiles.Metadata) ([]byte, error) {
	var out bytes.Buffer
	out.WriteString("# Generated from the profile's package (SampleNote, its first example):\n# go test ./artifacts/samples -update.\n")
	for _, line := range strings.Split(strings.TrimSuffix(md.SampleNote, "\n"), "\n") {
		out.WriteString(strings.TrimRight("# "+line, " ") + "\n")
	}
	out.WriteString("# VirtPlatformConfig is cluster-scoped and a singleton per profile:\n# metadata.name must equal spec.profile.\n")
	fmt.Fprintf(&out, "apiVersion: %s\nkind: VirtPlatformConfig\nmetadata:\n  name: %s\nspec:\n  profile: %s\n  action: %s\n",
		v1alpha1.SchemeGroupVersion, md.Name, md.Name, v1alpha1.PlanActionDryRun)
	if md.Options == "" || len(md.Examples) == 0 {
		return out.Bytes(), nil
	}
	opts := md.Examples[0].Options
	resolved := profiles.ResolveOptions(md.Options, v1alpha1.VirtPlatformConfigSpec{Profile: md.Name, Options: &opts})
	body, err := yaml.Marshal(resolved)
	if err != nil {
		return nil, err
	}
	out.WriteString("  options:\n")
	for _, line := range strings.Split(strings.TrimSuffix(string(body), "\n"), "\n") {
		out.WriteString("    " + line + "\n")
	}
	return out.Bytes(), nil
}

// TestSamplesAreGenerated: every advertised profile has its sample, as
// its package says.
func TestSamplesAreGenerated(t *testing.T) {
	for _, p := range catalog.Default().Advertised() {
		md := p.Metadata()
		t.Run(md.Name, func(t *testing.T) {
			if md.SampleNote == "" {
				t.Fatalf("profile %s has no SampleNote: say what its sample configures", md.Name)
			}
			want, err := sample(md)
			if err != nil {
				t.Fatal(err)
			}
			file := md.Name + ".yaml"
			if *update {
				if err := os.WriteFile(file, want, 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			got, err := os.ReadFile(file)
			if err != nil || !bytes.Equal(got, want) {
				t.Errorf("artifacts/samples/%s is not what profile %s says (go test ./artifacts/samples -update):\n%s", file, md.Name, want)
			}
		})
	}
}
