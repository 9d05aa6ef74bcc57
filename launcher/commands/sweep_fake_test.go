package commands

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tfhive/tfhive/launcher/record"
	"github.com/tfhive/tfhive/launcher/rundir"
)

// A sweep on fake hosts runs every trial of its grid as a run of its own
// (tfhive-runs/SWEEP-NNN), its parameters in the command and the
// environment, and prints the table of results, sorted by a captured
// metric; the sweep's record and every trial's console stay.
func TestSweepOnFakeHosts(t *testing.T) {
	b := twoHosts(t)
	t.Chdir(b.dir)
	var o out
	j := fakeJob("sw", 1, `echo "n={N} env=$N acc=0.$N"`)
	j.GPUsPerWorker = 1
	ro := b.runOptions(o.streams(), j)
	ro.LogDir, ro.JSON = "", true
	ro.Capture = []string{`acc=acc=([0-9.]+)`}
	err := Sweep(context.Background(), SweepOptions{Run: ro, Params: []string{"N=1,3,2"}, Sort: "acc", Reverse: true})
	if err != nil {
		t.Fatalf("sweep: %v\n%s", err, o.stderr.String())
	}
	var tab struct {
		Trials []struct {
			RunID   string `json:"run_id"`
			Result  string
			Metrics map[string]string
		}
	}
	if err := json.Unmarshal(o.stdout.Bytes(), &tab); err != nil || len(tab.Trials) != 3 {
		t.Fatalf("--json: %v\n%s", err, o.stdout.String())
	}
	var order []string
	for _, tr := range tab.Trials {
		order = append(order, tr.RunID+"="+tr.Metrics["acc"])
		if tr.Result != record.ResultSucceeded {
			t.Errorf("trial %+v", tr)
		}
	}
	if got := strings.Join(order, " "); got != "sw-002=0.3 sw-003=0.2 sw-001=0.1" {
		t.Errorf("sorted by acc, highest first: %s\n%s", got, o.stdout.String())
	}
	for i, n := range []string{"1", "3", "2"} {
		id := "sw-00" + string(rune('1'+i))
		log, _ := os.ReadFile(filepath.Join(rundir.Path(id), rundir.Console))
		contains(t, id+"'s console", string(log), "n="+n+" env="+n, "run "+id+" succeeded")
		if s := summary(t, rundir.Path(id)); s.Result != record.ResultSucceeded {
			t.Errorf("%s: %+v", id, s)
		}
	}
	if _, err := os.Stat(filepath.Join(rundir.Path("sw"), rundir.Sweep)); err != nil {
		t.Error(err)
	}
	contains(t, "stderr", o.stderr.String(), "tfhive: sweep sw: 3 trials, 3 at a time", "tfhive: trial sw-001 started (N=1)", "tfhive: trial sw-003 succeeded in")
}

// A failing trial fails the sweep (exit 1, the table says which), and
// --max-failures stops it from starting more.
func TestSweepFailureOnFakeHosts(t *testing.T) {
	b := twoHosts(t)
	t.Chdir(b.dir)
	var o out
	j := fakeJob("swf", 1, `if [ "$N" = 2 ]; then echo bad >&2; exit 9; fi; echo ok`)
	ro := b.runOptions(o.streams(), j)
	ro.LogDir = ""
	err := Sweep(context.Background(), SweepOptions{Run: ro, Params: []string{"N=1,2,3,4"}, MaxParallel: 1, MaxFailures: 1})
	sf := errAs[*SweepFailedError](t, err)
	if sf.Total != 4 || sf.Failed != 3 || !sf.Stopped {
		t.Errorf("%+v: one failed, two never started, stopped early", sf)
	}
	contains(t, "stdout", o.stdout.String(), "swf-001", "succeeded", "swf-002", "failed")
	contains(t, "stderr", o.stderr.String(), "tfhive: trial swf-002 failed in", "exit 9: worker:0 on a exited 9")
}
