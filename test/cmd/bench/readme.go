package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"runtime"
	"sort"
	"strings"
	"time"

	"github.com/kubevirt/virt-advisor/pkg/version"
)

// runInfo says how and where a run measured: with -json it travels with
// the figures, so a table written from them says what it comes from.
type runInfo struct {
	// Date is the day the run started, UTC.
	Date string `json:"date"`
	// Flags are the flags the run was given (besides -json), as -name=value.
	Flags []string `json:"flags"`
	CPUs  int      `json:"cpus"`
	// Version is the build version of the bench and the server it runs
	// (git describe, set by make; "dev" otherwise).
	Version string `json:"version"`
}

func newRunInfo(started time.Time) runInfo {
	info := runInfo{Date: started.UTC().Format(time.DateOnly), Flags: []string{}, CPUs: runtime.NumCPU(), Version: version.Version}
	flag.Visit(func(f *flag.Flag) {
		if f.Name != "json" {
			info.Flags = append(info.Flags, fmt.Sprintf("-%s=%s", f.Name, f.Value))
		}
	})
	sort.Strings(info.Flags)
	return info
}

// The figures part of the bench's README lies between these markers;
// writeReadme replaces it and leaves the rest of the file alone.
const (
	beginFigures = "<!-- BEGIN figures: written by `make bench-figures` from the bench's -json output; do not edit by hand -->"
	endFigures   = "<!-- END figures -->"
)

// writeReadme writes the figures of a -json output into readme, between
// the markers.
func writeReadme(jsonPath, readme string) error {
	raw, err := os.ReadFile(jsonPath)
	if err != nil {
		return err
	}
	var r report
	if err := json.Unmarshal(raw, &r); err != nil {
		return fmt.Errorf("%s is not the -json output of the bench: %w", jsonPath, err)
	}
	if len(r.Figures) == 0 {
		return fmt.Errorf("%s holds no figures: write it with go run ./test/cmd/bench -json > %s", jsonPath, jsonPath)
	}
	doc, err := os.ReadFile(readme)
	if err != nil {
		return err
	}
	out, err := replaceFigures(string(doc), renderFigures(&r))
	if err != nil {
		return fmt.Errorf("%s: %w", readme, err)
	}
	return os.WriteFile(readme, []byte(out), 0o644)
}

// replaceFigures puts figures between the markers of doc.
func replaceFigures(doc, figures string) (string, error) {
	begin := strings.Index(doc, beginFigures)
	end := strings.Index(doc, endFigures)
	if begin < 0 || end < begin {
		return "", fmt.Errorf("no place for the figures: put the lines\n%s\n%s\nwhere they go", beginFigures, endFigures)
	}
	return doc[:begin+len(beginFigures)] + "\n" + figures + doc[end:], nil
}

// renderFigures is the Markdown of a run: where it ran, every figure with
// its target, and which missed.
func renderFigures(r *report) string {
	var b strings.Builder
	command := "go run ./test/cmd/bench -json"
	if len(r.Run.Flags) > 0 {
		command += " " + strings.Join(r.Run.Flags, " ")
	}
	built := ""
	if r.Run.Version != "" {
		built = ", version " + r.Run.Version + ","
	}
	fmt.Fprintf(&b, "Run of %s (UTC)%s on %d CPUs: `%s`", r.Run.Date, built, r.Run.CPUs, command)
	if len(r.Run.Flags) > 0 {
		b.WriteString(" (the other flags at their defaults)")
	}
	fmt.Fprintf(&b, ".\n\n| figure | value | target | |\n|---|---|---|---|\n")
	for _, f := range r.Figures {
		target, verdict := "", ""
		if f.Max != nil {
			target = "≤ " + quantity(*f.Max, f.Unit)
			verdict = "met"
			if f.Met != nil && !*f.Met {
				verdict = "**missed**"
			}
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s |\n", f.Name, quantity(f.Value, f.Unit), target, verdict)
	}
	switch len(r.Missed) {
	case 0:
		b.WriteString("\nEvery figure met its target.\n")
	default:
		fmt.Fprintf(&b, "\n%d of the figures missed their target:\n\n", len(r.Missed))
		for _, m := range r.Missed {
			fmt.Fprintf(&b, "* %s\n", m)
		}
	}
	return b.String()
}

// quantity prints a value with the precision its unit deserves.
func quantity(v float64, unit string) string {
	switch unit {
	case "x", "share":
		return fmt.Sprintf("%.2f %s", v, unit)
	case "requests":
		return fmt.Sprintf("%.0f %s", v, unit)
	default:
		return fmt.Sprintf("%.1f %s", v, unit)
	}
}
