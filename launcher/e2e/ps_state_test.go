package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tfhive/tfhive/probe/sshtest"
)

// psRow is a row of `tfhive ps --json`.
type psRow struct {
	RunID  string   `json:"run_id"`
	Host   string   `json:"host"`
	Tasks  []string `json:"tasks"`
	State  string   `json:"state"`
	Keeper *bool    `json:"keeper"`
}

// psRows runs `tfhive ps --json` on f and returns run id's rows.
func psRows(t *testing.T, f *sshtest.Fleet, id string) []psRow {
	t.Helper()
	r := tfhive(t, f.Env(), f.Dir, fleetArgs(f, "ps", "--json")...)
	wantCode(t, r, 0)
	var doc struct{ Runs []psRow }
	if err := json.Unmarshal([]byte(r.stdout), &doc); err != nil {
		t.Fatalf("ps --json: %v\n%s", err, r.stdout)
	}
	var rows []psRow
	for _, row := range doc.Runs {
		if row.RunID == id {
			rows = append(rows, row)
		}
	}
	return rows
}

// waitForState waits until every row of run id in ps says state and
// keeper (each row of the run: one per host).
func waitForState(t *testing.T, f *sshtest.Fleet, id, state string, keeper bool) {
	t.Helper()
	var last []psRow
	deadline := time.Now().Add(60 * time.Second)
	for {
		last = psRows(t, f, id)
		ok := len(last) > 0
		for _, r := range last {
			ok = ok && r.State == state && r.Keeper != nil && *r.Keeper == keeper
		}
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("ps never said run %s is %s with keeper %v: %+v", id, state, keeper, last)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

var runIDLine = regexp.MustCompile(`tfhive: run (\S+): `)

// A foreground run is running, its keeper (tfhive itself) attached; once
// its worker ended and while its parameter server takes its grace to
// stop, it is finishing. The table says so too.
func TestPsStateForeground(t *testing.T) {
	f := runFleet(t, "s1")
	dir := t.TempDir()
	script := `if [ "$1" = ps ]; then trap '' TERM; echo up; while [ ! -e "$2/ps-may-end" ]; do sleep 0.05; done; exit 0; fi
echo up; while [ ! -e "$2/worker-may-end" ]; do sleep 0.05; done`
	args, _ := runArgs(t, f, "--ps", "1", "--workers", "1", "--gpus-per-worker", "0", "--grace", "60s",
		"--", "sh", "-c", script, "task", "{job_name}", dir)
	r := startTfhive(t, f, readStdout, args...)
	id, up := "", 0
	if !r.readUntil(func(line string) bool {
		if m := runIDLine.FindStringSubmatch(line); m != nil {
			id = m[1]
		}
		if strings.HasSuffix(line, "] up") {
			up++
		}
		return up == 2 && id != ""
	}) {
		r.Wait()
		t.Fatalf("the tasks did not start: %s%s", r.read.String(), r.other.String())
	}
	r.discardRest()
	waitForState(t, f, id, "running", true)
	table := tfhive(t, f.Env(), f.Dir, fleetArgs(f, "ps")...)
	wantContains(t, "ps", table.stdout, "STATE", "KEEPER")
	for _, line := range strings.Split(table.stdout, "\n") {
		if strings.HasPrefix(line, id+" ") && !regexp.MustCompile(` running +yes `).MatchString(line) {
			t.Errorf("ps's row of %s: %q, want running and yes", id, line)
		}
	}

	if err := os.WriteFile(filepath.Join(dir, "worker-may-end"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	waitForState(t, f, id, "finishing", true)
	if err := os.WriteFile(filepath.Join(dir, "ps-may-end"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := r.Wait(); err != nil {
		t.Fatalf("run: %v\n%s", err, r.other.String())
	}
	noLeftovers(t, f, 10*time.Second)
}

// A detached run is running with its keeper attached; its keeper stopped
// (SIGSTOP: a laptop asleep) leaves it unattended once the keepalive
// window has passed, woken it is followed again, killed it leaves it
// unattended (its sessions are gone).
func TestPsStateDetached(t *testing.T) {
	t.Parallel() // beside others, on a fleet of its own (testing.md)
	f := runFleet(t, "s1", "s2")
	args, logDir := runArgs(t, f, "--detach", "--workers", "2", "--gpus-per-worker", "1", "--", "sleep", "300")
	r := tfhive(t, f.Env(), f.Dir, args...)
	wantCode(t, r, 0)
	id := strings.TrimSpace(r.stdout)
	keeper := keeperOf(t, logDir)
	t.Cleanup(func() { syscall.Kill(keeper, syscall.SIGKILL) })
	waitForState(t, f, id, "running", true)

	if err := syscall.Kill(keeper, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	waitForState(t, f, id, "unattended", false)
	syscall.Kill(keeper, syscall.SIGCONT)
	waitForState(t, f, id, "running", true)

	if err := syscall.Kill(keeper, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	waitForState(t, f, id, "unattended", false)
	k := tfhive(t, f.Env(), f.Dir, fleetArgs(f, "kill", "--grace", "2s", id)...)
	wantCode(t, k, 0)
	noLeftovers(t, f, 20*time.Second)
}
