package main

import (
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"time"
)

// figure is one measured number and, when it has one, its target: the
// figure meets it when Value <= Max (or, for a saving, Value >= Min).
type figure struct {
	Name  string   `json:"name"`
	Unit  string   `json:"unit"`
	Value float64  `json:"value"`
	Max   *float64 `json:"max,omitempty"`
	Min   *float64 `json:"min,omitempty"`
	Met   *bool    `json:"met,omitempty"`
}

// report collects the figures of a run.
type report struct {
	// Run says how and where the figures were measured.
	Run     runInfo  `json:"run"`
	Figures []figure `json:"figures"`
	// Missed names every figure that missed its target.
	Missed []string `json:"missed"`
}

// add records a figure without a target.
func (r *report) add(name, unit string, value float64) {
	r.Figures = append(r.Figures, figure{Name: name, Unit: unit, Value: value})
}

// check records a figure and whether it is at most max.
func (r *report) check(name, unit string, value, max float64) bool {
	met := value <= max
	r.Figures = append(r.Figures, figure{Name: name, Unit: unit, Value: value, Max: &max, Met: &met})
	if !met {
		r.Missed = append(r.Missed, fmt.Sprintf("%s: %.2f %s, target <= %.2f %s", name, value, unit, max, unit))
	}
	return met
}

// atLeast records a figure and whether it is at least min.
func (r *report) atLeast(name, unit string, value, min float64) bool {
	met := value >= min
	r.Figures = append(r.Figures, figure{Name: name, Unit: unit, Value: value, Min: &min, Met: &met})
	if !met {
		r.Missed = append(r.Missed, fmt.Sprintf("%s: %.2f %s, target >= %.2f %s", name, value, unit, min, unit))
	}
	return met
}

// verdict says whether a checked figure met its target, for the log lines.
func verdict(met bool) string {
	if met {
		return "met"
	}
	return "MISSED"
}

func (r *report) writeJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	if r.Missed == nil {
		r.Missed = []string{}
	}
	return enc.Encode(r)
}

func percentiles(d []time.Duration) (p50, p95 time.Duration) {
	s := append([]time.Duration(nil), d...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	at := func(q float64) time.Duration { return s[int(q*float64(len(s)-1)+0.5)] }
	return at(0.50), at(0.95)
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
