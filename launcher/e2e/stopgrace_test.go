package e2e

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tfhive/tfhive/probe/sshtest"
)

// --stop-signal and --grace on a stop tfhive makes (--timeout here): each
// task gets SIGINT, not SIGTERM, and TFHIVE_STOP_DEADLINE's file says
// when SIGKILL comes, --grace later. A task that traps the signal and
// saves itself within the grace ends as it chose; one that ignores it is
// killed at the deadline, not before.
func TestStopSignalGraceDeadline(t *testing.T) {
	t.Parallel() // beside others, on a fleet of its own (testing.md)
	f := sshtest.Start(t, sshtest.Profile{Name: "h1", AliveInterval: 1})
	// worker:0 saves (a second) and exits 0; worker:1 says it got the
	// signal and goes on.
	task := `now() { date +%s.%N; }
save() { echo "got-int at $(now) deadline $(cat "$TFHIVE_STOP_DEADLINE") grace $TFHIVE_STOP_GRACE"; }
if [ "$TFHIVE_TASK" = worker:0 ]; then trap 'save; sleep 1; echo saved; exit 0' INT; else trap save INT; fi
trap 'echo got-term; exit 9' TERM
echo ready
while :; do sleep 0.1; done`
	args, logDir := runArgs(t, f, "--workers", "2", "--gpus-per-worker", "0", "--stop-signal", "SIGINT", "--grace", "3s", "--timeout", "2s", "--", "bash", "-c", task)
	r := tfhive(t, f.Env(), f.Dir, args...)
	end := float64(time.Now().UnixNano()) / 1e9
	wantCode(t, r, 124)
	if strings.Contains(r.stdout, "got-term") {
		t.Errorf("a task got SIGTERM, not --stop-signal's SIGINT:\n%s", r.stdout)
	}
	s := summaryOf(t, logDir)
	for _, task := range s.Tasks {
		log := readFile(t, filepath.Join(logDir, strings.ReplaceAll(task.ID, ":", "-")+".log"))
		var at float64
		var deadline, grace int
		_, line, _ := strings.Cut(log, "got-int at ")
		if _, err := fmt.Sscanf(line, "%f deadline %d grace %d", &at, &deadline, &grace); err != nil {
			t.Fatalf("%s did not say when it would be killed (%v):\n%s", task.ID, err, log)
		}
		// The file holds whole seconds, rounded down from the signal's
		// time + the grace (never later than the SIGKILL): up to a second
		// short of at+3, less the trap's own latency (the task's sleep 0.1).
		if grace != 3 || float64(deadline) < at+1.5 || float64(deadline) > at+3.05 {
			t.Errorf("%s: got the signal at %.1f, told SIGKILL at %d, grace %d; want 3 s later, in whole seconds rounded down", task.ID, at, deadline, grace)
		}
		switch task.ID {
		case "worker:0":
			wantContains(t, "worker:0's log", log, "saved")
			if task.ExitCode == nil || *task.ExitCode != 0 {
				t.Errorf("worker:0 saved itself in its grace and exited 0, summary says %+v\n%s", task, readFile(t, filepath.Join(logDir, "events.csv")))
			}
		case "worker:1":
			if task.ExitCode == nil || *task.ExitCode != 128+9 {
				t.Errorf("worker:1 ignored the signal: want SIGKILL (137), summary says %v", task.ExitCode)
			}
			// Killed at the deadline: the whole grace after the signal.
			if end-at < 2.8 {
				t.Errorf("worker:1 was killed %.1f s after its signal, before its 3 s grace", end-at)
			}
		}
	}
	noLeftovers(t, f, 5*time.Second)
}

// A run whose tasks live and die with their sessions (--reconnect 0) has
// no run directory on the host: each task's deadline file is in a fresh
// directory of the user's own under ~/.tfhive, never in /tmp or $TMPDIR
// (another user's to prepare), and it is gone once the run has ended.
func TestStopDeadlineSessionTask(t *testing.T) {
	t.Parallel() // beside others, on a fleet of its own (testing.md)
	f := sshtest.Start(t, sshtest.Profile{Name: "h1", AliveInterval: 1})
	task := `trap 'echo "got-int home $HOME file $TFHIVE_STOP_DEADLINE deadline $(cat "$TFHIVE_STOP_DEADLINE")"; exit 0' INT
echo ready
while :; do sleep 0.1; done`
	args, logDir := runArgs(t, f, "--reconnect", "0", "--workers", "1", "--gpus-per-worker", "0", "--stop-signal", "SIGINT", "--grace", "3s", "--timeout", "2s", "--", "bash", "-c", task)
	r := tfhive(t, f.Env(), f.Dir, args...)
	wantCode(t, r, 124)
	log := readFile(t, filepath.Join(logDir, "worker-0.log"))
	var home, file string
	var deadline int64
	_, line, _ := strings.Cut(log, "got-int home ")
	if _, err := fmt.Sscanf(line, "%s file %s deadline %d", &home, &file, &deadline); err != nil {
		t.Fatalf("the task did not say where its deadline was (%v):\n%s", err, log)
	}
	dir := filepath.Dir(file)
	if filepath.Dir(dir) != filepath.Join(home, ".tfhive") || !strings.HasPrefix(filepath.Base(dir), "stop.") || filepath.Base(file) != "deadline" {
		t.Errorf("TFHIVE_STOP_DEADLINE %s, want $HOME/.tfhive/stop.*/deadline (HOME %s)", file, home)
	}
	if now := time.Now().Unix(); deadline < now-10 || deadline > now+10 {
		t.Errorf("deadline %d, want about now (%d)", deadline, now)
	}
	noLeftovers(t, f, 5*time.Second)
	// Looked at on the host (its mounts: a private home is its own).
	if out, err := f.Hosts[0].Command(nil, "sh", "-c", `if [ -e "$1" ]; then echo left; else echo gone; fi`, "sh", dir).CombinedOutput(); err != nil || strings.TrimSpace(string(out)) != "gone" {
		t.Errorf("%s: %s (%v), want it removed with its supervisor", dir, out, err)
	}
}

