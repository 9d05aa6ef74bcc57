package e2e

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tfhive/tfhive/launcher/view"
)

// A detached run that `tfhive kill` stops is cancelled, not failed 143:
// wait exits 143 and says so, runs lists it cancelled, --json too; a
// task whose SIGTERM handler exits 0 makes no success of it.
func TestKillCancelsDetachedRun(t *testing.T) {
	t.Parallel() // beside others, on a fleet of its own (testing.md)
	f := runFleet(t, "x1", "x2")
	root := t.TempDir()
	logDir := filepath.Join(root, "victim")
	r := tfhive(t, f.Env(), f.Dir, fleetArgs(f, "run", "--detach", "--log-dir", logDir, "--name", "victim", "--grace", "2s",
		"--workers", "2", "--", "bash", "-c",
		`[ "$TFHIVE_TASK" = worker:1 ] && trap 'exit 0' TERM; echo started; sleep 300 & wait`)...)
	wantCode(t, r, 0)
	waitForClaims(t, f, 2)
	// Held claims say the tasks started, not that worker:1's shell has set
	// its trap yet: its "started" line, printed after the trap, does.
	waitFor(t, 30*time.Second, "both tasks' started lines", func() bool {
		return strings.Contains(readFile(t, filepath.Join(logDir, "worker-0.log")), "started") &&
			strings.Contains(readFile(t, filepath.Join(logDir, "worker-1.log")), "started")
	})

	k := tfhive(t, f.Env(), f.Dir, fleetArgs(f, "kill", "--grace", "2s", "victim")...)
	wantCode(t, k, 0)
	w := tfhive(t, f.Env(), f.Dir, "wait", "--log-dir", logDir, "victim")
	wantCode(t, w, 143)
	wantContains(t, "wait's stderr", w.stderr, "tfhive: error: run victim cancelled: task worker:", "was cancelled (tfhive kill)")

	s := summaryOf(t, logDir)
	if s.Result != "cancelled" || s.ExitCode != 143 {
		t.Errorf("summary: %+v", s)
	}
	// The kill decided: the first task it ended comes first, cancelled;
	// each keeps its own code: 143 (died of the SIGTERM), 0 (its
	// handler's).
	if len(s.Tasks) != 2 || s.Tasks[0].Outcome != "cancelled" {
		t.Errorf("tasks: %+v", s.Tasks)
	}
	for id, code := range map[string]int{"worker:0": 143, "worker:1": 0} {
		task := taskByID(s, id)
		if task.Outcome != "cancelled" && task.Outcome != "stopped" || task.ExitCode == nil || *task.ExitCode != code {
			t.Errorf("%s: %+v (code %v), want cancelled (or stopped) with its code %d", id, task, derefInt(task.ExitCode), code)
			t.Logf("console.log:\n%s\nworker-1.log:\n%s\nevents.csv:\n%s", readFile(t, filepath.Join(logDir, "console.log")), readFile(t, filepath.Join(logDir, "worker-1.log")), readFile(t, filepath.Join(logDir, "events.csv")))
		}
	}

	runs := tfhive(t, f.Env(), f.Dir, "runs", "--log-root", root)
	wantCode(t, runs, 0)
	if c := splitCols(strings.Split(runs.stdout, "\n")[1]); len(c) < 5 || c[0] != "victim" || c[3] != "cancelled" || c[4] != "143" {
		t.Errorf("runs:\n%s", runs.stdout)
	}
	runs = tfhive(t, f.Env(), f.Dir, "runs", "--log-root", root, "--json")
	var list struct{ Runs []view.RunRecord }
	if err := json.Unmarshal([]byte(runs.stdout), &list); err != nil || len(list.Runs) != 1 || list.Runs[0].Result != "cancelled" {
		t.Errorf("runs --json: %v\n%s", err, runs.stdout)
	}
	noLeftovers(t, f, 10*time.Second)
}

// A run killed while no keeper followed it (its keeper killed) is found
// cancelled by the keeper that adopts it later: the status files on the
// hosts say so (attach.sh).
func TestKillCancelsRunAdoptedLater(t *testing.T) {
	t.Parallel() // beside others, on a fleet of its own (testing.md)
	f := runFleet(t, "y1")
	args, logDir := runArgs(t, f, "--detach", "--name", "orphan", "--workers", "1", "--", "sh", "-c", "echo started; exec sleep 300")
	r := tfhive(t, f.Env(), f.Dir, args...)
	wantCode(t, r, 0)
	old := keeperOf(t, logDir)
	if err := syscall.Kill(old, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "the keeper to die", func() bool { return syscall.Kill(old, 0) != nil })

	k := tfhive(t, f.Env(), f.Dir, fleetArgs(f, "kill", "--grace", "2s", "orphan")...)
	wantCode(t, k, 0)
	wantContains(t, "kill", k.stdout, "stopped run orphan on y1 (1 task)")

	a, _, logDir2 := startAttach(t, f, "orphan")
	a.readAll()
	a.Wait()
	if code := a.ProcessState.ExitCode(); code != 143 {
		t.Errorf("attach -H: exit %d, want 143\n%s%s", code, a.read.String(), a.other.String())
	}
	s := summaryOf(t, logDir2)
	if s.Result != "cancelled" || s.ExitCode != 143 || len(s.Tasks) != 1 || s.Tasks[0].Outcome != "cancelled" {
		t.Errorf("adopter's summary: %+v", s)
	}
	noLeftovers(t, f, 10*time.Second)
}

func derefInt(p *int) any {
	if p == nil {
		return nil
	}
	return *p
}
