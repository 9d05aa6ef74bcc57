package e2e

import (
	"strings"
	"syscall"
	"testing"
	"time"
)

// Tasks tfhive stopped once the run was decided read "stopped" in the
// summary table however each took its SIGTERM (died of it: 143; a
// handler's exit 0 or a code of its own); summary.json keeps each code.
// The run is decided by Ctrl-C once every task has its handler in place.
func TestRunStoppedOutcomeOneText(t *testing.T) {
	f := runFleet(t, "o1", "o2")
	args, logDir := runArgs(t, f, "--ps", "1", "--workers", "2", "--gpus-per-worker", "0", "--", "bash", "-c", `
		case $TFHIVE_TASK in
		worker:0) trap 'exit 0' TERM ;;
		worker:1) trap 'exit 9' TERM ;;
		esac
		echo started; sleep 300 & wait`)
	r := startTfhive(t, f, readStdout, args...)
	started := 0
	if !r.readUntil(func(line string) bool {
		if strings.HasPrefix(line, "[") && strings.HasSuffix(line, "] started") {
			started++
		}
		return started == 3
	}) {
		r.Wait()
		t.Fatalf("tfhive ended before its tasks started:\n%s%s", r.read.String(), r.other.String())
	}
	r.Process.Signal(syscall.SIGINT)
	r.readAll()
	r.Wait()
	if code := r.ProcessState.ExitCode(); code != 130 {
		t.Fatalf("exit %d, want 130:\n%s%s", code, r.read.String(), r.other.String())
	}
	s := summaryOf(t, logDir)
	codes := map[string]int{"ps:0": 143, "worker:0": 0, "worker:1": 9}
	for id, want := range codes {
		tr := taskByID(s, id)
		if tr.Outcome != "stopped" || tr.ExitCode == nil || *tr.ExitCode != want {
			t.Errorf("summary.json %s: %+v, want stopped with code %d", id, tr, want)
		}
	}
	outcomes := map[string]string{}
	for _, line := range strings.Split(r.read.String(), "\n") {
		if c := splitCols(line); len(c) >= 5 && (c[0] == "ps" || c[0] == "worker") {
			outcomes[c[0]+":"+c[1]] = c[4]
		}
	}
	for id := range codes {
		if outcomes[id] != "stopped" {
			t.Errorf("%s's OUTCOME %q, want stopped:\n%s", id, outcomes[id], r.read.String())
		}
	}
	noLeftovers(t, f, 10*time.Second)
}

// A failed run's summary shows why: the deciding task's last lines on
// stderr, behind "  | ", its control bytes inert; summary.json keeps
// them (last_lines). Before, one had to open its log to learn that it
// "did not converge".
func TestRunSummaryShowsWhy(t *testing.T) {
	t.Parallel() // beside others, on a fleet of its own (testing.md)
	f := runFleet(t, "w1")
	script := `if [ "$TFHIVE_TASK" = worker:1 ]; then printf 'step 1\n\nTraceback (most recent call last):\nValueError: did not converge \033[31m\n' >&2; exit 7; fi; exec sleep 30`
	args, logDir := runArgs(t, f, "--workers", "2", "--gpus-per-worker", "0", "--", "sh", "-c", script)
	r := tfhive(t, f.Env(), f.Dir, args...)
	wantCode(t, r, 7)
	wantContains(t, "summary", r.stdout, "worker:1's last lines on stderr (all of it: ",
		"\n  | step 1\n  | Traceback (most recent call last):\n  | ValueError: did not converge ^[[31m\n")
	s := summaryOf(t, logDir)
	if len(s.Tasks) == 0 || s.Tasks[0].ID != "worker:1" || len(s.Tasks[0].LastLines) != 3 || len(s.Tasks[1].LastLines) != 0 {
		t.Errorf("summary.json's tasks: %+v", s.Tasks)
	}
}
