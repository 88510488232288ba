package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// fig is a figure of a test run: a target of 0 is none.
type fig struct {
	name          string
	value, target float64
}

// runOf is the report of a run on date with these figures, in ms.
func runOf(date string, figs ...fig) *report {
	r := &report{Run: runInfo{Date: date, CPUs: 2, Version: "v-" + date, Flags: []string{}}}
	for _, f := range figs {
		if f.target > 0 {
			r.check(f.name, "ms", f.value, f.target)
			continue
		}
		r.add(f.name, "ms", f.value)
	}
	return r
}

// ran is how the table of runs shows a run of runOf on date.
func ran(date, missed string) recordedRun {
	return recordedRun{Date: date, Version: "v-" + date, CPUs: "2", Command: "`go run ./test/cmd/bench -json`", Missed: missed}
}

func TestRecordRun(t *testing.T) {
	a, b, c := fig{"a", 1, 10}, fig{"b", 2, 0}, fig{"c", 20, 10}
	fiveRuns := runsTable{}
	for _, day := range []string{"1", "2", "3", "4", "5"} {
		fiveRuns = fiveRuns.record(runOf(day, a, b, c), 5)
	}
	tests := []struct {
		name   string
		before runsTable
		run    *report
		keep   int
		want   runsTable
	}{
		{
			name: "the first run", run: runOf("1", a, b, c), keep: 5,
			want: runsTable{
				Runs: []recordedRun{ran("1", "1 of 2")},
				Rows: []figureRow{{"a", "≤ 10.0 ms", []string{"1.0 ms"}}, {"b", "", []string{"2.0 ms"}}, {"c", "≤ 10.0 ms", []string{"**20.0 ms**"}}},
			},
		},
		{
			name: "a sixth run drops the oldest", before: fiveRuns, run: runOf("6", fig{"a", 11, 10}), keep: 5,
			want: runsTable{
				Runs: []recordedRun{ran("6", "1 of 1"), ran("5", "1 of 2"), ran("4", "1 of 2"), ran("3", "1 of 2"), ran("2", "1 of 2")},
				Rows: []figureRow{
					{"a", "≤ 10.0 ms", []string{"**11.0 ms**", "1.0 ms", "1.0 ms", "1.0 ms", "1.0 ms"}},
					{"b", "", []string{"–", "2.0 ms", "2.0 ms", "2.0 ms", "2.0 ms"}},
					{"c", "≤ 10.0 ms", []string{"–", "**20.0 ms**", "**20.0 ms**", "**20.0 ms**", "**20.0 ms**"}},
				},
			},
		},
		{
			name: "a figure only the dropped run measured goes with it",
			before: runsTable{
				Runs: []recordedRun{ran("2", "0 of 0"), ran("1", "0 of 1")},
				Rows: []figureRow{{"b", "", []string{"2.0 ms", "2.0 ms"}}, {"old", "≤ 1.0 ms", []string{"–", "0.5 ms"}}},
			},
			run: runOf("3", b), keep: 2,
			want: runsTable{
				Runs: []recordedRun{ran("3", "0 of 0"), ran("2", "0 of 0")},
				Rows: []figureRow{{"b", "", []string{"2.0 ms", "2.0 ms"}}},
			},
		},
		{
			name: "a figure the new run did not measure keeps its place and its target; a new one joins",
			before: runsTable{
				Runs: []recordedRun{ran("1", "0 of 1")},
				Rows: []figureRow{{"a", "", []string{"1.0 ms"}}, {"b", "≤ 5.0 ms", []string{"2.0 ms"}}, {"c", "", []string{"3.0 ms"}}},
			},
			run: runOf("2", fig{"a", 1, 0}, c, fig{"d", 4, 0}), keep: 5,
			want: runsTable{
				Runs: []recordedRun{ran("2", "1 of 1"), ran("1", "0 of 1")},
				Rows: []figureRow{
					{"a", "", []string{"1.0 ms", "1.0 ms"}},
					{"b", "≤ 5.0 ms", []string{"–", "2.0 ms"}},
					{"c", "≤ 10.0 ms", []string{"**20.0 ms**", "3.0 ms"}},
					{"d", "", []string{"4.0 ms", "–"}},
				},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.before.record(tt.run, tt.keep); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("record() =\n%#v\nwant\n%#v", got, tt.want)
			}
		})
	}
}

