package report

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tfhive/tfhive/launcher/rundir"
	"github.com/tfhive/tfhive/probe/testkit"
)

// checkInert: the page fetches nothing, links nowhere, runs nothing, and
// what the files held (a task's command, a host's error, a metric's name)
// is text in it.
func checkInert(t *testing.T, html string) {
	t.Helper()
	if m := regexp.MustCompile(`(?i)<(script|link|img|iframe|object|embed|foreignObject)\b|\b(src|href|xlink:href|on[a-z]+)=`).FindString(html); m != "" {
		t.Errorf("the page holds %q", m)
	}
	if !strings.Contains(html, `content="default-src 'none'; style-src 'unsafe-inline'"`) {
		t.Error("the page has not its Content-Security-Policy")
	}
}

// A run's report from a log dir, golden: the timeline with its restarts,
// a link lost and back, each task's GPUs, the loss of both workers, the
// summary table, the intruder (its command text, not markup) and the
// record; the line of events.csv that is not tfhive's is said.
func TestRunReport(t *testing.T) {
	r, err := Load("testdata/run", "fixture")
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := Write(&b, r); err != nil {
		t.Fatal(err)
	}
	html := b.String()
	checkInert(t, html)
	for _, want := range []string{
		"<title>tfhive run fixture-run</title>",
		"events.csv: 1 lines passed over",
		`aria-label="loss"`, `aria-label="&lt;b&gt;n&lt;/b&gt;"`,
		"worker:1 on gpu02", "link to gpu02", "EOF &lt;/title&gt;&lt;script&gt;alert(2)&lt;/script&gt;",
		"python &lt;script&gt;alert(1)&lt;/script&gt;",
		"python train.py --lr 0.1 --note &#39;it&#39;\\&#39;&#39;s &lt;fine&gt;&#39;",
		"abc123: 12 files, 2048 bytes, sent to 1 of 2 hosts",
		"0123abcd (with changes not committed)", "driver 550.54, CUDA 12.4", "WANDB_API_KEY=…", "--env=TOKEN=…",
	} {
		if !strings.Contains(html, want) {
			t.Errorf("the report has no %q", want)
		}
	}
	if strings.Contains(html, "s3cr3t") || strings.Contains(html, "xyz") {
		t.Error("an --env value is in the report")
	}
	// worker:0's two attempts: the first stopped by tfhive, the last too.
	if n := strings.Count(html, `fill="`+colStopped+`"><title>worker:0:`); n != 2 {
		t.Errorf("worker:0: %d bars of attempts stopped by tfhive, want 2", n)
	}
	testkit.Golden(t, "testdata/golden/run.html", b.Bytes())
}

// A sweep's report, golden: the loss against each parameter (lr on a
// logarithmic line, opt by name), a metric that is no number left out of
// the charts, the trials, one without a summary and one whose id is a
// path passed over.
func TestSweepReport(t *testing.T) {
	s, err := LoadSweep("testdata/sweeps", "testdata/sweeps/grid")
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := WriteSweep(&b, s); err != nil {
		t.Fatal(err)
	}
	html := b.String()
	checkInert(t, html)
	for _, want := range []string{"loss against opt", "loss against lr", "sgd&lt;script&gt;",
		`trial &#34;../../etc&#34;: not a run id; passed over`, "1 trials have no summary yet",
		"<title>grid-002: opt=sgd&lt;script&gt;, loss=0.3, lr=0.001</title>"} {
		if !strings.Contains(html, want) {
			t.Errorf("the report has no %q", want)
		}
	}
	if strings.Contains(html, "acc against") {
		t.Error("acc, never a number, is charted")
	}
	if n := strings.Count(html, "<circle"); n != 6 {
		t.Errorf("%d dots, want 3 trials with a loss on 2 charts", n)
	}
	testkit.Golden(t, "testdata/golden/sweep.html", b.Bytes())
}

