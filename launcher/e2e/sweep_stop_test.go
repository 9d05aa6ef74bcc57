package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tfhive/tfhive/probe/sshtest"
)

// blockedTask is a trial's task that says when it starts in events (the
// format of sweepTask's) and holds its GPU until the file gate exists.
func blockedTask(events, gate string) string {
	return `echo "start $TFHIVE_TRIAL $x $(hostname) $CUDA_VISIBLE_DEVICES $(date +%s.%N)" >> ` + events + `
while [ ! -e ` + gate + ` ]; do sleep 0.1; done
echo "loss={x}"`
}

// startsIn counts the trials' task starts in events.
func startsIn(t *testing.T, events string) int {
	return strings.Count(readFile(t, events), "start ")
}

// sweepOnHosts is `tfhive ps`'s runs whose id begins with prefix.
func sweepOnHosts(t *testing.T, f *sshtest.Fleet, prefix string) []string {
	t.Helper()
	r := tfhive(t, f.Env(), f.Dir, fleetArgs(f, "ps", "--json")...)
	wantCode(t, r, 0)
	var doc struct{ Runs []psRow }
	if err := json.Unmarshal([]byte(r.stdout), &doc); err != nil {
		t.Fatalf("ps --json: %v\n%s", err, r.stdout)
	}
	var ids []string
	for _, row := range doc.Runs {
		if strings.HasPrefix(row.RunID, prefix) {
			ids = append(ids, row.RunID+"@"+row.Host)
		}
	}
	return ids
}

// sweepRows is the sweep's table, each row's trial and result.
func sweepRows(t *testing.T, table string) map[string]string {
	t.Helper()
	rows := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(table), "\n")[1:] {
		c := splitCols(line)
		if len(c) < 3 {
			t.Fatalf("row %q of\n%s", line, table)
		}
		res := c[2]
		if res == "not" && len(c) > 3 && c[3] == "run" {
			res = "not run"
		}
		rows[c[0]] = res
	}
	return rows
}

// endsWithin waits for a started tfhive to end, reading what it says,
// and fails the test if it takes longer than within.
func endsWithin(t *testing.T, r *running, within time.Duration) (int, time.Duration) {
	t.Helper()
	start := time.Now()
	done := make(chan struct{})
	go func() { r.readAll(); r.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(within):
		r.Process.Kill()
		<-done
		t.Fatalf("still running %s later:\n%s%s", within, r.read.String(), r.other.String())
	}
	return r.ProcessState.ExitCode(), time.Since(start)
}

