package e2e

import (
	"encoding/json"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/tfhive/tfhive/launcher/view"
)

// `tfhive runs` says what each run ran: COMMAND, last, the command line
// as given (placeholders unfilled), quoted as a shell takes it back,
// whole off a terminal (cut with the line on one: view's width.go), as
// --json has it.
func TestRunsCommandColumn(t *testing.T) {
	t.Parallel() // beside others, on a fleet of its own (testing.md)
	f := runFleet(t, "c1")
	root := t.TempDir()
	long := []string{"sh", "-c", "echo {run_id} is a run with a command longer than the column", "ignored"}
	for name, argv := range map[string][]string{"short": {"true"}, "long": long} {
		r := tfhive(t, f.Env(), f.Dir, fleetArgs(f, append([]string{"run", "--log-dir", filepath.Join(root, name), "--name", name,
			"--workers", "1", "--gpus-per-worker", "0", "--"}, argv...)...)...)
		wantCode(t, r, 0)
	}
	r := tfhive(t, f.Env(), f.Dir, "runs", "--log-root", root)
	wantCode(t, r, 0)
	got := map[string]string{}
	lines := strings.Split(strings.TrimSuffix(r.stdout, "\n"), "\n")
	if h := splitCols(lines[0]); h[len(h)-1] != "COMMAND" {
		t.Fatalf("runs:\n%s", r.stdout)
	}
	for _, line := range lines[1:] {
		c := splitCols(line)
		got[c[0]] = c[len(c)-1]
	}
	if got["short"] != "true" || got["long"] != "sh -c 'echo {run_id} is a run with a command longer than the column' ignored" {
		t.Errorf("COMMAND %q:\n%s", got, r.stdout)
	}
	r = tfhive(t, f.Env(), f.Dir, "runs", "--log-root", root, "--json")
	wantCode(t, r, 0)
	var list struct{ Runs []view.RunRecord }
	if err := json.Unmarshal([]byte(r.stdout), &list); err != nil {
		t.Fatal(err)
	}
	for _, run := range list.Runs {
		if want := map[string][]string{"short": {"true"}, "long": long}[run.RunID]; !slices.Equal(run.Command, want) {
			t.Errorf("runs --json: %s's command %q, want %q", run.RunID, run.Command, want)
		}
	}
}
