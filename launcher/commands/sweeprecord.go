package commands

import (
	"io"
	"slices"
	"strings"

	"github.com/tfhive/tfhive/launcher"
	"github.com/tfhive/tfhive/launcher/logroot"
	"github.com/tfhive/tfhive/launcher/record"
	"github.com/tfhive/tfhive/launcher/rundir"
	"github.com/tfhive/tfhive/launcher/view"
)

// A sweep's record, sweep.json in its dir, and its trials' summaries read
// back: for a resumed sweep, its table, runs --sweep, wait and kill.

// writeSweepTable prints the table, or its JSON or CSV.
func writeSweepTable(w io.Writer, tab view.SweepTable, asJSON, asCSV bool) error {
	switch {
	case asJSON:
		return view.WriteSweepJSON(w, tab)
	case asCSV:
		return view.WriteSweepCSV(w, tab)
	}
	return view.WriteSweep(w, tab)
}

// sweepResult is a finished sweep's end for wait and attach: nil when
// every trial succeeded.
func sweepResult(rec record.Sweep) error {
	tab := logroot.SweepTable(rundir.Root, rec, io.Discard)
	failed, notRun := 0, 0
	for _, r := range tab.Trials {
		if r.Result != record.ResultSucceeded {
			failed++
		}
		if r.Result == view.ResultNotRun {
			notRun++
		}
	}
	if failed > 0 {
		// A trial it never ran: it was stopped (kill, --max-failures,
		// Ctrl-C) before the end.
		return &SweepFailedError{Name: rec.Name, Failed: failed, Total: len(tab.Trials), Stopped: notRun > 0}
	}
	return nil
}

// oneLine is s up to its first line end: a reason read from a summary.
func oneLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	return view.SanitizeCell(s)
}

func sortedMetricKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		if launcher.ValidCaptureName(k) {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	return keys
}
