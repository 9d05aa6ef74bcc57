package e2e

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tfhive/tfhive/launcher/record"
	"github.com/tfhive/tfhive/launcher/rundir"
	"github.com/tfhive/tfhive/probe/sshtest"
)

func runFleet(t *testing.T, names ...string) *sshtest.Fleet {
	var ps []sshtest.Profile
	for _, n := range names {
		ps = append(ps, sshtest.Profile{Name: n, GPU: "idle-2gpu.xml", AliveInterval: 1})
	}
	return sshtest.Start(t, ps...)
}

// runArgs is `run` on the fleet with a log dir of the test's own. A
// test that fails shows what its run said of itself (logDirTails).
func runArgs(t *testing.T, f *sshtest.Fleet, args ...string) ([]string, string) {
	logDir := filepath.Join(t.TempDir(), "logs")
	t.Cleanup(func() {
		if t.Failed() {
			t.Log(logDirTails(logDir))
		}
	})
	return fleetArgs(f, append([]string{"run", "--log-dir", logDir, "--grace", "2s"}, args...)...), logDir
}

// logDirTails is the last 4 KiB of each of a run's own records in
// logDir (a detached run's keeper and console, its timeline): a failure
// seen once in CI is found by them, or not at all.
func logDirTails(logDir string) string {
	var b strings.Builder
	for _, name := range []string{rundir.KeeperLog, rundir.Console, rundir.Events} {
		data, err := os.ReadFile(filepath.Join(logDir, name))
		if err != nil {
			continue
		}
		fmt.Fprintf(&b, "\n--- %s (%d bytes), its end:\n%s", name, len(data), data[max(0, len(data)-4096):])
	}
	if b.Len() == 0 {
		return "the run's log dir holds none of its records"
	}
	return "the run's log dir:" + b.String()
}

// summaryOf reads the summary `run` wrote into its log dir.
func summaryOf(t *testing.T, logDir string) record.Summary {
	t.Helper()
	return readJSON[record.Summary](t, logDir, "summary.json")
}

func taskByID(s record.Summary, id string) record.TaskResult {
	for _, t := range s.Tasks {
		if t.ID == id {
			return t
		}
	}
	return record.TaskResult{}
}

func atoi(s string) int {
	n, _ := strconv.Atoi(s)
	return n
}

