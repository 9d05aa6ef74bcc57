package e2e

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tfhive/tfhive/launcher/record"
	"github.com/tfhive/tfhive/probe/sshtest"
)

// idlePolicy is the tests' host policy: idle at or under 5% for 2 s is
// warned about, for 4 s stopped.
const idlePolicy = "idle: {below: 5%, warn: 2s, stop: 4s}\n"

// idleHost starts a fleet of one host whose policy is idlePolicy and
// whose nvidia-smi serves usage ("UTIL MEM") for every query.
func idleHost(t *testing.T, name, usage string) *sshtest.Fleet {
	return idleFleet(t, idlePolicy, name, usage)
}

// idleFleet starts hosts, each named then given its usage, under policy.
func idleFleet(t *testing.T, policy string, namesAndUsage ...string) *sshtest.Fleet {
	var ps []sshtest.Profile
	for i := 0; i < len(namesAndUsage); i += 2 {
		ps = append(ps, sshtest.Profile{Name: namesAndUsage[i], GPU: "idle-2gpu.xml", AliveInterval: 1})
	}
	f := sshtest.Start(t, ps...)
	for i := 0; i < len(namesAndUsage); i += 2 {
		h := f.Host(namesAndUsage[i])
		if err := h.SetPolicy(policy); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(h.Dir, "gpu", "usage"), []byte(namesAndUsage[i+1]+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return f
}

// ledgerOf is what host h's usage ledgers hold (ledger.sh), every user's
// directory, all months.
func ledgerOf(t *testing.T, h *sshtest.Host) string {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(h.ClaimsDir(), "tfhive-usage.*", "*.csv"))
	var b strings.Builder
	for _, p := range files {
		b.WriteString(readFile(t, p))
	}
	return b.String()
}

// A task that holds its GPU at 0% under a 2 s / 4 s policy is warned
// about on the console, then its host stops it: the run ends
// idle-stopped, exit 6, saying why (the task got the run's
// --stop-signal, SIGINT), with both events in events.csv and
// the attempt in the host's ledger. A run with a GPU on each of two
// hosts under the same policy, one idle, one busy, runs past the stop
// time to its end: a run is idle only when all its GPUs are (its keeper
// holds the idle host's stop); the idle one is warned about, the busy
// one not.
func TestIdleStopOnTheHost(t *testing.T) {
	t.Parallel() // beside others, on a fleet of its own (testing.md)
	idle, busy := idleHost(t, "i1", "0 100"), idleFleet(t, idlePolicy, "m1", "0 100", "m2", "90 1000")
	task := `trap 'echo got-int; exit 1' INT; echo ready; i=0; while [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done; echo done`
	// The idle stop is a stop like the others: --stop-signal's.
	args, logDir := runArgs(t, idle, "--stop-signal", "SIGINT", "--workers", "1", "--gpus-per-worker", "1", "--", "sh", "-c", task)
	ir := startTfhive(t, idle, readStdout, args...)
	// The same in a session of its own (--reconnect 0: no run directory
	// on the host, the warning on the supervisor's own stderr), beside it
	// on i1's other GPU.
	pargs, _ := runArgs(t, idle, "--reconnect", "0", "--workers", "1", "--gpus-per-worker", "1", "--", "sh", "-c", task)
	pr := startTfhive(t, idle, readStdout, pargs...)
	// The half-busy run's tasks end when the test opens their gate: once
	// m1's host has seen its GPU idle for longer than the stop time.
	gate := filepath.Join(t.TempDir(), "gate")
	bargs, blogDir := runArgs(t, busy, "--name", "half-busy", "--workers", "2", "--gpus-per-worker", "1", "--strategy", "spread",
		"--", "sh", "-c", `while [ ! -e `+gate+` ]; do sleep 0.05; done; echo done`)
	br := startTfhive(t, busy, readStdout, bargs...)
	ir.readAll()
	ir.Wait()
	if code := ir.ProcessState.ExitCode(); code != 6 {
		t.Fatalf("the idle run: exit %d, want 6\n%s%s", code, ir.read.String(), ir.other.String())
	}
	out := ir.read.String()
	wantContains(t, "the idle run's console", out, "tfhive: warning: worker:0 on i1: GPUs idle (at or under 5%) for 2",
		"the run is stopped once they are idle for 4s (the host's idle policy (", "idle-stopped",
		"task worker:0 on i1 was stopped: its GPUs were idle (at or under 5%) for 4", "got-int")
	if strings.Contains(out, "] done") {
		t.Errorf("the idle task ran to its end:\n%s", out)
	}
	if strings.Index(out, "GPUs idle") > strings.Index(out, "was stopped") {
		t.Errorf("the warning came after the stop:\n%s", out)
	}
	s := summaryOf(t, logDir)
	if s.Result != record.ResultIdleStopped || s.ExitCode != 6 {
		t.Errorf("summary: %s, exit %d, want idle-stopped, 6", s.Result, s.ExitCode)
	}
	events := readFile(t, filepath.Join(logDir, "events.csv"))
	wantContains(t, "events.csv", events, ",worker:0,i1,idle-warning,idle 2", ",worker:0,i1,idle-stopped,idle 4")
	if l := ledgerOf(t, idle.Host("i1")); !regexp.MustCompile(`(?m)^1 \d+ \d+ 1 [1-9]\d* ` + regexp.QuoteMeta(s.RunID) + ` worker:0$`).MatchString(l) {
		t.Errorf("i1's ledger: %q, want the attempt", l)
	}

	pr.readAll()
	pr.Wait()
	if code := pr.ProcessState.ExitCode(); code != 6 {
		t.Fatalf("the idle run with --reconnect 0: exit %d, want 6\n%s%s", code, pr.read.String(), pr.other.String())
	}
	wantContains(t, "the --reconnect 0 run's console", pr.read.String(), "tfhive: warning: worker:0 on i1: GPUs idle (at or under 5%) for 2",
		"task worker:0 on i1 was stopped: its GPUs were idle (at or under 5%) for 4")

	// m1's NAME.idle holds the start of its idle stretch (idle-watch.sh):
	// idle for the stop time and two seconds more (eight samples), and
	// still running, it was held, not stopped.
	waitFor(t, 30*time.Second, "m1's GPU idle past the stop time", func() bool {
		files, _ := filepath.Glob(filepath.Join(hostRunDir(busy.Host("m1"), "half-busy"), "*.idle"))
		for _, p := range files {
			b, _ := os.ReadFile(p)
			if since, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64); err == nil && time.Now().Unix()-since >= 6 {
				return true
			}
		}
		return false
	})
	openGate(t, gate)
	br.readAll()
	if err := br.Wait(); err != nil {
		t.Fatalf("the busy run: %v\n%s%s", err, br.read.String(), br.other.String())
	}
	bout := br.read.String()
	wantContains(t, "the half-busy run's console", bout, "] done", "succeeded", " on m1: GPUs idle (at or under 5%)")
	if strings.Count(bout, "] done") != 2 || strings.Contains(bout, "on m2: GPUs idle") {
		t.Errorf("want both tasks to their end, m2's not warned about:\n%s", bout)
	}
	if ev := readFile(t, filepath.Join(blogDir, "events.csv")); strings.Contains(ev, "idle-stopped") || strings.Contains(ev, "m2,idle") {
		t.Errorf("events.csv:\n%s", ev)
	}
}

