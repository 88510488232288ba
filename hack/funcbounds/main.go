// Command funcbounds reports the functions of Go packages that are too
// long or too complex to read in one go: more than -max-lines lines (from
// func to its closing brace) or a cyclomatic complexity over
// -max-complexity, counted like gocyclo: 1, plus one for each if, for,
// range, case and select clause (not default) and each && and ||, function
// literals counted in the function that holds them. Test files are left
// out. It exits 1 when a function is over a bound, naming each with its
// file:line and numbers.
//
//	go run ./hack/funcbounds ./pkg/plan ./pkg/controller/...
package main

import (
	"flag"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// bounds are the most a function may have.
type bounds struct{ lines, complexity int }

// finding is a function over its bounds.
type finding struct {
	pos        token.Position
	name       string
	lines      int
	complexity int
}

func (f finding) String(b bounds) string {
	return fmt.Sprintf("%s:%d: %s: %d lines (max %d), complexity %d (max %d)",
		f.pos.Filename, f.pos.Line, f.name, f.lines, b.lines, f.complexity, b.complexity)
}

func main() {
	var b bounds
	flag.IntVar(&b.lines, "max-lines", 60, "the most lines a function may have")
	flag.IntVar(&b.complexity, "max-complexity", 15, "the highest cyclomatic complexity a function may have")
	flag.Usage = func() {
		fmt.Fprintf(flag.CommandLine.Output(), "usage: funcbounds [flags] dir|dir/... ...\n")
		flag.PrintDefaults()
	}
	flag.Parse()
	if flag.NArg() == 0 {
		flag.Usage()
		os.Exit(2)
	}
	os.Exit(run(os.Stdout, os.Stderr, b, flag.Args()))
}

// run checks the packages in dirs (dir/... for a tree) and returns the
// exit code: 0 all within bounds, 1 some over, 2 cannot check.
func run(stdout, stderr io.Writer, b bounds, dirs []string) int {
	files, err := goFiles(dirs)
	if err != nil {
		fmt.Fprintln(stderr, "funcbounds:", err)
		return 2
	}
	var over []finding
	checked := 0
	for _, file := range files {
		fs, err := check(file, b)
		if err != nil {
			fmt.Fprintln(stderr, "funcbounds:", err)
			return 2
		}
		checked++
		over = append(over, fs...)
	}
	for _, f := range over {
		fmt.Fprintln(stdout, f.String(b))
	}
	if len(over) > 0 {
		fmt.Fprintf(stdout, "funcbounds: %d functions over %d lines or complexity %d: split them\n", len(over), b.lines, b.complexity)
		return 1
	}
	fmt.Fprintf(stdout, "funcbounds: every function of %d files within %d lines and complexity %d\n", checked, b.lines, b.complexity)
	return 0
}

// goFiles are the non-test Go files of dirs, dir/... walking the tree.
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
				out = append(out, path)
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

// check returns the functions of a file over the bounds; generated files
// have none.
func check(path string, b bounds) ([]finding, error) {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, path, nil, parser.ParseComments|parser.SkipObjectResolution)
	if err != nil {
		return nil, err
	}
	if ast.IsGenerated(f) {
		return nil, nil
	}
	var over []finding
	for _, decl := range f.Decls {
		fn, ok := decl.(*ast.FuncDecl)
		if !ok || fn.Body == nil {
			continue
		}
		start := fset.Position(fn.Pos())
		got := finding{
			pos:        start,
			name:       funcName(fn),
			lines:      fset.Position(fn.End()).Line - start.Line + 1,
			complexity: complexity(fn),
		}
		if got.lines > b.lines || got.complexity > b.complexity {
			over = append(over, got)
		}
	}
	return over, nil
}

// funcName is name, or (T).name and (*T).name for a method.
func funcName(fn *ast.FuncDecl) string {
	if fn.Recv == nil || len(fn.Recv.List) == 0 {
		return fn.Name.Name
	}
	t := fn.Recv.List[0].Type
	star := ""
	if s, ok := t.(*ast.StarExpr); ok {
		star, t = "*", s.X
	}
	switch x := t.(type) {
	case *ast.IndexExpr: // a generic receiver T[A]
		t = x.X
	case *ast.IndexListExpr: // T[A, B]
		t = x.X
	}
	name := "?"
	if id, ok := t.(*ast.Ident); ok {
		name = id.Name
	}
	return "(" + star + name + ")." + fn.Name.Name
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