func noLeftovers(t *testing.T, f *sshtest.Fleet, within time.Duration) {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		var left []string
		for _, h := range f.Hosts {
			for _, p := range h.Leftovers() {
				left = append(left, h.Name+": "+p)
			}
		}
		if len(left) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("processes left on the hosts after %s:\n%s", within, strings.Join(left, "\n"))
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func TestRunEnvironmentAndPlacement(t *testing.T) {
	f := runFleet(t, "r1", "r2")
	work := t.TempDir()
	hosts := filepath.Join(f.Dir, "run-hosts.yaml")
	os.WriteFile(hosts, []byte(fmt.Sprintf(`defaults:
  workdir: %s
  setup: export FROM_SETUP=yes
  env: {FROM_FILE: "file value"}
hosts:
  - r1
  - r2
`, work)), 0o644)
	logDir := filepath.Join(t.TempDir(), "logs")
	env := append(f.Env(), "LOCAL_ONLY=leak", "FORWARDED=from-here")
	ready := filepath.Join(t.TempDir(), "ps-ready")
	script := `echo "task=$TFHIVE_TASK run=$TFHIVE_RUN_ID cvd=[$CUDA_VISIBLE_DEVICES] order=$CUDA_DEVICE_ORDER"
echo "pwd=$(pwd) setup=$FROM_SETUP file=$FROM_FILE unbuf=$PYTHONUNBUFFERED cli=$FROM_CLI fwd=$FORWARDED local=${LOCAL_ONLY-unset}"
echo "tfconfig=$TF_CONFIG"
read -r line; echo "stdin=[${line-}] rc=$?"
# The ps must have printed before the workers end the run (the fake
# hosts share a filesystem).
if [ "$TFHIVE_TASK" = ps:0 ]; then touch ` + ready + `; exec sleep 60; fi
i=0; while [ ! -e ` + ready + ` ] && [ $i -lt 600 ]; do sleep 0.05; i=$((i+1)); done`
	r := tfhive(t, env, f.Dir, "run", "--hosts", hosts, "--ssh-config", f.SSHConfig, "--log-dir", logDir,
		"--ps", "1", "--workers", "2", "--name", "envtest", "--env", "FROM_CLI=a,b=c", "--env", "FORWARDED",
		"--", "sh", "-c", script)
	wantCode(t, r, 0)
	s := summaryOf(t, logDir)
	if s.Result != "succeeded" || s.ExitCode != 0 || len(s.Tasks) != 3 {
		t.Fatalf("summary %+v", s)
	}
	for _, tr := range s.Tasks {
		log, _ := os.ReadFile(tr.Log)
		want := []string{
			"task=" + tr.ID + " run=envtest",
			"order=PCI_BUS_ID",
			"pwd=" + work + " setup=yes file=file value unbuf=1 cli=a,b=c fwd=from-here local=unset",
			`"task":{"type":"` + tr.Role + `","index":` + itoa(tr.Index) + "}",
			"stdin=[] rc=1",
		}
		if tr.Role == "ps" {
			want = append(want, "cvd=[]")
		} else {
			want = append(want, "cvd=["+itoa(tr.GPUs[0])+"]")
		}
		wantContains(t, tr.ID+" log", string(log), want...)
		if tr.Role == "ps" && tr.Outcome != "stopped" || tr.Role == "worker" && (tr.Outcome != "exited" || *tr.ExitCode != 0) {
			t.Errorf("%s outcome %s", tr.ID, tr.Outcome)
		}
	}
	// Every line on the console carries its task's prefix.
	wantContains(t, "console", r.stdout, "[worker:0 r", "[ps:0 r", "run envtest succeeded")
	noLeftovers(t, f, 10*time.Second)
}

func TestRunWorkerFailureStopsTheRest(t *testing.T) {
	f := runFleet(t, "r1", "r2")
	args, logDir := runArgs(t, f, "--ps", "1", "--workers", "3", "--gpus-per-worker", "0", "--",
		"sh", "-c", `if [ "$TFHIVE_TASK" = worker:1 ]; then echo dying >&2; exit 9; fi; exec sleep 60`)
	r := tfhive(t, f.Env(), f.Dir, args...)
	wantCode(t, r, 9)
	s := summaryOf(t, logDir)
	if s.Result != "failed" || s.Tasks[0].ID != "worker:1" || *s.Tasks[0].ExitCode != 9 {
		t.Fatalf("the failing task must come first: %+v", s.Tasks)
	}
	for _, tr := range s.Tasks[1:] {
		if tr.Outcome != "stopped" {
			t.Errorf("%s: outcome %s, want stopped", tr.ID, tr.Outcome)
		}
	}
	wantContains(t, "stderr", r.stderr, "tfhive: error: run", "worker:1 on r", "exited 9")
	if r.elapsed > 20*time.Second {
		t.Errorf("stopping took %s: the others sleep 60s, SIGTERM should end them at once", r.elapsed)
	}
	noLeftovers(t, f, 10*time.Second)
}

func TestRunChiefModeAndJSON(t *testing.T) {
	f := runFleet(t, "r1", "r2")
	marks := t.TempDir()
	// The chief ends the run once both workers have printed.
	args, logDir := runArgs(t, f, "--json", "--chief", "--ps", "1", "--workers", "2", "--gpus-per-worker", "0", "--",
		"sh", "-c", `echo out-$TFHIVE_TASK; if [ "$TFHIVE_TASK" = chief:0 ]; then
i=0; while [ $(ls `+marks+` | grep -c worker) -lt 2 ] && [ $i -lt 600 ]; do sleep 0.05; i=$((i+1)); done; exit 0; fi
touch `+marks+`/$TFHIVE_TASK; exec sleep 60`)
	r := tfhive(t, f.Env(), f.Dir, args...)
	wantCode(t, r, 0)
	var s record.Summary
	if err := json.Unmarshal([]byte(r.stdout), &s); err != nil {
		t.Fatalf("--json: stdout must be the summary alone: %v\n%s", err, r.stdout)
	}
	if s.Result != "succeeded" || s.Reason != "the chief exited 0" || s.LogDir != logDir {
		t.Errorf("summary: %+v", s)
	}
	if tr := taskByID(s, "worker:1"); tr.Outcome != "stopped" {
		t.Errorf("workers in chief mode are stopped, got %+v", tr)
	}
	wantContains(t, "stderr (task output under --json)", r.stderr, "[chief:0 r", "out-chief:0", "out-worker:1")
}

func TestRunTimeout(t *testing.T) {
	t.Parallel() // beside others, on a fleet of its own (testing.md)
	f := runFleet(t, "r1")
	args, logDir := runArgs(t, f, "--timeout", "1s", "--gpus-per-worker", "0", "--", "sleep", "60")
	r := tfhive(t, f.Env(), f.Dir, args...)
	wantCode(t, r, 124)
	if s := summaryOf(t, logDir); s.Result != "timeout" || s.Tasks[0].Outcome != "stopped" {
		t.Errorf("summary %+v", s)
	}
	noLeftovers(t, f, 10*time.Second)
}

func TestRunHostileArgvAndSecrets(t *testing.T) {
	t.Parallel() // beside others, on a fleet of its own (testing.md)
	f := runFleet(t, "r1")
	hostile := []string{"a b", "it's", `"dq"`, "$HOME", "`id`", "$(id)", "a;b", "x\ny", "ünïcödé ✓", "", "*", `\`, "-n", "{{literal}}"}
	want := []string{"a b", "it's", `"dq"`, "$HOME", "`id`", "$(id)", "a;b", "x\ny", "ünïcödé ✓", "", "*", `\`, "-n", "{literal}"}
	const secret = "s3cr3t-token-XYZ"
	// --env NAME forwards this machine's value: the secret is on no
	// command line at all, tfhive's own included.
	args, logDir := runArgs(t, f, append([]string{"--gpus-per-worker", "0", "--env", "WANDB_API_KEY", "--",
		"sh", "-c", `printf '<%s>' "$@"; echo; echo "key=$WANDB_API_KEY"; sleep 2`, "argv0"}, hostile...)...)
	cmd := exec.Command(tfhiveBin, args...)
	cmd.Env, cmd.Dir = append(f.Env(), "WANDB_API_KEY="+secret), f.Dir
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	// While the task runs, no command line on the machine shows the secret.
	sawTask := false
	var err error
poll:
	for {
		select {
		case err = <-done:
			break poll
		case <-time.After(50 * time.Millisecond):
		}
		ps, _ := exec.Command("ps", "-eo", "args").Output()
		if bytes.Contains(ps, []byte(secret)) {
			t.Errorf("the secret is visible in ps:\n%s", ps)
		}
		sawTask = sawTask || bytes.Contains(ps, []byte("argv0"))
	}
	if err != nil {
		t.Fatalf("run: %v\n%s", err, out.String())
	}
	if !sawTask {
		t.Error("never saw the task in ps: the check above proved nothing")
	}
	log, _ := os.ReadFile(filepath.Join(logDir, "worker-0.log"))
	var b strings.Builder
	for _, a := range want {
		b.WriteString("<" + a + ">")
	}
	wantContains(t, "worker log", string(log), b.String(), "key="+secret)
}

func TestRunManyLinesLossless(t *testing.T) {
	f := runFleet(t, "r1", "r2")
	const lines = 100000
	args, logDir := runArgs(t, f, "--workers", "8", "--gpus-per-worker", "0", "--", "seq", itoa(lines))
	r := tfhive(t, f.Env(), f.Dir, args...)
	wantCode(t, r, 0)
	wantNumberedLines(t, r.stdout, logDir, 8, lines)
}

// wantNumberedLines checks that each of the workers printed `seq lines`
// exactly once and in order: on the console (each line "[worker:I host]
// N") and in its log file.
func wantNumberedLines(t *testing.T, console, logDir string, workers, lines int) {
	t.Helper()
	perTask := map[string]int{}
	sc := bufio.NewScanner(strings.NewReader(console))
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, "[worker:") {
			continue
		}
		label, n, _ := strings.Cut(line, "] ")
		perTask[label]++
		if n != itoa(perTask[label]) {
			t.Fatalf("console: %s line %q out of order or twice (want %d)", label, n, perTask[label])
		}
	}
	if len(perTask) != workers {
		t.Fatalf("console shows %d tasks, want %d: %v", len(perTask), workers, perTask)
	}
	for label, n := range perTask {
		if n != lines {
			t.Errorf("console: %s has %d lines, want %d", label, n, lines)
		}
	}
	for i := 0; i < workers; i++ {
		data, err := os.ReadFile(filepath.Join(logDir, "worker-"+itoa(i)+".log"))
		if err != nil {
			t.Fatal(err)
		}
		got := strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
		if len(got) != lines {
			t.Fatalf("worker-%d.log: %d lines, want %d", i, len(got), lines)
		}
		for j, l := range got {
			if l != itoa(j+1) {
				t.Fatalf("worker-%d.log line %d is %q", i, j+1, l)
			}
		}
	}
}

func TestRunMoreTasksThanMaxSessions(t *testing.T) {
	t.Parallel() // beside others, on a fleet of its own (testing.md)
	f := runFleet(t, "solo")
	// 12 tasks at once on one host; sshd's default MaxSessions is 10. A
	// session each: --reconnect 0 (a kept run's start through the host's
	// multiplexer takes one, TestRunMuxOneLoginPerHost).
	args, logDir := runArgs(t, f, "--reconnect", "0", "--workers", "12", "--gpus-per-worker", "0", "--", "sh", "-c", "echo up; sleep 2")
	r := tfhive(t, f.Env(), f.Dir, args...)
	wantCode(t, r, 0)
	s := summaryOf(t, logDir)
	if len(s.Tasks) != 12 {
		t.Fatalf("%d tasks", len(s.Tasks))
	}
	for _, tr := range s.Tasks {
		if tr.Outcome != "exited" || *tr.ExitCode != 0 {
			t.Errorf("%s: %s", tr.ID, tr.Outcome)
		}
	}
	log, _ := os.ReadFile(filepath.Join(f.Host("solo").Dir, "sshd.log"))
	if n := strings.Count(string(log), "Accepted publickey"); n != 2 {
		t.Errorf("%d connections for 12 tasks, want 2 (one more only because of MaxSessions)", n)
	}
}

// A host's probe session goes on as its first task's supervisor (a
// session each: --reconnect 0) or as its multiplexer (a kept run): a host
// with two tasks sees two sessions, not three, or one. A host the plan
// leaves out gets its spare session ended before the tasks start, not at
// the end.
func TestRunReusesTheProbeSession(t *testing.T) {
	t.Parallel() // beside others, on a fleet of its own (testing.md)
	for _, c := range []struct {
		name  string
		flags []string
		s1    int
	}{{"session per task", []string{"--reconnect", "0"}, 2}, {"kept", nil, 1}} {
		t.Run(c.name, func(t *testing.T) { reusesTheProbeSession(t, c.flags, c.s1) })
	}
}

func reusesTheProbeSession(t *testing.T, flags []string, s1 int) {
	// Plain hosts: s1's tasks look at s2's processes.
	f := sshtest.StartOn(t, sshtest.Plain,
		sshtest.Profile{Name: "s1", GPU: "idle-2gpu.xml"},
		sshtest.Profile{Name: "s2", GPU: "idle-2gpu.xml"})
	for _, h := range f.Hosts {
		// bash, the login shell here, sources ~/.bashrc for every session
		// (and the tasks' shells do too: count only sshd's children).
		rc := `case $(cat /proc/$PPID/comm) in sshd*) echo "${BASH_EXECUTION_STRING:0:60}" >>"$TFHIVE_FAKE_GPU/sessions";; esac` + "\n"
		if err := os.WriteFile(filepath.Join(h.Home(), ".bashrc"), []byte(rc), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// Each task waits (5 s at most) until no process of s2's sessions is
	// left: s2's spare must end before the tasks start.
	idle := `for i in $(seq 50); do grep -qa "$0" /proc/[0-9]*/environ 2>/dev/null || exit 0; sleep 0.1; done; echo "s2 still has a session" >&2; exit 9`
	// --sample 0: no sampling session either (TestRunSamplesGPUUsage
	// counts the one it adds).
	args, logDir := runArgs(t, f, append(flags, "--workers", "2", "--strategy", "pack", "--sample", "0", "--", "sh", "-c", idle,
		"TFHIVE_FAKE_GPU="+filepath.Join(f.Host("s2").Dir, "gpu"))...)
	r := tfhive(t, f.Env(), f.Dir, args...)
	wantCode(t, r, 0)
	if s := summaryOf(t, logDir); len(s.Tasks) != 2 || s.Tasks[0].Host != "s1" || s.Tasks[1].Host != "s1" {
		t.Fatalf("tasks %+v, want both on s1", s.Tasks)
	}
	for host, want := range map[string]int{"s1": s1, "s2": 1} {
		b, _ := os.ReadFile(filepath.Join(f.Host(host).Dir, "gpu", "sessions"))
		if n := strings.Count(string(b), "\n"); n != want {
			t.Errorf("%s: %d sessions, want %d:\n%s", host, n, want, b)
		}
	}
	noLeftovers(t, f, 10*time.Second)
}

// startRun starts tfhive run in the background and waits until a task
// printed "started", so the tasks are running.
func startRun(t *testing.T, f *sshtest.Fleet, args ...string) (*exec.Cmd, *bytes.Buffer) {
	t.Helper()
	return startRunUntil(t, f, "started", args...)
}

// startRunUntil waits for a console line matching the regexp want.
func startRunUntil(t *testing.T, f *sshtest.Fleet, want string, args ...string) (*exec.Cmd, *bytes.Buffer) {
	t.Helper()
	re := regexp.MustCompile(want)
	r := startTfhive(t, f, readStdout, args...)
	if !r.readUntil(func(line string) bool { return strings.HasPrefix(line, "[") && re.MatchString(line) }) {
		r.Wait()
		t.Fatalf("tfhive ended before its tasks started: %s", r.other.String())
	}
	r.discardRest()
	return r.Cmd, &r.other
}

func TestRunInterrupted(t *testing.T) {
	f := runFleet(t, "r1", "r2")
	args, logDir := runArgs(t, f, "--ps", "1", "--workers", "2", "--gpus-per-worker", "0", "--", "sh", "-c", "echo started; exec sleep 60")
	cmd, errb := startRun(t, f, args...)
	cmd.Process.Signal(syscall.SIGINT)
	err := cmd.Wait()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 130 {
		t.Fatalf("exit %v, want 130\n%s", err, errb.String())
	}
	s := summaryOf(t, logDir)
	if s.Result != "interrupted" {
		t.Errorf("result %s", s.Result)
	}
	for _, tr := range s.Tasks {
		if tr.Outcome != "stopped" {
			t.Errorf("%s: %s", tr.ID, tr.Outcome)
		}
	}
	noLeftovers(t, f, 10*time.Second)
}

// With --reconnect 0, a supervisor lives and dies with its session:
// tfhive killed outright leaves nothing behind at once.
func TestRunKilledLeavesNothing(t *testing.T) {
	f := runFleet(t, "r1", "r2")
	args, _ := runArgs(t, f, "--ps", "1", "--workers", "2", "--gpus-per-worker", "0", "--reconnect", "0", "--", "sh", "-c", "echo started; exec sleep 300")
	cmd, _ := startRun(t, f, args...)
	if n := len(f.Host("r1").Leftovers()) + len(f.Host("r2").Leftovers()); n == 0 {
		t.Fatal("no task processes found on the hosts: the check below would prove nothing")
	}
	cmd.Process.Kill()
	cmd.Wait()
	noLeftovers(t, f, 10*time.Second)
}

// With --reconnect 0, a silent link loses its host at once, and the
// supervisors stop their tasks after the keepalive period.
func TestRunSilentLinkStopsTasks(t *testing.T) {
	t.Parallel() // beside others, on a fleet of its own (testing.md)
	f := sshtest.Start(t, sshtest.Profile{Name: "far", GPU: "idle-2gpu.xml", Proxied: true, AliveInterval: 1})
	args, logDir := runArgs(t, f, "--workers", "2", "--gpus-per-worker", "0", "--reconnect", "0", "--", "sh", "-c", "echo started; exec sleep 300")
	cmd, errb := startRun(t, f, args...)
	if len(f.Host("far").Leftovers()) == 0 {
		t.Fatal("no task processes on the host before the link went silent")
	}
	f.Host("far").Proxy.Pause()
	start := time.Now()
	err := cmd.Wait()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != record.ExitHostLost {
		t.Fatalf("exit %v, want %d (host lost)\n%s", err, record.ExitHostLost, errb.String())
	}
	if s := summaryOf(t, logDir); s.Tasks[0].Outcome != "lost" {
		t.Errorf("summary %+v", s.Tasks)
	}
	t.Logf("tfhive noticed the silent link after %s", time.Since(start))
	// With ServerAliveInterval 1 × 3, the supervisors stop their tasks
	// after about 3 s without a heartbeat; 60 s is the promise.
	noLeftovers(t, f, 60*time.Second)
}

// A host whose supervisor never answers (its login shell hangs, as on a
// stuck NFS home) is given up after the keepalive period instead of
// holding the run forever (10 s at least, as the period here is 3 s).
func TestRunSupervisorThatNeverAnswers(t *testing.T) {
	t.Parallel() // beside others, on a fleet of its own (testing.md)
	f := sshtest.Start(t, sshtest.Profile{Name: "mute", GPU: "idle-2gpu.xml", AliveInterval: 1})
	// The supervisor reads its script with dd: this one swallows stdin
	// instead, so the probe works and the supervisor never answers, and
	// it ends with the session (sshd, run as root here, may not signal it).
	// Its session is the probe's, handed over: logged in already, so the
	// no-answer clock runs from the start (a fresh session's runs from its
	// first byte: before it, its login shell may still be starting).
	dd := "#!/bin/sh\nexec cat >/dev/null\n"
	if err := os.WriteFile(filepath.Join(f.Host("mute").Dir, "bin", "dd"), []byte(dd), 0o755); err != nil {
		t.Fatal(err)
	}
	args, logDir := runArgs(t, f, "--workers", "1", "--gpus-per-worker", "0", "--", "echo", "never")
	start := time.Now()
	r := tfhive(t, f.Env(), f.Dir, args...)
	wantCode(t, r, record.ExitHostLost)
	wantContains(t, "stderr", r.stderr, "worker:0 on mute was lost: no answer from the host within 10s")
	if s := summaryOf(t, logDir); s.Tasks[0].Outcome != "lost" {
		t.Errorf("summary %+v", s.Tasks)
	}
	t.Logf("given up after %s", time.Since(start))
	noLeftovers(t, f, 10*time.Second)
}
