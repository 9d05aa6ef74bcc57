package e2e

import (
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// A sweep of three test-trainer trials whose --capture names the step
// (a step group): a trial's report draws its loss, from 13 down past
// 1e-3, a line every 50ms (lines that arrive together are one value),
// on a log axis by default and against the step; compare of the
// three runs, and of the sweep, render in Chromium with every trial's
// curve, the lowest loss marked best.
func TestCompare(t *testing.T) {
	t.Parallel() // beside others, on a fleet of its own (testing.md)
	f := runFleet(t, "c1")
	r := tfhive(t, f.Env(), f.Dir, sweepArgs(f, "--name", "tg", "--param", "target=1e-2,1e-3,1e-4", "--gpus-per-worker", "0",
		"--capture", `loss=step (?P<step>[0-9]+) loss ([0-9.e+-]+)`, "--", trainerBin, "--log-every", "1", "--sleep", "50ms", "--target", "{target}")...)
	wantCode(t, r, 0)
	root := filepath.Join(f.Dir, "tfhive-runs")

	html := readFileT(t, filepath.Join(root, "tg-003", "report.html"))
	loss := chartOf(t, html, "loss", "")
	byStepLog := regexp.MustCompile(`(?s)<g class="view xs ylog">(.*?)</g>`).FindStringSubmatch(loss)
	if !strings.Contains(loss, `class="autolog"`) || byStepLog == nil {
		t.Fatalf("tg-003's loss is not on a log axis by default, or has no view by step:\n%s", loss)
	}
	for _, want := range []string{`<polyline class="raw"`, ">0.001</text>", ">10</text>", ">step</text>"} {
		if !strings.Contains(byStepLog[1], want) {
			t.Errorf("tg-003's loss by step, log: no %q:\n%s", want, byStepLog[1])
		}
	}
	if n := maxPoints(byStepLog[1]); n < 5 {
		t.Errorf("tg-003's loss by step: %d points", n)
	}

	runs := filepath.Join(t.TempDir(), "runs.html")
	wantCode(t, tfhive(t, f.Env(), f.Dir, "compare", "tg-001", "tg-002", "tg-003", "-o", runs), 0)
	rs := tfhive(t, f.Env(), f.Dir, "compare", "tg")
	wantCode(t, rs, 0)
	if rs.stdout != "tfhive-runs/compare.html\n" { // as report prints its file: under the log root as given
		t.Errorf("compare SWEEP printed %q", rs.stdout)
	}
	for _, page := range []string{runs, filepath.Join(root, "compare.html")} {
		html := readFileT(t, page)
		checkSelfContained(t, html)
		wantContains(t, page, html, "<th>best</th><td>tg-003: loss ")
		dom := renderInChromium(t, page, 3*50)
		view := regexp.MustCompile(`(?s)<g class="view xs ylog">(.*?)</g>`).FindStringSubmatch(dom)
		if view == nil {
			t.Fatalf("%s: no loss chart by step", page)
		}
		for _, id := range []string{"tg-001", "tg-002", "tg-003"} {
			curve := regexp.MustCompile(`<polyline class="raw"[^>]* points="([^"]*)"><title>` + id + `[ <]`).FindStringSubmatch(view[1])
			if curve == nil || len(strings.Fields(curve[1])) < 2 {
				t.Errorf("%s: no curve of %s in the rendered page:\n%s", page, id, view[1])
			}
		}
		wantContains(t, page, dom, "★", "tg-001", "succeeded")
	}
}
