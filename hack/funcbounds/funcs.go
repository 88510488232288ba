package main

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"sort"
	"strings"
)

// goFiles are the non-test Go files of dirs, dir/... walking the tree,
// as slash-separated paths without a leading ./ (as allowlists name them).
func goFiles(dirs []string) ([]string, error) {
	var out []string
	for _, dir := range dirs {
		root, recursive := strings.CutSuffix(dir, "/...")
		err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
			switch {
			case err != nil:
				return err
			case d.IsDir() && path != root && !recursive:
				return filepath.SkipDir
			case !d.IsDir() && strings.HasSuffix(path, ".go") && !strings.HasSuffix(path, "_test.go"):
				out = append(out, filepath.ToSlash(filepath.Clean(path)))
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no Go files in %s", strings.Join(dirs, " "))
	}
	sort.Strings(out)
	return out, nil
}

// parseFile parses a file; nil for a generated one (Code generated …
// DO NOT EDIT: pkg/generated, zz_generated.*), which no check looks at.
func parseFile(fset *token.FileSet, path string, mode parser.Mode) (*ast.File, error) {
	f, err := parser.ParseFile(fset, path, nil, mode|parser.ParseComments|parser.SkipObjectResolution)
	if err != nil || ast.IsGenerated(f) {
		return nil, err
	}
	return f, nil
}

// checkFuncs returns the functions of files over the bounds.
func checkFuncs(files []string, maxLines, maxComplexity int) ([]finding, error) {
	var over []finding
	for _, path := range files {
		fset := token.NewFileSet()
		f, err := parseFile(fset, path, 0)
		if err != nil {
			return nil, err
		}
		if f == nil {
			continue
		}
		for _, decl := range f.Decls {
			fn, ok := decl.(*ast.FuncDecl)
			if !ok || fn.Body == nil {
				continue
			}
			start := fset.Position(fn.Pos())
			lines := fset.Position(fn.End()).Line - start.Line + 1
			c := complexity(fn)
			if lines <= maxLines && c <= maxComplexity {
				continue
			}
			name := funcName(fn)
			over = append(over, finding{
				pos:  fmt.Sprintf("%s:%d", path, start.Line),
				key:  path + ": " + name,
				text: fmt.Sprintf("%s: %d lines (max %d), complexity %d (max %d)", name, lines, maxLines, c, maxComplexity),
			})
		}
	}
	return over, nil
}

// funcName is name, or (T).name and (*T).name for a method.
func funcName(fn *ast.FuncDecl) string {
	if fn.Recv == nil || len(fn.Recv.List) == 0 {
		return fn.Name.Name
	}
	star, name := receiver(fn)
	return "(" + star + name + ")." + fn.Name.Name
}

// receiver returns the type name of a method's receiver, and "*" when it
// is a pointer.
func receiver(fn *ast.FuncDecl) (star, name string) {
	t := fn.Recv.List[0].Type
	if s, ok := t.(*ast.StarExpr); ok {
		star, t = "*", s.X
	}
	switch x := t.(type) {
	case *ast.IndexExpr: // a generic receiver T[A]
		t = x.X
	case *ast.IndexListExpr: // T[A, B]
		t = x.X
	}
	name = "?"
	if id, ok := t.(*ast.Ident); ok {
		name = id.Name
	}
	return star, name
}

// complexity is the cyclomatic complexity of a function, as gocyclo
// counts it.
func complexity(fn *ast.FuncDecl) int {
	n := 1
	ast.Inspect(fn, func(node ast.Node) bool {
		switch x := node.(type) {
		case *ast.IfStmt, *ast.ForStmt, *ast.RangeStmt:
			n++
		case *ast.CaseClause:
			if x.List != nil {
				n++
			}
		case *ast.CommClause:
			if x.Comm != nil {
				n++
			}
		case *ast.BinaryExpr:
			if x.Op == token.LAND || x.Op == token.LOR {
				n++
			}
		}
		return true
	})
	return n
}
