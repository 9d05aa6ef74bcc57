package e2e

import (
	"path/filepath"
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
	script := `if [ "$TFHIVE_TASK" = worker:1 ]; then printf 'step 1\n\nTraceback (most recent call last):\nValueError: did not converge \033[31m\n' >&2; exit 8; fi; exec sleep 30`
	args, logDir := runArgs(t, f, "--workers", "2", "--gpus-per-worker", "0", "--", "sh", "-c", script)
	r := tfhive(t, f.Env(), f.Dir, args...)
	wantCode(t, r, 8)
	wantContains(t, "summary", r.stdout, "worker:1's last lines on stderr (all of it: ",
		"\n  | step 1\n  | Traceback (most recent call last):\n  | ValueError: did not converge ^[[31m\n")
	s := summaryOf(t, logDir)
	if len(s.Tasks) == 0 || s.Tasks[0].ID != "worker:1" || len(s.Tasks[0].LastLines) != 3 || len(s.Tasks[1].LastLines) != 0 {
		t.Errorf("summary.json's tasks: %+v", s.Tasks)
	}
}

// Two tasks that fail at the same moment each say what they did: the
// second's end came as tfhive stopped the run for the first's, but its
// supervisor passed no signal on (the task had ended), so it is "exited
// 3", not "stopped". The two meet at a FIFO (worker:0 reads, worker:1
// writes: both opens return together), then exit 3. Before, the one
// whose end was heard second read "stopped". Kept (--reconnect: through
// the host's multiplexer and the status file) and not.
func TestRunTwoFailingTogetherKeepTheirExits(t *testing.T) {
	f := runFleet(t, "o1", "o2")
	for _, c := range []struct {
		name string
		args []string
	}{{"foreground", nil}, {"kept", []string{"--reconnect", "30s"}}} {
		t.Run(c.name, func(t *testing.T) {
			fifo := filepath.Join(f.Dir, "meet-"+c.name)
			if err := syscall.Mkfifo(fifo, 0o666); err != nil {
				t.Fatal(err)
			}
			script := `if [ "$TFHIVE_TASK" = worker:0 ]; then cat "$1" >/dev/null; else : >"$1"; fi; exit 3`
			args, logDir := runArgs(t, f, append(c.args, "--workers", "2", "--gpus-per-worker", "0", "--", "sh", "-c", script, "meet", fifo)...)
			r := tfhive(t, f.Env(), f.Dir, args...)
			wantCode(t, r, 1)
			s := summaryOf(t, logDir)
			for _, id := range []string{"worker:0", "worker:1"} {
				if tr := taskByID(s, id); tr.Outcome != "exited" || tr.ExitCode == nil || *tr.ExitCode != 3 {
					t.Errorf("summary.json %s: %+v, want exited 3\n%s", id, tr, r.stdout)
				}
			}
			rows := 0
			for _, line := range strings.Split(r.stdout, "\n") {
				if c := splitCols(line); len(c) >= 5 && c[0] == "worker" {
					rows++
					if c[4] != "exited 3" {
						t.Errorf("worker:%s's OUTCOME %q, want exited 3:\n%s", c[1], c[4], r.stdout)
					}
				}
			}
			if rows != 2 {
				t.Errorf("%d worker rows in the summary, want 2:\n%s", rows, r.stdout)
			}
		})
	}
}
