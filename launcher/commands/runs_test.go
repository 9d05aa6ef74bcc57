package commands

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tfhive/tfhive/launcher/logroot"
	"github.com/tfhive/tfhive/launcher/rundir"
	"github.com/tfhive/tfhive/launcher/view"
	"github.com/tfhive/tfhive/probe/testkit"
)

const runsGoldenDir = "../../testdata/runs"

// summaryJSON is a summary.json as tfhive run writes it, with metrics.
func summaryJSON(id, result string, code int, started string, d time.Duration, metrics string) string {
	m := ""
	if metrics != "" {
		m = `, "captures": {"loss": "loss=(\\S+)", "acc": "acc=(\\S+)"}, "metrics": {` + metrics + `}`
	}
	return fmt.Sprintf(`{"run_id": %q, "result": %q, "exit_code": %d, "reason": "r", "log_dir": "x", "started": %q, "duration_ns": %d, "tasks": []%s, "command": ["python", "train.py", "--run", %q]}`,
		id, result, code, started, d, m, id)
}

// runsRoot is a log root with what a sweep leaves, and what else a
// directory may come to hold.
func runsRoot(t *testing.T) (string, func()) {
	root := filepath.Join(t.TempDir(), "tfhive-runs")
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
	write("lr-0.1", rundir.Summary, summaryJSON("lr-0.1", "succeeded", 0, "2026-11-20T10:00:00Z", 95*time.Minute+1500*time.Millisecond, `"loss": "0.25", "acc": "0.91"`))
	write("lr-0.01", rundir.Summary, summaryJSON("lr-0.01", "succeeded", 0, "2026-11-20T11:00:00Z", 42*time.Second, `"loss": "1e-3", "acc": "0.95"`))
	write("lr-1", rundir.Summary, summaryJSON("lr-1", "failed", 1, "2026-11-20T12:00:00Z", 3*time.Second, `"loss": "nan"`))
	write("lr-10", rundir.Summary, summaryJSON("lr-10", "failed", 137, "2026-11-20T12:30:00Z", 2*time.Second, `"loss": "diverged"`))
	write("lr-0.5", rundir.Summary, summaryJSON("lr-0.5", "succeeded", 0, "2026-11-20T09:00:00Z", time.Minute, `"loss": " 0.5 ", "acc": "0.5"`))
	// Before --capture: no metrics at all.
	write("old", rundir.Summary, summaryJSON("old", "interrupted", 130, "2026-11-19T08:00:00Z", time.Second, ""))
	// A task that printed a terminal's escape sequences, a forged name
	// that would be a column and a line of its own, a long value.
	write("hostile", rundir.Summary, summaryJSON("hostile", "succeeded", 0, "2026-11-20T13:00:00Z", time.Second,
		`"loss": "\u001b]52;c;eA==\u0007\n0.1", "acc": "`+strings.Repeat("9", 200)+`", "x\ny": "1", "\u001b[2J": "2"`))
	// Not summaries: skipped, each with a warning.
	write("not-json", rundir.Summary, "{\"run_id\": ")
	write("array", rundir.Summary, "[1, 2]")
	write("empty-object", rundir.Summary, "{}")
	write("wrong-types", rundir.Summary, `{"result": "succeeded", "metrics": {"loss": 0.1}}`)
	huge := write("huge", rundir.Summary, "")
	if err := os.Truncate(huge, logroot.SummaryMax+1); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(root, "fifo"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(filepath.Join(root, "fifo", rundir.Summary), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(root, "zero"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/dev/zero", filepath.Join(root, "zero", rundir.Summary)); err != nil {
		t.Fatal(err)
	}
	// Not runs: passed over without a word.
	write("notes", "README", "my sweep")
	write("a-file", "x", "")
	os.WriteFile(filepath.Join(root, "stray.txt"), nil, 0o644)
	if err := os.Symlink("nowhere", filepath.Join(root, "dangling")); err != nil {
		t.Fatal(err)
	}
	// A keeper.lock that is a FIFO must not hang the listing.
	if err := os.MkdirAll(filepath.Join(root, "fifo-lock"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(filepath.Join(root, "fifo-lock", rundir.Lock), 0o644); err != nil {
		t.Fatal(err)
	}
	// Killed: a plan and no summary, nobody holding the lock.
	plan := write("killed", rundir.Plan, "{}")
	write("killed", rundir.Lock, "")
	at := time.Date(2026, 11, 20, 14, 0, 0, 0, time.UTC)
	os.Chtimes(plan, at, at)
	// Running: its lock held.
	plan = write("going", rundir.Plan, "{}")
	os.Chtimes(plan, at.Add(time.Hour), at.Add(time.Hour))
	release, err := rundir.HoldLock(filepath.Join(root, "going"))
	if err != nil {
		t.Fatal(err)
	}
	// Still probing: the lock, no plan yet.
	release2, err := rundir.HoldLock(filepath.Join(root, "probing"))
	if err != nil {
		t.Fatal(err)
	}
	lock := filepath.Join(root, "probing", rundir.Lock)
	os.Chtimes(lock, at.Add(90*time.Minute), at.Add(90*time.Minute))
	return root, func() { release(); release2() }
}

func TestRunsListsALogRoot(t *testing.T) {
	old := time.Local
	time.Local = time.UTC
	defer func() { time.Local = old }()
	root, release := runsRoot(t)
	defer release()
	var warn bytes.Buffer
	now := time.Date(2026, 11, 20, 16, 0, 0, 0, time.UTC)
	rs, err := logroot.Runs(root, &warn, now)
	if err != nil {
		t.Fatal(err)
	}
	wantWarn := []string{
		`"` + root + `/array/summary.json" is not a run summary (a JSON array, not an object); skipped`,
		`"` + root + `/empty-object/summary.json" is not a run summary (no result); skipped`,
		`"` + root + `/fifo/summary.json": not a regular file (a FIFO); skipped`,
		`"` + root + `/huge/summary.json": too large (16777217 bytes, the limit is 16 MiB); skipped`,
		`"` + root + `/not-json/summary.json" is not a run summary (not JSON: unexpected end of JSON input); skipped`,
		`"` + root + `/wrong-types/summary.json" is not a run summary (a JSON number in its metrics); skipped`,
		`"` + root + `/zero/summary.json": not a regular file (a character device); skipped`,
	}
	got := strings.Split(strings.TrimSuffix(warn.String(), "\n"), "\n")
	for i := range got {
		got[i] = strings.TrimPrefix(got[i], "tfhive: warning: ")
	}
	if strings.Join(got, "\n") != strings.Join(wantWarn, "\n") {
		t.Errorf("warnings:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(wantWarn, "\n"))
	}
	for _, c := range []struct {
		golden, sort string
		reverse      bool
	}{
		{"by-start.txt", "", false},
		{"by-loss.txt", "loss", false},
		{"by-acc-reversed.txt", "acc", true},
	} {
		view.SortRunRecords(rs, c.sort, c.reverse)
		var out bytes.Buffer
		if err := view.WriteRunRecords(&out, rs); err != nil {
			t.Fatal(err)
		}
		testkit.Golden(t, filepath.Join(runsGoldenDir, c.golden), bytes.ReplaceAll(out.Bytes(), []byte(root), []byte("ROOT")))
	}
	view.SortRunRecords(rs, "loss", false)
	var js bytes.Buffer
	view.WriteRunRecordsJSON(&js, rs)
	testkit.Golden(t, filepath.Join(runsGoldenDir, "by-loss.json"), bytes.ReplaceAll(js.Bytes(), []byte(root), []byte("ROOT")))
}

func TestRunsCommand(t *testing.T) {
	root, release := runsRoot(t)
	defer release()
	var out, errb bytes.Buffer
	o := RunsOptions{Streams: Streams{Stdout: &out, Stderr: &errb}, LogRoot: root}
	if err := Runs(context.Background(), o); err != nil {
		t.Fatal(err)
	}
	if lines := strings.Count(out.String(), "\n"); lines != 1+10 {
		t.Errorf("%d lines, want a header and 10 runs:\n%s", lines, out.String())
	}
	// A metric no run has: the start's order, and a word.
	out.Reset()
	errb.Reset()
	o.Sort = "nosuch"
	if err := Runs(context.Background(), o); err != nil || !strings.Contains(errb.String(), "tfhive: warning: no run in "+root+" captured nosuch; listed by start time\n") {
		t.Errorf("%v\n%s", err, errb.String())
	}
	var ue *UsageError
	o.Sort = "a-b"
	if err := Runs(context.Background(), o); !errors.As(err, &ue) || ue.Msg != `--sort "a-b": not a metric name` {
		t.Errorf("--sort a-b: %v", err)
	}
	// No log root yet: no runs, no error.
	out.Reset()
	o = RunsOptions{Streams: Streams{Stdout: &out, Stderr: &errb}, LogRoot: filepath.Join(root, "nosuch"), JSON: true}
	if err := Runs(context.Background(), o); err != nil || out.String() != "{\n  \"runs\": []\n}\n" {
		t.Errorf("%v %q", err, out.String())
	}
	// A log root that is a file is bad input (exit 2).
	o.LogRoot = filepath.Join(root, "stray.txt")
	var usage *UsageError
	if err := Runs(context.Background(), o); !errors.As(err, &usage) || err.Error() != "--log-root "+o.LogRoot+": not a directory" {
		t.Errorf("a file as log root: %v", err)
	}
}
