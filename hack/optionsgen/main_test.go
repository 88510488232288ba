package main

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestStaleOutputsAreRewritten: generate rewrites exactly the outputs that
// are not what the declaration derives, so hack/verify-codegen.sh (which
// generates into a copy of the tree and diffs pkg/apis and docs/profiles)
// and with it make verify fail on any of them. The committed tree is
// current.
func TestStaleOutputsAreRewritten(t *testing.T) {
	const (
		types      = "pkg/apis/advisor/v1alpha1/types.go"
		validation = "pkg/apis/advisor/validation/zz_generated.options.go"
		page       = "docs/profiles/vm-eviction-strategy.md"
	)
	enum := `+k8s:validation:enum=["LiveMigrate","LiveMigrateIfPossible","None","External"]`
	for _, tc := range []struct {
		name        string
		file        string // edited: old replaced by new
		old, new    string
		wantChanged []string
	}{
		{name: "as committed: nothing to rewrite"},
		{name: "a generated check edited by hand", file: validation,
			old: `"None", "External"}`, new: `"None"}`, wantChanged: []string{validation}},
		{name: "a docs table edited by hand", file: page,
			old: "is a 422 naming the field.", new: "is refused.", wantChanged: []string{page}},
		{name: "a declaration changed, its outputs not regenerated", file: types,
			old: enum, new: strings.Replace(enum, `"External"`, `"External","Elsewhere"`, 1), wantChanged: []string{validation, page}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := copyInputs(t)
			if tc.file != "" {
				edit(t, filepath.Join(root, tc.file), tc.old, tc.new)
			}
			before := snapshot(t, root)
			if err := generate(root); err != nil {
				t.Fatal(err)
			}
			var changed []string
			for path, was := range before {
				now, err := os.ReadFile(filepath.Join(root, path))
				if err != nil {
					t.Fatal(err)
				}
				if string(now) != was {
					changed = append(changed, path)
				}
			}
			slices.Sort(changed)
			want := slices.Sorted(slices.Values(tc.wantChanged))
			if !slices.Equal(changed, want) {
				t.Errorf("rewritten: %v, want %v", changed, want)
			}
		})
	}
}

// copyInputs copies the declaration and every output of the repository
// into a temporary root.
func copyInputs(t *testing.T) string {
	t.Helper()
	pages, err := filepath.Glob("../../docs/profiles/*.md")
	if err != nil || len(pages) == 0 {
		t.Fatalf("docs/profiles/*.md: %v, %d pages", err, len(pages))
	}
	files := []string{"pkg/apis/advisor/v1alpha1/types.go", "pkg/apis/advisor/zz_generated.options.go",
		"pkg/apis/advisor/validation/zz_generated.options.go", "pkg/apis/advisor/fuzzer/zz_generated.options.go"}
	for _, p := range pages {
		files = append(files, strings.TrimPrefix(filepath.ToSlash(p), "../../"))
	}
	root := t.TempDir()
	for _, f := range files {
		raw, err := os.ReadFile(filepath.Join("../..", f))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(filepath.Dir(filepath.Join(root, f)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(root, f), raw, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

func edit(t *testing.T, file, old, new string) {
	t.Helper()
	raw, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(raw), old) {
		t.Fatalf("%s holds no %q", file, old)
	}
	if err := os.WriteFile(file, []byte(strings.ReplaceAll(string(raw), old, new)), 0o644); err != nil {
		t.Fatal(err)
	}
}

// snapshot maps each file under root (relative, slash-separated) to its
// content.
func snapshot(t *testing.T, root string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		raw, err := os.ReadFile(path)
		rel, _ := filepath.Rel(root, path)
		out[filepath.ToSlash(rel)] = string(raw)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}
