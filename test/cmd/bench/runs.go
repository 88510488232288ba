package main

import (
	"fmt"
	"slices"
	"strings"
)

// keptRuns is how many runs the README shows: the latest. Older runs and
// what was learnt from them stay in git's history of the README.
const keptRuns = 5

// notMeasured is the cell of a figure a run did not measure (or whose
// value was not recorded).
const notMeasured = "–"

// recordedRun is one run as the README's table of runs shows it.
type recordedRun struct {
	Date, Version, CPUs, Command, Missed string
}

// figureRow is one figure across the runs: its target (the newest run's
// that measured it) and its value in each run, newest first.
type figureRow struct {
	Name, Target string
	Cells        []string
}

// runsTable is what the README shows of the latest runs, newest first:
// the runs, and every figure any of them measured.
type runsTable struct {
	Runs []recordedRun
	Rows []figureRow
}

// record adds run r as the newest and drops the runs beyond keep, and the
// figures that only the dropped runs measured.
func (t runsTable) record(r *report, keep int) runsTable {
	out := runsTable{Runs: append([]recordedRun{newRecordedRun(r)}, t.Runs...)}
	dropped := max(len(out.Runs)-keep, 0)
	out.Runs = out.Runs[:len(out.Runs)-dropped]
	for _, row := range mergeRows(t.Rows, newRows(r)) {
		row.Cells = padded(row.Cells, len(out.Runs))
		if !slices.ContainsFunc(row.Cells, func(c string) bool { return c != notMeasured }) {
			continue
		}
		out.Rows = append(out.Rows, row)
	}
	return out
}

// newRecordedRun is how the table of runs shows run r.
func newRecordedRun(r *report) recordedRun {
	command := "go run ./test/cmd/bench -json"
	if len(r.Run.Flags) > 0 {
		command += " " + strings.Join(r.Run.Flags, " ")
	}
	version := r.Run.Version
	if version == "" {
		version = notMeasured
	}
	targets := 0
	for _, f := range r.Figures {
		if f.Max != nil || f.Min != nil {
			targets++
		}
	}
	return recordedRun{Date: r.Run.Date, Version: version, CPUs: fmt.Sprint(r.Run.CPUs),
		Command: "`" + command + "`", Missed: fmt.Sprintf("%d of %d", len(r.Missed), targets)}
}

// newRows are the figures of run r, each with its one cell: the value,
// in bold when it missed its target.
func newRows(r *report) []figureRow {
	rows := make([]figureRow, 0, len(r.Figures))
	for _, f := range r.Figures {
		row := figureRow{Name: f.Name, Cells: []string{quantity(f.Value, f.Unit)}}
		if f.Max != nil {
			row.Target = "≤ " + quantity(*f.Max, f.Unit)
		}
		if f.Min != nil {
			row.Target = "≥ " + quantity(*f.Min, f.Unit)
		}
		if f.Met != nil && !*f.Met {
			row.Cells[0] = "**" + row.Cells[0] + "**"
		}
		rows = append(rows, row)
	}
	return rows
}

// mergeRows puts the newest run's rows (one cell each) in front of the
// older runs' cells. A figure the newest run did not measure keeps its
// place after the figure it followed and its target, with no value in
// the newest run.
func mergeRows(older, newest []figureRow) []figureRow {
	out := make([]figureRow, 0, len(newest)+len(older))
	at := map[string]int{}
	for _, row := range newest {
		at[row.Name] = len(out)
		out = append(out, figureRow{Name: row.Name, Target: row.Target, Cells: row.Cells})
	}
	after := -1 // where the last older row seen is in out
	for _, row := range older {
		if i, ok := at[row.Name]; ok {
			out[i].Cells = append(out[i].Cells, row.Cells...)
			after = i
			continue
		}
		kept := figureRow{Name: row.Name, Target: row.Target, Cells: append([]string{notMeasured}, row.Cells...)}
		out = slices.Insert(out, after+1, kept)
		for name, i := range at {
			if i > after {
				at[name] = i + 1
			}
		}
		after++
		at[row.Name] = after
	}
	return out
}

// padded is cells cut or filled with notMeasured to n cells.
func padded(cells []string, n int) []string {
	if len(cells) >= n {
		return cells[:n]
	}
	out := append([]string(nil), cells...)
	for len(out) < n {
		out = append(out, notMeasured)
	}
	return out
}

