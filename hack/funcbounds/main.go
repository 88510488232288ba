// Command funcbounds keeps the code readable in one go. It has three
// checks, chosen with -check:
//
//   - funcs (the default): a function more than -max-lines lines long
//     (from func to its closing brace) or with a cyclomatic complexity
//     over -max-complexity, counted like gocyclo: 1, plus one for each if,
//     for, range, case and select clause (not default) and each && and ||,
//     function literals counted in the function that holds them;
//   - receivers: a type with more than -max-methods methods, or a file of
//     more than -max-file-lines lines;
//   - imports: a package under pkg/apis that imports a package of the
//     module outside pkg/apis (an upward import: the API types and their
//     validation sit below everything that serves them).
//
// Test files and generated files are left out. Each finding is named with
// its file:line and numbers. With -allowlist, findings the file names are
// tolerated, but the list may only shrink: an entry that is no longer
// over (or no longer exists) fails the check, as does a list longer than
// -max-allowlist. The exit code is 1 on a failure, 2 when the packages
// cannot be checked.
//
//	go run ./hack/funcbounds -allowlist hack/funcbounds/allowlist.txt ./pkg/... ./cmd/...
//	go run ./hack/funcbounds -check receivers -allowlist hack/funcbounds/receivers-allowlist.txt ./pkg/controller/...
//	go run ./hack/funcbounds -check imports ./pkg/apis/...
package main

import (
	"flag"
	"fmt"
	"io"
	"os"
)

// options are what a run checks.
type options struct {
	check string // funcs, receivers or imports
	// funcs
	lines, complexity int
	// receivers
	methods, fileLines int
	// allowlist is the file of tolerated findings ("" for none), at most
	// maxAllowlist entries.
	allowlist    string
	maxAllowlist int
}

func main() {
	var o options
	flag.StringVar(&o.check, "check", "funcs", "what to check: funcs (length and complexity), receivers (methods per type, lines per file) or imports (pkg/apis imports only pkg/apis)")
	flag.IntVar(&o.lines, "max-lines", 60, "funcs: the most lines a function may have")
	flag.IntVar(&o.complexity, "max-complexity", 15, "funcs: the highest cyclomatic complexity a function may have")
	flag.IntVar(&o.methods, "max-methods", 20, "receivers: the most methods a type may have")
	flag.IntVar(&o.fileLines, "max-file-lines", 600, "receivers: the most lines a file may have")
	flag.StringVar(&o.allowlist, "allowlist", "", "a file naming findings tolerated until they are fixed, one `path: name` a line")
	flag.IntVar(&o.maxAllowlist, "max-allowlist", 5, "the most entries the allowlist may have")
	flag.Usage = func() {
		fmt.Fprintf(flag.CommandLine.Output(), "usage: funcbounds [flags] dir|dir/... ...\n")
		flag.PrintDefaults()
	}
	flag.Parse()
	if flag.NArg() == 0 {
		flag.Usage()
		os.Exit(2)
	}
	os.Exit(run(os.Stdout, os.Stderr, o, flag.Args()))
}

// run checks the packages in dirs (dir/... for a tree) and returns the
// exit code: 0 all within bounds, 1 some over, 2 cannot check.
func run(stdout, stderr io.Writer, o options, dirs []string) int {
	files, err := goFiles(dirs)
	if err != nil {
		fmt.Fprintln(stderr, "funcbounds:", err)
		return 2
	}
	allowed, err := readAllowlist(o.allowlist)
	if err != nil {
		fmt.Fprintln(stderr, "funcbounds:", err)
		return 2
	}
	var found []finding
	var summary, advice string
	switch o.check {
	case "funcs":
		found, err = checkFuncs(files, o.lines, o.complexity)
		summary = fmt.Sprintf("every function of %d files within %d lines and complexity %d", len(files), o.lines, o.complexity)
		advice = "split each into functions that each do one step"
	case "receivers":
		found, err = checkReceivers(files, o.methods, o.fileLines)
		summary = fmt.Sprintf("every type of %d files within %d methods, every file within %d lines", len(files), o.methods, o.fileLines)
		advice = "split each by the jobs its parts do"
	case "imports":
		found, err = checkImports(files)
		summary = fmt.Sprintf("%d files under pkg/apis import no package of the module outside pkg/apis", len(files))
		advice = "move what the package needs under pkg/apis"
	default:
		err = fmt.Errorf("unknown -check %q: funcs, receivers or imports", o.check)
	}
	if err != nil {
		fmt.Fprintln(stderr, "funcbounds:", err)
		return 2
	}
	return judge(stdout, found, allowed, o.maxAllowlist, advice, summary)
}
