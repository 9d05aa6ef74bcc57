package commands

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/tfhive/tfhive/launcher/rundir"
)

// The latest run is the newest by the start its record gives: a
// summary's, or for a run without one its plan's writing, never the
// directory's mtime.
func TestLatestRun(t *testing.T) {
	root := filepath.Join(t.TempDir(), "tfhive-runs")
	var none *NoRunError
	if _, err := LatestRun(root, new(bytes.Buffer)); !errors.As(err, &none) {
		t.Errorf("no log root: %v, want a NoRunError", err)
	}
	write := func(id, name, content string) string {
		dir := filepath.Join(root, id)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	if err := os.MkdirAll(filepath.Join(root, "not-a-run"), 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := LatestRun(root, new(bytes.Buffer)); !errors.As(err, &none) {
		t.Errorf("a log root with no run: %v, want a NoRunError", err)
	}
	write("old", rundir.Summary, summaryJSON("old", "succeeded", 0, "2026-01-01T10:00:00Z", time.Second, ""))
	write("new", rundir.Summary, summaryJSON("new", "failed", 1, "2026-01-03T10:00:00Z", time.Second, ""))
	plan := write("killed", rundir.Plan, "{}")
	at := func(p string, when string) {
		t.Helper()
		tm, _ := time.Parse(time.RFC3339, when)
		if err := os.Chtimes(p, tm, tm); err != nil {
			t.Fatal(err)
		}
	}
	at(plan, "2026-01-02T10:00:00Z")
	at(filepath.Join(root, "old"), "2030-01-01T00:00:00Z") // touched
	want := func(id string) {
		t.Helper()
		got, err := LatestRun(root, new(bytes.Buffer))
		if err != nil || got != id {
			t.Errorf("LatestRun: %q, %v; want %q", got, err, id)
		}
	}
	want("new")
	at(plan, "2026-01-04T10:00:00Z")
	want("killed")
}
