package e2e

import (
	"strings"
	"testing"
	"time"
)

// Tasks tfhive stopped once the run was decided read "stopped" in the
// summary table however each took its SIGTERM (died of it: 143; a
// handler's exit 0 or a code of its own); summary.json keeps each code.
func TestRunStoppedOutcomeOneText(t *testing.T) {
	f := runFleet(t, "o1", "o2")
	args, logDir := runArgs(t, f, "--ps", "1", "--workers", "3", "--gpus-per-worker", "0", "--", "bash", "-c", `
		case $TFHIVE_TASK in
		worker:1) exit 7 ;;
		worker:0) trap 'exit 0' TERM ;;
		worker:2) trap 'exit 9' TERM ;;
		esac
		echo started; sleep 60 & wait`)
	r := tfhive(t, f.Env(), f.Dir, args...)
	wantCode(t, r, 7)
	s := summaryOf(t, logDir)
	codes := map[string]int{"ps:0": 143, "worker:0": 0, "worker:2": 9}
	for id, want := range codes {
		tr := taskByID(s, id)
		if tr.Outcome != "stopped" || tr.ExitCode == nil || *tr.ExitCode != want {
			t.Errorf("summary.json %s: %+v, want stopped with code %d", id, tr, want)
		}
	}
	outcomes := map[string]string{}
	for _, line := range strings.Split(r.stdout, "\n") {
		if c := splitCols(line); len(c) >= 5 && (c[0] == "ps" || c[0] == "worker") {
			outcomes[c[0]+":"+c[1]] = c[4]
		}
	}
	for id := range codes {
		if outcomes[id] != "stopped" {
			t.Errorf("%s's OUTCOME %q, want stopped:\n%s", id, outcomes[id], r.stdout)
		}
	}
	if outcomes["worker:1"] != "exited 7" {
		t.Errorf("worker:1's OUTCOME %q, want exited 7:\n%s", outcomes["worker:1"], r.stdout)
	}
	noLeftovers(t, f, 10*time.Second)
}
