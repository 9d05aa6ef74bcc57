package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tfhive/tfhive/launcher/view"
)

const lossRE = `loss ([0-9.e+-]+)`

// lastLoss is the last loss a task's log shows, read the slow way.
func lastLoss(t *testing.T, log string) string {
	t.Helper()
	data, err := os.ReadFile(log)
	if err != nil {
		t.Fatal(err)
	}
	re := regexp.MustCompile(lossRE)
	v := ""
	for _, line := range strings.Split(string(data), "\n") {
		if ms := re.FindAllStringSubmatch(line, -1); len(ms) > 0 {
			v = ms[len(ms)-1][1]
		}
	}
	if v == "" {
		t.Fatalf("%s shows no loss:\n%s", log, data)
	}
	return v
}

// A sweep of two runs of the test trainer, one in the foreground and one
// detached (its keeper captures): each summary holds each worker's last
// loss, and the run's; tfhive runs lists both, sorted by it.
func TestRunCaptureSweep(t *testing.T) {
	f := runFleet(t, "c1", "c2")
	root := t.TempDir()
	run := func(name string, args ...string) []string {
		return fleetArgs(f, append([]string{"run", "--name", name, "--log-dir", filepath.Join(root, name), "--grace", "2s",
			"--gpus-per-worker", "0", "--capture", "loss=" + lossRE, "--capture", `step=step (\d+)`}, args...)...)
	}
	a := tfhive(t, f.Env(), f.Dir, run("sweep-a", "--ps", "1", "--workers", "2", "--", trainerBin, "--target", "1e-2")...)
	wantCode(t, a, 0)
	s := summaryOf(t, filepath.Join(root, "sweep-a"))
	for _, id := range []string{"worker:0", "worker:1"} {
		tr := taskByID(s, id)
		if want := lastLoss(t, tr.Log); tr.Metrics["loss"] != want || tr.Metrics["step"] == "" {
			t.Errorf("%s: metrics %v, want loss %s (its log's last) and a step", id, tr.Metrics, want)
		}
	}
	if ps := taskByID(s, "ps:0"); ps.Metrics != nil {
		t.Errorf("ps:0 prints no loss, yet has metrics %v", ps.Metrics)
	}
	// The workers decided together: the run's values are worker 0's.
	if w0 := taskByID(s, "worker:0"); s.Metrics["loss"] != w0.Metrics["loss"] || s.Metrics["step"] != w0.Metrics["step"] {
		t.Errorf("run metrics %v, want worker:0's %v", s.Metrics, w0.Metrics)
	}
	if s.Captures["loss"] != lossRE {
		t.Errorf("captures %v", s.Captures)
	}
	wantContains(t, "summary", a.stdout, "\nmetrics: loss="+s.Metrics["loss"]+" step="+s.Metrics["step"]+"\n")

	// Detached, from worker:0 only: the keeper runs the same code.
	b := tfhive(t, f.Env(), f.Dir, run("sweep-b", "--detach", "--workers", "2", "--capture-from", "worker:0", "--", trainerBin)...)
	wantCode(t, b, 0)
	w := tfhive(t, f.Env(), f.Dir, "wait", "--log-dir", filepath.Join(root, "sweep-b"), "sweep-b")
	wantCode(t, w, 0)
	sb := summaryOf(t, filepath.Join(root, "sweep-b"))
	w0, w1 := taskByID(sb, "worker:0"), taskByID(sb, "worker:1")
	if want := lastLoss(t, w0.Log); w0.Metrics["loss"] != want || sb.Metrics["loss"] != want || w1.Metrics != nil {
		t.Errorf("--capture-from worker:0: worker:0 %v, worker:1 %v, run %v; want loss %s", w0.Metrics, w1.Metrics, sb.Metrics, want)
	}

	// The sweep's table: the smaller loss (--target 1e-3) first.
	r := tfhive(t, f.Env(), f.Dir, "runs", "--log-root", root, "--sort", "loss")
	wantCode(t, r, 0)
	lines := strings.Split(strings.TrimSuffix(r.stdout, "\n"), "\n")
	header := splitCols(lines[0])
	if len(lines) != 3 || strings.Join(header, " ") != "RUN STARTED DURATION RESULT EXIT loss step COMMAND" {
		t.Fatalf("runs --sort loss:\n%s", r.stdout)
	}
	first, second := splitCols(lines[1]), splitCols(lines[2])
	if first[0] != "sweep-b" || first[3] != "succeeded" || first[4] != "0" || first[5] != sb.Metrics["loss"] ||
		second[0] != "sweep-a" || second[5] != s.Metrics["loss"] || second[6] != s.Metrics["step"] {
		t.Errorf("runs --sort loss:\n%s", r.stdout)
	}
	r = tfhive(t, f.Env(), f.Dir, "runs", "--log-root", root, "--sort", "loss", "--reverse", "--json")
	wantCode(t, r, 0)
	var list struct{ Runs []view.RunRecord }
	if err := json.Unmarshal([]byte(r.stdout), &list); err != nil {
		t.Fatal(err)
	}
	if len(list.Runs) != 2 || list.Runs[0].RunID != "sweep-a" || list.Runs[0].Metrics["loss"] != s.Metrics["loss"] ||
		list.Runs[1].Metrics["loss"] != sb.Metrics["loss"] || list.Runs[1].ExitCode == nil || *list.Runs[1].ExitCode != 0 ||
		// The detached run's keeper records the command too.
		!slices.Equal(list.Runs[1].Command, []string{trainerBin}) {
		t.Errorf("runs --json:\n%s", r.stdout)
	}
	noLeftovers(t, f, 10*time.Second)
}

// A bad --capture is refused before any host is contacted: no probe ran
// (the fake nvidia-smi counts its calls), no log dir, no keeper.
func TestRunCaptureRefused(t *testing.T) {
	f := runFleet(t, "c1")
	for _, c := range []struct {
		args []string
		msg  string
	}{
		{[]string{"--capture", "loss=loss ([0-9.]+"}, "tfhive: error: --capture loss: error parsing regexp: missing closing ): `loss ([0-9.]+`\n"},
		{[]string{"--detach", "--capture", "loss=loss [0-9.]+"}, "tfhive: error: --capture loss: \"loss [0-9.]+\" has no group: put what to record in parentheses, as loss=([0-9.]+)\n"},
		{[]string{"--capture", "loss=(a)", "--capture-from", "worker:3"}, "tfhive: error: --capture-from worker:3: the run has no such task\ntfhive: hint: its tasks are worker:0 to worker:1\n"},
	} {
		args, logDir := runArgs(t, f, append(c.args, "--workers", "2", "--gpus-per-worker", "0", "--", trainerBin)...)
		r := tfhive(t, f.Env(), f.Dir, args...)
		wantCode(t, r, 2)
		if !strings.HasPrefix(r.stderr, c.msg) || r.stdout != "" {
			t.Errorf("%q: stderr\n%s\nwant\n%s", c.args, r.stderr, c.msg)
		}
		if _, err := os.Stat(logDir); !os.IsNotExist(err) {
			t.Errorf("%q: log dir left: %v", c.args, err)
		}
	}
	if n := f.Host("c1").SMICalls(); n != 0 {
		t.Errorf("the host was probed %d times", n)
	}
}
