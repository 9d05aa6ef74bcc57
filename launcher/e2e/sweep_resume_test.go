package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tfhive/tfhive/launcher/record"
	"github.com/tfhive/tfhive/probe/sshtest"
)

// resumeTask is a trial's task for the resume tests: it says when it
// starts and ends in events (sweepTask's format), prints lines 1 to n,
// waits for the file gate{x} (each trial its own), prints its loss and
// exits with exit (a shell word).
func resumeTask(events, gates string, n int, exit string) string {
	return `echo "start $TFHIVE_TRIAL $x $(hostname) $CUDA_VISIBLE_DEVICES $(date +%s.%N)" >> ` + events + `
seq 1 ` + strconv.Itoa(n) + `
while [ ! -e ` + gates + `{x} ]; do sleep 0.05; done
echo "loss={x}"
echo "end $TFHIVE_TRIAL $x $(hostname) $CUDA_VISIBLE_DEVICES $(date +%s.%N)" >> ` + events + `
exit ` + exit
}

// openGate creates the gate file path.
func openGate(t *testing.T, path string) {
	t.Helper()
	if err := os.WriteFile(path, nil, 0o644); err != nil {
		t.Fatal(err)
	}
}

// trialStarts counts each trial's task starts in events.
func trialStarts(t *testing.T, events string) map[string]int {
	n := map[string]int{}
	for _, e := range sweepEvents(t, events) {
		if e.start {
			n[e.trial]++
		}
	}
	return n
}

// ended: trial's task said it ended, in events.
func ended(t *testing.T, events, trial string) bool {
	return strings.Contains(readFile(t, events), "end "+trial+" ")
}

// supervised: some process on f's hosts still names trial id (its
// supervisor's label names the run: "tfhive-sup DIR RUN TASK …"), so a
// host would still call it running.
func supervised(f *sshtest.Fleet, id string) bool {
	for _, h := range f.Hosts {
		for _, p := range h.Leftovers() {
			if strings.Contains(p+" ", " "+id+" ") {
				return true
			}
		}
	}
	return false
}

// hostLines is the lines of trial run id's worker:0 as tfhive logs -H
// reads them from the hosts.
func hostLines(t *testing.T, f *sshtest.Fleet, id string) []string {
	t.Helper()
	r := tfhive(t, f.Env(), f.Dir, fleetArgs(f, "logs", "--task", "worker:0", id)...)
	wantCode(t, r, 0)
	return strings.Split(strings.TrimSuffix(r.stdout, "\n"), "\n")
}

