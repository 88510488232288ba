package main

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"strings"
)

// finding is something over its bounds.
type finding struct {
	pos  string // file:line
	key  string // what an allowlist names it: "path: name"
	text string // what is over, with the numbers
}

// entry is a line of an allowlist: "path: name # why".
type entry struct {
	line int
	key  string
}

// allowlist names the findings tolerated until they are fixed.
type allowlist struct {
	path    string
	entries []entry
}

// readAllowlist reads path; "" is an empty list. Blank lines and lines
// starting with # are comments; every entry says why after a #.
func readAllowlist(path string) (*allowlist, error) {
	l := &allowlist{path: path}
	if path == "" {
		return l, nil
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	seen := map[string]int{}
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		text := strings.TrimSpace(sc.Text())
		if text == "" || strings.HasPrefix(text, "#") {
			continue
		}
		key, why, _ := strings.Cut(text, "#")
		key = strings.TrimSpace(key)
		if !strings.Contains(key, ": ") || strings.TrimSpace(why) == "" {
			return nil, fmt.Errorf("%s:%d: %q is not `path: name # why`", path, n, text)
		}
		if first, ok := seen[key]; ok {
			return nil, fmt.Errorf("%s:%d: %s is already on line %d", path, n, key, first)
		}
		seen[key] = n
		l.entries = append(l.entries, entry{line: n, key: key})
	}
	return l, sc.Err()
}

// judge prints the findings the allowlist does not name, the entries that
// name no finding (the list may only shrink) and a list longer than max;
// it returns 1 when there is any, else 0. advice says what to do about a
// finding; summary what passed.
func judge(w io.Writer, found []finding, l *allowlist, max int, advice, summary string) int {
	named := map[string]bool{}
	for _, e := range l.entries {
		named[e.key] = true
	}
	over, tolerated := 0, map[string]bool{}
	for _, f := range found {
		if named[f.key] {
			tolerated[f.key] = true
			continue
		}
		fmt.Fprintf(w, "%s: %s\n", f.pos, f.text)
		over++
	}
	stale := 0
	for _, e := range l.entries {
		if !tolerated[e.key] {
			fmt.Fprintf(w, "%s:%d: %s is within bounds now, or gone: remove it from the list, which may only shrink\n", l.path, e.line, e.key)
			stale++
		}
	}
	long := len(l.entries) > max
	if long {
		fmt.Fprintf(w, "%s: %d entries, more than the %d it may have: fix what it names rather than add to it\n", l.path, len(l.entries), max)
	}
	switch {
	case over > 0 || stale > 0 || long:
		fmt.Fprintf(w, "funcbounds: %d to fix (%s), %d allowlist entries to remove\n", over, advice, stale)
		return 1
	case len(l.entries) > 0:
		fmt.Fprintf(w, "funcbounds: %s, but for the %d on %s\n", summary, len(l.entries), l.path)
	default:
		fmt.Fprintf(w, "funcbounds: %s\n", summary)
	}
	return 0
}
