package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tfhive/tfhive/launcher/record"
	"github.com/tfhive/tfhive/probe/sshtest"
	"github.com/tfhive/tfhive/schedule"
)

// hangPy is a real Python task stuck two ways at once: its main thread
// deadlocked on a lock it holds, a second thread in a C call
// (time.sleep), a third in a blocking read.
const hangPy = `import os, threading, time


def sleeper():
    time.sleep(3600)


def reader():
    r, _ = os.pipe()
    os.read(r, 1)


def deadlock():
    lock = threading.Lock()
    lock.acquire()
    print("locked", flush=True)
    lock.acquire()


threading.Thread(target=sleeper, daemon=True).start()
threading.Thread(target=reader, daemon=True).start()
deadlock()
`

// needPySpy fails in CI, and skips elsewhere, when the TF venv holds no
// py-spy (.ci/run pins it beside TensorFlow).
func needPySpy(t *testing.T) {
	t.Helper()
	v := tfVenv(t)
	if _, err := os.Stat(filepath.Join(v, "bin", "py-spy")); err != nil {
		why := "no py-spy in " + v + ": bash .ci/run installs it (" + v + "/bin/pip install py-spy==0.4.3)"
		if os.Getenv("CI") == "true" {
			t.Fatal(why)
		}
		t.Skip(why)
	}
}

