package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tfhive/tfhive/launcher/record"
	"github.com/tfhive/tfhive/schedule"
)

// attemptsOf is a task's attempts as "N:outcome:code:why" words.
func attemptsOf(tr record.TaskResult) []string {
	var l []string
	for _, a := range tr.Attempts {
		code := "-"
		if a.ExitCode != nil {
			code = itoa(*a.ExitCode)
		}
		l = append(l, itoa(a.Attempt)+":"+a.Outcome+":"+code+":"+a.Restart)
	}
	return l
}

func wantAttempts(t *testing.T, tr record.TaskResult, want ...string) {
	t.Helper()
	if got := attemptsOf(tr); strings.Join(got, " | ") != strings.Join(want, " | ") {
		t.Errorf("%s attempts:\n got %q\nwant %q", tr.ID, got, want)
	}
}

// TestRestartAlwaysFailing: --restarts 2 runs a failing task three times,
// each seeing its TFHIVE_ATTEMPT, then fails with its code; kept or not.
func TestRestartAlwaysFailing(t *testing.T) {
	t.Parallel() // beside others, on a fleet of its own (testing.md)
	for _, mode := range []string{"kept", "reconnect-0"} {
		t.Run(mode, func(t *testing.T) {
			f := runFleet(t, "a1")
			extra := []string{"--restarts", "2", "--restart-backoff", "100ms", "--workers", "1", "--gpus-per-worker", "0"}
			if mode != "kept" {
				extra = append(extra, "--reconnect", "0")
			}
			args, logDir := runArgs(t, f, append(extra, "--", "sh", "-c", `printf 'attempt %s' "$TFHIVE_ATTEMPT"; exit 9`)...)
			r := tfhive(t, f.Env(), f.Dir, args...)
			wantCode(t, r, 9)
			s := summaryOf(t, logDir)
			tr := taskByID(s, "worker:0")
			wantAttempts(t, tr, "0:exited:9:restarted every task", "1:exited:9:restarted every task", "2:exited:9:")
			log := readFile(t, tr.Log)
			// The attempt lines are taken out, after a partial line too.
			if log != "attempt 0attempt 1attempt 2" {
				t.Errorf("log %q", log)
			}
			wantContains(t, "summary", r.stdout, "ATTEMPTS", "restart: worker:0 on a1: attempt 1 exited 9 after", "restart: worker:0 on a1: attempt 2 exited 9 after")
			if strings.Contains(r.stdout+r.stderr, "@@tfhive-attempt") {
				t.Errorf("an attempt line leaked:\n%s\n%s", r.stdout, r.stderr)
			}
			noLeftovers(t, f, 10e9)
		})
	}
}