// A detached sweep of 4 trials whose keeper is killed outright (kill -9)
// while they all run: trials 3 and 4 then end unwatched (3 succeeds, 4
// fails), 1 and 2 run on. The same command again:
// adopts 1 and 2 (their output followed from the first line to their
// end, their loss captured), keeps 3's success read from the hosts (not
// run again), and runs 4 again, its earlier output kept on its host as
// run dsw-004.1 and here in earlier/; nothing is refused as "in use".
// The resume is detached too: its keeper does all that, wait gives 0.
func TestSweepResumeAfterKeeperKilled(t *testing.T) {
	f := sweepFleet(t)
	dir := t.TempDir()
	events, gates, ok := filepath.Join(dir, "events"), filepath.Join(dir, "gate"), filepath.Join(dir, "ok")
	// Trial 4 fails until the file ok exists.
	exit := `$( [ {x} = 4 ] && [ ! -e ` + ok + ` ] && echo 7 || echo 0 )`
	args := sweepArgs(f, "--name", "dsw", "--detach", "--param", "x=1,2,3,4", "--capture", `loss=loss=(\d+)`,
		"--", "sh", "-c", resumeTask(events, gates, 580, exit))
	r := tfhive(t, f.Env(), f.Dir, args...)
	wantCode(t, r, 0)
	waitFor(t, 30*time.Second, "the 4 trials' tasks", func() bool { return startsIn(t, events) == 4 })
	if !supervised(f, "dsw-003") {
		t.Fatal("no supervisor of dsw-003 seen on the hosts while it runs")
	}
	keeper := keeperOf(t, filepath.Join("tfhive-runs", "dsw"))
	if err := syscall.Kill(keeper, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 5*time.Second, "the keeper's end", func() bool { return gone(keeper) })
	openGate(t, gates+"3")
	openGate(t, gates+"4")
	waitFor(t, 30*time.Second, "trials 3 and 4 to end unwatched", func() bool {
		return ended(t, events, "dsw-003") && ended(t, events, "dsw-004") && !supervised(f, "dsw-003") && !supervised(f, "dsw-004")
	})
	if on := sweepOnHosts(t, f, "dsw-00"); len(on) != 2 {
		t.Fatalf("ps: %v, want trials 1 and 2 running", on)
	}

	// The same command again, detached as before.
	openGate(t, ok)
	again := tfhive(t, f.Env(), f.Dir, args...)
	wantCode(t, again, 0)
	console := filepath.Join(f.Dir, "tfhive-runs", "dsw", "console.log")
	waitFor(t, 60*time.Second, "trial 4 to run again", func() bool {
		return strings.Contains(readFile(t, console), "tfhive: trial dsw-004 succeeded")
	})
	openGate(t, gates+"1")
	openGate(t, gates+"2")
	w := tfhive(t, f.Env(), f.Dir, "wait", "dsw")
	said := readFile(t, console)
	if w.code != 0 {
		t.Fatalf("wait after the resume: exit %d\n%s%s", w.code, w.stderr, said)
	}
	wantContains(t, "the resume", said,
		"tfhive: trial dsw-003 ended while no tfhive kept it; read from its hosts: succeeded",
		"tfhive: trial dsw-004 ended while no tfhive kept it; read from its hosts: failed",
		"tfhive: trial dsw-004: its earlier output on ",
		"tfhive: trial dsw-001 still runs on its hosts: adopted",
		"tfhive: trial dsw-002 still runs on its hosts: adopted",
		"1 of 4 trials to run (1 succeeded before, 2 trials still running on the hosts, adopted)",
		"tfhive: trial dsw-001 succeeded", "tfhive: trial dsw-002 succeeded")
	if strings.Contains(said, "in use") {
		t.Errorf("the resume refused a name:\n%s", said)
	}
	shown := tfhive(t, f.Env(), f.Dir, "runs", "--sweep", "dsw")
	wantCode(t, shown, 0)
	rows := sweepRows(t, shown.stdout)
	for _, id := range []string{"dsw-001", "dsw-002", "dsw-003", "dsw-004"} {
		if rows[id] != "succeeded" {
			t.Errorf("%s: %s\n%s", id, rows[id], shown.stdout)
		}
	}
	if n := trialStarts(t, events); n["dsw-001"] != 1 || n["dsw-002"] != 1 || n["dsw-003"] != 1 || n["dsw-004"] != 2 {
		t.Errorf("starts: %v, want each once and dsw-004 twice", n)
	}
	// The adopted trials: every line of their tasks, here, and their loss.
	for _, id := range []string{"dsw-001", "dsw-003"} {
		lines := strings.Split(strings.TrimSuffix(readFile(t, filepath.Join(f.Dir, "tfhive-runs", id, "worker-0.log")), "\n"), "\n")
		if len(lines) != 581 || lines[0] != "1" || lines[579] != "580" || !strings.HasPrefix(lines[580], "loss=") {
			t.Errorf("%s's worker-0.log: %d lines, want 581", id, len(lines))
		}
	}
	js := tfhive(t, f.Env(), f.Dir, "runs", "--sweep", "dsw", "--json")
	wantCode(t, js, 0)
	var doc struct {
		Trials []struct {
			RunID   string            `json:"run_id"`
			Metrics map[string]string `json:"metrics"`
			Params  map[string]string `json:"params"`
		}
	}
	if err := json.Unmarshal([]byte(js.stdout), &doc); err != nil || len(doc.Trials) != 4 {
		t.Fatalf("runs --sweep --json: %v\n%s", err, js.stdout)
	}
	for _, tr := range doc.Trials {
		if tr.Metrics["loss"] != tr.Params["x"] {
			t.Errorf("%s: loss %q, want %s", tr.RunID, tr.Metrics["loss"], tr.Params["x"])
		}
	}
	// Trial 4's failed attempt: its log dir here, its output on its host.
	if s := summaryOf(t, filepath.Join(f.Dir, "tfhive-runs", "dsw", "earlier", "dsw-004.1")); s.Result != "failed" {
		t.Errorf("dsw-004's earlier attempt: %s", s.Result)
	}
	if lines := hostLines(t, f, "dsw-004.1"); len(lines) != 581 || lines[579] != "580" {
		t.Errorf("dsw-004's earlier output on its host: %d lines, want 581", len(lines))
	}
	noLeftovers(t, f, 10*time.Second)
}