func TestRenderAndParseRuns(t *testing.T) {
	r := &report{Run: runInfo{Date: "2026-11-25", CPUs: 2, Version: "ba96690-dirty", Flags: []string{"-objects=2000", "-steps=plan|burst"}}}
	r.add("example-profile plan GET p50", "ms", 6.04)
	r.check("example-profile plan GET p50 / floor p50", "x", 1.554, 2.5)
	r.check("burst dry-runs / one computation per GET", "share", 0.3, 0.2)
	r.add("burst answers 429", "requests", 0)
	tbl := runsTable{}.record(r, 5)

	got := tbl.render()
	want := "| run | date (UTC) | version | CPUs | command | missed |\n" +
		"|---|---|---|---|---|---|\n" +
		"| 1 | 2026-11-25 | ba96690-dirty | 2 | `go run ./test/cmd/bench -json -objects=2000 -steps=plan\\|burst` | 1 of 2 |\n" +
		"\n" +
		"| figure | target | 1 |\n" +
		"|---|---|---|\n" +
		"| example-profile plan GET p50 |  | 6.0 ms |\n" +
		"| example-profile plan GET p50 / floor p50 | ≤ 2.50 x | 1.55 x |\n" +
		"| burst dry-runs / one computation per GET | ≤ 0.20 share | **0.30 share** |\n" +
		"| burst answers 429 |  | 0 requests |\n"
	if got != want {
		t.Errorf("render() =\n%s\nwant\n%s", got, want)
	}
	back, err := parseRuns("prose before\n\n" + got + "\nprose after\n")
	if err != nil || !reflect.DeepEqual(back, tbl) {
		t.Errorf("parseRuns(render()) = %#v, %v; want %#v", back, err, tbl)
	}
}

func TestParseRunsRefuses(t *testing.T) {
	runs := "| run | date (UTC) | version | CPUs | command | missed |\n|---|---|---|---|---|---|\n| 1 | d | v | 2 | c | 0 of 0 |\n\n"
	tests := []struct {
		name, block, wantErr string
	}{
		{name: "one table", block: runs, wantErr: "the runs hold 1 tables, want 2"},
		{name: "a run row short of a cell", block: "| run | date (UTC) | version | CPUs | command | missed |\n| 1 | d | v | 2 | c |\n\n| figure | target | 1 |\n", wantErr: "the row of run 1 has 5 cells, want 6"},
		{name: "a column per run", block: runs + "| figure | target | 1 | 2 |\n", wantErr: "want 3 columns starting with \"figure\""},
		{name: "a figure row short of a cell", block: runs + "| figure | target | 1 |\n|---|---|---|\n| a | |\n", wantErr: `the row of figure "a" has 2 cells, want 3`},
		{name: "tables the other way round", block: "| figure | target |\n\n" + runs, wantErr: "want 6 columns starting with \"run\""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := parseRuns(tt.block); err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("parseRuns() error = %v, want %q", err, tt.wantErr)
			}
		})
	}
	if tbl, err := parseRuns("\n"); err != nil || len(tbl.Runs) != 0 {
		t.Errorf("parseRuns of empty markers = %v, %v; want no run", tbl, err)
	}
}

func TestReplaceFigures(t *testing.T) {
	tests := []struct {
		name, doc, want, wantErr string
	}{
		{
			name: "replaces what is between the markers, keeps the rest",
			doc:  "# bench\n\nprose\n\n" + beginFigures + "\nold table\n" + endFigures + "\n\nmore prose\n",
			want: "# bench\n\nprose\n\n" + beginFigures + "\nnew table\n" + endFigures + "\n\nmore prose\n",
		},
		{
			name: "empty markers",
			doc:  beginFigures + "\n" + endFigures + "\n",
			want: beginFigures + "\nnew table\n" + endFigures + "\n",
		},
		{name: "no markers", doc: "# bench\n", wantErr: "no place for the runs: put the lines"},
		{name: "end before begin", doc: endFigures + "\n" + beginFigures + "\n", wantErr: "no place for the runs"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := replaceFigures(tt.doc, "new table\n")
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("replaceFigures() error = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("replaceFigures() = %q, %v; want %q", got, err, tt.want)
			}
		})
	}
}

