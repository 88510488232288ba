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

// The runs part of the bench's README lies between these markers;
// writeReadme records a run there and leaves the rest of the file alone.
const (
	beginFigures = "<!-- BEGIN runs: written by `make bench-figures` from the bench's -json output, the latest five runs, newest first; do not edit by hand -->"
	endFigures   = "<!-- END runs -->"
)

// writeReadme records the run of a -json output in readme, between the
// markers, as the newest of the runs shown; of those already there, the
// latest keptRuns-1 stay.
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
	out, err := recordRun(string(doc), &r, keptRuns)
	if err != nil {
		return fmt.Errorf("%s: %w", readme, err)
	}
	return os.WriteFile(readme, []byte(out), 0o644)
}

// recordRun adds run r to the runs between the markers of doc, keeping
// the latest keep.
func recordRun(doc string, r *report, keep int) (string, error) {
	block, err := between(doc)
	if err != nil {
		return "", err
	}
	t, err := parseRuns(block)
	if err != nil {
		return "", fmt.Errorf("the runs between the markers cannot be read (%w): restore them from git, or leave the markers empty to start again", err)
	}
	return replaceFigures(doc, t.record(r, keep).render())
}

// between is what lies between the markers of doc.
func between(doc string) (string, error) {
	begin := strings.Index(doc, beginFigures)
	end := strings.Index(doc, endFigures)
	if begin < 0 || end < begin {
		return "", fmt.Errorf("no place for the runs: put the lines\n%s\n%s\nwhere they go", beginFigures, endFigures)
	}
	return doc[begin+len(beginFigures) : end], nil
}

// replaceFigures puts figures between the markers of doc.
func replaceFigures(doc, figures string) (string, error) {
	if _, err := between(doc); err != nil {
		return "", err
	}
	begin := strings.Index(doc, beginFigures)
	end := strings.Index(doc, endFigures)
	return doc[:begin+len(beginFigures)] + "\n" + figures + doc[end:], nil
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
