package launcher

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/tfhive/tfhive/launcher/lifecycle"
	"github.com/tfhive/tfhive/launcher/record"
	"github.com/tfhive/tfhive/launcher/view"
	"github.com/tfhive/tfhive/schedule/scheduletest"
)

// TestRunRelaunchedInProcess: a run that lost its worker's host, started
// again on a plan without it: the worker's next attempt is 1, its log
// keeps the first attempt's output, and the summary lists both attempts.
func TestRunRelaunchedInProcess(t *testing.T) {
	f := newFakeRun(t, scheduletest.TF("worker:0@h1"))
	f.o.Restart = lifecycle.Restart{Max: 1}
	f.host("h1").script("worker:0", runs(func(p *fakeProc) {
		p.out("attempt 0\n")
		p.lose()
	}))
	first, _ := f.mustRun(context.Background())
	wantSummary(t, first, record.ResultFailed, record.ExitHostLost, "worker:0 on h1 was lost: connection lost before the command finished",
		"worker:0 lost: connection lost before the command finished")
	lost, _, _, ok := lifecycle.Relaunchable(first, f.o.Restart)
	if !ok {
		t.Fatal("not relaunchable")
	}

	g := newFakeRun(t, scheduletest.TF("worker:0@h2"))
	g.o.LogDir, g.o.Restart = f.o.LogDir, f.o.Restart
	g.o.Relaunch = (*lifecycle.Relaunch)(nil).Carry(first, lost)
	g.host("h2").script("worker:0", attempting(0))
	sum, _ := g.mustRun(context.Background())
	wantSummary(t, sum, record.ResultSucceeded, 0, "every worker exited 0", "worker:0 exited 0")
	if !strings.Contains(g.proc("worker:0").runStage, "tfhive_attempt0=1") {
		t.Error("the relaunched task's first attempt is not 1")
	}
	if !sum.Started.Equal(first.Started) {
		t.Errorf("started %s, want the first start %s", sum.Started, first.Started)
	}
	w := sum.Tasks[0]
	if w.Host != "h2" {
		t.Errorf("host %s, want the last one", w.Host)
	}
	var got []string
	for _, a := range w.Attempts {
		got = append(got, fmt.Sprintf("%d %s %s %s", a.Attempt, a.Outcome, a.Host, a.Restart))
	}
	if want := "0 lost h1 host lost: re-planned without h1|1 exited  "; strings.Join(got, "|") != want {
		t.Errorf("attempts %q, want %q", strings.Join(got, "|"), want)
	}
	if log, _ := os.ReadFile(w.Log); string(log) != "attempt 0\nout 1" {
		t.Errorf("log %q", log)
	}
	var table bytes.Buffer
	view.WriteSummary(&table, sum)
	wantLines(t, "summary", table.String(), "restart: worker:0 on h1: attempt 1 lost after ", "; host lost: re-planned without h1\n")
}
