package report

import (
	"slices"
	"testing"

	"github.com/tfhive/tfhive/launcher/record"
)

// The report says where each task was when its run went silent
// (--hang-after), in the task's note.
func TestTaskTableSaysWhereHung(t *testing.T) {
	r := &Run{Summary: &record.Summary{Result: record.ResultHung, Tasks: []record.TaskResult{
		{ID: "worker:0", Host: "h1", Outcome: record.OutcomeStopped, HungAt: "in deadlock (hang.py:17)"},
		{ID: "worker:1", Host: "h2", Outcome: record.OutcomeStopped},
	}}}
	tt := r.taskTable()
	note := slices.Index(tt.Head, "note")
	if got := tt.Rows[0][note]; got != "hung in deadlock (hang.py:17)" {
		t.Errorf("worker:0's note %q", got)
	}
	if got := tt.Rows[1][note]; got != "" {
		t.Errorf("worker:1's note %q, want none", got)
	}
}
