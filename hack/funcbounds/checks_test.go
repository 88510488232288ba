package main

import (
	"fmt"
	"strings"
	"testing"
)

// long is a function of 7 lines.
const long = "package p\n\nfunc long() {\n\t_ = 1\n\t_ = 1\n\t_ = 1\n\t_ = 1\n\t_ = 1\n}\n"

// TestAllowlist: an allowlisted function may stay over its bounds; one
// not on the list still fails; an entry whose function is within bounds
// or gone fails (the list may only shrink), as do a list longer than its
// maximum and a malformed one.
func TestAllowlist(t *testing.T) {
	short := "package p\n\nfunc short() {}\n"
	funcs := options{check: "funcs", lines: 6, complexity: 15, allowlist: "allow.txt", maxAllowlist: 2}
	for _, tc := range []struct {
		name     string
		files    map[string]string
		exit     int
		contains []string
	}{
		{
			name:     "allowlisted: passes, the list counted",
			files:    map[string]string{"p/long.go": long, "allow.txt": "# why each is here\n\np/long.go: long # being split\n"},
			contains: []string{"funcbounds: every function of 1 files within 6 lines and complexity 15, but for the 1 on allow.txt\n"},
		},
		{
			name:     "a function over its bounds not on the list",
			files:    map[string]string{"p/long.go": long, "p/q/long.go": long, "allow.txt": "p/long.go: long # being split\n"},
			exit:     1,
			contains: []string{"p/q/long.go:3: long: 7 lines (max 6)", "funcbounds: 1 to fix (split each into functions that each do one step), 0 allowlist entries to remove\n"},
		},
		{
			name:     "an entry within bounds now: stale",
			files:    map[string]string{"p/long.go": short, "allow.txt": "\np/long.go: short # was long\n"},
			exit:     1,
			contains: []string{"allow.txt:2: p/long.go: short is within bounds now, or gone: remove it from the list, which may only shrink\n", "0 to fix", "1 allowlist entries to remove"},
		},
		{
			name:     "an entry whose function is gone: stale",
			files:    map[string]string{"p/long.go": long, "allow.txt": "p/long.go: long # being split\np/gone.go: gone # removed since\n"},
			exit:     1,
			contains: []string{"allow.txt:2: p/gone.go: gone is within bounds now, or gone"},
		},
		{
			name: "more entries than it may have",
			files: map[string]string{"p/a.go": long, "p/b.go": strings.Replace(long, "long", "b", 1), "p/c.go": strings.Replace(long, "long", "c", 1),
				"allow.txt": "p/a.go: long # 1\np/b.go: b # 2\np/c.go: c # 3\n"},
			exit:     1,
			contains: []string{"allow.txt: 3 entries, more than the 2 it may have: fix what it names rather than add to it\n", "0 to fix"},
		},
		{
			name:     "an entry without a why: cannot check",
			files:    map[string]string{"p/long.go": long, "allow.txt": "p/long.go: long\n"},
			exit:     2,
			contains: []string{"allow.txt:1: \"p/long.go: long\" is not `path: name # why`"},
		},
		{
			name:     "an entry twice: cannot check",
			files:    map[string]string{"p/long.go": long, "allow.txt": "p/long.go: long # a\np/long.go: long # b\n"},
			exit:     2,
			contains: []string{"allow.txt:2: p/long.go: long is already on line 1"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			runIn(t, tc.files, funcs, []string{"./p/..."}, tc.exit, tc.contains)
		})
	}
}

// methods is a package p with a type T of n methods, in a file of
// 2n+3 lines.
func methods(n int) string {
	var b strings.Builder
	b.WriteString("package p\n\ntype T struct{}\n")
	for i := range n {
		recv := "t T"
		if i%2 == 1 {
			recv = "t *T" // pointer and value receivers count together
		}
		fmt.Fprintf(&b, "\nfunc (%s) m%d() {}\n", recv, i)
	}
	return b.String()
}

