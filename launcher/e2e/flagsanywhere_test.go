package e2e

import (
	"strings"
	"testing"
	"time"
)

// The binary reads flags after the run id as before it (`logs RUN
// --task X` is `logs --task X RUN`), leaves what follows "--" to the
// task, and without a run id logs and wait take the latest run of
// tfhive-runs, naming it on stderr.
func TestLogsFlagsAnywhereAndLatest(t *testing.T) {
	f := runFleet(t, "d1")
	job := []string{"--workers", "1", "--gpus-per-worker", "0", "--grace", "2s"}
	// e1, in the foreground: its task's words after "--" are its own,
	// --task and --workers included.
	r := tfhive(t, f.Env(), f.Dir, fleetArgs(f, append(append([]string{"run", "--name", "e1"}, job...),
		"--", "sh", "-c", `echo one "$@"`, "sh", "--task", "x", "--workers", "3")...)...)
	wantCode(t, r, 0)
	wantContains(t, "e1's output", r.stdout, "one --task x --workers 3")

	same := func(what string, a, b []string) result {
		t.Helper()
		ra, rb := tfhive(t, f.Env(), f.Dir, a...), tfhive(t, f.Env(), f.Dir, b...)
		wantCode(t, ra, 0)
		wantCode(t, rb, 0)
		if ra.stdout != rb.stdout || ra.stderr != rb.stderr {
			t.Errorf("%s: %q gave\n%s%s\n%q gave\n%s%s", what, a, ra.stdout, ra.stderr, b, rb.stdout, rb.stderr)
		}
		return ra
	}
	l := same("logs --task", []string{"logs", "e1", "--task", "worker:0"}, []string{"logs", "--task", "worker:0", "e1"})
	if l.stdout != "one --task x --workers 3\n" || l.stderr != "" {
		t.Errorf("logs e1 --task worker:0: stdout %q, stderr %q", l.stdout, l.stderr)
	}
	same("logs --task=", []string{"logs", "e1", "--task=worker:0"}, []string{"logs", "--task=worker:0", "e1"})
	bad := tfhive(t, f.Env(), f.Dir, "logs", "e1", "--task")
	wantCode(t, bad, 2)
	if !strings.HasPrefix(bad.stderr, "tfhive: error: flag --task needs a value\n") {
		t.Errorf("logs e1 --task: stderr %q", bad.stderr)
	}
	unknown := tfhive(t, f.Env(), f.Dir, "logs", "e1", "--tsak", "worker:0")
	wantCode(t, unknown, 2)
	if unknown.stderr != "tfhive: error: flag provided but not defined: -tsak\ntfhive: hint: did you mean --task?\n" {
		t.Errorf("logs e1 --tsak: stderr %q", unknown.stderr)
	}

	// e2, detached, started after e1: the latest.
	time.Sleep(10 * time.Millisecond)
	r = tfhive(t, f.Env(), f.Dir, fleetArgs(f, append(append([]string{"run", "--detach", "--name", "e2"}, job...),
		"--", "sh", "-c", "sleep 0.5; echo two; exit 9")...)...)
	wantCode(t, r, 0)
	w := tfhive(t, f.Env(), f.Dir, "wait")
	wantCode(t, w, 9)
	if !strings.HasPrefix(w.stderr, "tfhive: waiting for e2 (the latest)\n") || w.stdout != "" {
		t.Errorf("wait: stdout %q, stderr %q", w.stdout, w.stderr)
	}
	named, latest := tfhive(t, f.Env(), f.Dir, "logs", "e2"), tfhive(t, f.Env(), f.Dir, "logs")
	wantCode(t, latest, 0)
	if latest.stdout != named.stdout || !strings.Contains(latest.stdout, "two") || latest.stderr != "tfhive: logs of e2 (the latest)\n" {
		t.Errorf("logs: stdout %q (logs e2: %q), stderr %q", latest.stdout, named.stdout, latest.stderr)
	}
	latest = tfhive(t, f.Env(), f.Dir, "logs", "--task", "worker:0")
	wantCode(t, latest, 0)
	if latest.stdout != "two\n" || latest.stderr != "tfhive: logs of e2 (the latest)\n" {
		t.Errorf("logs --task worker:0: stdout %q, stderr %q", latest.stdout, latest.stderr)
	}
	noLeftovers(t, f, 10*time.Second)
}