// A dir without a run; a summary too large, a FIFO where a CSV should
// be, a line too long: each said, none hangs or fills memory.
func TestLoadBounded(t *testing.T) {
	dir := t.TempDir()
	if _, err := Load(dir, "x"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("an empty dir: %v, want fs.ErrNotExist", err)
	}
	if err := os.WriteFile(filepath.Join(dir, rundir.Plan), []byte(`{"run_id": "x", "tasks": [{"id": "worker:0"}]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	big := bytes.Repeat([]byte(" "), jsonMax+1)
	if err := os.WriteFile(filepath.Join(dir, rundir.Summary), big, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(filepath.Join(dir, rundir.GPUUsage), 0o644); err != nil {
		t.Fatal(err)
	}
	long := "time,task,name,value\n2026-01-02T10:00:05.000Z,worker:0,loss," + strings.Repeat("9", csvMaxLine) + "\n" +
		"2026-01-02T10:00:06.000Z,worker:0,loss,1\n"
	if err := os.WriteFile(filepath.Join(dir, rundir.Metrics), []byte(long), 0o644); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	var r *Run
	var err error
	go func() {
		r, err = Load(dir, "x")
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Load hangs on a FIFO")
	}
	if err != nil {
		t.Fatal(err)
	}
	notes := strings.Join(r.Notes, "\n")
	for _, want := range []string{"summary.json: larger than 16 MiB", "gpu-usage.csv: not a regular file",
		"metrics.csv: 1 lines passed over"} {
		if !strings.Contains(notes, want) {
			t.Errorf("notes %q: no %q", notes, want)
		}
	}
	if s := r.Metrics["loss"]["worker:0"]; s == nil || len(s.points()) != 1 {
		t.Errorf("the good line of metrics.csv was not read: %v", r.Metrics)
	}
}

// A series keeps at most maxPoints points, spread over all it was
// given, the last included.
func TestSeriesThinned(t *testing.T) {
	var s series
	t0 := time.Unix(0, 0)
	const n = 100_000
	for i := range n {
		s.add(point{t0.Add(time.Duration(i) * time.Second), float64(i)})
	}
	pts := s.points()
	if len(pts) > maxPoints+1 || len(pts) < maxPoints/4 {
		t.Errorf("%d points", len(pts))
	}
	if pts[0].v != 0 || pts[len(pts)-1].v != n-1 {
		t.Errorf("first %v, last %v", pts[0].v, pts[len(pts)-1].v)
	}
	for i := 1; i < len(pts); i++ {
		if pts[i].v <= pts[i-1].v {
			t.Fatalf("out of order at %d", i)
		}
		if gap := pts[i].v - pts[i-1].v; gap > 4*n/maxPoints {
			t.Fatalf("a gap of %v at %d: not spread", gap, i)
		}
	}
}

func TestDurLabel(t *testing.T) {
	for d, want := range map[time.Duration]string{0: "0", 500 * time.Millisecond: "500ms", 1500 * time.Millisecond: "1.5s",
		30 * time.Second: "30s", 90 * time.Second: "1m30s", 2 * time.Hour: "2h", 90 * time.Minute: "1h30m", 10 * time.Second: "10s"} {
		if got := durLabel(d); got != want {
			t.Errorf("durLabel(%s) = %q, want %q", d, got, want)
		}
	}
}

func TestParseTime(t *testing.T) {
	for _, s := range []string{"2026-01-02T10:00:05.123Z", "2026-12-31T23:59:59.999Z", "2026-01-02T10:00:05Z", "2026-01-02T10:00:05.5+02:00"} {
		want, _ := time.Parse(time.RFC3339Nano, s)
		if got, ok := parseTime(s); !ok || !got.Equal(want) {
			t.Errorf("parseTime(%q) = %v, %v; want %v", s, got, ok, want)
		}
	}
	for _, s := range []string{"", "2026-13-02T10:00:05.123Z", "2026-01-02T1x:00:05.123Z", "yesterday"} {
		if _, ok := parseTime(s); ok {
			t.Errorf("parseTime(%q) is a time", s)
		}
	}
}

// nonFinite is a position in the page's SVG that is not a number.
var nonFinite = regexp.MustCompile(`\b(points|x|y|x1|x2|y1|y2|cx|cy|width|height)="[^"]*(NaN|Inf)[^"]*"`)

// within fails the test when f has not returned after d: a loop that
// does not end fails it instead of hanging the package.
func within(t *testing.T, d time.Duration, what string, f func()) {
	t.Helper()
	done := make(chan struct{})
	go func() {
		defer close(done)
		f()
	}()
	select {
	case <-done:
	case <-time.After(d):
		t.Fatalf("%s: still running after %s", what, d)
	}
}

// Every axis has a few ticks whatever its span: a run of centuries (a
// crafted events.csv, a summary's largest duration) or values at the
// ends of float64, none of them NaN.
func TestAxesBounded(t *testing.T) {
	for _, span := range []time.Duration{-time.Second, 0, time.Millisecond, 90 * time.Second, 3 * 365 * 24 * time.Hour,
		math.MaxInt64 / 2, math.MaxInt64 - 1, math.MaxInt64} {
		var ts []tick
		within(t, 5*time.Second, fmt.Sprintf("ticks of %d ns", int64(span)), func() {
			ts = timeAxis{t0: time.Unix(0, 0), span: span, l: 0, r: 100}.ticks()
		})
		if len(ts) > 9 {
			t.Errorf("span %d ns: %d ticks", int64(span), len(ts))
		}
		for i, tk := range ts {
			if math.IsNaN(tk.Pos) || tk.Pos < 0 || tk.Pos > 100 || i > 0 && tk.Pos <= ts[i-1].Pos {
				t.Errorf("span %d ns: tick %d at %v (%q)", int64(span), i, tk.Pos, tk.Label)
			}
		}
		if span >= 0 && (len(ts) == 0 || ts[0].Label != "0") {
			t.Errorf("span %d ns: ticks %v, want the first at 0", int64(span), ts)
		}
	}
	inf, nan := math.Inf(1), math.NaN()
	for _, c := range [][2]float64{{0, 0}, {1, 1}, {-math.MaxFloat64, math.MaxFloat64}, {math.MaxFloat64, math.MaxFloat64},
		{-math.MaxFloat64, -math.MaxFloat64 / 2}, {5e-324, 5e-324}, {0, 5e-324}, {1e300, 1e300 * (1 + 1e-15)},
		{-inf, inf}, {nan, 1}, {1, nan}, {3, 2}} {
		lo, hi, vs := niceAxis(c[0], c[1], 4)
		if !(lo < hi) || math.IsInf(lo, 0) || math.IsInf(hi, 0) || len(vs) == 0 || len(vs) > 17 {
			t.Errorf("niceAxis(%v, %v) = %v, %v, %d ticks", c[0], c[1], lo, hi, len(vs))
		}
		va := valueAxis{lo: lo, hi: hi, t: 0, b: 100}
		for i, v := range vs {
			if y := va.y(v); math.IsNaN(v) || math.IsInf(v, 0) || math.IsNaN(y) || i > 0 && v <= vs[i-1] {
				t.Errorf("niceAxis(%v, %v): tick %d is %v (y %v)", c[0], c[1], i, v, y)
			}
		}
		for _, v := range []float64{c[0], c[1], 0, math.MaxFloat64, -math.MaxFloat64} {
			if y := va.y(v); math.IsNaN(y) || y < 0 || y > 100 {
				t.Errorf("niceAxis(%v, %v): %v drawn at y %v", c[0], c[1], v, y)
			}
		}
	}
}

// A crafted log dir: events three centuries apart, a summary of the
// largest duration, metrics at the ends of float64. The report is
// written, soon, with a few ticks on each axis.
func TestReportOfExtremeRun(t *testing.T) {
	for name, files := range map[string]map[string]string{
		"events centuries apart": {
			rundir.Events: "time,task,host,event,detail\n1700-01-01T00:00:00.000Z,worker:0,h,start,attempt 0\n" +
				"2262-04-12T00:00:00.000Z,worker:0,h,exit,code 0\n2999-01-01T00:00:00.000Z,,,timeout,\n",
		},
		"largest duration": {
			rundir.Summary: `{"run_id": "x", "result": "succeeded", "started": "2026-01-02T10:00:00Z", "duration_ns": 9223372036854775807,
				"tasks": [{"id": "worker:0", "host": "h", "outcome": "exited", "exit_code": 0, "duration_ns": 9223372036854775807}]}`,
		},
		"metric values at the ends": {
			rundir.Metrics: "time,task,name,value\n2026-01-02T10:00:01.000Z,worker:0,loss,-1.7976931348623157e308\n" +
				"2026-01-02T10:00:02.000Z,worker:0,loss,1.7976931348623157e308\n2026-01-02T10:00:03.000Z,worker:0,loss,5e-324\n",
		},
		"steps at the ends": {
			rundir.Metrics: "time,task,name,value\n2026-01-02T10:00:01.000Z,worker:0,step,-1.7976931348623157e308\n" +
				"2026-01-02T10:00:01.001Z,worker:0,loss,1e-300\n2026-01-02T10:00:02.000Z,worker:0,step,1.7976931348623157e308\n" +
				"2026-01-02T10:00:02.001Z,worker:0,loss,1e300\n",
		},
		"GPU samples centuries apart": {
			rundir.GPUUsage: "time,task,host,gpu,util_pct,mem_mib\n1700-01-01T00:00:00.000Z,worker:0,h,0,50,1e300\n" +
				"2262-04-12T00:00:00.000Z,worker:0,h,0,-5,100\n2262-04-12T00:00:01.000Z,worker:0,h,1,500,100\n",
		},
	} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			files[rundir.Plan] = `{"run_id": "x", "tasks": [{"id": "worker:0", "host": "h"}]}`
			for f, s := range files {
				if err := os.WriteFile(filepath.Join(dir, f), []byte(s), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			var b bytes.Buffer
			within(t, 10*time.Second, "the report", func() {
				r, err := Load(dir, "x")
				if err != nil {
					t.Error(err)
					return
				}
				if err := Write(&b, r); err != nil {
					t.Error(err)
				}
			})
			html := b.String()
			if b.Len() > 1<<20 {
				t.Errorf("a report of %d bytes", b.Len())
			}
			if m := nonFinite.FindString(html); m != "" {
				t.Errorf("the report draws at %s", m)
			}
		})
	}
}

// A value that is not a finite number (a loss gone NaN) is left out of
// its chart, which still draws the others, and the report says so.
func TestNonFiniteMetricsSkipped(t *testing.T) {
	dir := t.TempDir()
	for f, s := range map[string]string{
		rundir.Plan: `{"run_id": "x", "tasks": [{"id": "worker:0", "host": "h"}]}`,
		rundir.Metrics: "time,task,name,value\n2026-01-02T10:00:01.000Z,worker:0,loss,2.5\n2026-01-02T10:00:02.000Z,worker:0,loss,NaN\n" +
			"2026-01-02T10:00:03.000Z,worker:0,loss,+Inf\n2026-01-02T10:00:04.000Z,worker:0,loss,1.5\n",
		rundir.GPUUsage: "time,task,host,gpu,util_pct,mem_mib\n2026-01-02T10:00:01.000Z,worker:0,h,0,50,100\n" +
			"2026-01-02T10:00:02.000Z,worker:0,h,0,nan,100\n2026-01-02T10:00:03.000Z,worker:0,h,0,60,-inf\n",
	} {
		if err := os.WriteFile(filepath.Join(dir, f), []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	r, err := Load(dir, "x")
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := Write(&b, r); err != nil {
		t.Fatal(err)
	}
	html := b.String()
	if m := nonFinite.FindString(html); m != "" {
		t.Errorf("the report draws at %s", m)
	}
	if !strings.Contains(html, `aria-label="loss"`) || !regexp.MustCompile(`points="[0-9.]+,[0-9.]+ [0-9.]+,[0-9.]+"><title>worker:0`).MatchString(html) {
		t.Error("loss: no line through its 2 finite values")
	}
	if n := len(r.Metrics["loss"]["worker:0"].points()); n != 2 {
		t.Errorf("loss: %d points, want the 2 finite ones", n)
	}
	if n := len(r.GPU["worker:0"].Util[0].points()); n != 1 {
		t.Errorf("GPU 0: %d samples, want the 1 whose values are both finite", n)
	}
	notes := strings.Join(r.Notes, "\n")
	for _, want := range []string{"metrics.csv: 2 values not finite (NaN or infinite) left out", "gpu-usage.csv: 2 samples not finite (NaN or infinite) left out"} {
		if !strings.Contains(notes, want) {
			t.Errorf("notes %q: no %q", notes, want)
		}
	}
}
