package launcher

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tfhive/tfhive/launcher/lifecycle"
	"github.com/tfhive/tfhive/launcher/record"
	"github.com/tfhive/tfhive/launcher/supervisor"
	"github.com/tfhive/tfhive/launcher/view"
	"github.com/tfhive/tfhive/schedule/scheduletest"
)

// attempting plays a supervisor with restarts: attempt n writes
// "out n" and ends with codes[n] (the last code for later ones), then
// waits for "r" or "e" as supervisor-run.sh does; "t"/"k" during an
// attempt end it 143/137.
func attempting(codes ...int) fakeScript {
	return runs(func(p *fakeProc) {
		m := regexp.MustCompile(`tfhive_mark='?([A-Za-z0-9]+)`).FindStringSubmatch(p.runStage)
		if m == nil || !strings.Contains(p.runStage, "tfhive_restarts=1") {
			p.out("no mark or no restarts in the task stage\n")
			p.exit(99)
			return
		}
		first := 0
		if a := regexp.MustCompile(`tfhive_attempt0='?([0-9]+)`).FindStringSubmatch(p.runStage); a != nil {
			first, _ = strconv.Atoi(a[1])
		}
		for n := first; ; n++ {
			rc := codes[min(n-first, len(codes)-1)]
			p.out(fmt.Sprintf("out %d", n))
			p.out(fmt.Sprintf("%s%s %d %d\n", supervisor.AttemptMarker, m[1], n, rc))
			for {
				switch l := p.next(); l {
				case fmt.Sprintf("r %d", n+1):
				case "e", "":
					p.exit(rc)
					return
				default:
					continue
				}
				break
			}
		}
	})
}

func TestRunRestartsInProcess(t *testing.T) {
	plan := scheduletest.TF("ps:0@h1", "worker:0@h1", "worker:1@h2")
	plan.Cluster.PS = []string{plan.Tasks[0].Address}
	f := newFakeRun(t, plan)
	f.o.Restart = lifecycle.Restart{Max: 2, Backoff: time.Millisecond}
	f.host("h1").script("worker:0", attempting(0))
	f.host("h2").script("worker:1", attempting(5, 5, 0))
	f.host("h1").script("ps:0", runs(untilStopped))
	sum, console := f.mustRun(context.Background())
	wantSummary(t, sum, record.ResultSucceeded, 0, "every worker exited 0", "ps:0 stopped 143", "worker:0 exited 0", "worker:1 exited 0")
	wantLines(t, "console", console,
		"tfhive: worker:1 on h2 exited 5; restarting it in 1ms (attempt 2 of 3)",
		"tfhive: worker:1 on h2 exited 5; restarting it in 2ms (attempt 3 of 3)")
	var w1 record.TaskResult
	for _, tr := range sum.Tasks {
		if tr.ID == "worker:1" {
			w1 = tr
		}
	}
	var got []string
	for _, a := range w1.Attempts {
		got = append(got, fmt.Sprintf("%d %s %d %s", a.Attempt, a.Outcome, *a.ExitCode, a.Restart))
	}
	if want := "0 exited 5 restarted alone|1 exited 5 restarted alone|2 exited 0 "; strings.Join(got, "|") != want {
		t.Errorf("worker:1 attempts %q, want %q", strings.Join(got, "|"), want)
	}
	if log, _ := os.ReadFile(w1.Log); string(log) != "out 0out 1out 2" {
		t.Errorf("worker:1 log %q", log)
	}
	if lines := strings.Join(f.proc("worker:1").sawLines(), ","); !strings.Contains(lines, "r 1,") || !strings.Contains(lines, "r 2,") {
		t.Errorf("worker:1 got %q, want r 1 and r 2", lines)
	}
	var table bytes.Buffer
	view.WriteSummary(&table, sum)
	wantLines(t, "summary", table.String(), "restart: worker:1 on h2: attempt 1 exited 5 after ", "restart: worker:1 on h2: attempt 2 exited 5 after ", "; restarted alone\n")
	if !strings.Contains(table.String(), "ATTEMPTS") {
		t.Errorf("no ATTEMPTS column:\n%s", table.String())
	}
}