// TestRestartWorkerAlone: a worker of a parameter-server run fails on its
// first attempt and succeeds on its second; the ps is never restarted,
// and the worker's GPU stays claimed between its attempts: another run
// started then cannot take it.
func TestRestartWorkerAlone(t *testing.T) {
	f := runFleet(t, "w1")
	script := `if [ "$TFHIVE_TASK" = worker:1 ]; then exec "$0" --fail-at-step 1 --fail-attempts 1; fi; exec "$0"`
	args, logDir := runArgs(t, f, "--restarts", "1", "--restart-backoff", "3s", "--ps", "1", "--workers", "2", "--", "sh", "-c", script, trainerBin)
	r := startTfhive(t, f, readStdout, args...)
	if !r.readUntil(func(line string) bool {
		return strings.Contains(line, "tfhive: worker:1 on w1 exited 3; restarting it in 3s (attempt 2 of 2)")
	}) {
		r.Wait()
		t.Fatalf("no restart line:\n%s%s", r.read.String(), r.other.String())
	}
	// Another run now: worker:1's GPU is still claimed.
	args2, logDir2 := runArgs(t, f, "--workers", "1", "--", "sh", "-c", "echo $CUDA_VISIBLE_DEVICES")
	r2 := tfhive(t, f.Env(), f.Dir, args2...)
	r.readAll()
	if err := r.Wait(); err != nil {
		t.Fatalf("run: %v\n%s%s", err, r.read.String(), r.other.String())
	}
	s := summaryOf(t, logDir)
	w1 := taskByID(s, "worker:1")
	wantAttempts(t, w1, "0:exited:3:restarted alone", "1:exited:0:")
	wantAttempts(t, taskByID(s, "worker:0"), "0:exited:0:")
	if ps := taskByID(s, "ps:0"); len(ps.Attempts) != 1 || ps.Attempts[0].Outcome != "stopped" {
		t.Errorf("ps attempts %q, want one, stopped", attemptsOf(ps))
	}
	if s.Result != "succeeded" || s.ExitCode != 0 {
		t.Errorf("result %s exit %d: %s", s.Result, s.ExitCode, s.Reason)
	}
	log := readFile(t, taskByID(s, "ps:0").Log)
	if n := strings.Count(log, "listening on"); n != 1 {
		t.Errorf("the ps started %d times:\n%s", n, log)
	}
	t.Logf("second run: exit %d\n%s", r2.code, r2.stderr)
	switch r2.code {
	case 3: // no free GPU
	case 0:
		if got := taskByID(summaryOf(t, logDir2), "worker:0").GPUs; len(w1.GPUs) != 1 || len(got) != 1 || got[0] == w1.GPUs[0] {
			t.Errorf("the second run got GPUs %v while worker:1 held %v between its attempts", got, w1.GPUs)
		}
	default:
		t.Errorf("second run exit %d:\n%s%s", r2.code, r2.stdout, r2.stderr)
	}
	noLeftovers(t, f, 10e9)
}

// TestRestartTorchWorld: rank 2 fails on its first attempt; every rank
// restarts (torchrun's semantics), rank 0 keeps MASTER_PORT, and the
// all-reduce of the second attempt is right.
func TestRestartTorchWorld(t *testing.T) {
	requireTorch(t)
	f := runFleet(t, "p1", "p2", "p3")
	args, logDir := torchArgs(t, f, "--restarts", "1", "--restart-backoff", "100ms", "--workers", "4", "--gpus-per-worker", "0",
		"--", python, allreduce, "--fail-rank", "2", "--fail-attempts", "1")
	r := tfhive(t, f.Env(), f.Dir, args...)
	wantCode(t, r, 0)
	s := summaryOf(t, logDir)
	p := planOf(t, logDir)
	for _, task := range p.Tasks {
		tr := taskByID(s, task.ID)
		if task.Env["RANK"] == "2" {
			wantAttempts(t, tr, "0:exited:3:restarted every task", "1:exited:0:")
		} else if len(tr.Attempts) != 2 || tr.Attempts[0].Restart != "restarted with every task: "+taskByRank(p.Tasks, "2")+" exited 3" || tr.Attempts[1].Outcome != "exited" {
			t.Errorf("%s attempts %q", task.ID, attemptsOf(tr))
		}
		wantContains(t, task.ID+" log", readFile(t, tr.Log), "rank "+task.Env["RANK"]+" of 4: sum 10 ok")
	}
	noLeftovers(t, f, 10e9)
}

func taskByRank(tasks []schedule.Task, rank string) string {
	for _, t := range tasks {
		if t.Env["RANK"] == rank {
			return t.ID + " on " + t.Host
		}
	}
	return ""
}