// TestReceivers: a type with more methods than it may have, or a file
// with more lines, fails the check unless allowlisted; an allowlisted one
// within bounds is stale.
func TestReceivers(t *testing.T) {
	receivers := options{check: "receivers", methods: 3, fileLines: 12, maxAllowlist: 5}
	allowed := receivers
	allowed.allowlist = "allow.txt"
	for _, tc := range []struct {
		name     string
		files    map[string]string
		opts     options
		exit     int
		contains []string
	}{
		{
			name:     "within bounds",
			files:    map[string]string{"p/t.go": methods(3), "p/t_test.go": "package p\n\nfunc (T) m9() {}\n"},
			opts:     receivers,
			contains: []string{"funcbounds: every type of 1 files within 3 methods, every file within 12 lines\n"},
		},
		{
			name:     "a receiver with more methods, across files",
			files:    map[string]string{"p/t.go": methods(3), "p/more.go": "package p\n\nfunc (t *T) m3() {}\n"},
			opts:     receivers,
			exit:     1,
			contains: []string{"p/more.go:3: p: T: 4 methods (max 3)\n", "funcbounds: 1 to fix (split each by the jobs its parts do)"},
		},
		{
			name:     "a file with more lines",
			files:    map[string]string{"p/t.go": methods(5)}, // 13 lines
			opts:     options{check: "receivers", methods: 20, fileLines: 12},
			exit:     1,
			contains: []string{"p/t.go:1: 13 lines (max 12)\n"},
		},
		{
			name:     "allowlisted",
			files:    map[string]string{"p/t.go": methods(5), "allow.txt": "p: T # being split\np/t.go: lines # being split\n"},
			opts:     allowed,
			contains: []string{"within 12 lines, but for the 2 on allow.txt"},
		},
		{
			name:     "allowlisted, within bounds now: stale",
			files:    map[string]string{"p/t.go": methods(3), "allow.txt": "p: T # being split\np/t.go: lines # being split\n"},
			opts:     allowed,
			exit:     1,
			contains: []string{"allow.txt:1: p: T is within bounds now", "allow.txt:2: p/t.go: lines is within bounds now", "2 allowlist entries to remove"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			runIn(t, tc.files, tc.opts, []string{"p/..."}, tc.exit, tc.contains)
		})
	}
}

// TestImports: a package under pkg/apis may import packages under
// pkg/apis and outside the module; one of the module outside pkg/apis is
// an upward import, generated files included. Packages outside pkg/apis
// may import anything.
func TestImports(t *testing.T) {
	gomod := "module example.com/m\n\ngo 1.26\n"
	imports := func(paths ...string) string {
		return "package p\n\nimport (\n\t_ \"" + strings.Join(paths, "\"\n\t_ \"") + "\"\n)\n"
	}
	for _, tc := range []struct {
		name     string
		files    map[string]string
		dirs     []string
		exit     int
		contains []string
	}{
		{
			name: "within pkg/apis and outside the module",
			files: map[string]string{"go.mod": gomod,
				"pkg/apis/g/validation/v.go": imports("example.com/m/pkg/apis/g", "k8s.io/apimachinery/pkg/util/validation/field", "example.com/mother"),
				"pkg/apis/g/types.go":        "package g\n"},
			dirs:     []string{"./pkg/apis/..."},
			contains: []string{"funcbounds: 2 files under pkg/apis import no package of the module outside pkg/apis\n"},
		},
		{
			name: "an upward import",
			files: map[string]string{"go.mod": gomod,
				"pkg/apis/g/validation/v.go": imports("example.com/m/pkg/apis/g", "example.com/m/pkg/maintenance"),
				"pkg/maintenance/m.go":       imports("example.com/m/pkg/apis/g")},
			dirs: []string{"./pkg/..."},
			exit: 1,
			contains: []string{"pkg/apis/g/validation/v.go:5: example.com/m/pkg/apis/g/validation imports example.com/m/pkg/maintenance: an upward import, out of pkg/apis\n",
				"funcbounds: 1 to fix (move what the package needs under pkg/apis)"},
		},
		{
			name: "an upward import of a generated file, the module found from a subdirectory",
			files: map[string]string{"go.mod": gomod,
				"pkg/apis/g/zz_generated.go": "// Code generated by hand. DO NOT EDIT.\n\n" + imports("example.com/m/pkg/generated")},
			dirs:     []string{"pkg/apis/g"},
			exit:     1,
			contains: []string{"pkg/apis/g/zz_generated.go:6: example.com/m/pkg/apis/g imports example.com/m/pkg/generated"},
		},
		{
			name:     "no module: cannot check",
			files:    map[string]string{"pkg/apis/g/types.go": "package g\n"},
			dirs:     []string{"pkg/apis/g"},
			exit:     2,
			contains: []string{"pkg/apis/g is in no Go module"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			runIn(t, tc.files, options{check: "imports"}, tc.dirs, tc.exit, tc.contains)
		})
	}
}
