package e2e

import (
	"os"
	"strings"
	"testing"

	"github.com/tfhive/tfhive/launcher"
)

// attemptsOf is a task's attempts as "N:outcome:code:why" words.
func attemptsOf(tr launcher.TaskResult) []string {
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

func wantAttempts(t *testing.T, tr launcher.TaskResult, want ...string) {
	t.Helper()
	if got := attemptsOf(tr); strings.Join(got, " | ") != strings.Join(want, " | ") {
		t.Errorf("%s attempts:\n got %q\nwant %q", tr.ID, got, want)
	}
}

// TestRestartAlwaysFailing: --restarts 2 runs a failing task three times,
// each seeing its TFHIVE_ATTEMPT, then fails with its code; kept or not.
func TestRestartAlwaysFailing(t *testing.T) {
	for _, mode := range []string{"kept", "reconnect-0"} {
		t.Run(mode, func(t *testing.T) {
			f := runFleet(t, "a1")
			extra := []string{"--restarts", "2", "--restart-backoff", "100ms", "--workers", "1", "--gpus-per-worker", "0"}
			if mode != "kept" {
				extra = append(extra, "--reconnect", "0")
			}
			args, logDir := runArgs(t, f, append(extra, "--", "sh", "-c", `printf 'attempt %s' "$TFHIVE_ATTEMPT"; exit 3`)...)
			r := tfhive(t, f.Env(), f.Dir, args...)
			wantCode(t, r, 3)
			s := summaryOf(t, logDir)
			tr := taskByID(s, "worker:0")
			wantAttempts(t, tr, "0:exited:3:restarted every task", "1:exited:3:restarted every task", "2:exited:3:")
			log, _ := os.ReadFile(tr.Log)
			// The attempt lines are taken out, after a partial line too.
			if string(log) != "attempt 0attempt 1attempt 2" {
				t.Errorf("log %q", log)
			}
			wantContains(t, "summary", r.stdout, "ATTEMPTS", "restart: worker:0 on a1: attempt 0 exited 3 after", "restart: worker:0 on a1: attempt 1 exited 3 after")
			if strings.Contains(r.stdout+r.stderr, "@@tfhive-attempt") {
				t.Errorf("an attempt line leaked:\n%s\n%s", r.stdout, r.stderr)
			}
			noLeftovers(t, f, 10e9)
		})
	}
}