// TestRestartAdopted: a detached run whose keeper dies after a restart is
// adopted: the attempt lines replayed from the task's first byte are
// history (the host says the attempt under way), the adopter restarts
// nothing and ends the run with the attempt's code.
func TestRestartAdopted(t *testing.T) {
	t.Parallel() // beside others, on a fleet of its own (testing.md)
	f := runFleet(t, "d1")
	flag := filepath.Join(t.TempDir(), "go")
	script := `if [ "$TFHIVE_ATTEMPT" = 0 ]; then echo first; exit 3; fi
echo second; : >"$1.started"; while [ ! -e "$1" ]; do sleep 0.05; done; echo done`
	args, logDir := runArgs(t, f, "--detach", "--restarts", "2", "--restart-backoff", "100ms", "--workers", "1", "--gpus-per-worker", "0",
		"--", "sh", "-c", script, "task", flag)
	r := tfhive(t, f.Env(), f.Dir, args...)
	wantCode(t, r, 0)
	id := strings.TrimSpace(r.stdout)
	waitFor(t, 60*time.Second, "the second attempt", func() bool {
		_, err := os.Stat(flag + ".started")
		return err == nil
	})
	old := keeperOf(t, logDir)
	syscall.Kill(old, syscall.SIGKILL)

	a, _, logDir2 := startAttach(t, f, id)
	if !a.readUntil(func(line string) bool { return strings.HasSuffix(line, "] second") }) {
		a.Wait()
		t.Fatalf("the adopter did not follow the task: %s%s", a.read.String(), a.other.String())
	}
	if err := os.WriteFile(flag, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	a.readAll()
	if err := a.Wait(); err != nil {
		t.Fatalf("attach -H: %v\n%s%s", err, a.read.String(), a.other.String())
	}
	if strings.Contains(a.read.String(), "restarting") || strings.Contains(a.read.String(), "@@tfhive") {
		t.Errorf("the adopter restarted, or showed an attempt line:\n%s", a.read.String())
	}
	s := summaryOf(t, logDir2)
	tr := taskByID(s, "worker:0")
	wantAttempts(t, tr, "1:exited:0:")
	if s.Result != "succeeded" {
		t.Errorf("adopter's summary: %s: %s", s.Result, s.Reason)
	}
	if log := readFile(t, tr.Log); log != "first\nsecond\ndone\n" {
		t.Errorf("adopter's log %q", log)
	}
	noLeftovers(t, f, 10*time.Second)
}

// TestRestartLogsFromHosts: tfhive logs -H shows a restarted task's
// output without the attempt lines, for one task and for every task.
func TestRestartLogsFromHosts(t *testing.T) {
	t.Parallel() // beside others, on a fleet of its own (testing.md)
	f := runFleet(t, "g1")
	args, logDir := runArgs(t, f, "--restarts", "2", "--restart-backoff", "100ms", "--workers", "1", "--gpus-per-worker", "0",
		"--", "sh", "-c", `echo "line $TFHIVE_ATTEMPT"; printf 'part%s' "$TFHIVE_ATTEMPT"; [ "$TFHIVE_ATTEMPT" = 2 ] || exit 3`)
	r := tfhive(t, f.Env(), f.Dir, args...)
	wantCode(t, r, 0)
	want := "line 0\npart0line 1\npart1line 2\npart2"
	if log := readFile(t, taskByID(summaryOf(t, logDir), "worker:0").Log); log != want {
		t.Errorf("local log %q, want %q", log, want)
	}
	id := summaryOf(t, logDir).RunID
	home2 := t.TempDir()
	env2 := append(f.Env(), "HOME="+home2)
	hosts := []string{"logs", "--hosts", f.HostsYAML, "--ssh-config", f.SSHConfig}
	one := tfhive(t, env2, home2, append(hosts, "--task", "worker:0", id)...)
	wantCode(t, one, 0)
	if one.stdout != want {
		t.Errorf("logs -H --task: %q, want %q", one.stdout, want)
	}
	all := tfhive(t, env2, home2, append(hosts, id)...)
	wantCode(t, all, 0)
	if want := "[worker:0 g1] line 0\n[worker:0 g1] part0line 1\n[worker:0 g1] part1line 2\n[worker:0 g1] part2\n"; all.stdout != want {
		t.Errorf("logs -H: %q, want %q", all.stdout, want)
	}
}
