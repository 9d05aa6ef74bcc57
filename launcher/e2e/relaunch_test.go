package e2e

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/tfhive/tfhive/launcher/record"
	"github.com/tfhive/tfhive/probe/sshtest"
	"github.com/tfhive/tfhive/schedule"
)

// proxiedFleet is runFleet's, each host behind a proxy (goesDown).
func proxiedFleet(t *testing.T, names ...string) *sshtest.Fleet {
	var ps []sshtest.Profile
	for _, n := range names {
		ps = append(ps, sshtest.Profile{Name: n, GPU: "idle-2gpu.xml", AliveInterval: 1, Proxied: true})
	}
	return sshtest.Start(t, ps...)
}

// goesDown takes h off the network, then ends what runs on it: a host
// that loses power. The proxy goes first, so that no last word (a
// task's status as it is killed) reaches tfhive.
func goesDown(h *sshtest.Host) {
	h.Proxy.Close()
	h.Stop()
}

// TestRestartLostHostReplanned: the worker's host goes down; with
// --restarts the run is planned again without it and the worker runs
// its next attempt on the spare host, in the foreground (--reconnect 0:
// lost at once) and detached (the keeper, after --reconnect's window).
func TestRestartLostHostReplanned(t *testing.T) {
	t.Parallel() // beside others, on a fleet of its own (testing.md)
	for _, mode := range []string{"reconnect-0", "detached"} {
		t.Run(mode, func(t *testing.T) {
			f := proxiedFleet(t, "l1", "l2")
			extra := []string{"--restarts", "1", "--restart-backoff", "100ms", "--workers", "1", "--gpus-per-worker", "1"}
			if mode == "detached" {
				extra = append(extra, "--detach", "--reconnect", "2s")
			} else {
				extra = append(extra, "--reconnect", "0")
			}
			args, logDir := runArgs(t, f, append(extra, "--", "sh", "-c",
				`echo "attempt $TFHIVE_ATTEMPT on $1"; [ "$TFHIVE_ATTEMPT" != 0 ] || exec sleep 300`, "task", "{host}")...)
			var console string
			var code int
			first := ""
			lost := func() {
				first = readJSON[schedule.Plan](t, logDir, "plan.json").Tasks[0].Host
				goesDown(f.Host(first))
			}
			if mode == "detached" {
				r := tfhive(t, f.Env(), f.Dir, args...)
				wantCode(t, r, 0)
				id := strings.TrimSpace(r.stdout)
				waitFor(t, 60*time.Second, "the first attempt's output", func() bool {
					log, _ := os.ReadFile(filepath.Join(logDir, "worker-0.log"))
					return strings.Contains(string(log), "attempt 0 on")
				})
				lost()
				w := tfhive(t, f.Env(), f.Dir, "wait", "--log-dir", logDir, id)
				code = w.code
				for _, name := range []string{"console.log", "keeper.log"} {
					data, _ := os.ReadFile(filepath.Join(logDir, name))
					console += string(data)
				}
			} else {
				r := startTfhive(t, f, readStdout, args...)
				if !r.readUntil(func(line string) bool { return strings.Contains(line, "attempt 0 on") }) {
					r.Wait()
					t.Fatalf("no first attempt:\n%s%s", r.read.String(), r.other.String())
				}
				lost()
				r.readAll()
				r.Wait()
				code, console = r.ProcessState.ExitCode(), r.read.String()+r.other.String()
			}
			if code != 0 {
				t.Fatalf("exit %d, want 0:\n%s", code, console)
			}
			second := map[string]string{"l1": "l2", "l2": "l1"}[first]
			wantContains(t, "console", console, "tfhive: warning: "+first+" not used: lost during the run",
				"tfhive: lost "+first+"; re-planning without it and restarting every task in 100ms (attempt 2 of 2)",
				"restart: worker:0 on "+first+": attempt 1 lost after ", "; host lost: re-planned without "+first+"\n")
			s := summaryOf(t, logDir)
			tr := taskByID(s, "worker:0")
			if s.Result != record.ResultSucceeded || tr.Host != second {
				t.Errorf("result %s, worker:0 on %s, want succeeded on %s", s.Result, tr.Host, second)
			}
			wantAttempts(t, tr, "0:lost:-:host lost: re-planned without "+first, "1:exited:0:")
			if tr.Attempts[0].Host != first {
				t.Errorf("the first attempt ran on %q, want %s", tr.Attempts[0].Host, first)
			}
			// Both attempts' output: the relaunch appends.
			if log, _ := os.ReadFile(tr.Log); string(log) != "attempt 0 on "+first+"\nattempt 1 on "+second+"\n" {
				t.Errorf("log %q", log)
			}
			noLeftovers(t, f, 10*time.Second)
		})
	}
}

// TestRestartLostHostDoesNotFit: the rest cannot hold the request: the
// run fails as without --restarts (exit 4), saying the re-plan did not
// fit.
func TestRestartLostHostDoesNotFit(t *testing.T) {
	t.Parallel() // beside others, on a fleet of its own (testing.md)
	f := proxiedFleet(t, "n1", "n2")
	args, logDir := runArgs(t, f, "--restarts", "1", "--restart-backoff", "100ms", "--reconnect", "0",
		"--workers", "2", "--gpus-per-worker", "2", "--", "sh", "-c", `echo "running on $1"; exec sleep 300`, "task", "{host}")
	r := startTfhive(t, f, readStdout, args...)
	if !r.readUntil(func(line string) bool { return strings.Contains(line, "running on n2") }) {
		r.Wait()
		t.Fatalf("worker:1 never ran on n2:\n%s%s", r.read.String(), r.other.String())
	}
	goesDown(f.Host("n2"))
	r.readAll()
	r.Wait()
	console := r.read.String() + r.other.String()
	if code := r.ProcessState.ExitCode(); code != record.ExitHostLost {
		t.Fatalf("exit %d, want %d:\n%s", code, record.ExitHostLost, console)
	}
	if !regexp.MustCompile(`(?m)^tfhive: re-plan without n2 did not fit: not enough free GPUs: asked 4 .*, found 2$`).MatchString(console) {
		t.Errorf("no line saying the re-plan did not fit:\n%s", console)
	}
	wantContains(t, "console", console, "run "+summaryOf(t, logDir).RunID+" failed: worker:1 on n2 was lost")
	s := summaryOf(t, logDir)
	if s.ExitCode != record.ExitHostLost {
		t.Errorf("summary.json exit %d", s.ExitCode)
	}
	wantAttempts(t, taskByID(s, "worker:1"), "0:lost:-:")
	noLeftovers(t, f, 10*time.Second)
}
