package e2e

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tfhive/tfhive/launcher/record"
	"github.com/tfhive/tfhive/launcher/view"
)

// pipeClosedLine is what tfhive says on stderr when its stdout's reader
// leaves during a run.
const pipeClosedLine = "tfhive: error: standard output closed (a pipe reader such as head ended): stopping the run\n"

// `tfhive run … | head -3`: the reader leaves after three lines, while
// the tasks print on. tfhive stops the run as Ctrl-C does, says so once
// on stderr and exits 141; the run is recorded as stopped for that, and
// nothing of it is left on the hosts.
func TestRunStdoutClosedStopsTheRun(t *testing.T) {
	t.Parallel() // beside others, on a fleet of its own (testing.md)
	f := runFleet(t, "p1", "p2")
	root := t.TempDir()
	logDir := filepath.Join(root, "piped")
	// Lines for hours, were it not stopped.
	many := `i=0; while [ $i -lt 1000000 ]; do echo "line $i"; i=$((i+1)); sleep 0.01; done`
	cmd := exec.Command(tfhiveBin, fleetArgs(f, "run", "--log-dir", logDir, "--grace", "2s", "--workers", "2", "--gpus-per-worker", "1", "--", "sh", "-c", many)...)
	cmd.Env, cmd.Dir = f.Env(), f.Dir
	var errb bytes.Buffer
	cmd.Stderr = &errb
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var werr error
	exited := make(chan struct{})
	go func() {
		werr = cmd.Wait()
		close(exited)
	}()
	t.Cleanup(func() {
		cmd.Process.Kill()
		<-exited
	})

	// head -3.
	in := bufio.NewReader(stdout)
	var head []string
	for len(head) < 3 {
		line, err := in.ReadString('\n')
		if err != nil {
			t.Fatalf("tfhive's stdout ended after %q: %v\nstderr:\n%s", head, err, errb.String())
		}
		head = append(head, line)
	}
	if len(f.Host("p1").Leftovers())+len(f.Host("p2").Leftovers()) == 0 {
		t.Fatalf("no task running on the hosts after %q: the checks below would prove nothing", head)
	}
	stdout.Close()
	closed := time.Now()

	select {
	case <-exited:
	case <-time.After(60 * time.Second):
		t.Fatalf("tfhive still runs 60s after its stdout closed\nstderr:\n%s", errb.String())
	}
	var ee *exec.ExitError
	if !errors.As(werr, &ee) || ee.ExitCode() != record.ExitStdoutClosed {
		// ExitCode is -1 for a process a signal killed: SIGPIPE's death.
		t.Fatalf("tfhive ended with %v, want exit %d\nstderr:\n%s", werr, record.ExitStdoutClosed, errb.String())
	}
	t.Logf("tfhive ended %s after its stdout closed", time.Since(closed).Round(time.Millisecond))
	stderr := errb.String()
	if n := strings.Count(stderr, pipeClosedLine); n != 1 || strings.Count(stderr, "tfhive: error:") != 1 {
		t.Errorf("stderr says %q %d times, want once and no other error:\n%s", pipeClosedLine, n, stderr)
	}
	for _, noise := range []string{"goroutine ", "panic:", "broken pipe", "DATA RACE"} {
		if strings.Contains(stderr, noise) {
			t.Errorf("stderr has %q:\n%s", noise, stderr)
		}
	}

	noLeftovers(t, f, 30*time.Second)
	if r := tfhive(t, f.Env(), f.Dir, fleetArgs(f, "ps", "--json")...); !strings.Contains(r.stdout, `"runs": []`) {
		t.Errorf("runs still claim GPUs or ports:\n%s%s", r.stdout, r.stderr)
	}
	st := tfhive(t, f.Env(), f.Dir, fleetArgs(f, "status")...)
	wantCode(t, st, 0)
	for _, host := range []string{"p1", "p2"} {
		rows := rowsOf(st.stdout, host)
		if len(rows) != 2 {
			t.Fatalf("status shows %d GPUs of %s, want 2:\n%s", len(rows), host, st.stdout)
		}
		for _, row := range rows {
			if len(row) < 6 || row[5] != "free" {
				t.Errorf("%s: GPU row %v, want free", host, row)
			}
		}
	}

	s := summaryOf(t, logDir)
	if s.Result != record.ResultStdoutClosed || s.ExitCode != record.ExitStdoutClosed || !strings.Contains(s.Reason, "standard output closed") {
		t.Errorf("summary: result %q, exit %d, reason %q; want %s, %d, stdout closed", s.Result, s.ExitCode, s.Reason, record.ResultStdoutClosed, record.ExitStdoutClosed)
	}
	if len(s.Tasks) != 2 {
		t.Fatalf("summary has %d tasks, want 2", len(s.Tasks))
	}
	for _, tr := range s.Tasks {
		if tr.Outcome != record.OutcomeStopped {
			t.Errorf("%s: %s, want stopped", tr.ID, tr.Outcome)
		}
	}

	r := tfhive(t, f.Env(), f.Dir, "runs", "--log-root", root, "--json")
	wantCode(t, r, 0)
	var doc struct{ Runs []view.RunRecord }
	if err := json.Unmarshal([]byte(r.stdout), &doc); err != nil {
		t.Fatalf("runs --json: %v\n%s", err, r.stdout)
	}
	if len(doc.Runs) != 1 || doc.Runs[0].Result != record.ResultStdoutClosed || doc.Runs[0].ExitCode == nil || *doc.Runs[0].ExitCode != record.ExitStdoutClosed {
		t.Errorf("tfhive runs: %s", r.stdout)
	}
	r = tfhive(t, f.Env(), f.Dir, "runs", "--log-root", root)
	if rows := rowsOf(r.stdout, "piped"); len(rows) != 1 || len(rows[0]) < 5 || rows[0][3] != record.ResultStdoutClosed || rows[0][4] != "141" {
		t.Errorf("tfhive runs' row of the run, want %s 141:\n%s", record.ResultStdoutClosed, r.stdout)
	}

	// The commands that only print end quietly too when their reader is
	// gone before they write: 141, nothing on stderr.
	for _, args := range [][]string{
		fleetArgs(f, "status"),
		fleetArgs(f, "ps"),
		{"runs", "--log-root", root},
		{"logs", "--log-dir", logDir, "--task", "worker:0", s.RunID},
	} {
		code, stderr := tfhiveToClosedPipe(t, f.Env(), f.Dir, args...)
		if code != record.ExitStdoutClosed || withoutClonesWarning(stderr) != "" {
			t.Errorf("%s to a closed pipe: exit %d, want %d; stderr (want none):\n%s", args[0], code, record.ExitStdoutClosed, stderr)
		}
	}
}

// tfhiveToClosedPipe runs tfhive with its stdout a pipe nobody reads
// any more, and returns its exit code (-1: a signal killed it) and
// stderr.
func tfhiveToClosedPipe(t *testing.T, env []string, dir string, args ...string) (int, string) {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	r.Close()
	defer w.Close()
	cmd := exec.Command(tfhiveBin, args...)
	cmd.Env, cmd.Dir = env, dir
	var errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = w, &errb
	err = cmd.Run()
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		t.Fatal(err)
	}
	if ee != nil {
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			t.Errorf("%s: killed by %v", args[0], ws.Signal())
		}
	}
	return cmd.ProcessState.ExitCode(), errb.String()
}
