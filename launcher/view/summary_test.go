package view

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/tfhive/tfhive/launcher/record"
	"github.com/tfhive/tfhive/probe/testkit"
)

// A value with control bytes is shown inert in the summary's line.
func TestMetricsLineIsSanitised(t *testing.T) {
	var buf bytes.Buffer
	writeMetricsLine(&buf, &record.Summary{Captures: map[string]string{"m": "(.*)"}, Metrics: map[string]string{"m": "\x1b]52;c;x\x07\nforged"}})
	if got := buf.String(); got != "metrics: m=^[]52;c;x^G^Jforged\n" {
		t.Errorf("%q", got)
	}
}

// A task tfhive stopped reads "stopped" whatever its code (0, 143 or a
// code of its own from a SIGTERM handler); only a task that exited by
// itself shows its code. The codes stay in the document.
func TestSummaryOutcomes(t *testing.T) {
	code := func(c int) *int { return &c }
	s := &record.Summary{RunID: "r1", Result: record.ResultFailed, ExitCode: 9, Reason: "worker:1 on h2 exited 9", LogDir: "tfhive-runs/r1",
		Tasks: []record.TaskResult{
			{ID: "worker:1", Role: "worker", Index: 1, Host: "h2", GPUs: []int{0}, Outcome: record.OutcomeExited, ExitCode: code(9), Duration: 3200 * time.Millisecond, Log: "tfhive-runs/r1/worker-1.log",
				Attempts: []record.Attempt{
					{Attempt: 0, Outcome: record.OutcomeStopped, ExitCode: code(143), Duration: time.Second, Restart: "restarted with every task: ps:0 on h1 exited 1"},
					{Attempt: 1, Outcome: record.OutcomeExited, ExitCode: code(9), Duration: 2200 * time.Millisecond},
				}},
			{ID: "ps:0", Role: "ps", Host: "h1", Outcome: record.OutcomeStopped, ExitCode: code(143), Duration: 3400 * time.Millisecond, Log: "tfhive-runs/r1/ps-0.log"},
			{ID: "worker:0", Role: "worker", Host: "h1", GPUs: []int{1}, Outcome: record.OutcomeStopped, ExitCode: code(0), Duration: 3400 * time.Millisecond, Log: "tfhive-runs/r1/worker-0.log"},
			{ID: "worker:2", Role: "worker", Index: 2, Host: "h3", GPUs: []int{0}, Outcome: record.OutcomeStopped, ExitCode: code(7), Duration: 3400 * time.Millisecond, Log: "tfhive-runs/r1/worker-2.log"},
			{ID: "worker:3", Role: "worker", Index: 3, Host: "h4", GPUs: []int{0}, Outcome: record.OutcomeCancelled, ExitCode: code(143), Duration: 3300 * time.Millisecond, Log: "tfhive-runs/r1/worker-3.log"},
			{ID: "evaluator:0", Role: "evaluator", Host: "h5", Outcome: record.OutcomeLost, Error: "connection lost", Duration: time.Second, Log: "tfhive-runs/r1/evaluator-0.log"},
		}}
	var buf bytes.Buffer
	if err := WriteSummary(&buf, s); err != nil {
		t.Fatal(err)
	}
	testkit.Golden(t, "testdata/summary/outcomes.txt", buf.Bytes())
	for _, bad := range []string{"stopped 143", "stopped 0", "stopped 7", "cancelled 143"} {
		if strings.Contains(buf.String(), bad) {
			t.Errorf("%q in\n%s", bad, buf.String())
		}
	}
	if !strings.Contains(buf.String(), "exited 9") {
		t.Errorf("no exited 9 in\n%s", buf.String())
	}
}
