package env

import (
	"encoding/base64"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

func TestReadManifests(t *testing.T) {
	dir := t.TempDir()
	tests := []struct {
		name    string
		content string
		want    []string // kind/name
		wantErr bool
	}{
		{
			name: "multi-document with comment-only documents",
			content: "# header only\n---\napiVersion: v1\nkind: Namespace\nmetadata:\n  name: a\n---\n# trailing\n---\n" +
				"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: b\n  namespace: a\n",
			want: []string{"Namespace/a", "ConfigMap/b"},
		},
		{name: "JSON", content: `{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"j"}}`, want: []string{"Namespace/j"}},
		{name: "missing kind", content: "apiVersion: v1\nmetadata:\n  name: a\n", wantErr: true},
		{name: "invalid YAML", content: "apiVersion: v1\nkind: [\n", wantErr: true},
	}
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := filepath.Join(dir, "m"+string(rune('a'+i))+".yaml")
			if err := os.WriteFile(f, []byte(tc.content), 0o644); err != nil {
				t.Fatal(err)
			}
			objs, err := readManifests(f)
			if (err != nil) != tc.wantErr {
				t.Fatalf("error = %v, wantErr %v", err, tc.wantErr)
			}
			var got []string
			for _, o := range objs {
				got = append(got, o.GetKind()+"/"+o.GetName())
			}
			if len(got) != len(tc.want) {
				t.Fatalf("got %v, want %v", got, tc.want)
			}
			for i := range got {
				if got[i] != tc.want[i] {
					t.Errorf("got %v, want %v", got, tc.want)
				}
			}
		})
	}
}

// The repository's own manifests must decode: Start applies them.
func TestRepositoryManifestsDecode(t *testing.T) {
	root, err := findRepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	for _, dir := range []string{"artifacts/crds", "artifacts/deploy"} {
		files, err := manifestFiles(filepath.Join(root, dir))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := readManifests(files...); err != nil {
			t.Error(err)
		}
	}
	if _, err := readManifests(filepath.Join(root, "artifacts/testdata/baseline.yaml")); err != nil {
		t.Error(err)
	}
}

func TestRegistration(t *testing.T) {
	deployed := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apiregistration.k8s.io/v1", "kind": "APIService",
		"metadata": map[string]any{"name": APIServiceName},
		"spec": map[string]any{"groupPriorityMinimum": int64(2000), "versionPriority": int64(20),
			"insecureSkipTLSVerify": true, "service": map[string]any{"name": "x", "namespace": "y", "port": int64(443)}},
	}}
	tests := []struct {
		name                  string
		deploy                []*unstructured.Unstructured
		wantGroup, wantVerPri int64
	}{
		{name: "defaults", wantGroup: 1000, wantVerPri: 15},
		{name: "priorities from artifacts/deploy", deploy: []*unstructured.Unstructured{deployed}, wantGroup: 2000, wantVerPri: 20},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			svc, api := registration(tc.deploy, Namespace, 12345, []byte("CA PEM"))
			if typ, _, _ := unstructured.NestedString(svc.Object, "spec", "type"); typ != "ExternalName" {
				t.Errorf("service type %q", typ)
			}
			if ext, _, _ := unstructured.NestedString(svc.Object, "spec", "externalName"); ext != "localhost" {
				t.Errorf("externalName %q", ext)
			}
			if port, _, _ := unstructured.NestedInt64(api.Object, "spec", "service", "port"); port != 12345 {
				t.Errorf("APIService port %d", port)
			}
			if name, _, _ := unstructured.NestedString(api.Object, "spec", "service", "name"); name != ServiceName {
				t.Errorf("APIService service %q", name)
			}
			if ca, _, _ := unstructured.NestedString(api.Object, "spec", "caBundle"); ca != base64.StdEncoding.EncodeToString([]byte("CA PEM")) {
				t.Errorf("caBundle %q", ca)
			}
			if _, found, _ := unstructured.NestedFieldNoCopy(api.Object, "spec", "insecureSkipTLSVerify"); found {
				t.Error("insecureSkipTLSVerify set")
			}
			g, _, _ := unstructured.NestedInt64(api.Object, "spec", "groupPriorityMinimum")
			v, _, _ := unstructured.NestedInt64(api.Object, "spec", "versionPriority")
			if g != tc.wantGroup || v != tc.wantVerPri {
				t.Errorf("priorities %d/%d, want %d/%d", g, v, tc.wantGroup, tc.wantVerPri)
			}
			// DeepCopy panics on non-JSON values (e.g. []byte).
			_ = svc.DeepCopy()
			_ = api.DeepCopy()
		})
	}
}

// TestRelocate: installed into another namespace, nothing of
// artifacts/deploy refers to the shipped one any more, and the other
// namespaces it uses stay as they are.
func TestRelocate(t *testing.T) {
	root, err := findRepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	files, err := manifestFiles(filepath.Join(root, "artifacts", "deploy"))
	if err != nil {
		t.Fatal(err)
	}
	objs, err := readManifests(files...)
	if err != nil {
		t.Fatal(err)
	}
	relocate(objs, Namespace, "elsewhere")
	var namespaces []string
	for _, obj := range objs {
		raw, err := json.Marshal(obj.Object)
		if err != nil {
			t.Fatal(err)
		}
		for _, shipped := range []string{`"namespace":"` + Namespace + `"`, `"namespaces":["` + Namespace + `"]`} {
			if strings.Contains(string(raw), shipped) {
				t.Errorf("%s %s still refers to %s: %s", obj.GetKind(), obj.GetName(), shipped, raw)
			}
		}
		if obj.GetKind() == "Namespace" {
			namespaces = append(namespaces, obj.GetName())
		}
		if obj.GetKind() == "Role" && obj.GetName() == "virt-advisor-apiserver-events" && obj.GetNamespace() != "default" {
			t.Errorf("the events Role moved to %s", obj.GetNamespace())
		}
	}
	if len(namespaces) != 1 || namespaces[0] != "elsewhere" {
		t.Errorf("Namespaces %v, want [elsewhere]", namespaces)
	}
}