// render is the Markdown of the table: the runs, then the figures.
func (t runsTable) render() string {
	var b strings.Builder
	b.WriteString("| run | date (UTC) | version | CPUs | command | missed |\n|---|---|---|---|---|---|\n")
	for i, r := range t.Runs {
		writeRow(&b, fmt.Sprint(i+1), r.Date, r.Version, r.CPUs, r.Command, r.Missed)
	}
	head := []string{"figure", "target"}
	for i := range t.Runs {
		head = append(head, fmt.Sprint(i+1))
	}
	b.WriteString("\n")
	writeRow(&b, head...)
	b.WriteString("|" + strings.Repeat("---|", len(head)) + "\n")
	for _, row := range t.Rows {
		writeRow(&b, append([]string{row.Name, row.Target}, row.Cells...)...)
	}
	return b.String()
}

// writeRow writes one row of a Markdown table; a | in a cell is escaped.
func writeRow(b *strings.Builder, cells ...string) {
	b.WriteString("|")
	for _, c := range cells {
		b.WriteString(" " + strings.ReplaceAll(c, "|", `\|`) + " |")
	}
	b.WriteString("\n")
}

// parseRuns reads the table render wrote; text around the tables is
// ignored, and a block with no table holds no run.
func parseRuns(block string) (runsTable, error) {
	var t runsTable
	tables := markdownTables(block)
	if len(tables) == 0 {
		return t, nil
	}
	if len(tables) != 2 {
		return t, fmt.Errorf("the runs hold %d tables, want 2 (the runs, then the figures)", len(tables))
	}
	runs, figures := tables[0], tables[1]
	if err := expectHeader(runs[0], "run", 6); err != nil {
		return t, err
	}
	for _, cells := range runs[1:] {
		if len(cells) != 6 {
			return t, fmt.Errorf("the row of run %s has %d cells, want 6", cells[0], len(cells))
		}
		t.Runs = append(t.Runs, recordedRun{Date: cells[1], Version: cells[2], CPUs: cells[3], Command: cells[4], Missed: cells[5]})
	}
	if err := expectHeader(figures[0], "figure", 2+len(t.Runs)); err != nil {
		return t, err
	}
	for _, cells := range figures[1:] {
		if len(cells) != 2+len(t.Runs) {
			return t, fmt.Errorf("the row of figure %q has %d cells, want %d (a name, a target and one per run)", cells[0], len(cells), 2+len(t.Runs))
		}
		t.Rows = append(t.Rows, figureRow{Name: cells[0], Target: cells[1], Cells: cells[2:]})
	}
	return t, nil
}

// expectHeader says what is wrong with a table's header, if anything.
func expectHeader(header []string, first string, n int) error {
	if header[0] != first || len(header) != n {
		return fmt.Errorf("a table's header is %q, want %d columns starting with %q", strings.Join(header, " | "), n, first)
	}
	return nil
}

// markdownTables are the tables of a Markdown text: each its rows of
// cells, the header first, the delimiter row left out.
func markdownTables(text string) [][][]string {
	var tables [][][]string
	var rows [][]string
	for line := range strings.SplitSeq(text+"\n", "\n") {
		line = strings.TrimSpace(line)
		if !strings.HasPrefix(line, "|") {
			if len(rows) > 0 {
				tables = append(tables, rows)
			}
			rows = nil
			continue
		}
		if strings.HasPrefix(line, "|---") {
			continue
		}
		rows = append(rows, splitRow(line))
	}
	return tables
}

// splitRow splits a table row into its cells, unescaping \|.
func splitRow(line string) []string {
	line = strings.TrimSuffix(strings.TrimPrefix(line, "|"), "|")
	var cells []string
	var cell strings.Builder
	for i := 0; i < len(line); i++ {
		switch {
		case line[i] == '\\' && i+1 < len(line) && line[i+1] == '|':
			cell.WriteByte('|')
			i++
		case line[i] == '|':
			cells = append(cells, strings.TrimSpace(cell.String()))
			cell.Reset()
		default:
			cell.WriteByte(line[i])
		}
	}
	return append(cells, strings.TrimSpace(cell.String()))
}
