package view

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/tfhive/tfhive/launcher/record"
)

// The summary a run ends with, for a person: a row per task, the notes on
// its GPUs and restarts, the run's line and its --capture values. Its
// document is record's (record.WriteSummaryJSON): the file and --json are
// data, this is their reading.

// WriteSummary prints the summary table.
func WriteSummary(w io.Writer, s *record.Summary) error {
	var rows [][]string
	for _, t := range s.Tasks {
		outcome := outcomeText(t.Outcome, t.ExitCode)
		if t.Error != "" {
			outcome += ": " + t.Error
		}
		if t.LogTruncated {
			outcome += " (host log truncated: disk full)"
		}
		rows = append(rows, []string{t.Role, fmt.Sprint(t.Index), t.Host, IntList(t.GPUs), outcome, t.Duration.Round(100 * time.Millisecond).String(), t.Log})
	}
	header := []string{"ROLE", "INDEX", "HOST", "GPUS", "OUTCOME", "DURATION", "LOG"}
	header, rows = withUsageColumns(s, header, rows)
	header, rows = withAttemptsColumn(s, header, rows)
	if err := WriteTable(w, header, rows); err != nil {
		return err
	}
	if err := writeIdleNotes(w, s); err != nil {
		return err
	}
	if err := writeRestartNotes(w, s); err != nil {
		return err
	}
	if _, err := fmt.Fprintf(w, "run %s %s: %s (exit %d)\n", s.RunID, s.Result, s.Reason, s.ExitCode); err != nil {
		return err
	}
	if err := writeLastLines(w, s); err != nil {
		return err
	}
	return writeMetricsLine(w, s)
}

// writeLastLines shows the deciding task's last lines on stderr, when the
// run failed: why, without opening its log. They are the task's text:
// control bytes made inert, each behind "  | ".
func writeLastLines(w io.Writer, s *record.Summary) error {
	if len(s.Tasks) == 0 || len(s.Tasks[0].LastLines) == 0 {
		return nil
	}
	t := s.Tasks[0]
	if _, err := fmt.Fprintf(w, "%s's last lines on stderr (all of it: %s):\n", t.ID, t.Log); err != nil {
		return err
	}
	for _, l := range t.LastLines {
		if _, err := fmt.Fprintf(w, "  | %s\n", SanitizeCell(l)); err != nil {
			return err
		}
	}
	return nil
}

// outcomeText is a task's (or an attempt's) OUTCOME cell: the outcome,
// and the code for one that exited by itself ("exited 7"). A task tfhive
// stopped once the run was decided, or that `tfhive kill` cancelled, is
// just "stopped" or "cancelled", whatever its code: 0, 143 or its own 7
// say how the task took the SIGTERM, not how the run went. The code
// stays in summary.json and --json.
func outcomeText(outcome string, code *int) string {
	if code == nil || outcome == record.OutcomeStopped || outcome == record.OutcomeCancelled {
		return outcome
	}
	return outcome + " " + strconv.Itoa(*code)
}

// withUsageColumns adds GPU UTIL (mean) and MEM PEAK before LOG, when
// anything was sampled.
func withUsageColumns(s *record.Summary, header []string, rows [][]string) ([]string, [][]string) {
	if !slices.ContainsFunc(s.Tasks, func(t record.TaskResult) bool { return t.GPUUsage != nil }) {
		return header, rows
	}
	at := len(header) - 1
	header = slices.Insert(slices.Clone(header), at, "GPU UTIL", "MEM PEAK")
	for i, t := range s.Tasks {
		util, mem := "-", "-"
		if u := t.GPUUsage; u != nil {
			util = strconv.FormatFloat(u.UtilMean, 'f', -1, 64) + "%"
			mem = strconv.FormatFloat(u.MemPeak, 'f', -1, 64) + " MiB"
		}
		rows[i] = slices.Insert(slices.Clone(rows[i]), at, util, mem)
	}
	return header, rows
}

// writeIdleNotes: one line per task whose GPUs were idle long enough to
// warn about.
func writeIdleNotes(w io.Writer, s *record.Summary) error {
	if err := writeIntruderNotes(w, s); err != nil {
		return err
	}
	for _, t := range s.Tasks {
		if u := t.GPUUsage; u != nil && u.Idle != "" {
			if _, err := fmt.Fprintf(w, "note: %s on %s: %s\n", t.ID, SanitizeCells([]string{t.Host})[0], u.Idle); err != nil {
				return err
			}
		}
	}
	return nil
}

// writeIntruderNotes: one line per intruder seen on a task's GPUs.
func writeIntruderNotes(w io.Writer, s *record.Summary) error {
	for _, t := range s.Tasks {
		for _, in := range t.Intruders {
			if _, err := fmt.Fprintf(w, "note: %s on %s: intruder on GPU %d: %s (first seen %s)\n", t.ID, SanitizeCells([]string{t.Host})[0],
				in.GPU, IntruderName(in), in.Seen.Format("15:04:05 UTC")); err != nil {
				return err
			}
		}
	}
	return nil
}

// IntruderName is how the console and the summary name an intruder:
// user:pid command, as tfhive status names a GPU's processes.
func IntruderName(in record.Intruder) string {
	user := in.User
	if user == "" {
		user = "?"
	}
	return fmt.Sprintf("%s:%d %s", user, in.PID, Truncate(in.Command, 60))
}

// withAttemptsColumn adds ATTEMPTS after OUTCOME when the run could
// restart its tasks.
func withAttemptsColumn(s *record.Summary, header []string, rows [][]string) ([]string, [][]string) {
	if !slices.ContainsFunc(s.Tasks, func(t record.TaskResult) bool { return t.Attempts != nil }) {
		return header, rows
	}
	at := slices.Index(header, "OUTCOME") + 1
	header = slices.Insert(slices.Clone(header), at, "ATTEMPTS")
	for i, t := range s.Tasks {
		rows[i] = slices.Insert(slices.Clone(rows[i]), at, strconv.Itoa(max(len(t.Attempts), 1)))
	}
	return header, rows
}

// writeRestartNotes: one line per attempt that was followed by another,
// saying how it ended and why the task restarted. Attempts count from 1,
// as the live line does ("restarting … (attempt 2 of 3)"); summary.json's
// attempt field counts from 0.
func writeRestartNotes(w io.Writer, s *record.Summary) error {
	for _, t := range s.Tasks {
		for _, a := range t.Attempts {
			if a.Restart == "" {
				continue
			}
			how := outcomeText(a.Outcome, a.ExitCode)
			host := t.Host
			if a.Host != "" {
				host = a.Host
			}
			if _, err := fmt.Fprintf(w, "restart: %s on %s: attempt %d %s after %s; %s\n", t.ID, SanitizeCells([]string{host})[0],
				a.Attempt+1, how, a.Duration.Round(100*time.Millisecond), a.Restart); err != nil {
				return err
			}
		}
	}
	return nil
}

// writeMetricsLine ends the summary table with the run's values, a name
// without one shown as "-": "metrics: acc=- loss=0.0123".
func writeMetricsLine(w io.Writer, s *record.Summary) error {
	if len(s.Captures) == 0 {
		return nil
	}
	var parts []string
	for _, name := range slices.Sorted(maps.Keys(s.Captures)) {
		v, ok := s.Metrics[name]
		if !ok {
			v = "-"
		}
		// Cut and made safe as a table cell: it comes from a task.
		parts = append(parts, name+"="+SanitizeCell(v))
	}
	_, err := fmt.Fprintf(w, "metrics: %s\n", strings.Join(parts, " "))
	return err
}
