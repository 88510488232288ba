package docs_test

import (
	"fmt"
	"os"
	"os/exec"
	"path"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// layers is what the Layers section of docs/architecture.md says: the
// layers from the top, each a list of packages, and who imports whom.
type layers struct {
	order   [][]string
	imports map[edge]bool // documented imports → marked as the accepted upward exception
}

// edge is one import, package paths relative to the module.
type edge struct{ from, to string }

func (e edge) String() string { return e.from + " → " + e.to }

var (
	packagePath = regexp.MustCompile("`((?:pkg|cmd)/[^`]*)`")
	upwardNote  = regexp.MustCompile(`\(\s*upward\b[^)]*\)`)
	anyNote     = regexp.MustCompile(`\([^)]*\)`)
)

// parseLayers reads the Layers section of a document: the rows of its
// table (a layer each, its packages as code spans in the second column)
// and the lines `a, b → c, d` of its first code block.
func parseLayers(doc string) (layers, error) {
	l := layers{imports: map[edge]bool{}}
	start := strings.Index(doc, "\n## Layers\n")
	if start < 0 {
		return l, fmt.Errorf("no section ## Layers")
	}
	section := doc[start+len("\n## Layers\n"):]
	if end := strings.Index(section, "\n## "); end >= 0 {
		section = section[:end]
	}
	inFence, fences := false, 0
	for i, line := range strings.Split(section, "\n") {
		if fence.MatchString(line) {
			inFence = !inFence
			if inFence {
				fences++
			}
			continue
		}
		switch {
		case inFence && fences == 1 && strings.TrimSpace(line) != "":
			upward := upwardNote.MatchString(line)
			line = anyNote.ReplaceAllString(line, "")
			from, to, ok := strings.Cut(line, "→")
			if !ok {
				return l, fmt.Errorf("Layers, line %d of the section: %q has no →", i+1, line)
			}
			for _, f := range splitList(from) {
				for _, t := range splitList(to) {
					e := edge{f, t}
					if _, dup := l.imports[e]; dup {
						return l, fmt.Errorf("Layers: %s is listed twice", e)
					}
					l.imports[e] = upward
				}
			}
		case !inFence && strings.HasPrefix(line, "|") && !strings.HasPrefix(line, "|---"):
			cells := strings.Split(line, "|")
			if len(cells) < 3 {
				continue
			}
			var pkgs []string
			for _, m := range packagePath.FindAllStringSubmatch(cells[2], -1) {
				pkgs = append(pkgs, m[1])
			}
			if len(pkgs) > 0 {
				l.order = append(l.order, pkgs)
			}
		}
	}
	if len(l.order) == 0 || len(l.imports) == 0 {
		return l, fmt.Errorf("Layers: found %d layers and %d imports; want a table of layers and a code block of imports", len(l.order), len(l.imports))
	}
	return l, nil
}

func splitList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// checkLayers compares what the document says with the real imports of
// the packages (every package a key, generated code left out) and
// returns what is wrong, one line each. A package path may be a pattern
// (path.Match, e.g. pkg/profiles/*): a package no entry names exactly
// takes the layer of the pattern it matches, and an import line with a
// pattern names every such import (at least one of which must exist), so
// that a new profile's package needs no line of its own.
func checkLayers(doc layers, real map[string][]string) []string {
	var problems []string
	layerOf := map[string]int{}
	for i, pkgs := range doc.order {
		for _, p := range pkgs {
			if _, dup := layerOf[p]; dup {
				problems = append(problems, fmt.Sprintf("package %s is in two layers", p))
			}
			layerOf[p] = i
		}
	}
	layer := func(p string) (int, bool) {
		if l, ok := layerOf[p]; ok {
			return l, true
		}
		for _, pattern := range sortedPackages(layerOf) {
			if isPattern(pattern) && matches(pattern, p) {
				return layerOf[pattern], true
			}
		}
		return 0, false
	}
	for _, p := range sortedPackages(real) {
		if _, ok := layer(p); !ok {
			problems = append(problems, fmt.Sprintf("package %s is in no layer: add it to the table of Layers", p))
		}
	}
	for _, p := range sortedPackages(layerOf) {
		if !anyPackage(real, p) {
			problems = append(problems, fmt.Sprintf("the table of Layers names %s, which is no package", p))
		}
	}
	used := map[edge]bool{}
	for _, from := range sortedPackages(real) {
		for _, to := range real[from] {
			e := edge{from, to}
			documented, accepted, listed := documentedEdge(doc.imports, e)
			if !listed {
				problems = append(problems, fmt.Sprintf("%s is not in the list of imports of Layers", e))
				continue
			}
			used[documented] = true
			fromLayer, ok1 := layer(from)
			toLayer, ok2 := layer(to)
			if !ok1 || !ok2 {
				continue
			}
			switch upward := toLayer < fromLayer; {
			case upward && !accepted:
				problems = append(problems, fmt.Sprintf("%s imports upwards (layer %d imports layer %d): move the code, or mark the line as the accepted exception", e, fromLayer+1, toLayer+1))
			case !upward && accepted:
				problems = append(problems, fmt.Sprintf("%s is marked upward but is not: drop the mark", e))
			}
		}
	}
	var listed []edge
	for e := range doc.imports {
		listed = append(listed, e)
	}
	slices.SortFunc(listed, func(a, b edge) int { return strings.Compare(a.String(), b.String()) })
	for _, e := range listed {
		if !used[e] {
			problems = append(problems, fmt.Sprintf("the list of imports of Layers names %s, which go list does not show", e))
		}
	}
	return problems
}

// documentedEdge is the line of the list that names e: its own, else one
// whose patterns match it.
func documentedEdge(imports map[edge]bool, e edge) (documented edge, accepted, listed bool) {
	if accepted, ok := imports[e]; ok {
		return e, accepted, true
	}
	for d, accepted := range imports {
		if (isPattern(d.from) || isPattern(d.to)) && matches(d.from, e.from) && matches(d.to, e.to) {
			return d, accepted, true
		}
	}
	return edge{}, false, false
}

func isPattern(p string) bool { return strings.ContainsAny(p, "*?[") }

func matches(pattern, p string) bool {
	ok, err := path.Match(pattern, p)
	return err == nil && ok
}

// anyPackage: p is a package, or a pattern some package matches.
func anyPackage(real map[string][]string, p string) bool {
	if _, ok := real[p]; ok {
		return true
	}
	for q := range real {
		if isPattern(p) && matches(p, q) {
			return true
		}
	}
	return false
}

func sortedPackages[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// goImports returns, per package under pkg/ and cmd/, the packages of
// the module it imports, as go list shows them (tests left out), paths
// relative to the module; generated code is left out.
func goImports(t *testing.T) map[string][]string {
	t.Helper()
	cmd := exec.Command("go", "list", "-f", "{{.ImportPath}}{{range .Imports}} {{.}}{{end}}", "./pkg/...", "./cmd/...")
	cmd.Dir = root
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	mod := exec.Command("go", "list", "-m")
	mod.Dir = root
	module, err := mod.Output()
	if err != nil {
		t.Fatalf("go list -m: %v", err)
	}
	prefix := strings.TrimSpace(string(module)) + "/"
	generated := func(p string) bool { return strings.HasPrefix(p, "pkg/generated/") }
	real := map[string][]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		fields := strings.Fields(line)
		from := strings.TrimPrefix(fields[0], prefix)
		if generated(from) {
			continue
		}
		imports := []string{}
		for _, imp := range fields[1:] {
			if to, ok := strings.CutPrefix(imp, prefix); ok && !generated(to) {
				imports = append(imports, to)
			}
		}
		real[from] = imports
	}
	return real
}

// TestLayers: the Layers section of docs/architecture.md names every
// import among the packages and nothing else, and none goes up a layer
// but the one it marks as accepted.
func TestLayers(t *testing.T) {
	raw, err := os.ReadFile("architecture.md")
	if err != nil {
		t.Fatal(err)
	}
	doc, err := parseLayers(string(raw))
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range checkLayers(doc, goImports(t)) {
		t.Error("docs/architecture.md: " + p)
	}
}

func TestCheckLayers(t *testing.T) {
	const table = "## Layers\n\n| layer | packages |\n|---|---|\n| top | `cmd/a` |\n| middle | `pkg/b`, `pkg/c` |\n| bottom | `pkg/d` |\n\n"
	const withPattern = "## Layers\n\n| layer | packages |\n|---|---|\n| top | `cmd/a` |\n| middle | `pkg/b`, `pkg/c` |\n| bottom | `pkg/d/*`, `pkg/d` |\n\n"
	real := map[string][]string{"cmd/a": {"pkg/b"}, "pkg/b": {"pkg/c", "pkg/d"}, "pkg/c": {}, "pkg/d": {}}
	tests := []struct {
		name    string
		table   string // the table of layers; "": table
		imports string // the code block's lines
		real    map[string][]string
		want    []string
	}{{
		name:    "the truth",
		imports: "cmd/a → pkg/b\npkg/b → pkg/c, pkg/d",
		real:    real,
	}, {
		name:    "an import not listed",
		imports: "cmd/a → pkg/b\npkg/b → pkg/c",
		real:    real,
		want:    []string{"pkg/b → pkg/d is not in the list of imports of Layers"},
	}, {
		name:    "an import listed that does not exist",
		imports: "cmd/a → pkg/b, pkg/d\npkg/b → pkg/c, pkg/d",
		real:    real,
		want:    []string{"the list of imports of Layers names cmd/a → pkg/d, which go list does not show"},
	}, {
		name:    "an upward import listed but not marked",
		imports: "cmd/a → pkg/b\npkg/b → pkg/c, pkg/d\npkg/d → pkg/c",
		real:    map[string][]string{"cmd/a": {"pkg/b"}, "pkg/b": {"pkg/c", "pkg/d"}, "pkg/c": {}, "pkg/d": {"pkg/c"}},
		want:    []string{"pkg/d → pkg/c imports upwards (layer 3 imports layer 2): move the code, or mark the line as the accepted exception"},
	}, {
		name:    "an upward import marked as accepted",
		imports: "cmd/a → pkg/b\npkg/b → pkg/c, pkg/d\npkg/d → pkg/c (upward, accepted: a reason)",
		real:    map[string][]string{"cmd/a": {"pkg/b"}, "pkg/b": {"pkg/c", "pkg/d"}, "pkg/c": {}, "pkg/d": {"pkg/c"}},
	}, {
		name:    "a mark on an import that is not upward",
		imports: "cmd/a → pkg/b\npkg/b, pkg/c → pkg/d (upward: stale)\npkg/b → pkg/c",
		real:    map[string][]string{"cmd/a": {"pkg/b"}, "pkg/b": {"pkg/c", "pkg/d"}, "pkg/c": {"pkg/d"}, "pkg/d": {}},
		want:    []string{"pkg/b → pkg/d is marked upward but is not: drop the mark", "pkg/c → pkg/d is marked upward but is not: drop the mark"},
	}, {
		name:    "a package in no layer, a layer naming no package",
		imports: "cmd/a → pkg/b\npkg/b → pkg/c, pkg/d",
		real:    map[string][]string{"cmd/a": {"pkg/b"}, "pkg/b": {"pkg/c"}, "pkg/c": {}, "pkg/e": {}},
		want: []string{
			"package pkg/e is in no layer: add it to the table of Layers",
			"the table of Layers names pkg/d, which is no package",
			"the list of imports of Layers names pkg/b → pkg/d, which go list does not show",
		},
	}, {
		name:    "a pattern: a new package under it needs no line of its own",
		table:   withPattern,
		imports: "cmd/a → pkg/b\npkg/b → pkg/c, pkg/d\npkg/d/* → pkg/d",
		real:    map[string][]string{"cmd/a": {"pkg/b"}, "pkg/b": {"pkg/c", "pkg/d"}, "pkg/c": {}, "pkg/d": {}, "pkg/d/x": {"pkg/d"}, "pkg/d/y": {}},
	}, {
		name:    "a pattern names imports of which none exists",
		table:   withPattern,
		imports: "cmd/a → pkg/b\npkg/b → pkg/c, pkg/d\npkg/d/* → pkg/c",
		real:    map[string][]string{"cmd/a": {"pkg/b"}, "pkg/b": {"pkg/c", "pkg/d"}, "pkg/c": {}, "pkg/d": {}, "pkg/d/x": {}},
		want:    []string{"the list of imports of Layers names pkg/d/* → pkg/c, which go list does not show"},
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			layers := tc.table
			if layers == "" {
				layers = table
			}
			doc, err := parseLayers("# Doc\n" + layers + "```text\n" + tc.imports + "\n```\n\n## Next\n\n| x | `pkg/z` |\n")
			if err != nil {
				t.Fatal(err)
			}
			if got := checkLayers(doc, tc.real); !slices.Equal(got, tc.want) {
				t.Errorf("checkLayers:\n got %q\nwant %q", got, tc.want)
			}
		})
	}
}