// --requeue-on: a task that saved its work exits 85, and the run goes back
// to the queue and starts again as the same run, its task told to resume
// (TFHIVE_RESUME=1, TFHIVE_ATTEMPT=1); the summary lists both attempts,
// events.csv the requeue and the resume.
func TestRequeueOnCode(t *testing.T) {
	t.Parallel() // beside others, on a fleet of its own (testing.md)
	f := sshtest.Start(t, sshtest.Profile{Name: "h1", AliveInterval: 1})
	ckpt := filepath.Join(f.Dir, "ckpt")
	task := `if [ "${TFHIVE_RESUME-}" = 1 ]; then echo "resumed attempt $TFHIVE_ATTEMPT from step $(cat "$1")"; exit 0; fi
echo 7 >"$1"; echo "attempt ${TFHIVE_ATTEMPT-none} saved step 7"; exit 85`
	args, logDir := runArgs(t, f, "--workers", "1", "--gpus-per-worker", "0", "--requeue-on", "85", "--name", "rq", "--", "bash", "-c", task, "task", ckpt)
	r := tfhive(t, f.Env(), f.Dir, args...)
	wantCode(t, r, 0)
	wantContains(t, "output", r.stdout, "attempt none saved step 7", "resumed attempt 1 from step 7", "requeued at its place in the queue (requeue 1 of 5)", "run rq succeeded",
		"restart: worker:0 on h1: attempt 1 exited 85 after ", "; requeued: task worker:0 exited 85 (--requeue-on)")
	s := summaryOf(t, logDir)
	if s.RunID != "rq" || len(s.Tasks) != 1 || len(s.Tasks[0].Attempts) != 2 {
		t.Fatalf("summary: %+v", s)
	}
	a := s.Tasks[0].Attempts
	if a[0].Attempt != 0 || a[0].ExitCode == nil || *a[0].ExitCode != 85 || a[0].Restart != "requeued: task worker:0 exited 85 (--requeue-on)" || a[1].Attempt != 1 || *a[1].ExitCode != 0 {
		t.Errorf("attempts: %+v", a)
	}
	events := readFile(t, filepath.Join(logDir, "events.csv"))
	wantContains(t, "events.csv", events, ",requeued,", ",resumed,")
}

// tfhive kill gives a task the run's --grace, not kill's own longer one:
// a task that ignores SIGTERM is killed --grace after it, and kill
// returns then.
func TestKillHonoursRunGrace(t *testing.T) {
	t.Parallel() // beside others, on a fleet of its own (testing.md)
	f := sshtest.Start(t, sshtest.Profile{Name: "h1", AliveInterval: 1})
	logDir := filepath.Join(t.TempDir(), "stubborn")
	r := tfhive(t, f.Env(), f.Dir, fleetArgs(f, "run", "--detach", "--log-dir", logDir, "--name", "stubborn", "--grace", "1s",
		"--workers", "1", "--gpus-per-worker", "0", "--", "bash", "-c", `trap 'echo got-term' TERM; echo started; while :; do sleep 0.1; done`)...)
	wantCode(t, r, 0)
	waitFor(t, 30*time.Second, "the task's started line", func() bool {
		return strings.Contains(readFile(t, filepath.Join(logDir, "worker-0.log")), "started")
	})
	k := tfhive(t, f.Env(), f.Dir, fleetArgs(f, "kill", "--grace", "20s", "stubborn")...)
	wantCode(t, k, 0)
	if k.elapsed > 10*time.Second {
		t.Errorf("kill took %s: the run's 1s grace, not kill's 20s, should have ended the task", k.elapsed)
	}
	w := tfhive(t, f.Env(), f.Dir, "wait", "--log-dir", logDir, "stubborn")
	s := summaryOf(t, logDir)
	if len(s.Tasks) != 1 || s.Tasks[0].ExitCode == nil || *s.Tasks[0].ExitCode != 128+9 {
		t.Errorf("summary (wait exit %d): %+v", w.code, s.Tasks)
	}
	wantContains(t, "worker:0's log", readFile(t, filepath.Join(logDir, "worker-0.log")), "got-term")
	noLeftovers(t, f, 5*time.Second)
}
