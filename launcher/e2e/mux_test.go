package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/tfhive/tfhive/probe/sshtest"
)

// A kept run starts all of a host's tasks through its multiplexer, in the
// probe's session: 8 tasks on a host cost that host one login, and each
// task's output comes back whole, stdout and stderr apart. No variable of
// the scripts' own (tfhive_…, as the one the multiplexer passes its
// supervisors) reaches a task's environment, and a task has SIGINT and
// SIGQUIT as they should be, not ignored (--stop-signal SIGINT,
// KeyboardInterrupt).
func TestRunMuxOneLoginPerHost(t *testing.T) {
	t.Parallel() // beside others, on a fleet of its own (testing.md)
	f := sshtest.Start(t, sshtest.Profile{Name: "solo", GPU: "idle-2gpu.xml", AliveInterval: 1})
	script := `echo "out of $TF_CONFIG_TASK"; echo "scripts' variables: $(env | grep -c '^tfhive_')"; echo "ignored: $(sed -n 's/^SigIgn:[[:space:]]*//p' /proc/self/status)"; i=0; while [ $i -lt 300 ]; do echo "line $i"; i=$((i+1)); done; printf 'err\n' >&2; printf 'no newline'`
	args, logDir := runArgs(t, f, "--workers", "8", "--gpus-per-worker", "0", "--sample", "0", "--", "sh", "-c", script)
	r := tfhive(t, f.Env(), f.Dir, args...)
	wantCode(t, r, 0)
	s := summaryOf(t, logDir)
	if len(s.Tasks) != 8 {
		t.Fatalf("%d tasks", len(s.Tasks))
	}
	for _, tr := range s.Tasks {
		if tr.Outcome != "exited" || tr.ExitCode == nil || *tr.ExitCode != 0 {
			t.Errorf("%s: %s %s", tr.ID, tr.Outcome, tr.Error)
		}
		log := readFile(t, tr.Log)
		for i := range 300 {
			if !strings.Contains(log, fmt.Sprintf("line %d\n", i)) {
				t.Errorf("%s: line %d missing from its log:\n%s", tr.ID, i, log)
				break
			}
		}
		if !strings.Contains(log, "scripts' variables: 0\n") {
			t.Errorf("%s: a variable of the scripts' own reached the task:\n%.300s", tr.ID, log)
		}
		if m := regexp.MustCompile(`ignored: ([0-9a-f]+)\n`).FindStringSubmatch(log); m == nil {
			t.Errorf("%s: no signal mask in its log:\n%.300s", tr.ID, log)
		} else if ign, _ := strconv.ParseUint(m[1], 16, 64); ign&(1<<(2-1)|1<<(3-1)) != 0 {
			t.Errorf("%s: the task has SIGINT or SIGQUIT ignored (SigIgn %s)", tr.ID, m[1])
		}
		if !strings.Contains(log, "err") || !strings.Contains(log, "no newline") {
			t.Errorf("%s: its log lacks stderr or its last bytes:\n%.300s", tr.ID, log)
		}
	}
	if n := f.Host("solo").Sessions(); n != 1 {
		t.Errorf("%d logins for 8 tasks on one host, want 1", n)
	}
	if _, err := os.Stat(filepath.Join(f.Host("solo").Home(), ".tfhive")); err != nil {
		t.Errorf("no run directory: %v", err)
	}
}
