package view

import (
	"encoding/json"
	"io"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// `tfhive runs`: the runs of a local log root, one row each, from their
// summary.json (reading the directory is the command's, reading a summary
// launcher's RunRecordFromSummary; this is the records, their order and
// their rendering: the record is the table's row and the --json
// document's, so it lives with them).

// Results `tfhive runs` adds to a summary's.
const (
	// ResultRunning: the run's tfhive still holds its lock.
	ResultRunning = "running"
	// ResultUnknown: its tfhive is gone and wrote no summary (killed,
	// or its machine went down).
	ResultUnknown = "unknown"
)

// RunRecord is one run of the log root.
type RunRecord struct {
	RunID  string `json:"run_id"`
	LogDir string `json:"log_dir"`
	// Started and Duration are the summary's; for a run without one, since
	// its plan was written, and so far (0 when it is unknown).
	Started  time.Time     `json:"started"`
	Duration time.Duration `json:"duration_ns"`
	Result   string        `json:"result"`
	// ExitCode is nil while the run goes on or when unknown.
	ExitCode *int   `json:"exit_code"`
	Reason   string `json:"reason,omitempty"`
	// Metrics are the run's values of --capture, a name without one
	// absent; Captures the names asked for.
	Metrics  map[string]string `json:"metrics"`
	Captures []string          `json:"-"`
}

// MetricNames are every name the records captured or asked for, sorted.
func MetricNames(rs []RunRecord) []string {
	seen := map[string]bool{}
	for _, r := range rs {
		for k := range r.Metrics {
			seen[k] = true
		}
		for _, k := range r.Captures {
			seen[k] = true
		}
	}
	return slices.Sorted(maps.Keys(seen))
}

// SortRunRecords orders the records by start (then id), or by metric
// when it is not "": the values that read as numbers numerically, then
// the others as text, then the runs without one, each group by start.
// reverse turns the first two orders around, never the last.
func SortRunRecords(rs []RunRecord, metric string, reverse bool) {
	byStart := func(a, b RunRecord) int {
		if c := a.Started.Compare(b.Started); c != 0 {
			return c
		}
		return strings.Compare(a.RunID, b.RunID)
	}
	if metric == "" {
		slices.SortStableFunc(rs, func(a, b RunRecord) int {
			if reverse {
				a, b = b, a
			}
			return byStart(a, b)
		})
		return
	}
	cmp := metricCompare(metric, reverse)
	slices.SortStableFunc(rs, func(a, b RunRecord) int {
		if c := cmp(a, b); c != 0 {
			return c
		}
		return byStart(a, b)
	})
}

// metricCompare orders two records by metric: the values that read as
// numbers numerically, then the others as text, then the records without
// one; reverse turns the first two orders around, never the last. 0: a
// tie, for the caller's own order.
func metricCompare(metric string, reverse bool) func(a, b RunRecord) int {
	// Each value's rank: 0 a number, 1 text, 2 none.
	key := func(r RunRecord) (int, float64, string) {
		v, ok := r.Metrics[metric]
		if !ok {
			return 2, 0, ""
		}
		if f, err := strconv.ParseFloat(strings.TrimSpace(v), 64); err == nil && !math.IsNaN(f) {
			return 0, f, v
		}
		return 1, 0, v
	}
	return func(a, b RunRecord) int {
		ka, fa, sa := key(a)
		kb, fb, sb := key(b)
		if ka != kb {
			return ka - kb
		}
		c := 0
		switch ka {
		case 0:
			c = compareFloat(fa, fb)
		case 1:
			c = strings.Compare(sa, sb)
		}
		if reverse {
			c = -c
		}
		return c
	}
}

func compareFloat(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// WriteRunRecords prints `tfhive runs`: a column per metric name after the
// run's own, "-" where a run has no value.
func WriteRunRecords(w io.Writer, rs []RunRecord) error {
	names := MetricNames(rs)
	header := append([]string{"RUN", "STARTED", "DURATION", "RESULT", "EXIT"}, names...)
	rows := make([][]string, len(rs))
	for i, r := range rs {
		started, duration, code := "-", "-", "-"
		if !r.Started.IsZero() {
			started = r.Started.Local().Format("2006-01-02 15:04:05")
		}
		if r.Duration > 0 {
			duration = roundDuration(r.Duration).String()
		}
		if r.ExitCode != nil {
			code = strconv.Itoa(*r.ExitCode)
		}
		row := []string{r.RunID, started, duration, r.Result, code}
		for _, n := range names {
			v, ok := r.Metrics[n]
			if !ok {
				v = "-"
			}
			row = append(row, cutCell(v))
		}
		rows[i] = row
	}
	return WriteTable(w, header, rows)
}

// runsCellMax is the most of a value the table shows (runes); JSON has
// it all.
const runsCellMax = 40

func cutCell(v string) string {
	if utf8.RuneCountInString(v) <= runsCellMax {
		return v
	}
	return string([]rune(v)[:runsCellMax-1]) + "…"
}

// roundDuration: tenths of a second under a minute, seconds above.
func roundDuration(d time.Duration) time.Duration {
	if d < time.Minute {
		return d.Round(100 * time.Millisecond)
	}
	return d.Round(time.Second)
}

// WriteRunRecordsJSON prints `tfhive runs --json`: {"runs": [...]}.
func WriteRunRecordsJSON(w io.Writer, rs []RunRecord) error {
	if rs == nil {
		rs = []RunRecord{}
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(map[string]any{"runs": rs})
}