// The README is written from what -json prints, not from the figures in
// memory: the round trip through the file must keep everything. Recorded
// one after another, runs beyond the latest five leave the README, and
// the text around the markers stays.
func TestWriteReadmeFromJSONOutput(t *testing.T) {
	dir := t.TempDir()
	jsonPath := filepath.Join(dir, "bench.json")
	readmePath := filepath.Join(dir, "README.md")
	doc := "# bench\n\nprose\n\n" + beginFigures + "\n" + endFigures + "\n\nmore prose\n"
	if err := os.WriteFile(readmePath, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	want := runsTable{}
	for day := 1; day <= 7; day++ {
		r := runOf(fmt.Sprintf("2026-12-0%d", day), fig{"approval to target written p50", float64(day), 5})
		var out bytes.Buffer
		if err := r.writeJSON(&out); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(jsonPath, out.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := writeReadme(jsonPath, readmePath); err != nil {
			t.Fatalf("recording run %d: %v", day, err)
		}
		want = want.record(r, keptRuns)
	}
	got, err := os.ReadFile(readmePath)
	if err != nil {
		t.Fatal(err)
	}
	if want := "# bench\n\nprose\n\n" + beginFigures + "\n" + want.render() + endFigures + "\n\nmore prose\n"; string(got) != want {
		t.Errorf("README =\n%s\nwant\n%s", got, want)
	}
	for _, s := range []string{"| 5 | 2026-12-03 |", "| approval to target written p50 | ≤ 5.0 ms | **7.0 ms** | **6.0 ms** | 5.0 ms | 4.0 ms | 3.0 ms |"} {
		if !strings.Contains(string(got), s) {
			t.Errorf("README after seven runs lacks %q (the latest five, newest first):\n%s", s, got)
		}
	}
	if strings.Contains(string(got), "2026-12-02") {
		t.Errorf("README after seven runs still shows the second:\n%s", got)
	}

	if err := os.WriteFile(jsonPath, []byte("bench: cannot measure\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := writeReadme(jsonPath, readmePath); err == nil || !strings.Contains(err.Error(), "is not the -json output of the bench") {
		t.Errorf("writeReadme() of a failed run's output: %v, want an error saying it is not the -json output", err)
	}
	broken := "# bench\n" + beginFigures + "\n| run | date |\n" + endFigures + "\n"
	if err := os.WriteFile(readmePath, []byte(broken), 0o644); err != nil {
		t.Fatal(err)
	}
	r := runOf("2026-12-08", fig{"a", 1, 0})
	var out bytes.Buffer
	if err := r.writeJSON(&out); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(jsonPath, out.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := writeReadme(jsonPath, readmePath); err == nil || !strings.Contains(err.Error(), "the runs between the markers cannot be read") {
		t.Errorf("writeReadme() into runs it cannot read: %v, want an error saying so", err)
	}
	if kept, _ := os.ReadFile(readmePath); string(kept) != broken {
		t.Errorf("writeReadme() changed a README it could not read:\n%s", kept)
	}
}

// The README's runs are what make bench-figures can read and would write:
// the next recording keeps them.
func TestReadmeRunsAreRecorded(t *testing.T) {
	doc, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	block, err := between(string(doc))
	if err != nil {
		t.Fatal(err)
	}
	tbl, err := parseRuns(block)
	if err != nil {
		t.Fatalf("README.md: %v", err)
	}
	if len(tbl.Runs) == 0 || len(tbl.Runs) > keptRuns {
		t.Errorf("README.md shows %d runs, want 1 to %d", len(tbl.Runs), keptRuns)
	}
	if want := "\n" + tbl.render(); block != want {
		t.Errorf("README.md's runs are not as make bench-figures writes them:\n%s\nwant\n%s", block, want)
	}
}
