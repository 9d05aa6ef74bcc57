package view

import (
	"bytes"
	"strings"
	"testing"
	"time"
)

// A requeued run's ps row says it resumed, with its start's number.
func TestRunsSayResumed(t *testing.T) {
	since := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	var b bytes.Buffer
	if err := WriteRuns(&b, []RunOnHost{
		{RunID: "rq", User: "u", Host: "h1", State: "running", Requeued: 1, Idle: "idle 3m", Tasks: []string{"worker:0"}, Since: since},
		{RunID: "once", User: "u", Host: "h1", State: "running", Tasks: []string{"worker:0"}, Since: since},
	}, since); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(b.String(), "\n")
	if !strings.Contains(lines[1], " running, resumed (attempt 2), idle 3m ") || strings.Contains(lines[2], "resumed") {
		t.Errorf("ps:\n%s", b.String())
	}
}
