package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestRenderFigures(t *testing.T) {
	var r report
	r.Run = runInfo{Date: "2026-11-25", CPUs: 2, Version: "ba96690-dirty", Flags: []string{"-objects=2000", "-plan-runs=50"}}
	r.add("example-profile plan GET p50", "ms", 6.04)
	r.check("example-profile plan GET p50 / floor p50", "x", 1.554, 2.5)
	r.check("burst dry-runs / one computation per GET", "share", 0.3, 0.2)
	r.add("burst answers 429", "requests", 0)
	r.check("server RSS growth", "MiB", 0.1, 20)

	got := renderFigures(&r)
	want := "Run of 2026-11-25 (UTC), version ba96690-dirty, on 2 CPUs: `go run ./test/cmd/bench -json -objects=2000 -plan-runs=50` (the other flags at their defaults).\n" +
		"\n" +
		"| figure | value | target | |\n" +
		"|---|---|---|---|\n" +
		"| example-profile plan GET p50 | 6.0 ms |  |  |\n" +
		"| example-profile plan GET p50 / floor p50 | 1.55 x | ≤ 2.50 x | met |\n" +
		"| burst dry-runs / one computation per GET | 0.30 share | ≤ 0.20 share | **missed** |\n" +
		"| burst answers 429 | 0 requests |  |  |\n" +
		"| server RSS growth | 0.1 MiB | ≤ 20.0 MiB | met |\n" +
		"\n" +
		"1 of the figures missed their target:\n" +
		"\n" +
		"* burst dry-runs / one computation per GET: 0.30 share, target <= 0.20 share\n"
	if got != want {
		t.Errorf("renderFigures() =\n%s\nwant\n%s", got, want)
	}

	r = report{Run: runInfo{Date: "2026-11-25", CPUs: 8, Version: "v0.3.0", Flags: []string{}}}
	r.check("edit to Drifted p95", "ms", 12, 1000)
	if got := renderFigures(&r); !strings.HasPrefix(got, "Run of 2026-11-25 (UTC), version v0.3.0, on 8 CPUs: `go run ./test/cmd/bench -json`.\n") ||
		!strings.HasSuffix(got, "\nEvery figure met its target.\n") {
		t.Errorf("a run with default flags and every target met:\n%s", got)
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
		{name: "no markers", doc: "# bench\n", wantErr: "no place for the figures: put the lines"},
		{name: "end before begin", doc: endFigures + "\n" + beginFigures + "\n", wantErr: "no place for the figures"},
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
// memory: the round trip through the file must keep everything.
func TestWriteReadmeFromJSONOutput(t *testing.T) {
	dir := t.TempDir()
	var r report
	r.Run = runInfo{Date: "2026-11-25", CPUs: 2, Flags: []string{}}
	r.check("approval to target written p50", "ms", 5.2, 500)
	var out bytes.Buffer
	if err := r.writeJSON(&out); err != nil {
		t.Fatal(err)
	}
	jsonPath := filepath.Join(dir, "bench.json")
	readmePath := filepath.Join(dir, "README.md")
	if err := os.WriteFile(jsonPath, out.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(readmePath, []byte("# bench\n"+beginFigures+"\n"+endFigures+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := writeReadme(jsonPath, readmePath); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(readmePath)
	if err != nil {
		t.Fatal(err)
	}
	if want := "# bench\n" + beginFigures + "\n" + renderFigures(&r) + endFigures + "\n"; string(got) != want {
		t.Errorf("README =\n%s\nwant\n%s", got, want)
	}

	if err := os.WriteFile(jsonPath, []byte("bench: cannot measure\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := writeReadme(jsonPath, readmePath); err == nil || !strings.Contains(err.Error(), "is not the -json output of the bench") {
		t.Errorf("writeReadme() of a failed run's output: %v, want an error saying it is not the -json output", err)
	}
}
