package e2e

import (
	"strings"
	"testing"
)

// A task's exit 2, 3 or 7 is not tfhive's usage, no-GPU or hung exit:
// the run exits 1, saying the task's own code; --json and summary.json name the
// deciding task with it. A code tfhive does not keep passes through, to
// run and wait alike.
func TestTaskExitCodesNeverCollide(t *testing.T) {
	t.Parallel() // beside others, on a fleet of its own (testing.md)
	f := runFleet(t, "x1")
	usage := tfhive(t, f.Env(), f.Dir, "run", "--no-such-flag")
	wantCode(t, usage, 2)
	args, _ := runArgs(t, f, "--workers", "9", "--gpus-per-worker", "1", "--", "true")
	wantCode(t, tfhive(t, f.Env(), f.Dir, args...), 3)

	for code, want := range map[string]int{"2": 1, "3": 1, "7": 1, "9": 9} {
		args, logDir := runArgs(t, f, "--json", "--workers", "2", "--gpus-per-worker", "0",
			"--", "sh", "-c", `[ "$1" = 1 ] && exit $2; sleep 30`, "worker", "{task_index}", code)
		r := tfhive(t, f.Env(), f.Dir, args...)
		wantCode(t, r, want)
		reason := "worker:1 on x1 exited " + code
		if want != 9 {
			reason += ", one of tfhive's own codes"
		}
		wantContains(t, "stderr", r.stderr, "failed: "+reason+"\n")
		s := summaryOf(t, logDir)
		if s.ExitCode != want || s.Reason != reason || len(s.Tasks) == 0 || s.Tasks[0].ID != "worker:1" ||
			s.Tasks[0].ExitCode == nil || itoa(*s.Tasks[0].ExitCode) != code {
			t.Errorf("task exit %s: summary exit %d, reason %q, tasks %+v", code, s.ExitCode, s.Reason, s.Tasks)
		}
		wantContains(t, "--json", r.stdout, `"exit_code": `+itoa(want)+",", `"id": "worker:1"`, `"exit_code": `+code+",")
	}

	// Detached, wait says the same.
	args, logDir := runArgs(t, f, "--detach", "--workers", "1", "--gpus-per-worker", "0", "--", "sh", "-c", "sleep 0.5; exit 3")
	r := tfhive(t, f.Env(), f.Dir, args...)
	wantCode(t, r, 0)
	id := strings.TrimSpace(r.stdout)
	w := tfhive(t, f.Env(), f.Dir, "wait", "--log-dir", logDir, id)
	wantCode(t, w, 1)
	wantContains(t, "wait's stderr", w.stderr, "failed: worker:0 on x1 exited 3, one of tfhive's own codes")
}

// A command that is not on the host, or a script its interpreter would
// not find, is one plain line in the task's output naming it and where
// the task looked; tfhive gives the hint once a run, however many tasks
// met it (before, the 230-character hint ended every task's line); the
// run exits 127, as a shell would.
func TestTaskNotFoundIsOneLine(t *testing.T) {
	t.Parallel() // beside others, on a fleet of its own (testing.md)
	f := runFleet(t, "n1")
	for _, tt := range []struct {
		argv []string
		line string
	}{
		{[]string{"nosuchcmd", "--flag"}, "] tfhive: nosuchcmd: command not found in /"},
		{[]string{"python3", "-u", "nosuch.py"}, "] tfhive: python3: script nosuch.py not found in /"},
		{[]string{"sh", "nosuch.sh"}, "] tfhive: sh: script nosuch.sh not found in /"},
	} {
		args, _ := runArgs(t, f, append([]string{"--workers", "3", "--gpus-per-worker", "0", "--"}, tt.argv...)...)
		r := tfhive(t, f.Env(), f.Dir, args...)
		if tt.argv[0] == "python3" && strings.Contains(r.stdout+r.stderr, "python3: command not found") {
			continue // no python3 on the bed's host: the command line has it
		}
		wantCode(t, r, 127)
		all := r.stdout + r.stderr
		wantContains(t, "output", all, tt.line, "\ntfhive: hint: ", "--sync DIR sends your code",
			"workdir: in the hosts file", " exited 127")
		if n := strings.Count(all, "tfhive: hint: "); n != 1 {
			t.Errorf("%q: the hint %d times, want once a run:\n%s", tt.argv, n, all)
		}
		for _, leak := range []string{"exec:", "tfhive-task", "can't open file", "No such file"} {
			if strings.Contains(all, leak) {
				t.Errorf("%q: output has %q:\n%s", tt.argv, leak, all)
			}
		}
		// One line per task that met it (the others may be stopped first).
		if n := strings.Count(all, "] tfhive: "+tt.argv[0]+": "); n < 1 || n > 3 {
			t.Errorf("%q: %d not-found lines, want one per task:\n%s", tt.argv, n, all)
		}
	}
}
