package view

import (
	"cmp"
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
	// Owner is the login of the user whose run it is (its log dir's)
	// when that is not the user listing it: another user's run in a
	// shared log root. "" for the user's own.
	Owner string `json:"owner,omitempty"`
	// Started and Duration are the summary's; for a run without one, since
	// its plan was written, and so far (0 when it is unknown).
	Started  time.Time     `json:"started"`
	Duration time.Duration `json:"duration_ns"`
	Result   string        `json:"result"`
	// ExitCode is nil while the run goes on or when unknown.
	ExitCode *int   `json:"exit_code"`
	Reason   string `json:"reason,omitempty"`
	// Command is what ran, the summary's (null when it has none: a run
	// still going, one whose keeper died, one adopted elsewhere).
	Command []string `json:"command"`
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
// run's own, "-" where a run has no value, then COMMAND, last so that the
// cut of a terminal's width (width.go) takes from it first; whole into a
// pipe, and in --json.
func WriteRunRecords(w io.Writer, rs []RunRecord) error {
	names := MetricNames(rs)
	// OWNER only when some run is another user's: then each run says
	// whose it is, "you" for the user's own.
	owners := slices.ContainsFunc(rs, func(r RunRecord) bool { return r.Owner != "" })
	header := []string{"RUN", "STARTED", "DURATION", "RESULT", "EXIT"}
	if owners {
		header = slices.Insert(header, 1, "OWNER")
	}
	header = append(header, names...)
	rows := make([][]string, len(rs))
	for i, r := range rs {
		started, duration, code := "-", "-", "-"
		if !r.Started.IsZero() {
			started = r.Started.Local().Format("2006-01-02 15:04:05")
		}
		if r.Duration > 0 {
			duration = RoundDuration(r.Duration).String()
		}
		if r.ExitCode != nil {
			code = strconv.Itoa(*r.ExitCode)
		}
		row := []string{r.RunID, started, duration, r.Result, code}
		if owners {
			row = slices.Insert(row, 1, cmp.Or(cutCell(r.Owner), "you"))
		}
		for _, n := range names {
			v, ok := r.Metrics[n]
			if !ok {
				v = "-"
			}
			row = append(row, cutCell(v))
		}
		rows[i] = row
	}
	header = append(header, "COMMAND")
	for i, r := range rs {
		rows[i] = append(rows[i], Dash(CommandLine(r.Command)))
	}
	return WriteTable(w, header, rows)
}

// CommandLine is argv as a shell would take it back: words of safe
// characters bare, the others single-quoted.
func CommandLine(argv []string) string {
	words := make([]string, len(argv))
	for i, a := range argv {
		words[i] = a
		if !safeWord(a) {
			words[i] = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
		}
	}
	return strings.Join(words, " ")
}

// safeWord: a is a word of [A-Za-z0-9_@%+=:,./-] alone, not empty. Not a
// regexp: every run's report quotes its commands, and a sweep trial's
// tfhive command holds the sweep's whole grid.
func safeWord(a string) bool {
	return a != "" && strings.TrimLeft(a, safeBytes) == ""
}

const safeBytes = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_@%+=:,./-"

// runsCellMax is the most of a captured value the table shows (runes),
// on a terminal or not: the column's cap, so that one long value does not
// push the others off; JSON has it all.
const runsCellMax = 40

func cutCell(v string) string { return cutTo(v, runsCellMax) }

// cutTo cuts v to n runes, the last an ellipsis when cut.
func cutTo(v string, n int) string {
	if utf8.RuneCountInString(v) <= n {
		return v
	}
	return string([]rune(v)[:n-1]) + "…"
}

// RoundDuration: tenths of a second under a minute, seconds above, as
// the tables show a run's time.
func RoundDuration(d time.Duration) time.Duration {
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