func writeScript(t *testing.T, name, text string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// --hang-after 2s --on-hang stop: a run whose tasks deadlock is stopped
// as hung (exit 7) once its stacks are in the log dir. On k1 the hosts
// file's setup: activates the venv with PyPI's py-spy, which names the
// functions each thread is stuck in, inside the host's own PID
// namespace, and with --hang-native the C calls under them; k2's setup
// leads to no py-spy, and /proc (and gdb) say where its task waits.
func TestHangStopTakesStacks(t *testing.T) {
	t.Parallel() // beside others, on a fleet of its own (testing.md)
	needPySpy(t)
	b := newTFBedSetup(t, sshtest.DefaultBed(t), map[string]string{"k2": "true"}, "k1", "k2")
	script := writeScript(t, "hang.py", hangPy)
	logDir := filepath.Join(t.TempDir(), "logs")
	told := filepath.Join(t.TempDir(), "told")
	start := time.Now()
	r := tfhive(t, b.f.Env(), b.f.Dir, b.args("run", "--log-dir", logDir, "--grace", "2s", "--workers", "2", "--gpus-per-worker", "0",
		"--hang-after", "2s", "--on-hang", "stop", "--hang-native", "--notify", `echo "$TFHIVE_TEXT" >>`+told,
		"--", "python3", script)...)
	wantCode(t, r, 7)
	if d := time.Since(start); d < 2*time.Second {
		t.Errorf("stopped after %s, before --hang-after", d)
	}
	wantContains(t, "stdout", r.stdout, "no task printed anything for 2s; taking every task's stacks on 2 hosts\n",
		"worker:0 in deadlock (", "hung: no output for 2s; stacks in "+filepath.Join(logDir, "stacks")+"; stopping every task\n")
	wantContains(t, "stderr", r.stderr, " hung: no task printed anything for 2s; stacks in "+filepath.Join(logDir, "stacks")+"\n")
	s := summaryOf(t, logDir)
	if s.Result != record.ResultHung || s.ExitCode != 7 {
		t.Errorf("summary: %s %d, want hung 7", s.Result, s.ExitCode)
	}
	plan := readJSON[schedule.Plan](t, logDir, "plan.json")
	for _, task := range plan.Tasks {
		text := readFile(t, filepath.Join(logDir, "stacks", strings.ReplaceAll(task.ID, ":", "-")+".txt"))
		res := taskByID(s, task.ID)
		if task.Host == "k1" {
			wantContains(t, task.ID+"'s stacks (py-spy)", text, "task "+task.ID+" on k1\n", `"MainThread"`,
				"deadlock (", "sleeper (", "reader (", "hang.py",
				"clock_nanosleep (libc", "read (libc")
			if !strings.HasPrefix(res.HungAt, "in deadlock (") {
				t.Errorf("%s: hung at %q, want in deadlock", task.ID, res.HungAt)
			}
			continue
		}
		wantContains(t, task.ID+"'s stacks (/proc)", text, "task "+task.ID+" on k2\n", ", state S, wchan ", "python3 "+script)
		if strings.Contains(text, "Thread ") && strings.Contains(text, "deadlock (") {
			t.Errorf("%s: py-spy's stacks on a host without it:\n%s", task.ID, text)
		}
		if !strings.HasPrefix(res.HungAt, "wchan ") {
			t.Errorf("%s: hung at %q, want its wait channel", task.ID, res.HungAt)
		}
	}
	// --notify hears of the hang once (its tasks' rows with it go
	// unsent), where a task was in it, then of the end.
	notes := readFile(t, told)
	if strings.Count(notes, "\n") != 2 || !strings.Contains(notes, "no output for 2s; stacks in "+filepath.Join(logDir, "stacks")+"; worker:0 ") || !strings.Contains(notes, "hung") {
		t.Errorf("notifications:\n%s", notes)
	}
	events := readFile(t, filepath.Join(logDir, "events.csv"))
	wantContains(t, "events.csv", events, ",hang,no output for ", ",worker:0,", ",hang,in deadlock (")
}

// A task that keeps printing is never called hung, however long it runs:
// --hang-after counts silence, not time.
func TestHangNotWhilePrinting(t *testing.T) {
	t.Parallel() // beside others, on a fleet of its own (testing.md)
	f := runFleet(t, "p1")
	args, logDir := runArgs(t, f, "--workers", "1", "--gpus-per-worker", "0", "--hang-after", "1s", "--on-hang", "stop",
		"--", "sh", "-c", `i=0; while [ $i -lt 25 ]; do echo step $i; sleep 0.1; i=$((i + 1)); done`)
	r := tfhive(t, f.Env(), f.Dir, args...)
	wantCode(t, r, 0)
	if strings.Contains(r.stderr, "stacks") {
		t.Errorf("stderr speaks of stacks:\n%s", r.stderr)
	}
	if _, err := os.Stat(filepath.Join(logDir, "stacks")); !os.IsNotExist(err) {
		t.Errorf("a stacks directory: %v", err)
	}
}

// tfhive stacks RUN, for a detached run that looks stuck: found on its
// host as ps finds it, its stacks taken there now.
func TestStacksOnDemand(t *testing.T) {
	t.Parallel() // beside others, on a fleet of its own (testing.md)
	needPySpy(t)
	b := newTFBed(t, sshtest.DefaultBed(t), "s1")
	script := writeScript(t, "nap.py", "import time\n\n\ndef napper():\n    print('napping', flush=True)\n    time.sleep(3600)\n\n\nnapper()\n")
	logDir := filepath.Join(t.TempDir(), "logs")
	r := tfhive(t, b.f.Env(), b.f.Dir, b.args("run", "--detach", "--log-dir", logDir, "--grace", "1s", "--workers", "1", "--gpus-per-worker", "0", "--", "python3", script)...)
	wantCode(t, r, 0)
	id := strings.TrimSpace(r.stdout)
	defer tfhive(t, b.f.Env(), b.f.Dir, b.args("kill", "--grace", "1s", id)...)
	waitFor(t, 20*time.Second, "the task's first line", func() bool {
		return strings.Contains(taskLog(t, logDir, "worker:0"), "napping")
	})
	st := tfhive(t, b.f.Env(), b.f.Dir, b.args("stacks", "--log-dir", logDir, id)...)
	wantCode(t, st, 0)
	wantContains(t, "stacks' stdout", st.stdout, "worker:0 on s1: in napper (", "tfhive: stacks in "+filepath.Join(logDir, "stacks"))
	wantContains(t, "stacks/worker-0.txt", readFile(t, filepath.Join(logDir, "stacks", "worker-0.txt")), "napper (", "nap.py")
	bad := tfhive(t, b.f.Env(), b.f.Dir, b.args("stacks", "no-such-run")...)
	wantCode(t, bad, 1)
	wantContains(t, "stderr", bad.stderr, "no run no-such-run holds GPUs or ports on these hosts")
}

// A detached run whose keeper was killed is watched again by the keeper
// that adopts it: attach -H --hang-after 1s --on-hang stop takes its
// stacks (here /proc's: no py-spy on the host) and stops it as hung.
func TestHangAdopted(t *testing.T) {
	t.Parallel() // beside others, on a fleet of its own (testing.md)
	f := runFleet(t, "a1")
	args, logDir := runArgs(t, f, "--detach", "--workers", "1", "--gpus-per-worker", "0", "--", "sh", "-c", "echo ready; exec sleep 300")
	r := tfhive(t, f.Env(), f.Dir, args...)
	wantCode(t, r, 0)
	id := strings.TrimSpace(r.stdout)
	waitFor(t, 20*time.Second, "the task's first line", func() bool {
		return strings.Contains(readFile(t, filepath.Join(logDir, "worker-0.log")), "ready")
	})
	keeper := keeperOf(t, logDir)
	if err := syscall.Kill(keeper, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	home2, logDir2 := t.TempDir(), filepath.Join(t.TempDir(), "adopted")
	a := tfhive(t, append(f.Env(), "HOME="+home2), home2, "attach", "--hosts", f.HostsYAML, "--ssh-config", f.SSHConfig,
		"--log-dir", logDir2, "--grace", "1s", "--hang-after", "1s", "--on-hang", "stop", id)
	wantCode(t, a, 7)
	wantContains(t, "attach's stdout", a.stdout, "adopted (keeper generation 2)", "no task printed anything for 1s")
	wantContains(t, "the adopter's stacks/worker-0.txt", readFile(t, filepath.Join(logDir2, "stacks", "worker-0.txt")),
		"task worker:0 on a1\n", ", wchan ", "sleep 300")
	if s := summaryOf(t, logDir2); s.Result != record.ResultHung {
		t.Errorf("adopter's summary: %s", s.Result)
	}
	noLeftovers(t, f, 10*time.Second)
}