// Ctrl-C once while a sweep of 6 trials, --max-parallel 5, has 4 running
// on 2 hosts × 2 GPUs and a fifth waiting in the hosts' queue: the sweep
// stops every trial gracefully and exits 130 within --grace and a
// margin; every trial's tasks are gone from the hosts (no process, no
// claim, no ticket), no other trial started, and the table marks the 4
// interrupted and the 2 others not run (the one that waited leaves no
// log dir). The same command again runs all 6.
func TestSweepInterrupted(t *testing.T) {
	t.Parallel() // beside others, on a fleet of its own (testing.md)
	f := sweepFleet(t)
	dir := t.TempDir()
	events, gate := filepath.Join(dir, "events"), filepath.Join(dir, "go")
	args := sweepArgs(f, "--name", "si", "--max-parallel", "5", "--param", "x=1,2,3,4,5,6", "--capture", `loss=loss=(\d+)`,
		"--", "sh", "-c", blockedTask(events, gate))
	r := startTfhive(t, f, readStderr, args...)
	var started []string
	if !r.readUntil(func(l string) bool {
		if id, ok := strings.CutPrefix(l, "tfhive: trial "); ok && strings.Contains(id, " started (") {
			started = append(started, strings.Fields(id)[0])
		}
		return len(started) == 4
	}) {
		r.Wait()
		t.Fatalf("4 trials did not start:\n%s%s", r.read.String(), r.other.String())
	}
	waitFor(t, 30*time.Second, "the 4 trials' tasks", func() bool { return startsIn(t, events) == 4 })
	if on := sweepOnHosts(t, f, "si-"); len(on) != 4 {
		t.Fatalf("ps: %v, want the 4 trials", on)
	}
	waitFor(t, 30*time.Second, "a fifth trial in the queue", func() bool { return len(queueOrder(t, f)) == 1 })
	before := r.read.Len()

	r.Process.Signal(syscall.SIGINT)
	// --grace 2s, then the summaries: 20 s leaves room for a loaded machine.
	code, took := endsWithin(t, r, 20*time.Second)
	if code != 130 {
		t.Fatalf("exit %d, want 130\n%s%s", code, r.read.String(), r.other.String())
	}
	t.Logf("the sweep ended %s after Ctrl-C", took.Round(time.Millisecond))
	after := r.read.String()[before:]
	wantContains(t, "stderr", after, "tfhive: sweep si: stopping its trials", "tfhive: trial "+started[0]+" interrupted",
		"not started: the sweep was stopped while it waited")
	if strings.Contains(after, " started (") {
		t.Errorf("a trial started after Ctrl-C:\n%s", r.read.String())
	}
	noLeftovers(t, f, 5*time.Second)
	if on := sweepOnHosts(t, f, "si-"); len(on) != 0 {
		t.Errorf("ps after the sweep: %v", on)
	}
	if q := queueOrder(t, f); len(q) != 0 {
		t.Errorf("queue after the sweep: %v", q)
	}
	if n := startsIn(t, events); n != 4 {
		t.Errorf("%d trials' tasks started, want 4", n)
	}
	rows := sweepRows(t, r.other.String())
	ids := []string{"si-001", "si-002", "si-003", "si-004", "si-005", "si-006"}
	for _, id := range ids {
		want := "not run"
		if slices.Contains(started, id) {
			want = "interrupted"
		}
		if rows[id] != want {
			t.Errorf("table: %s %s, want %s\n%s", id, rows[id], want, r.other.String())
		}
	}

	// Again, the gate open: every trial runs, the interrupted ones in
	// fresh log dirs.
	if err := os.WriteFile(gate, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	again := tfhive(t, f.Env(), f.Dir, args...)
	wantCode(t, again, 0)
	rows = sweepRows(t, again.stdout)
	for _, id := range ids {
		if rows[id] != "succeeded" {
			t.Errorf("run again: %s %s\n%s", id, rows[id], again.stdout)
		}
	}
	if n := startsIn(t, events); n != 10 {
		t.Errorf("%d starts in all, want 4 + 6", n)
	}
	es, _ := os.ReadDir(filepath.Join(f.Dir, "tfhive-runs", "si", "earlier"))
	var earlier, want []string
	for _, e := range es {
		earlier = append(earlier, e.Name())
	}
	for _, id := range started {
		want = append(want, id+".1")
	}
	slices.Sort(want)
	if !slices.Equal(earlier, want) {
		t.Errorf("earlier/: %v, want %v", earlier, want)
	}
}

// gone: process pid has ended (a zombie nobody reaped counts as ended).
func gone(pid int) bool {
	stat, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	return err != nil || strings.Contains(string(stat), ") Z ")
}

// `tfhive kill SWEEP` of a detached sweep whose 4 trials run and 2 wait
// their turn: every running trial's tasks stop within a bound, no other
// trial starts, the keeper ends, `wait` exits 1 saying the sweep was
// stopped, and nothing of it remains on the hosts; its table marks the 4
// stopped and the 2 not run.
func TestSweepDetachKill(t *testing.T) {
	t.Parallel() // beside others, on a fleet of its own (testing.md)
	f := sweepFleet(t)
	dir := t.TempDir()
	events, gate := filepath.Join(dir, "events"), filepath.Join(dir, "go")
	args := sweepArgs(f, "--name", "kd", "--detach", "--param", "x=1,2,3,4,5,6", "--", "sh", "-c", blockedTask(events, gate))
	r := tfhive(t, f.Env(), f.Dir, args...)
	wantCode(t, r, 0)
	if strings.TrimSpace(r.stdout) != "kd" {
		t.Fatalf("--detach printed %q", r.stdout)
	}
	waitFor(t, 30*time.Second, "the 4 trials' tasks", func() bool { return startsIn(t, events) == 4 })
	keeper := keeperOf(t, filepath.Join("tfhive-runs", "kd"))

	start := time.Now()
	k := tfhive(t, f.Env(), f.Dir, fleetArgs(f, "kill", "--grace", "2s", "kd")...)
	wantCode(t, k, 0)
	// Its keeper stopped the trials: kill found nothing left to stop.
	if want := "tfhive: sweep kd: asked its tfhive to stop its trials and start no more\n" +
		"tfhive: sweep kd stopped (tfhive runs --sweep kd shows its trials)\n"; k.stdout != want || k.stderr != "" {
		t.Errorf("kill said:\n%s%s\nwant:\n%s", k.stdout, k.stderr, want)
	}
	w := tfhive(t, f.Env(), f.Dir, "wait", "kd")
	took := time.Since(start)
	wantCode(t, w, 1)
	wantContains(t, "wait", w.stderr, "tfhive: error: sweep kd: 6 of 6 trials did not succeed; stopped before the end")
	// --grace 2s, the stop file's poll, the summaries: 20 s leaves room
	// for a loaded machine.
	if took > 20*time.Second {
		t.Errorf("the sweep ended %s after kill", took)
	}
	t.Logf("the sweep ended %s after kill", took.Round(time.Millisecond))
	waitFor(t, 5*time.Second, "the keeper's end", func() bool { return gone(keeper) })
	noLeftovers(t, f, 5*time.Second)
	if on := sweepOnHosts(t, f, "kd-"); len(on) != 0 {
		t.Errorf("ps after the sweep: %v", on)
	}
	if q := queueOrder(t, f); len(q) != 0 {
		t.Errorf("queue after the sweep: %v", q)
	}
	if n := startsIn(t, events); n != 4 {
		t.Errorf("%d trials' tasks started, want 4", n)
	}
	wantStopped(t, f, "kd", events)
	logs := tfhive(t, f.Env(), f.Dir, "logs", "kd")
	wantCode(t, logs, 0)
	wantContains(t, "logs kd", logs.stdout, "tfhive: sweep kd: tfhive kill asked it to stop; stopping its trials",
		"exit 143: cancelled (tfhive kill of its sweep)")

	// Run again (the gate open), the kill's word is stale: all 6 run.
	if _, err := os.Lstat(filepath.Join(f.Dir, "tfhive-runs", "kd", "stop")); err != nil {
		t.Fatalf("the kill's word: %v", err)
	}
	if err := os.WriteFile(gate, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	again := tfhive(t, f.Env(), f.Dir, slices.DeleteFunc(args, func(a string) bool { return a == "--detach" })...)
	wantCode(t, again, 0)
	wantContains(t, "run again", again.stderr, "sweep kd: 6 trials, 4 at a time")
}

// A detached sweep whose keeper does not answer (SIGSTOP: its machine
// asleep) is still stopped by `tfhive kill SWEEP`: after its --grace and
// 5 s kill stops the trials' tasks on the hosts itself. The keeper, woken,
// starts no other trial and ends.
func TestSweepKillKeeperStopped(t *testing.T) {
	t.Parallel() // beside others, on a fleet of its own (testing.md)
	f := sweepFleet(t)
	dir := t.TempDir()
	events, gate := filepath.Join(dir, "events"), filepath.Join(dir, "go")
	r := tfhive(t, f.Env(), f.Dir, sweepArgs(f, "--name", "ks", "--detach", "--param", "x=1,2,3,4,5,6",
		"--", "sh", "-c", blockedTask(events, gate))...)
	wantCode(t, r, 0)
	waitFor(t, 30*time.Second, "the 4 trials' tasks", func() bool { return startsIn(t, events) == 4 })
	keeper := keeperOf(t, filepath.Join("tfhive-runs", "ks"))
	if err := syscall.Kill(keeper, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	defer syscall.Kill(keeper, syscall.SIGCONT)

	k := tfhive(t, f.Env(), f.Dir, fleetArgs(f, "kill", "--grace", "1s", "ks")...)
	wantCode(t, k, 0)
	wantContains(t, "kill", k.stderr, "tfhive: warning: sweep ks's tfhive did not end within 6s; stopping its trials on the hosts\n")
	if n := strings.Count(k.stdout, "tfhive: stopped run ks-00"); n != 4 {
		t.Errorf("kill stopped %d trials, want 4:\n%s", n, k.stdout)
	}
	noLeftovers(t, f, 5*time.Second)

	syscall.Kill(keeper, syscall.SIGCONT)
	waitFor(t, 30*time.Second, "the keeper's end", func() bool { return gone(keeper) })
	if n := startsIn(t, events); n != 4 {
		t.Errorf("%d trials' tasks started, want 4", n)
	}
	w := tfhive(t, f.Env(), f.Dir, "wait", "ks")
	wantCode(t, w, 1)
	wantContains(t, "wait", w.stderr, "tfhive: error: sweep ks: 6 of 6 trials did not succeed; stopped before the end")
	noLeftovers(t, f, 5*time.Second)
	if on := sweepOnHosts(t, f, "ks-"); len(on) != 0 {
		t.Errorf("ps after the sweep: %v", on)
	}
	wantStopped(t, f, "ks", events)
}

// wantStopped: the table of sweep name, stopped by kill, lists the trials
// whose tasks started (in events) cancelled, as kill RUN leaves a run,
// and the others not run.
func wantStopped(t *testing.T, f *sshtest.Fleet, name, events string) {
	t.Helper()
	shown := tfhive(t, f.Env(), f.Dir, "runs", "--sweep", name)
	wantCode(t, shown, 0)
	rows := sweepRows(t, shown.stdout)
	started := map[string]bool{}
	for _, e := range sweepEvents(t, events) {
		started[e.trial] = true
	}
	for id, res := range rows {
		if want := map[bool]string{true: "cancelled", false: "not run"}[started[id]]; res != want {
			t.Errorf("%s: %s, want %s\n%s", id, res, want, shown.stdout)
		}
	}
	if len(rows) != 6 || len(started) != 4 {
		t.Errorf("%d trials started; table:\n%s", len(started), shown.stdout)
	}
}