// The same with the keeper of a --detach run killed: the host alone
// stops the idle task, says so in the task's status file (a later attach
// reads it) and writes the ledger. Here the policy only warns (after
// 1 s), and the run's own --idle-stop stops it: ps says "idle" once
// warned, and status on the run's claimed GPU, in DETAIL and --json.
func TestIdleStopDetachedKeeperGone(t *testing.T) {
	t.Parallel() // beside others, on a fleet of its own (testing.md)
	f := idleFleet(t, "idle: {below: 5%, warn: 1s}\n", "k1", "0 100")
	args, logDir := runArgs(t, f, "--detach", "--idle-stop", "6s", "--workers", "1", "--gpus-per-worker", "1", "--", "sleep", "300")
	r := tfhive(t, f.Env(), f.Dir, args...)
	wantCode(t, r, 0)
	id := strings.TrimSpace(r.stdout)
	var ps string
	waitFor(t, 5*time.Second, "ps to say the run is idle", func() bool {
		ps = tfhive(t, f.Env(), f.Dir, fleetArgs(f, "ps")...).stdout
		return strings.Contains(ps, "running, idle ")
	})
	st := tfhive(t, f.Env(), f.Dir, fleetArgs(f, "status")...)
	wantCode(t, st, 0)
	if !regexp.MustCompile(`(?m)^k1 .* claimed .*; idle \d+s$`).MatchString(st.stdout) {
		t.Errorf("status does not say the claimed GPU's run is idle:\n%s", st.stdout)
	}
	js := tfhive(t, f.Env(), f.Dir, fleetArgs(f, "status", "--json")...)
	wantContains(t, "status --json", js.stdout, `"idle": "idle `)
	if err := syscall.Kill(keeperOf(t, logDir), syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	h := f.Host("k1")
	if len(h.Leftovers()) == 0 {
		t.Fatal("the task ended with its keeper: it was not kept")
	}
	// 4 s idle and the sampling, well within --unattended's day.
	noLeftovers(t, f, 20*time.Second)
	rc := readFile(t, filepath.Join(hostRunDir(h, id), "worker-0.rc"))
	wantContains(t, "worker-0.rc", rc, " idle-stopped")
	if l := ledgerOf(t, h); !strings.Contains(l, " "+id+" worker:0\n") {
		t.Errorf("k1's ledger: %q, want the attempt", l)
	}
}
