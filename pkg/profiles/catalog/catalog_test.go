package catalog_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"

	"github.com/kubevirt/virt-advisor/pkg/apis/advisor"
	"github.com/kubevirt/virt-advisor/pkg/apis/advisor/install"
	"github.com/kubevirt/virt-advisor/pkg/apis/advisor/v1alpha1"
	"github.com/kubevirt/virt-advisor/pkg/apis/advisor/validation"
	"github.com/kubevirt/virt-advisor/pkg/profiles"
	"github.com/kubevirt/virt-advisor/pkg/profiles/catalog"
)

// baseline is an in-memory profiles.Cluster holding what the local
// environment installs: the test CRDs (artifacts/crds) and the baseline
// objects (artifacts/testdata/baseline.yaml), read as the plan engine
// reads them. It is the profiles' input, not the Kubernetes API: the e2e
// suite plans against a real kube-apiserver.
type baseline struct {
	objects []*unstructured.Unstructured
	// versions are the served versions of each kind, by group and kind.
	versions map[schema.GroupKind]string
	// read are the kinds Get and List were asked for (profiles list in
	// parallel).
	mu   sync.Mutex
	read map[schema.GroupKind]bool
}

func (b *baseline) reading(gk schema.GroupKind) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.read[gk] = true
}

func loadBaseline(t *testing.T) *baseline {
	t.Helper()
	b := &baseline{versions: map[schema.GroupKind]string{}, read: map[schema.GroupKind]bool{}}
	files, err := filepath.Glob(filepath.Join("..", "..", "..", "artifacts", "crds", "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("the test CRDs in artifacts/crds are required: %v", err)
	}
	files = append(files, filepath.Join("..", "..", "..", "artifacts", "testdata", "baseline.yaml"))
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(raw), 4096)
		for {
			u := &unstructured.Unstructured{}
			if err := dec.Decode(&u.Object); errors.Is(err, io.EOF) {
				break
			} else if err != nil {
				t.Fatalf("%s: %v", f, err)
			}
			if len(u.Object) == 0 {
				continue
			}
			b.objects = append(b.objects, u)
			if u.GetKind() == "CustomResourceDefinition" {
				group, _, _ := unstructured.NestedString(u.Object, "spec", "group")
				kind, _, _ := unstructured.NestedString(u.Object, "spec", "names", "kind")
				versions, _, _ := unstructured.NestedSlice(u.Object, "spec", "versions")
				for _, v := range versions {
					if storage, _ := v.(map[string]interface{})["storage"].(bool); storage {
						b.versions[schema.GroupKind{Group: group, Kind: kind}], _ = v.(map[string]interface{})["name"].(string)
					}
				}
			}
		}
	}
	return b
}

func (b *baseline) Get(_ context.Context, gvk schema.GroupVersionKind, namespace, name string) (*unstructured.Unstructured, error) {
	b.reading(gvk.GroupKind())
	for _, o := range b.objects {
		if o.GroupVersionKind().GroupKind() == gvk.GroupKind() && o.GetNamespace() == namespace && o.GetName() == name {
			return o.DeepCopy(), nil
		}
	}
	return nil, nil
}

func (b *baseline) PreferredVersion(gk schema.GroupKind) (string, error) {
	if gk.Group == "" || gk.Group == "apiextensions.k8s.io" {
		return "v1", nil
	}
	return b.versions[gk], nil
}

func (b *baseline) List(_ context.Context, gvk schema.GroupVersionKind) ([]unstructured.Unstructured, error) {
	b.reading(gvk.GroupKind())
	var out []unstructured.Unstructured
	for _, o := range b.objects {
		if o.GroupVersionKind().GroupKind() == gvk.GroupKind() {
			out = append(out, *o.DeepCopy())
		}
	}
	return out, nil
}

// Every profile in the catalogue is wired: the catalogue finds it by its
// name, validation accepts a config of it with its options, its options
// default, and it plans against the local environment's cluster. A
// profile added with one package and one entry in Default passes this
// test or says what is missing.
func TestEveryProfileIsWired(t *testing.T) {
	scheme := runtime.NewScheme()
	install.Install(scheme)
	c := catalog.Default()
	served := c.Validation()
	if len(served) != len(c.Names()) {
		t.Fatalf("validation knows %d profiles, the catalogue %d", len(served), len(c.Names()))
	}
	for _, name := range c.Names() {
		t.Run(name, func(t *testing.T) {
			p, ok := c.Get(name)
			if !ok || p.Metadata().Name != name {
				t.Fatalf("the catalogue does not find %q by its name", name)
			}
			md := p.Metadata()
			if len(md.Examples) == 0 {
				t.Fatal("no Metadata.Examples: the admission policy's tests and the docs need at least one")
			}
			// The local environment's cluster, with what the profile's
			// first example reads beyond it (Nodes, VMIs).
			cluster := loadBaseline(t)
			cluster.objects = append(cluster.objects, md.Examples[0].Objects...)

			// Its options, every default applied, hold its own block only.
			// Those of its first example: a profile may require an option
			// (dedicated-cpus' pool) that has no default.
			spec := v1alpha1.VirtPlatformConfigSpec{Profile: name, Options: md.Examples[0].Options.DeepCopy()}
			opts := c.ResolveOptions(spec)
			spec.Options = nil
			blocks := map[string]json.RawMessage{}
			raw, err := json.Marshal(opts)
			if err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal(raw, &blocks); err != nil {
				t.Fatal(err)
			}
			if _, ok := blocks[md.Options]; md.Options != "" && !ok {
				t.Errorf("Metadata.Options %q is no block of spec.options: the resolved options are %s", md.Options, raw)
			}
			if len(blocks) > 1 || (md.Options == "" && len(blocks) > 0) {
				t.Errorf("the resolved options hold blocks %s; want only %q", raw, md.Options)
			}

			// Validation accepts a config of it, without options and with
			// its options in full.
			candidates := []*v1alpha1.ProfileOptions{nil, &opts}
			for i := range md.Examples {
				candidates = append(candidates, &md.Examples[i].Options)
			}
			for _, o := range candidates {
				cfg := &v1alpha1.VirtPlatformConfig{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: spec}
				cfg.Spec.Options = o
				scheme.Default(cfg)
				internal := &advisor.VirtPlatformConfig{}
				if err := scheme.Convert(cfg, internal, nil); err != nil {
					t.Fatal(err)
				}
				if errs := validation.ValidateVirtPlatformConfig(internal, served); len(errs) > 0 {
					t.Errorf("validation refuses a config of %s with options %s: %v", name, raw, errs)
				}
			}

			// It plans: items from the defaulted options, of the kinds it
			// says it manages.
			items, err := p.Items(context.Background(), profiles.Inputs{ConfigName: name, Options: opts, Cluster: cluster})
			if err != nil {
				t.Fatalf("Items: %v", err)
			}
			if len(items) == 0 {
				t.Fatal("no items")
			}
			managed := p.Metadata().ManagedResources()
			for _, it := range items {
				if it.Err != nil {
					t.Errorf("item %s: %v", it.Name, it.Err)
					continue
				}
				if it.Desired == nil || !slices.Contains(managed, resourceOf(it.Desired.GroupVersionKind())) {
					t.Errorf("item %s writes %v, not one of the resources the profile's Writes name (%v)", it.Name, it.Desired, managed)
				}
			}
		})
	}
}