// tfhive attach SWEEP -H, its keeper killed outright: it adopts the
// trials still running and follows them to their end (their tasks'
// lines in its console), records the one that ended unwatched, starts
// none, prints the table and exits 0 once all succeeded; wait agrees.
// Ctrl-C of a first attach -H only detaches, the trials going on.
func TestSweepAttachAdopts(t *testing.T) {
	f := sweepFleet(t)
	dir := t.TempDir()
	events, gates := filepath.Join(dir, "events"), filepath.Join(dir, "gate")
	args := sweepArgs(f, "--name", "asw", "--detach", "--param", "x=1,2,3", "--capture", `loss=loss=(\d+)`,
		"--", "sh", "-c", resumeTask(events, gates, 50, "0"))
	r := tfhive(t, f.Env(), f.Dir, args...)
	wantCode(t, r, 0)
	waitFor(t, 30*time.Second, "the 3 trials' tasks", func() bool { return startsIn(t, events) == 3 })
	keeper := keeperOf(t, filepath.Join("tfhive-runs", "asw"))
	if err := syscall.Kill(keeper, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 5*time.Second, "the keeper's end", func() bool { return gone(keeper) })
	openGate(t, gates+"3")
	waitFor(t, 30*time.Second, "trial 3 to end unwatched", func() bool {
		return ended(t, events, "asw-003") && !supervised(f, "asw-003")
	})

	attach := func() *running {
		a := startTfhive(t, f, readStderr, fleetArgs(f, "attach", "--grace", "2s", "--capture", `loss=loss=(\d+)`, "asw")...)
		if !a.readUntil(func(l string) bool {
			return strings.HasPrefix(l, "tfhive: trial asw-002 still runs on its hosts: adopted")
		}) {
			a.Wait()
			t.Fatalf("attach -H did not adopt the sweep's trials:\n%s%s", a.read.String(), a.other.String())
		}
		return a
	}
	// Ctrl-C detaches: the trials go on, for the next attach -H.
	a := attach()
	a.Process.Signal(syscall.SIGINT)
	if code, _ := endsWithin(t, a, 20*time.Second); code != 130 {
		t.Fatalf("attach -H after Ctrl-C: exit %d, want 130\n%s", code, a.read.String())
	}
	wantContains(t, "attach -H after Ctrl-C", a.read.String(), "tfhive: detached from sweep asw; its trials go on",
		"tfhive: trial asw-003 ended while no tfhive kept it; read from its hosts: succeeded")
	if !supervised(f, "asw-001") || !supervised(f, "asw-002") {
		t.Fatal("Ctrl-C of attach -H stopped the trials")
	}
	a = attach()
	openGate(t, gates+"1")
	openGate(t, gates+"2")
	code, _ := endsWithin(t, a, 60*time.Second)
	said := a.read.String()
	if code != 0 {
		t.Fatalf("attach -H: exit %d\n%s%s", code, said, a.other.String())
	}
	wantContains(t, "attach -H", said, "tfhive: trial asw-001 still runs on its hosts: adopted",
		"tfhive: sweep asw: 1 of 3 trials succeeded, 2 trials still running on the hosts, adopted",
		"tfhive: trial asw-001 succeeded", "tfhive: trial asw-002 succeeded")
	rows := sweepRows(t, a.other.String())
	for _, id := range []string{"asw-001", "asw-002", "asw-003"} {
		if rows[id] != "succeeded" {
			t.Errorf("%s: %s\n%s", id, rows[id], a.other.String())
		}
	}
	if n := startsIn(t, events); n != 3 {
		t.Errorf("%d starts, want 3: attach started a trial", n)
	}
	lines := strings.Split(strings.TrimSuffix(readFile(t, filepath.Join(f.Dir, "tfhive-runs", "asw-002", "worker-0.log")), "\n"), "\n")
	if len(lines) != 51 || lines[0] != "1" || lines[50] != "loss=2" {
		t.Errorf("asw-002's worker-0.log: %d lines, want 51", len(lines))
	}
	w := tfhive(t, f.Env(), f.Dir, "wait", "asw")
	wantCode(t, w, 0)
	noLeftovers(t, f, 10*time.Second)
}

