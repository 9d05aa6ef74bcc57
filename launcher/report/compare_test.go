package report

import (
	"bytes"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/tfhive/tfhive/probe/testkit"
)

// Three runs compared, golden: a curve per run in every view (by step
// and by time, linear and log: their loss spans three decades), the
// best (lowest loss, as a loss is by default) starred and the table
// sorted by it.
func TestCompare(t *testing.T) {
	c, err := LoadComparison("testdata/sweeps", []string{"grid-001", "grid-002", "grid-003"})
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := WriteCompare(&b, c); err != nil {
		t.Fatal(err)
	}
	html := b.String()
	checkInert(t, html)
	loss := html[strings.Index(html, `aria-label="loss"`):]
	loss = loss[:strings.Index(loss, "</svg>")]
	for _, id := range []string{"grid-001", "grid-002", "grid-003"} {
		// A raw line in each of the four views.
		if n := strings.Count(loss, `class="raw" fill="none" stroke="`); n != 12 {
			t.Fatalf("%d raw lines, want 3 runs × 4 views", n)
		}
		if n := strings.Count(loss, "<title>"+id+"</title>"); n != 4 {
			t.Errorf("%s: %d curves, want one per view", id, n)
		}
	}
	if !strings.Contains(loss, `class="autolog"`) || !strings.Contains(loss, `<g class="view xs ylog">`) {
		t.Error("the loss, over three decades, is not on a log axis by default, or has no step view")
	}
	for _, want := range []string{"<th>best</th><td>grid-002: loss 0.3 (lowest)</td>", `<div class="best"`,
		`<input type="radio" name="so" id="so-7-a" checked>`, `<input type="radio" name="ax" id="ax-step" checked>`} {
		if !strings.Contains(html, want) {
			t.Errorf("the page has no %q", want)
		}
	}
	testkit.Golden(t, "testdata/golden/compare.html", b.Bytes())

	// --best by another metric, the other way: grid-003's loss.
	c.Best, err = ParseBest("loss max")
	if err != nil {
		t.Fatal(err)
	}
	b.Reset()
	if err := WriteCompare(&b, c); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "<th>best</th><td>grid-003: loss 0.9 (highest)</td>") {
		t.Error("--best 'loss max' did not mark grid-003")
	}
}

func TestParseBest(t *testing.T) {
	for in, want := range map[string]string{"loss": "loss min", "acc": "acc max", "val_err max": "val_err max",
		" top1  min ": "top1 min", "": "error", "loss up": "error", "a b c": "error"} {
		got := "error"
		if b, err := ParseBest(in); err == nil {
			got = b.Metric + map[bool]string{true: " min", false: " max"}[b.Min]
		}
		if got != want {
			t.Errorf("ParseBest(%q) = %s, want %s", in, got, want)
		}
	}
}

// Sorting: numbers as numbers, durations as durations, numbers before
// words and empty cells last, either way.
func TestSortTable(t *testing.T) {
	rows := [][]string{{"10", "1m30s", "b"}, {"9", "59s", ""}, {"-", "2s", "a"}, {"1e-3", "", "10"}}
	st := newSortTable([]string{"n", "d", "w"}, rows, -1)
	var got []string
	for _, r := range st.Rows {
		got = append(got, string(r.Style))
	}
	want := []string{
		"--a0: 2; --d0: 0; --a1: 2; --d1: 0; --a2: 2; --d2: 1;",
		"--a0: 1; --d0: 1; --a1: 1; --d1: 1; --a2: 3; --d2: 3;",
		"--a0: 3; --d0: 3; --a1: 0; --d1: 2; --a2: 1; --d2: 2;",
		"--a0: 0; --d0: 2; --a1: 3; --d1: 3; --a2: 0; --d2: 0;",
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("row %d: %s, want %s", i, got[i], want[i])
		}
	}
}

// The log axis' ticks, the EMA's first points (debiased: not pulled to
// 0) and the steps paired with their values nearest in time.
func TestCurveMaths(t *testing.T) {
	var b strings.Builder
	for _, r := range [][2]float64{{0.0004, 13}, {2, 5}, {1e-9, 1e9}, {1, 1}, {0, 1}, {1e-320, 1}, {math.NaN(), 1}} {
		lo, hi, ts := logAxis(r[0], r[1])
		var labels []string
		for _, v := range ts {
			labels = append(labels, numLabel(v))
		}
		fmt.Fprintf(&b, "log %v..%v\t%s..%s\t%s\n", r[0], r[1], numLabel(lo), numLabel(hi), strings.Join(labels, " "))
	}
	t0 := time.Date(2026, 1, 2, 10, 0, 0, 0, time.UTC)
	var pts []point
	for i, v := range []float64{10, 0, 10, 0, 10} {
		pts = append(pts, point{t0.Add(time.Duration(i) * time.Second), v})
	}
	for _, w := range []float64{0.6, 0.9} {
		var vs []string
		for _, v := range ema(pts, w) {
			vs = append(vs, numLabel(v))
		}
		fmt.Fprintf(&b, "ema %v\t%s\n", w, strings.Join(vs, " "))
	}
	steps := []point{{t0.Add(-time.Millisecond), 0}, {t0.Add(999 * time.Millisecond), 100}, {t0.Add(3*time.Second + time.Millisecond), 300}}
	fmt.Fprintf(&b, "steps\t%v\n", stepsOf(pts, steps))
	testkit.Golden(t, "testdata/golden/curves.txt", []byte(b.String()))
}
