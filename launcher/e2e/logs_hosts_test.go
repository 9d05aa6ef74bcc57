package e2e

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// tfhive logs -H, from a second "machine" (another HOME, no log dir of
// the run): one task's stdout and stderr followed from the hosts until it
// ends, then every task's output, each line prefixed as on the console;
// an unknown run or task is exit 1 naming the hosts searched, -f without
// --task exit 2.
func TestLogsFromHosts(t *testing.T) {
	t.Parallel() // beside others, on a fleet of its own (testing.md)
	f := runFleet(t, "l1", "l2")
	flag := filepath.Join(t.TempDir(), "go-on")
	script := `seq 1 300; echo "err $1" >&2; while [ ! -e "$2" ]; do sleep 0.05; done; seq 301 600`
	args, logDir := runArgs(t, f, "--detach", "--workers", "2", "--gpus-per-worker", "2",
		"--", "sh", "-c", script, "worker", "{task_index}", flag)
	r := tfhive(t, f.Env(), f.Dir, args...)
	wantCode(t, r, 0)
	id := strings.TrimSpace(r.stdout)

	home2 := t.TempDir()
	env2 := append(f.Env(), "HOME="+home2)
	hosts := []string{"--hosts", f.HostsYAML, "--ssh-config", f.SSHConfig}
	logs := func(args ...string) result {
		return tfhive(t, env2, home2, append(append([]string{"logs"}, hosts...), args...)...)
	}

	follow := func(task string) *running {
		fl := &running{Cmd: exec.Command(tfhiveBin, append(append([]string{"logs"}, hosts...), "-f", "--task", task, id)...)}
		fl.Env, fl.Dir = env2, home2
		fl.Stderr = &fl.other
		pipe, err := fl.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := fl.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { fl.Process.Kill(); fl.Wait() })
		fl.lines = bufio.NewScanner(pipe)
		if !fl.readUntil(func(line string) bool { return line == "300" }) {
			fl.Wait()
			t.Fatalf("logs -f did not show %s's first lines: %s", task, fl.other.String())
		}
		return fl
	}

	// Interrupted while it follows: its tails on the host go with it.
	// The keeper's session follows worker:0 (on l1, or l2) through the
	// host's multiplexer, whose one tail follows all the host's files:
	// none is worker:0's alone.
	out0 := filepath.Join(hostRunDir(f.Host("l1"), id), "worker-0.out")
	if _, err := os.Stat(out0); err != nil {
		out0 = filepath.Join(hostRunDir(f.Host("l2"), id), "worker-0.out")
	}
	if n := tailsOf(out0); n != 0 {
		t.Errorf("%d tails of worker:0's output alone before logs -f, want 0 (the multiplexer's follows it)", n)
	}
	fl := follow("worker:0")
	if n := tailsOf(out0); n != 1 {
		t.Errorf("%d tails of worker:0's output while logs -f follows it, want 1", n)
	}
	fl.Process.Signal(syscall.SIGINT)
	fl.Wait()
	waitFor(t, 30*time.Second, "logs -f's tail to go", func() bool { return tailsOf(out0) == 0 })

	// Followed while the task runs: from its first line to its last.
	fl = follow("worker:1")
	if err := os.WriteFile(flag, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	fl.readAll()
	if err := fl.Wait(); err != nil {
		t.Fatalf("logs -f: %v\n%s", err, fl.other.String())
	}
	if got, want := fl.read.String(), numbered(1, 600); got != want {
		t.Errorf("logs -f --task worker:1: %d bytes, want 1..600 once each, in order", len(got))
	}
	if fl.other.String() != "err 1\n" {
		t.Errorf("logs -f --task worker:1's stderr: %q, want the task's stderr alone", fl.other.String())
	}
	wantCode(t, tfhive(t, f.Env(), f.Dir, "wait", "--log-dir", logDir, id), 0)

	// Every task, run over: task by task, stdout then stderr, prefixed.
	all := logs(id)
	wantCode(t, all, 0)
	sum := summaryOf(t, logDir)
	for _, task := range []string{"worker:0", "worker:1"} {
		// Each task once, under the host it ran on (a home shared by the
		// hosts holds each host's files apart).
		var got []string
		host := taskByID(sum, task).Host
		for _, line := range strings.Split(all.stdout, "\n") {
			if strings.HasPrefix(line, "["+task+" ") {
				prefix, text, _ := strings.Cut(line, "] ")
				if prefix != "["+task+" "+host {
					t.Errorf("logs %s: a line of %s under %s, not %s", id, task, prefix, host)
				}
				got = append(got, text)
			}
		}
		want := strings.Split(numbered(1, 600)+"err "+task[len("worker:"):], "\n")
		if strings.Join(got, "\n") != strings.Join(want, "\n") {
			t.Errorf("logs %s: %d lines of %s, want 1..600 then its stderr line", id, len(got), task)
		}
	}
	// One task, over: the same, stdout and stderr apart.
	one := logs("--task", "worker:0", id)
	wantCode(t, one, 0)
	if one.stdout != numbered(1, 600) || one.stderr != "err 0\n" {
		t.Errorf("logs --task worker:0: %d bytes of stdout, stderr %q", len(one.stdout), one.stderr)
	}

	nr := logs("nosuchrun")
	wantCode(t, nr, 1)
	wantContains(t, "stderr", nr.stderr, "tfhive: error: no run nosuchrun on l1, l2\n")
	nt := logs("--task", "worker:7", id)
	wantCode(t, nt, 1)
	wantContains(t, "stderr", nt.stderr, "tfhive: error: run "+id+" has no task worker:7 on l1, l2\n")
	u := logs("-f", id)
	wantCode(t, u, 2)
	wantContains(t, "stderr", u.stderr, "tfhive: error: logs -f with -H or --hosts follows one task")
	noLeftovers(t, f, 10*time.Second)
}

// tailsOf counts the tail processes following file.
func tailsOf(file string) int {
	n := 0
	procs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, p := range procs {
		args, err := os.ReadFile(p)
		if err == nil && strings.HasPrefix(string(args), "tail\x00") && strings.HasSuffix(string(args), "\x00"+file+"\x00") {
			n++
		}
	}
	return n
}

// numbered is the lines from..to, each ending in "\n".
func numbered(from, to int) string {
	var b strings.Builder
	for i := from; i <= to; i++ {
		b.WriteString(strconv.Itoa(i) + "\n")
	}
	return b.String()
}
