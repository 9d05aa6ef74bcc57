package view

import (
	"io"
	"strconv"

	"github.com/tfhive/tfhive/launcher/record"
)

// WriteUsage is `tfhive usage`'s table: per user or host (key names the
// column), GPU-hours held, idle, idle's share, runs; a total below.
func WriteUsage(w io.Writer, key string, rows []record.UsageRow) error {
	var total record.UsageRow
	cells := make([][]string, 0, len(rows)+1)
	for _, r := range rows {
		cells = append(cells, usageCells(r.Key, r))
		total.GPUHours += r.GPUHours
		total.IdleHours += r.IdleHours
		total.Runs += r.Runs
	}
	if len(rows) > 1 {
		cells = append(cells, usageCells("total", total))
	}
	return WriteTable(w, []string{key, "GPU-HOURS", "IDLE GPU-HOURS", "IDLE", "RUNS"}, cells)
}

func usageCells(key string, r record.UsageRow) []string {
	share := "-"
	if r.GPUHours > 0 {
		share = strconv.FormatFloat(100*r.IdleHours/r.GPUHours, 'f', 0, 64) + "%"
	}
	return []string{key, strconv.FormatFloat(r.GPUHours, 'f', 2, 64), strconv.FormatFloat(r.IdleHours, 'f', 2, 64), share, strconv.Itoa(r.Runs)}
}
