package main

import (
	"fmt"
	"go/ast"
	"go/token"
	"path"
	"sort"
)

// checkReceivers returns the types of files with more than maxMethods
// methods (value and pointer receivers together), named "dir: T", and
// the files of more than maxLines lines, named "file: lines".
func checkReceivers(files []string, maxMethods, maxLines int) ([]finding, error) {
	type receiverType struct {
		pos     string // its first method
		methods int
	}
	types := map[string]*receiverType{}
	var over []finding
	for _, file := range files {
		fset := token.NewFileSet()
		f, err := parseFile(fset, file, 0)
		if err != nil {
			return nil, err
		}
		if f == nil {
			continue
		}
		if n := fset.File(f.Pos()).LineCount(); n > maxLines {
			over = append(over, finding{pos: file + ":1", key: file + ": lines",
				text: fmt.Sprintf("%d lines (max %d)", n, maxLines)})
		}
		for _, decl := range f.Decls {
			fn, ok := decl.(*ast.FuncDecl)
			if !ok || fn.Recv == nil || len(fn.Recv.List) == 0 {
				continue
			}
			_, name := receiver(fn)
			key := path.Dir(file) + ": " + name
			if types[key] == nil {
				types[key] = &receiverType{pos: fmt.Sprintf("%s:%d", file, fset.Position(fn.Pos()).Line)}
			}
			types[key].methods++
		}
	}
	for key, t := range types {
		if t.methods > maxMethods {
			over = append(over, finding{pos: t.pos, key: key,
				text: fmt.Sprintf("%s: %d methods (max %d)", key, t.methods, maxMethods)})
		}
	}
	sort.Slice(over, func(i, j int) bool { return over[i].key < over[j].key })
	return over, nil
}
