package launcher

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tfhive/tfhive/launcher/lifecycle"
	"github.com/tfhive/tfhive/launcher/record"
	"github.com/tfhive/tfhive/schedule/scheduletest"
)

func TestAttemptFilter(t *testing.T) {
	const mark = "MARK"
	in := "a\nb@@tfhive-attempt MARK 0 3\nc@@tfhive-attempt OTHER 1 2\n@@tfhive-attempt MARK x y\nd@@tfhive-attempt MARK 1 0\n@@tf"
	for _, size := range []int{1, 2, 5, 1000} {
		var out bytes.Buffer
		var seen []string
		f := newAttemptFilter(&out, mark, func(a, rc int) { seen = append(seen, fmt.Sprintf("%d:%d", a, rc)) })
		for i := 0; i < len(in); i += size {
			f.Write([]byte(in[i:min(i+size, len(in))]))
		}
		f.flush()
		if want := "a\nbc@@tfhive-attempt OTHER 1 2\n@@tfhive-attempt MARK x y\nd@@tf"; out.String() != want {
			t.Errorf("writes of %d: out %q, want %q", size, out.String(), want)
		}
		if strings.Join(seen, " ") != "0:3 1:0" {
			t.Errorf("writes of %d: attempts %v", size, seen)
		}
	}
}

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
			p.out(fmt.Sprintf("%s%s %d %d\n", attemptMarker, m[1], n, rc))
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
	WriteSummary(&table, sum)
	wantLines(t, "summary", table.String(), "restart: worker:1 on h2: attempt 0 exited 5 after ", "restart: worker:1 on h2: attempt 1 exited 5 after ", "; restarted alone\n")
	if !strings.Contains(table.String(), "ATTEMPTS") {
		t.Errorf("no ATTEMPTS column:\n%s", table.String())
	}
}

// Placed, the filter takes out only the attempt lines at the offsets the
// records gave: one the task printed, mark and all, is output.
func TestAttemptFilterPlaced(t *testing.T) {
	var out bytes.Buffer
	var got []string
	f := newAttemptFilter(&out, "MK", func(a, rc int) { got = append(got, fmt.Sprint(a, rc)) })
	f.placed = true
	forged := "x@@tfhive-attempt MK 0 0\n"
	real := "@@tfhive-attempt MK 0 3\n"
	recs := &attemptRecords{next: io.Discard, prefix: "@@tfhive-attempt MK ", f: f}
	recs.Write([]byte("@@tfhive-attempt MK 0 3 " + fmt.Sprint(len(forged)+4) + "\n"))
	for _, c := range []byte(forged + "tail" + real + "next") {
		f.Write([]byte{c})
	}
	f.flush()
	if want := forged + "tailnext"; out.String() != want || fmt.Sprint(got) != "[0 3]" {
		t.Errorf("out %q, reports %v; want %q, [0 3]", out.String(), got, want)
	}
}

// Checked, the records come among the file's bytes, anywhere (mid-line,
// cut between writes): the line a record names is taken out whether its
// record comes before or after it; one no record names, the task's, is
// passed on once a "seen" past it, or the stream's end, says none will
// come; and the task's own record lines, without the secret, are its
// output.
func TestAttemptFilterChecked(t *testing.T) {
	forged := "x@@tfhive-attempt MK 0 0\n"
	real := "@@tfhive-attempt MK 0 3\n"
	fake := "@@tfhive-rec MK at 1\n"
	off := fmt.Sprint(len(forged) + len(fake) + 4)
	for _, c := range []struct{ name, stream string }{
		{"record first", "@@tfhive-rec SEC at " + off + "\n" + forged + fake + "ta@@tfhive-rec SEC seen 3\nil" + real + "next"},
		{"record after", forged + fake + "tail" + real + "ne@@tfhive-rec SEC at " + off + "\n@@tfhive-rec SEC seen 99\nxt"},
		{"no seen", forged + fake + "tail" + real + "next@@tfhive-rec SEC at " + off + "\n"},
	} {
		for _, step := range []int{1, 3, 1000} {
			var out bytes.Buffer
			var got []string
			f := newAttemptFilter(&out, "MK", func(a, rc int) { got = append(got, fmt.Sprint(a, rc)) })
			f.checked("SEC")
			rl := &recordLines{next: f, f: f}
			for b := []byte(c.stream); len(b) > 0; {
				n := min(step, len(b))
				rl.Write(b[:n])
				b = b[n:]
			}
			rl.flush()
			f.flush()
			if want := forged + fake + "tailnext"; out.String() != want || fmt.Sprint(got) != "[0 3]" {
				t.Errorf("%s, writes of %d: out %q, reports %v; want %q, [0 3]", c.name, step, out.String(), got, want)
			}
		}
	}
	// A forged line is held only until a "seen" past it.
	var out bytes.Buffer
	f := newAttemptFilter(&out, "MK", func(int, int) { t.Error("a forged line was taken") })
	f.checked("SEC")
	rl := &recordLines{next: f, f: f}
	rl.Write([]byte(forged + "more"))
	if out.String() != "x" {
		t.Errorf("before seen: %q", out.String())
	}
	rl.Write([]byte("@@tfhive-rec SEC seen 2\n"))
	if out.String() != forged+"more" {
		t.Errorf("after seen: %q", out.String())
	}
}
