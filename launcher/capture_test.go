package launcher

import (
	"bytes"
	"context"
	"maps"
	"math/rand"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tfhive/tfhive/launcher/record"
	"github.com/tfhive/tfhive/launcher/rundir"
	"github.com/tfhive/tfhive/launcher/view"
	"github.com/tfhive/tfhive/schedule/scheduletest"
)

func mustCaptures(t testing.TB, specs ...string) *Captures {
	t.Helper()
	c, err := ParseCaptures(specs)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestParseCapturesRefuses(t *testing.T) {
	for _, c := range []struct {
		specs []string
		want  string
	}{
		{[]string{"loss"}, `--capture "loss": want NAME=REGEX, as loss=loss ([0-9.e+-]+)`},
		{[]string{"1x=(a)"}, `--capture "1x=(a)": "1x" is not a plain name (letters, digits and _, not starting with a digit, at most 64)`},
		{[]string{"=(a)"}, `--capture "=(a)": "" is not a plain name (letters, digits and _, not starting with a digit, at most 64)`},
		{[]string{"a.b=(a)"}, `--capture "a.b=(a)": "a.b" is not a plain name (letters, digits and _, not starting with a digit, at most 64)`},
		{[]string{"loss=loss ([0-9]+"}, "--capture loss: error parsing regexp: missing closing ): `loss ([0-9]+`"},
		{[]string{"loss=loss [0-9]+"}, `--capture loss: "loss [0-9]+" has no group: put what to record in parentheses, as loss=([0-9.]+)`},
		{[]string{"loss=(?:x)"}, `--capture loss: "(?:x)" has no group: put what to record in parentheses, as loss=([0-9.]+)`},
		{[]string{"loss=a(b)", "acc=(c)", "loss=(d)"}, `--capture loss given twice`},
	} {
		_, err := ParseCaptures(c.specs)
		if err == nil || err.Error() != c.want {
			t.Errorf("%q: %v, want %s", c.specs, err, c.want)
		}
	}
	c := mustCaptures(t, "loss=loss=([0-9.]+)", "acc=acc=(a)=(b)")
	if got := c.Names(); strings.Join(got, ",") != "loss,acc" {
		t.Errorf("names %q", got)
	}
	if got := c.Regexes(); got["loss"] != "loss=([0-9.]+)" || got["acc"] != "acc=(a)=(b)" {
		t.Errorf("regexes %q", got)
	}
}

func TestRequiredLiteral(t *testing.T) {
	for expr, want := range map[string]string{
		`loss=([0-9.]+)`:               "loss=",
		`^step \d+ loss ([0-9.e+-]+)$`: " loss ",
		`(val_loss): (\S+)`:            "val_loss",
		`(?i)loss ([0-9]+)`:            "",
		`loss|acc=(\d)`:                "",
		`(?:abc)+(x)`:                  "abc",
		`(?:abc)*(x)`:                  "x",
		`(?:abc){2,3}(\d)`:             "abc",
		`(?:abc){0,3}(\d)`:             "",
		`a\nb(c)`:                      "c",
		`(\x{FFFD})`:                   "",
		`([0-9]+)`:                     "",
		`é=(\d)`:                       "é=",
	} {
		c := mustCaptures(t, "m="+expr)
		if got := string(c.List[0].lit); got != want {
			t.Errorf("%s: literal %q, want %q", expr, got, want)
		}
	}
}

// refCapture is what --capture promises, the slow way: every line of
// every stream, in the order its end arrives, each matched whole.
type refCapture struct {
	caps []Capture
	vals map[string]string
	part [2]string
}

func (r *refCapture) line(l string) {
	if l == "" {
		return
	}
	for _, cp := range r.caps {
		ms := cp.Re.FindAllStringSubmatchIndex(l, -1)
		for j := len(ms) - 1; j >= 0; j-- {
			if ms[j][2] >= 0 {
				r.vals[cp.Name] = l[ms[j][2]:ms[j][3]]
				break
			}
		}
	}
}

func (r *refCapture) write(stream int, p string) {
	s := r.part[stream] + p
	for {
		i := strings.IndexAny(s, "\r\n")
		if i < 0 {
			break
		}
		r.line(s[:i])
		s = s[i+1:]
	}
	r.part[stream] = s
}

func (r *refCapture) flush() map[string]string {
	r.line(r.part[0])
	r.line(r.part[1])
	if len(r.vals) == 0 {
		return nil
	}
	return r.vals
}

// The matching across arbitrary splits of the output into writes, both
// streams interleaved, gives what matching every line whole gives.
func TestCaptureMatchesLinesAcrossSplits(t *testing.T) {
	c := mustCaptures(t,
		`loss=loss ([0-9.e-]+)`,        // a literal to look for first
		`any=(?i)LOSS[ =]([0-9.e-]+)`,  // none: every line goes to the regexp
		`step=^step (\d+)`,             // ^ is the line's start
		`tail=([a-z]+)$`,               // $ is its end, at "\r" or "\n"
		`crlf=^eol (\w+)$`,             // "\r\n" ends one line
		`acc=acc=(\d+)?%`,              // a match whose group takes no part is no value
		`two=(a)|(b)`,                  // nor is one of another group
		`alt=(?:loss (\d)|acc=(\d))`,   // likewise
		`twice=x(\d)`,                  // the last match in a line
		`x=(x)x`,                       // overlapping
		`last=@@([^@]*)@@`,             // an empty value counts
		`emptygrp=()x`,                 // likewise
		`empty=^()$`,                   // an empty line is never matched
		`whole=^(.*)$`,                 // so this is the last non-empty line
		`uni=é([0-9]+)`,                // a multi-byte literal
		`fold=(?i)é(\d)`,               // folded
		`cut=(?:zz)+(\d)`,              // a literal under a repeat
		`o=o{2}(\d)`,                   // a counted one
		`bad=(\x{FFFD}+)`,              // invalid UTF-8 matches U+FFFD
		`colour=\x1b\[1m(\w+)\x1b\[0m`, // the log's bytes, colours and all
		`frame=^\s*(\d+)%\|`,           // a progress bar's frames: every one
		`nul=\x00(\d)`,                 // a NUL byte
		`r=\r(x)`,                      // a line end never is inside a line
		`n=a\nb(c)`,                    // likewise
		`k=(?s)k(.*)`,                  // (?s) changes nothing in a line
		`m=(?m)^m(\d)$`,                // nor does (?m)
		`p=(?U)p(\d+)`,                 // ungreedy
		`e=(?:e|f)(\d)`,                // no single literal
		`boundary=\b(\d+)\b`,
		`digits=(\d+)`,
		`never=neverprinted (\d)`,
	)
	vocab := []string{
		"step 12 loss 0.5", "step 13 loss 1e-3 and loss 2e-3", "LOSS=7", "loss nan", "acc=%", "acc=91%",
		"xx1 x2 x3", "@@@@", "@@v@@", "é42", "zzzz7", "eol one", "eol two", "   x", "ACC", "\xff\xfe",
		"\x1b[1mbold\x1b[0m", "123", strings.Repeat("abcdef", 10), "ab", " 10%|###", " 55%|#####", "7/100",
		"\x001", "xxx", "yyy", "zz", "ww w", "q1q q2q", "vvv", "e1 f2", "k rest", "m5", "oo3", "p123",
		"☺4", "-5-", "{6}", ".7.", `"w"`, "/s/", "+8+", "#9#", ";1;", ":2:", ",3,", "|4|", "!5!", "&6&",
		"%7%", "^8^", "~9~", "@1@", "*2*", "(3)", "[4]", "<5>", "=6=", "?7?", `\8\`, "'9'", "`1`",
		" 2 ", "val_LOSS=3", "a12b a3b", "pre4post", "5post", "word 66 x", "ΑΒΓ=1", "!1!", "ababab1",
		"ababx", "abc", "c", "aabb2", "b", "a", "12345", "\x072", "\U0010FFFF3", "4v",
	}
	ends := []string{"\n", "\n", "\n", "\r", "\r\n", "\n\n", ""}
	rng := rand.New(rand.NewSource(1))
	for iter := range 300 {
		var streams [2][]byte
		for s := range streams {
			for range rng.Intn(40) {
				streams[s] = append(streams[s], vocab[rng.Intn(len(vocab))]...)
				streams[s] = append(streams[s], ends[rng.Intn(len(ends))]...)
			}
		}
		got := newTaskCapture(c, nil)
		ref := &refCapture{caps: c.List, vals: map[string]string{}}
		for len(streams[0])+len(streams[1]) > 0 {
			s := rng.Intn(2)
			if len(streams[s]) == 0 {
				s = 1 - s
			}
			n := 1 + rng.Intn(min(len(streams[s]), 1+rng.Intn(200)))
			got.write(s, streams[s][:n])
			ref.write(s, string(streams[s][:n]))
			streams[s] = streams[s][n:]
		}
		got.flush()
		if g, w := got.metrics(), ref.flush(); !maps.Equal(g, w) {
			for k := range c.Regexes() {
				if g[k] != w[k] {
					t.Errorf("iteration %d: %s = %q, want %q", iter, k, g[k], w[k])
				}
			}
			t.FailNow()
		}
	}
}

// A line longer than the console's cut is matched in pieces of that
// size; a value is kept up to captureMaxValue bytes.
func TestCaptureLongLines(t *testing.T) {
	c := mustCaptures(t, "loss=loss=([0-9.]+)", "all=^(x+)")
	tc := newTaskCapture(c, nil)
	long := strings.Repeat("x", 3*outMaxLine)
	tc.write(0, []byte("loss=1\n"+long[:10]))
	for i := 10; i < len(long); i += 1000 {
		tc.write(0, []byte(long[i:min(i+1000, len(long))]))
	}
	tc.write(0, []byte("loss=2")) // the end of the long line's last piece
	tc.flush()
	m := tc.metrics()
	if m["loss"] != "2" || m["all"] != strings.Repeat("x", captureMaxValue) {
		t.Errorf("loss %q, all %d bytes", m["loss"], len(m["all"]))
	}
	// Cut at a UTF-8 boundary.
	tc = newTaskCapture(mustCaptures(t, "v=v(.*)"), nil)
	tc.write(1, []byte("v"+strings.Repeat("a", captureMaxValue-1)+"é\n"))
	if v := tc.metrics()["v"]; len(v) != captureMaxValue-1 || !strings.HasSuffix(v, "a") {
		t.Errorf("value of %d bytes, ending %q", len(v), v[len(v)-3:])
	}
}

func TestRunMetricsChoosesTheDecidingTaskThenChiefThenWorker0(t *testing.T) {
	tasks := func(ids ...string) []record.TaskResult {
		var ts []record.TaskResult
		for _, id := range ids {
			id, vals, _ := strings.Cut(id, " ")
			tr := record.TaskResult{ID: id}
			for _, kv := range strings.Fields(vals) {
				k, v, _ := strings.Cut(kv, "=")
				if tr.Metrics == nil {
					tr.Metrics = map[string]string{}
				}
				tr.Metrics[k] = v
			}
			ts = append(ts, tr)
		}
		return ts
	}
	for _, c := range []struct {
		name    string
		tasks   []record.TaskResult
		decided bool
		want    map[string]string
	}{
		{"the deciding task", tasks("worker:1 loss=1", "ps:0", "worker:0 loss=0 acc=9"), true, map[string]string{"loss": "1", "acc": "9"}},
		{"the chief", tasks("ps:0 loss=p", "chief:0 loss=c", "worker:0 loss=0"), false, map[string]string{"loss": "c"}},
		{"the chief, the deciding task having none", tasks("ps:0", "chief:0 loss=c", "worker:0 loss=0"), true, map[string]string{"loss": "c"}},
		{"worker 0", tasks("ps:0 loss=p", "worker:1 loss=1", "worker:0 loss=0"), false, map[string]string{"loss": "0"}},
		{"then plan order", tasks("ps:0 loss=p", "worker:1 acc=1", "worker:2 acc=2", "evaluator:0 acc=e"), false, map[string]string{"loss": "p", "acc": "1"}},
		{"nothing", tasks("worker:0", "worker:1"), true, nil},
		{"no tasks", nil, true, nil},
	} {
		if got := RunMetrics(c.tasks, c.decided); !maps.Equal(got, c.want) {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
	}
}

// A run with --capture: each task's values in its summary, the run's from
// the deciding task, a final line without newline and stderr included;
// --capture-from leaves the other tasks alone.
func TestRunCaptures(t *testing.T) {
	f := newFakeRun(t, scheduletest.TF("ps:0@h1", "worker:0@h1", "worker:1@h2"))
	f.o.Captures = mustCaptures(t, "loss=loss ([0-9.]+)", "acc=acc=(\\d+)", "lr=lr (\\S+)")
	done0 := make(chan struct{})
	f.host("h1").script("worker:0", runs(func(p *fakeProc) {
		p.out("step 1 loss 0.9\nstep 2 lo")
		p.errOut("acc=12\n")
		p.out("ss 0.5\nlr 0.1")
		p.exit(0)
		close(done0)
	}))
	f.host("h2").script("worker:1", runs(func(p *fakeProc) {
		<-done0
		p.out("loss 0.7\nacc=3\rdiverged")
		p.exit(3)
	}))
	s, _ := f.mustRun(context.Background())
	// worker:0's exit may reach the runner after worker:1's failure, which
	// then stops it: "stopped 0" as well as "exited 0"; its values count
	// either way.
	if w0 := s.Tasks[len(s.Tasks)-1]; w0.ID == "worker:0" && w0.Outcome == record.OutcomeStopped {
		s.Tasks[len(s.Tasks)-1].Outcome = record.OutcomeExited
	}
	wantSummary(t, s, record.ResultFailed, 1, "worker:1 on h2 exited 3, one of tfhive's own codes", "worker:1 exited 3", "ps:0 stopped 143", "worker:0 exited 0")
	for id, want := range map[string]map[string]string{
		"worker:1": {"loss": "0.7", "acc": "3"},
		"ps:0":     nil,
		"worker:0": {"loss": "0.5", "acc": "12", "lr": "0.1"},
	} {
		for _, tr := range s.Tasks {
			if tr.ID == id && !maps.Equal(tr.Metrics, want) {
				t.Errorf("%s: %v, want %v", id, tr.Metrics, want)
			}
		}
	}
	if want := map[string]string{"loss": "0.7", "acc": "3", "lr": "0.1"}; !maps.Equal(s.Metrics, want) {
		t.Errorf("run metrics %v, want %v", s.Metrics, want)
	}
	if s.Captures["loss"] != "loss ([0-9.]+)" || len(s.Captures) != 3 {
		t.Errorf("captures %v", s.Captures)
	}
	var buf bytes.Buffer
	view.WriteSummary(&buf, s)
	wantLines(t, "summary", buf.String(), "codes (exit 1)\nmetrics: acc=3 loss=0.7 lr=0.1\n")

	f = newFakeRun(t, scheduletest.TF("worker:0@h1", "worker:1@h2"))
	f.o.Captures = mustCaptures(t, "loss=loss ([0-9.]+)", "acc=acc=(\\d+)")
	f.o.Captures.From = "worker:1"
	f.host("h1").script("worker:0", runs(exits(0, "loss 1\n")))
	f.host("h2").script("worker:1", runs(exits(0, "loss 2\nloss \x1b]0;x\x07\n")))
	s, _ = f.mustRun(context.Background())
	if s.Tasks[0].Metrics != nil || s.Tasks[1].Metrics["loss"] != "2" || s.Metrics["loss"] != "2" {
		t.Errorf("--capture-from worker:1: %v, %v, run %v", s.Tasks[0].Metrics, s.Tasks[1].Metrics, s.Metrics)
	}
	buf.Reset()
	view.WriteSummary(&buf, s)
	wantLines(t, "summary", buf.String(), "\nmetrics: acc=- loss=2\n")

	// Without --capture the summary says nothing of metrics.
	f = newFakeRun(t, scheduletest.TF("worker:0@h1"))
	f.host("h1").script("worker:0", runs(exits(0, "loss 1\n")))
	s, _ = f.mustRun(context.Background())
	data, _ := os.ReadFile(filepath.Join(f.o.LogDir, rundir.Summary))
	if s.Metrics != nil || s.Tasks[0].Metrics != nil || bytes.Contains(data, []byte("metrics")) || bytes.Contains(data, []byte("captures")) {
		t.Errorf("metrics without --capture:\n%s", data)
	}
}

// The cost of matching, per byte of output: a task printing its loss on
// every line, and one whose lines never hold the literal.
func BenchmarkCapture(b *testing.B) {
	for _, bc := range []struct {
		name, line, spec string
		series           bool
	}{
		{"every-line", "step 123 loss 0.0123 lr 0.1\n", `loss=loss ([0-9.]+)`, false},
		{"every-line-metrics.csv", "step 123 loss 0.0123 lr 0.1\n", `loss=loss ([0-9.]+)`, true},
		{"never", "12345678\n", `loss=loss ([0-9.]+)`, false},
		{"no-literal", "12345678\n", `loss=(?i)loss ([0-9.]+)`, false},
	} {
		b.Run(bc.name, func(b *testing.B) {
			chunk := []byte(strings.Repeat(bc.line, 32<<10/len(bc.line)))
			var series *taskSeries
			if bc.series {
				book := newSeriesBook(filepath.Join(b.TempDir(), rundir.Metrics), false)
				defer book.close()
				series = book.task("worker:0", 1)
			}
			tc := newTaskCapture(mustCaptures(b, bc.spec), series)
			b.SetBytes(int64(len(chunk)))
			for b.Loop() {
				tc.write(0, chunk)
			}
		})
	}
}

// A value cut to its bound stays valid UTF-8 (metrics.csv, events.csv).
func TestCutRunes(t *testing.T) {
	if got := cutRunes("aé", 2); got != "a" {
		t.Errorf("cutRunes(aé, 2) = %q, want a", got)
	}
	if got := cutRunes([]byte("abc"), 5); string(got) != "abc" {
		t.Errorf("cutRunes(abc, 5) = %q", got)
	}
	if got := cutRunes("ééé", 4); got != "éé" {
		t.Errorf("cutRunes(ééé, 4) = %q", got)
	}
}