// TestProfilesReadWhatTheyDeclare: what a profile's items and their
// checks read and its InputObjects name, in every example, is a resource its Writes or Reads
// declare: the server's read rights are generated from those.
func TestProfilesReadWhatTheyDeclare(t *testing.T) {
	c := catalog.Default()
	for _, name := range c.Names() {
		p, _ := c.Get(name)
		md := p.Metadata()
		declared := md.ManagedResources()
		for _, r := range md.Reads {
			declared = append(declared, r.Resource)
		}
		used := map[schema.GroupResource]bool{}
		for _, ex := range md.Examples {
			cluster := loadBaseline(t)
			cluster.objects = append(cluster.objects, ex.Objects...)
			opts := profiles.ResolveOptions(md.Options, v1alpha1.VirtPlatformConfigSpec{Profile: name, Options: &ex.Options})
			items, err := p.Items(context.Background(), profiles.Inputs{ConfigName: name, Options: opts, Cluster: cluster})
			if err != nil {
				t.Fatalf("%s: Items: %v", ex.Name, err)
			}
			for _, it := range items {
				if it.Check != nil {
					it.Check(context.Background())
				}
			}
			for _, ref := range p.InputObjects(opts) {
				cluster.read[ref.GVK.GroupKind()] = true
			}
			for gk := range cluster.read {
				r := resourceOf(gk.WithVersion(""))
				used[r] = true
				if !slices.Contains(declared, r) {
					t.Errorf("%s reads %s; its Metadata declares %v: add it to Reads", ex.Name, r, declared)
				}
			}
		}
		for _, r := range md.Reads {
			if !used[r.Resource] {
				t.Errorf("%s declares it reads %s; none of its examples does", name, r.Resource)
			}
		}
	}
}

// The catalogue lists profiles for validation in the order it was given
// them, so messages list them as they always have.
func TestValidationOrder(t *testing.T) {
	got := catalog.Default().Validation()
	want := validation.Profiles{
		{Name: advisor.ProfileLoadAwareRebalancing, Options: advisor.OptionsLoadAware},
		{Name: advisor.ProfileVirtHigherDensity, Options: advisor.OptionsVirtHigherDensity},
		{Name: advisor.ProfileExample},
	}
	// Profiles added later come after these, in the order of Default.
	if len(got) < len(want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	for i := range want {
		if got[i].Name != want[i].Name || got[i].Options != want[i].Options {
			t.Errorf("profile %d: got %s (options %q), want %s (options %q)", i, got[i].Name, got[i].Options, want[i].Name, want[i].Options)
		}
	}
	for _, p := range got {
		// Bounds and values are checked as the options declare them; a
		// profile's own checks (across fields) are of its block only.
		if p.Validate != nil && p.Options == "" {
			t.Errorf("profile %s checks options but reads no block", p.Name)
		}
	}
}

// TestWhatAProfileCreatesItsRevertMayDelete: the revert of a profile
// deletes the objects it created, so a write that creates declares the
// delete too (the server's RBAC and admission policy are generated from
// the declared writes).
func TestWhatAProfileCreatesItsRevertMayDelete(t *testing.T) {
	c := catalog.Default()
	for _, name := range c.Names() {
		p, _ := c.Get(name)
		for _, w := range p.Metadata().Writes {
			if w.Create && !w.Delete {
				t.Errorf("%s creates %s %s but does not declare its delete: its revert could not delete it", name, w.Resource, w.Name)
			}
		}
	}
}

// resourceOf is the resource of a kind the profiles write or read (each
// one's plural is its lower-case name and an s, or -ies for a -y).
func resourceOf(gvk schema.GroupVersionKind) schema.GroupResource {
	kind := strings.ToLower(gvk.Kind)
	if k, ok := strings.CutSuffix(kind, "y"); ok {
		return schema.GroupResource{Group: gvk.Group, Resource: k + "ies"}
	}
	return schema.GroupResource{Group: gvk.Group, Resource: kind + "s"}
}
