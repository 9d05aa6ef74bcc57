package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tfhive/tfhive/launcher/record"
	"github.com/tfhive/tfhive/probe/sshtest"
)

// halfAndHalf is a worker that prints lines 1 to n/2, waits for the
// file named by its last argument, then prints the rest: the test cuts
// the link between the halves, while the worker still has output to
// give.
const halfAndHalf = `if [ "$3" = ps ]; then exec sleep 300; fi
n=$1; h=$((n / 2)); seq 1 "$h"; while [ ! -e "$2" ]; do sleep 0.05; done; seq $((h + 1)) "$n"`

// linkCut is one way a link fails mid-run, and how it comes back.
type linkCut struct {
	name string
	cut  func(p *sshtest.Proxy)
	heal func(p *sshtest.Proxy)
}

// A link that fails mid-run and comes back within --reconnect: the run
// succeeds, and every worker's numbered lines appear exactly once and in
// order, on the console and in the log files.
func TestRunReconnects(t *testing.T) {
	for _, c := range []linkCut{
		// Silent for 30 s (a laptop asleep, a VPN down): keepalives go
		// unanswered after 3 s, and redials hang until it is back.
		{"silent", func(p *sshtest.Proxy) { p.Pause() }, func(p *sshtest.Proxy) { time.Sleep(30 * time.Second); p.Resume() }},
		// Reset (a NAT that forgot the connection): redialled at once.
		{"reset", func(p *sshtest.Proxy) { p.Reset() }, func(p *sshtest.Proxy) {}},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			testReconnect(t, c)
		})
	}
}

func testReconnect(t *testing.T, c linkCut) {
	const workers, lines = 4, 50000
	f := sshtest.Start(t,
		sshtest.Profile{Name: "far", GPU: "idle-2gpu.xml", AliveInterval: 1, Proxied: true},
		sshtest.Profile{Name: "near", GPU: "idle-2gpu.xml", AliveInterval: 1})
	flag := filepath.Join(t.TempDir(), "second-half")
	// A parameter server on the far host, to be stopped over its new
	// session once the workers are done.
	args, logDir := runArgs(t, f, "--ps", "1", "--workers", itoa(workers), "--gpus-per-worker", "1", "--reconnect", "2m",
		"--", "sh", "-c", halfAndHalf, "task", itoa(lines), flag, "{job_name}")
	r := startTfhive(t, f, readStdout, args...)
	// Every worker has printed its first half: cut the link, then let the
	// workers go on while it is down.
	half := map[string]bool{}
	if !r.readUntil(func(line string) bool {
		if label, n, ok := strings.Cut(line, "] "); ok && n == itoa(lines/2) {
			half[label] = true
		}
		return len(half) == workers
	}) {
		r.Wait()
		t.Fatalf("tfhive ended before every worker printed its first half: %s", r.other.String())
	}
	far := f.Host("far").Proxy
	c.cut(far)
	if err := os.WriteFile(flag, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	c.heal(far)
	r.readAll()
	err := r.Wait()
	if err != nil {
		t.Fatalf("tfhive: %v\nstderr:\n%s", err, r.other.String())
	}
	wantContains(t, "console", r.read.String(), "tfhive: lost the connection to far")
	wantContains(t, "console", r.read.String(), "tfhive: far is back after")

	wantNumberedLines(t, r.read.String(), logDir, workers, lines)
	s := summaryOf(t, logDir)
	if h := taskByID(s, "ps:0").Host; h != "far" {
		t.Errorf("ps:0 ran on %s: the test means it to be stopped over the far host's new session", h)
	}
	for _, tr := range s.Tasks {
		want := "exited"
		if tr.Role == "ps" {
			want = "stopped"
		}
		if tr.Outcome != want || tr.ExitCode == nil || (want == "exited" && *tr.ExitCode != 0) {
			t.Errorf("%s on %s: %s %v: %s, want %s", tr.ID, tr.Host, tr.Outcome, tr.ExitCode, tr.Error, want)
		}
	}
	noLeftovers(t, f, 10*time.Second)
}

// A link gone for longer than --reconnect: the host is lost (exit 4), and
// its supervisors, hearing from no tfhive, stop their tasks within
// --reconnect plus the keepalive period (3 s here).
func TestRunLinkGoneLongerThanReconnect(t *testing.T) {
	t.Parallel() // beside others, on a fleet of its own (testing.md)
	f := sshtest.Start(t, sshtest.Profile{Name: "far", GPU: "idle-2gpu.xml", Proxied: true, AliveInterval: 1})
	args, logDir := runArgs(t, f, "--workers", "2", "--gpus-per-worker", "0", "--reconnect", "3s",
		"--", "sh", "-c", "echo started; exec sleep 300")
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
	s := summaryOf(t, logDir)
	for _, tr := range s.Tasks {
		if tr.Outcome != "lost" || !strings.HasPrefix(tr.Error, "no connection for 3s") {
			t.Errorf("%s: %s: %s", tr.ID, tr.Outcome, tr.Error)
		}
	}
	t.Logf("tfhive gave up after %s", time.Since(start))
	// The promise is --reconnect plus the keepalive period (6 s), counted
	// from the last heartbeat: 30 s leaves room for a loaded machine.
	noLeftovers(t, f, 30*time.Second)
}

// tfhive killed outright leaves kept tasks running only until their
// supervisors have heard from nobody for --reconnect plus the keepalive
// period.
func TestRunKilledKeptTasksStop(t *testing.T) {
	t.Parallel() // beside others, on a fleet of its own (testing.md)
	f := runFleet(t, "k1")
	args, _ := runArgs(t, f, "--workers", "2", "--gpus-per-worker", "0", "--reconnect", "2s",
		"--", "sh", "-c", "echo started; exec sleep 300")
	cmd, _ := startRun(t, f, args...)
	cmd.Process.Kill()
	cmd.Wait()
	if len(f.Host("k1").Leftovers()) == 0 {
		t.Fatal("the tasks ended with tfhive's connection: they were not kept")
	}
	noLeftovers(t, f, 30*time.Second)
}