// A foreground sweep killed outright (kill -9) while its 2 trials run:
// their supervisors stop them once --reconnect has passed. The same
// command again runs both again, and what each printed on its host
// before is kept there, as run TRIAL.1, not wiped by the new start.
func TestSweepResumeAfterForegroundKilled(t *testing.T) {
	f := sweepFleet(t)
	dir := t.TempDir()
	events, gates := filepath.Join(dir, "events"), filepath.Join(dir, "gate")
	args := sweepArgs(f, "--name", "fsw", "--reconnect", "2s", "--param", "x=1,2",
		"--", "sh", "-c", resumeTask(events, gates, 88, "0"))
	r := startTfhive(t, f, readStderr, args...)
	waitFor(t, 30*time.Second, "the 2 trials' tasks", func() bool { return startsIn(t, events) == 2 })
	// Every line printed, on the hosts.
	waitFor(t, 30*time.Second, "the tasks' lines", func() bool {
		for _, id := range []string{"fsw-001", "fsw-002"} {
			if !strings.Contains(readFile(t, filepath.Join(f.Dir, "tfhive-runs", id, "worker-0.log")), "\n88\n") {
				return false
			}
		}
		return true
	})
	if err := r.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	r.Wait()
	// --reconnect 2s, then --grace 2s: 30 s leaves room for a loaded machine.
	noLeftovers(t, f, 30*time.Second)

	openGate(t, gates+"1")
	openGate(t, gates+"2")
	again := tfhive(t, f.Env(), f.Dir, args...)
	wantCode(t, again, 0)
	wantContains(t, "the resume", again.stderr, "tfhive: sweep fsw: 2 trials, 2 at a time")
	for _, id := range []string{"fsw-001", "fsw-002"} {
		wantContains(t, "the resume", again.stderr, "tfhive: trial "+id+" ended while no tfhive kept it; read from its hosts: ",
			"tfhive: trial "+id+": its earlier output on ")
		if lines := hostLines(t, f, id+".1"); len(lines) != 88 || lines[0] != "1" || lines[87] != "88" {
			t.Errorf("%s's earlier output on its host: %d lines, want 88: %q", id, len(lines), lines)
		}
		if lines := hostLines(t, f, id); len(lines) != 89 || lines[88] != "loss="+id[len(id)-1:] {
			t.Errorf("%s's output on its host: %d lines, want 89", id, len(lines))
		}
	}
	if n := startsIn(t, events); n != 4 {
		t.Errorf("%d starts, want 2 + 2", n)
	}
}

// tfhive attach SWEEP -H --hang-after watches each trial it adopts as
// attach RUN -H watches its run: a trial that prints nothing for 1s has
// its stacks taken into its log dir and, --on-hang stop, ends hung (the
// sweep then exits 1: a trial did not succeed).
func TestSweepAttachHangAfter(t *testing.T) {
	t.Parallel() // beside others, on a fleet of its own (testing.md)
	f := sweepFleet(t)
	args := sweepArgs(f, "--name", "hsw", "--detach", "--gpus-per-worker", "0", "--param", "x=1", "--", "sh", "-c", "echo ready; exec sleep 300")
	r := tfhive(t, f.Env(), f.Dir, args...)
	wantCode(t, r, 0)
	trialDir := filepath.Join(f.Dir, "tfhive-runs", "hsw-001")
	waitFor(t, 30*time.Second, "the trial's first line", func() bool {
		return strings.Contains(readFile(t, filepath.Join(trialDir, "worker-0.log")), "ready")
	})
	keeper := keeperOf(t, filepath.Join("tfhive-runs", "hsw"))
	if err := syscall.Kill(keeper, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 5*time.Second, "the keeper's end", func() bool { return gone(keeper) })
	// Bounded: an attach that does not watch follows the trial's 300 s.
	a, ended := tfhiveWithin(t, 60*time.Second, f.Env(), f.Dir, fleetArgs(f, "attach", "--grace", "1s", "--hang-after", "1s", "--on-hang", "stop", "hsw")...)
	if !ended {
		t.Fatalf("attach SWEEP -H --hang-after 1s --on-hang stop still followed the silent trial after 60 s:\n%s%s", a.stdout, a.stderr)
	}
	wantCode(t, a, 1)
	wantContains(t, "attach -H", a.stdout+a.stderr, "tfhive: trial hsw-001 still runs on its hosts: adopted", "no task printed anything for 1s")
	if s := summaryOf(t, trialDir); s.Result != record.ResultHung {
		t.Errorf("hsw-001's summary: %s, want hung", s.Result)
	}
	wantContains(t, "hsw-001's stacks/worker-0.txt", readFile(t, filepath.Join(trialDir, "stacks", "worker-0.txt")), "task worker:0 on ", "sleep 300")
	noLeftovers(t, f, 10*time.Second)
}
