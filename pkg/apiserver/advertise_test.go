package apiserver

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	jsonpatch "gopkg.in/evanphx/json-patch.v4"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/jsonmergepatch"
	"sigs.k8s.io/yaml"

	"github.com/kubevirt/virt-advisor/pkg/apis/advisor/v1alpha1"
	"github.com/kubevirt/virt-advisor/pkg/profiles"
	"github.com/kubevirt/virt-advisor/pkg/profiles/catalog"
)

// kubectl apply of a sample onto an advertised config computes its patch
// from the last-applied annotation (original), the sample (modified) and
// the live object (current). The advertised config must carry that
// annotation, and the patch must change the spec the sample sets and
// nothing that describes the profile.
func TestAdvertisedConfigTakesKubectlApplyOfItsSample(t *testing.T) {
	for _, p := range catalog.Default().Advertised() {
		md := p.Metadata()
		t.Run(md.Name, func(t *testing.T) {
			cfg, err := advertisedConfig(md)
			if err != nil {
				t.Fatal(err)
			}
			original := cfg.Annotations[corev1.LastAppliedConfigAnnotation]
			var applied map[string]any
			if err := json.Unmarshal([]byte(original), &applied); err != nil {
				t.Fatalf("%s is not JSON: %v", corev1.LastAppliedConfigAnnotation, err)
			}
			wantApplied := map[string]any{
				"apiVersion": "advisor.kubevirt.io/v1alpha1",
				"kind":       "VirtPlatformConfig",
				"metadata":   map[string]any{"name": md.Name},
				"spec":       map[string]any{"profile": md.Name, "action": "Ignore"},
			}
			if !reflect.DeepEqual(applied, wantApplied) {
				t.Fatalf("last-applied configuration %v, want %v: the name and the spec the server sets, nothing else", applied, wantApplied)
			}

			sample := filepath.Join("..", "..", "artifacts", "samples", md.Name+".yaml")
			raw, err := os.ReadFile(sample)
			if err != nil {
				t.Fatalf("every advertised profile has a sample: %v", err)
			}
			modified, err := yaml.YAMLToJSON(raw)
			if err != nil {
				t.Fatalf("%s: %v", sample, err)
			}
			// kubectl records the sample as the new last-applied configuration.
			var mod map[string]any
			if err := json.Unmarshal(modified, &mod); err != nil {
				t.Fatal(err)
			}
			mod["metadata"].(map[string]any)["annotations"] = map[string]any{corev1.LastAppliedConfigAnnotation: string(modified)}
			modified, _ = json.Marshal(mod)
			cfg.APIVersion, cfg.Kind = "advisor.kubevirt.io/v1alpha1", "VirtPlatformConfig"
			current, err := json.Marshal(cfg)
			if err != nil {
				t.Fatal(err)
			}

			patch, err := jsonmergepatch.CreateThreeWayJSONMergePatch([]byte(original), modified, current)
			if err != nil {
				t.Fatal(err)
			}
			result, err := jsonpatch.MergePatch(current, patch)
			if err != nil {
				t.Fatal(err)
			}
			var got struct {
				Metadata struct {
					Annotations map[string]string `json:"annotations"`
					Labels      map[string]string `json:"labels"`
				} `json:"metadata"`
				Spec map[string]any `json:"spec"`
			}
			if err := json.Unmarshal(result, &got); err != nil {
				t.Fatal(err)
			}
			for _, a := range []string{profiles.AutoCreatedAnnotation, profiles.DescriptionAnnotation, profiles.ImpactSummaryAnnotation} {
				if got.Metadata.Annotations[a] != cfg.Annotations[a] {
					t.Errorf("kubectl apply of %s changes annotation %s to %q (patch %s)", sample, a, got.Metadata.Annotations[a], patch)
				}
			}
			if got.Metadata.Labels[profiles.CategoryLabel] != md.Category {
				t.Errorf("kubectl apply of %s changes label %s to %q (patch %s)", sample, profiles.CategoryLabel, got.Metadata.Labels[profiles.CategoryLabel], patch)
			}
			if !reflect.DeepEqual(got.Spec, mod["spec"]) {
				t.Errorf("kubectl apply of %s: spec %v, want the sample's %v (patch %s)", sample, got.Spec, mod["spec"], patch)
			}
		})
	}
}

// A refusal because the server's admission is not ready yet is retried
// quietly; any other refusal is an error worth logging.
func TestNotReadyYet(t *testing.T) {
	gr := v1alpha1.Resource("virtplatformconfigs")
	for _, tc := range []struct {
		name string
		err  error
		want bool
	}{
		{name: "NamespaceLifecycle before its caches", err: apierrors.NewForbidden(gr, "dedicated-cpus", errors.New("not yet ready to handle request")), want: true},
		{name: "RBAC", err: apierrors.NewForbidden(gr, "dedicated-cpus", errors.New(`User "x" cannot create resource`)), want: false},
		{name: "unavailable", err: apierrors.NewServiceUnavailable("not yet ready to handle request"), want: false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := notReadyYet(tc.err); got != tc.want {
				t.Errorf("notReadyYet(%v) = %t, want %t", tc.err, got, tc.want)
			}
		})
	}
}
