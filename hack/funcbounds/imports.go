package main

import (
	"fmt"
	"go/parser"
	"go/token"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"
)

// apis is where the API types live, relative to the module's root: its
// packages may import no other package of the module.
const apis = "pkg/apis"

// checkImports returns the imports of files under pkg/apis of packages of
// their module outside pkg/apis. Generated files are checked too: what
// they import is built all the same.
func checkImports(files []string) ([]finding, error) {
	var over []finding
	modules := map[string]module{}
	for _, file := range files {
		dir := filepath.Dir(file)
		m, ok := modules[dir]
		if !ok {
			var err error
			if m, err = findModule(dir); err != nil {
				return nil, err
			}
			modules[dir] = m
		}
		rel, err := filepath.Rel(m.root, file)
		if err != nil {
			return nil, err
		}
		if rel = filepath.ToSlash(rel); !strings.HasPrefix(rel, apis+"/") {
			continue
		}
		fset := token.NewFileSet()
		f, err := parser.ParseFile(fset, file, nil, parser.ImportsOnly)
		if err != nil {
			return nil, err
		}
		for _, spec := range f.Imports {
			imp, _ := strconv.Unquote(spec.Path.Value)
			within, inModule := strings.CutPrefix(imp, m.path+"/")
			if !inModule || within == apis || strings.HasPrefix(within, apis+"/") {
				continue
			}
			pkg := path.Join(m.path, path.Dir(rel))
			over = append(over, finding{
				pos:  fmt.Sprintf("%s:%d", file, fset.Position(spec.Pos()).Line),
				key:  file + ": " + imp,
				text: fmt.Sprintf("%s imports %s: an upward import, out of %s", pkg, imp, apis),
			})
		}
	}
	return over, nil
}

// module is a Go module: its path and the directory of its go.mod.
type module struct{ path, root string }

// findModule returns the module dir is in: the nearest go.mod up from it.
func findModule(dir string) (module, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return module{}, err
	}
	for d := abs; ; d = filepath.Dir(d) {
		data, err := os.ReadFile(filepath.Join(d, "go.mod"))
		if err == nil {
			p := modulePath(data)
			if p == "" {
				return module{}, fmt.Errorf("%s: no module path", filepath.Join(d, "go.mod"))
			}
			rel, _ := filepath.Rel(abs, d)
			return module{path: p, root: filepath.Join(dir, rel)}, nil
		}
		if !os.IsNotExist(err) {
			return module{}, err
		}
		if d == filepath.Dir(d) {
			return module{}, fmt.Errorf("%s is in no Go module", dir)
		}
	}
}

// modulePath is the path of go.mod's module directive.
func modulePath(gomod []byte) string {
	for _, line := range strings.Split(string(gomod), "\n") {
		if p, ok := strings.CutPrefix(strings.TrimSpace(line), "module "); ok {
			return strings.Trim(strings.TrimSpace(p), `"`)
		}
	}
	return ""
}
