package view

import (
	"encoding/csv"
	"encoding/json"
	"io"
	"slices"
	"strconv"
	"strings"
)

// A sweep's results: a row per trial, its parameters, outcome, duration,
// GPU use and captured metrics; the table that `tfhive sweep` ends with and
// `tfhive runs --sweep` shows again, or as JSON or CSV.

// ResultNotRun is a trial that never started: the sweep was stopped first
// (Ctrl-C, kill, --max-failures), or is still to reach it.
const ResultNotRun = "not run"

// SweepRow is one trial: its run's record, its parameters, the GPUs its
// tasks held and their mean utilisation (--sample; nil without samples).
type SweepRow struct {
	RunRecord
	Params   map[string]string `json:"params"`
	GPUs     int               `json:"gpus"`
	UtilMean *float64          `json:"gpu_util_mean_pct,omitempty"`
}

// SweepTable is a sweep's rows with its parameters' names in --param
// order: the columns.
type SweepTable struct {
	Name   string     `json:"sweep"`
	Params []string   `json:"params"`
	Trials []SweepRow `json:"trials"`
}

// SortSweep orders the rows by metric (as SortRunRecords does; the trials
// without it last), ties and metric "" in trial order.
func SortSweep(rows []SweepRow, metric string, reverse bool) {
	cmp := func(a, b SweepRow) int { return 0 }
	if metric != "" {
		mc := metricCompare(metric, reverse)
		cmp = func(a, b SweepRow) int { return mc(a.RunRecord, b.RunRecord) }
	}
	slices.SortStableFunc(rows, func(a, b SweepRow) int {
		if c := cmp(a, b); c != 0 {
			return c
		}
		return strings.Compare(a.RunID, b.RunID)
	})
}

// sweepCells are the table's (and the CSV's) header and rows; raw leaves
// values whole and durations in seconds, for CSV.
func (t SweepTable) cells(raw bool) ([]string, [][]string) {
	recs := make([]RunRecord, len(t.Trials))
	for i, r := range t.Trials {
		recs[i] = r.RunRecord
	}
	metrics := MetricNames(recs)
	header := append([]string{"TRIAL"}, t.Params...)
	header = append(header, "RESULT", "EXIT", "DURATION", "GPUS", "UTIL")
	if raw {
		header = append([]string{"trial"}, t.Params...)
		header = append(header, "result", "exit_code", "duration_s", "gpus", "gpu_util_mean_pct")
	}
	header = append(header, metrics...)
	rows := make([][]string, len(t.Trials))
	for i, r := range t.Trials {
		row := []string{r.RunID}
		for _, p := range t.Params {
			row = append(row, r.Params[p])
		}
		dash := "-"
		if raw {
			dash = ""
		}
		code, dur, gpus, util := dash, dash, dash, dash
		if r.ExitCode != nil {
			code = strconv.Itoa(*r.ExitCode)
		}
		if r.Duration > 0 {
			dur = RoundDuration(r.Duration).String()
			if raw {
				dur = strconv.FormatFloat(r.Duration.Seconds(), 'f', 3, 64)
			}
		}
		if r.GPUs > 0 {
			gpus = strconv.Itoa(r.GPUs)
		}
		if r.UtilMean != nil {
			util = strconv.FormatFloat(*r.UtilMean, 'f', 0, 64) + "%"
			if raw {
				util = strconv.FormatFloat(*r.UtilMean, 'f', 1, 64)
			}
		}
		row = append(row, r.Result, code, dur, gpus, util)
		for _, n := range metrics {
			v, ok := r.Metrics[n]
			switch {
			case !ok:
				v = dash
			case !raw:
				v = cutCell(v)
			}
			row = append(row, v)
		}
		rows[i] = row
	}
	return header, rows
}

// WriteSweep prints the table: a column per parameter after the trial's
// id, then its outcome, then a column per metric; "-" where a trial has
// no value.
func WriteSweep(w io.Writer, t SweepTable) error {
	header, rows := t.cells(false)
	return WriteTable(w, header, rows)
}

// WriteSweepJSON prints {"sweep": NAME, "params": [...], "trials": [...]}.
func WriteSweepJSON(w io.Writer, t SweepTable) error {
	if t.Trials == nil {
		t.Trials = []SweepRow{}
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(t)
}

// WriteSweepCSV prints the rows as CSV (RFC 4180): values whole,
// durations in seconds, empty where a trial has none. Cells are
// sanitised as the table's are: they come from the tasks' output.
func WriteSweepCSV(w io.Writer, t SweepTable) error {
	header, rows := t.cells(true)
	cw := csv.NewWriter(w)
	cw.Write(SanitizeCells(header))
	for _, r := range rows {
		cw.Write(SanitizeCells(r))
	}
	cw.Flush()
	return cw.Error()
}
