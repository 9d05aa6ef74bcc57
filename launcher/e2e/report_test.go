package e2e

import (
	"bytes"
	"context"
	"fmt"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"
)

// reportTask prints a loss a line until its host's nvidia-smi was asked
// three times (--sample 1s: about three seconds), after a first attempt
// that fails (--restarts 1), so that the timeline has a restart.
const reportTask = `[ "$TFHIVE_ATTEMPT" = 0 ] && { echo "loss 9"; exit 3; }
i=0
while [ "$(cat "$TFHIVE_FAKE_GPU/queries" 2>/dev/null | wc -l)" -lt 4 ]; do
	i=$((i+1)); [ $i -lt 600 ] || exit 9
	echo "step $i loss $(awk "BEGIN { print 1 / $i }")"; sleep 0.2
done
echo "step $i loss 0.001"`

// A run with --sample 1s and --capture leaves report.html in its log dir:
// one file with no link or source elsewhere, its charts inline SVG with
// each task's GPU utilisation and the loss over time, which Chromium
// renders without a console message, showing the tasks and the metric;
// tfhive report writes the same for the run, and refuses an unknown one
// in one line.
func TestRunReport(t *testing.T) {
	f := sampleFleet(t)
	args, logDir := runArgs(t, f, "--workers", "2", "--strategy", "spread", "--sample", "1s", "--restarts", "1",
		"--restart-backoff", "0s", "--capture", "loss=loss ([0-9.e+-]+)", "--", "sh", "-c", reportTask)
	r := tfhive(t, f.Env(), f.Dir, args...)
	wantCode(t, r, 0)
	if r.stderr != "" {
		t.Errorf("stderr:\n%s", r.stderr)
	}
	page := filepath.Join(logDir, "report.html")
	data, err := os.ReadFile(page)
	if err != nil {
		t.Fatal(err)
	}
	html := string(data)
	checkSelfContained(t, html)
	s := summaryOf(t, logDir)
	for _, task := range s.Tasks {
		// Each task's utilisation chart, with a line of several samples,
		// and its loss line.
		util := chartOf(t, html, "GPU utilisation (%)", task.ID+" on "+task.Host)
		if n := maxPoints(util); n < 2 {
			t.Errorf("%s: GPU utilisation drawn with %d points:\n%s", task.ID, n, util)
		}
	}
	loss := chartOf(t, html, "loss", "")
	if strings.Count(loss, `<polyline class="raw"`) != 2*2 || maxPoints(loss) < 5 { // by time, linear and log
		t.Errorf("the loss chart has not the two workers' series:\n%s", loss)
	}
	wantContains(t, "report", html, "<title>worker:0: ", ", attempt-end attempt 1, code 0</title>", "restart, attempt 1", "attempt-end", "--capture loss",
		"<th>tfhive command</th><td class=\"mono\">tfhive run --hosts ")
	// metrics.csv keeps every value with its time: the last, 0.001, too.
	rows := readFileT(t, filepath.Join(logDir, "metrics.csv"))
	for _, id := range []string{"worker:0", "worker:1"} {
		if n := strings.Count(rows, ","+id+",loss,"); n < 5 || !strings.Contains(rows, ","+id+",loss,0.001\n") {
			t.Errorf("metrics.csv: %d rows of %s's loss, or not its last:\n%s", n, id, rows)
		}
	}

	dom := renderInChromium(t, page, 2000)
	wantContains(t, "the rendered page", dom, "worker:0", "worker:1", "g1", "g2", "loss", "GPU utilisation", "succeeded")

	// tfhive report writes the same from the log dir.
	out := filepath.Join(t.TempDir(), "mail.html")
	rr := tfhive(t, f.Env(), f.Dir, "report", "--log-root", filepath.Dir(logDir), filepath.Base(logDir), "-o", out)
	wantCode(t, rr, 0)
	if again := readFileT(t, out); again != html || rr.stdout != out+"\n" {
		t.Errorf("tfhive report -o: stdout %q, and the file differs from report.html", rr.stdout)
	}
	rr = tfhive(t, f.Env(), f.Dir, "report", "--log-root", filepath.Dir(logDir), "nosuch")
	wantCode(t, rr, 1) // no such run: 1, as logs, wait and attach
	if rr.stderr != "tfhive: error: no run or sweep nosuch in "+filepath.Dir(logDir)+" (tfhive runs lists its runs)\n" || rr.stdout != "" {
		t.Errorf("report of an unknown run: stdout %q stderr %q", rr.stdout, rr.stderr)
	}
}

// A sweep of three trials with --capture leaves report.html in its dir as
// it ends: the loss against the parameter, a dot per trial, and the
// trials; tfhive report SWEEP writes the same again.
func TestReportSweep(t *testing.T) {
	f := runFleet(t, "s1")
	values := []string{"0.001", "0.01", "0.1"}
	r := tfhive(t, f.Env(), f.Dir, sweepArgs(f, "--name", "lrs", "--param", "lr="+strings.Join(values, ","),
		"--gpus-per-worker", "0", "--capture", "loss=loss ([0-9.e+-]+)", "--",
		"sh", "-c", `awk -v lr="$1" 'BEGIN { print "loss", (lr - 0.01) ^ 2 + 0.5 }'`, "task", "{lr}")...)
	wantCode(t, r, 0)
	page := filepath.Join(f.Dir, "tfhive-runs", "lrs", "report.html")
	html := readFileT(t, page)
	checkSelfContained(t, html)
	c := chartOf(t, html, "loss against lr", "")
	if n := strings.Count(c, "<circle"); n != 3 {
		t.Errorf("loss against lr: %d dots, want one per trial:\n%s", n, c)
	}
	for i, lr := range values {
		wantContains(t, "report", c, fmt.Sprintf("<title>lrs-%03d: lr=%s, loss=", i+1, lr))
	}
	// Three dots of colour.
	dom := renderInChromium(t, page, 3*50)
	wantContains(t, "the rendered page", dom, "lrs-001", "lrs-002", "lrs-003", "loss against lr", "succeeded")

	out := filepath.Join(t.TempDir(), "sweep.html")
	rr := tfhive(t, f.Env(), f.Dir, "report", "lrs", "-o", out)
	wantCode(t, rr, 0)
	if again := readFileT(t, out); again != html || rr.stdout != out+"\n" {
		t.Errorf("tfhive report SWEEP -o: stdout %q, and the file differs from the sweep's report.html", rr.stdout)
	}
}

// checkSelfContained: nothing in the page is fetched, nor linked to,
// elsewhere; its charts are inline SVG.
func checkSelfContained(t *testing.T, html string) {
	t.Helper()
	for _, bad := range []string{"http://", "https://", "<script", "<link", "<img", "<iframe", "@import", "url("} {
		if strings.Contains(html, bad) {
			t.Errorf("the report holds %q", bad)
		}
	}
	if !strings.Contains(html, "<svg ") || !strings.HasPrefix(html, "<!DOCTYPE html>") {
		t.Errorf("the report is not an HTML page with inline SVG:\n%.2000s", html)
	}
}

// chartOf is the SVG of the chart titled title, after the heading near.
func chartOf(t *testing.T, html, title, near string) string {
	t.Helper()
	i := strings.Index(html, near)
	if i < 0 {
		t.Fatalf("the report has no %q", near)
	}
	rest := html[i:]
	j := strings.Index(rest, `aria-label="`+attrEscaped(title)+`"`)
	if j < 0 {
		t.Fatalf("the report has no chart %q after %q", title, near)
	}
	k := strings.Index(rest[j:], "</svg>")
	return rest[j : j+k]
}

// attrEscaped is s as html/template writes it in a quoted attribute.
func attrEscaped(s string) string {
	return strings.NewReplacer("&", "&amp;", `"`, "&#34;", "'", "&#39;", "+", "&#43;", "<", "&lt;", ">", "&gt;").Replace(s)
}

// maxPoints is the most points of a polyline in svg.
func maxPoints(svg string) int {
	n := 0
	for _, m := range regexp.MustCompile(`points="([^"]*)"`).FindAllStringSubmatch(svg, -1) {
		n = max(n, len(strings.Fields(m[1])))
	}
	return n
}

func readFileT(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// renderInChromium opens page in headless Chromium, as a person would in
// a browser: its screenshot must not be blank (and show colour: the
// charts), nothing may reach the console (an error, a refused fetch); it
// returns the DOM as rendered.
func renderInChromium(t *testing.T, page string, minColoured int) string {
	t.Helper()
	shot := filepath.Join(t.TempDir(), "shot.png")
	stderr, _ := chromium(t, "--screenshot="+shot, "--window-size=1100,1600", "file://"+page)
	stderr2, dom := chromium(t, "--dump-dom", "file://"+page)
	for _, l := range strings.Split(stderr+stderr2, "\n") {
		if strings.Contains(l, ":CONSOLE") {
			t.Errorf("console: %s", l)
		}
	}
	f, err := os.Open(shot)
	if err != nil {
		t.Fatalf("no screenshot: %v\n%s", err, stderr)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatal(err)
	}
	inked, coloured := 0, 0
	b := img.Bounds()
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			r, g, b, _ := img.At(x, y).RGBA()
			if r < 0xe000 || g < 0xe000 || b < 0xe000 {
				inked++
			}
			if max(r, g, b)-min(r, g, b) > 0x3000 {
				coloured++
			}
		}
	}
	if total := b.Dx() * b.Dy(); inked < total/100 || coloured < minColoured {
		t.Errorf("the screenshot is blank or grey: %d of %d pixels inked, %d coloured", inked, total, coloured)
	}
	return dom
}

// chromium runs headless Chromium once, within a minute, its whole
// process group killed after; stderr has its console lines.
func chromium(t *testing.T, args ...string) (stderr, stdout string) {
	t.Helper()
	bin, err := exec.LookPath("chromium")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("chromium is required in CI")
		}
		t.Skip("no chromium here")
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	base := []string{"--headless", "--disable-gpu", "--no-first-run", "--enable-logging=stderr", "--v=0",
		"--user-data-dir=" + t.TempDir(), "--hide-scrollbars"}
	if os.Geteuid() == 0 {
		base = append(base, "--no-sandbox")
	}
	cmd := exec.CommandContext(ctx, bin, append(base, args...)...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 5 * time.Second
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err = cmd.Run()
	if cmd.Process != nil {
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
	if err != nil {
		t.Fatalf("chromium %s: %v\n%s", strings.Join(args, " "), err, errb.String())
	}
	return errb.String(), out.String()
}

// The console check above sees what it must: a page's script error.
func TestChromiumConsoleSeen(t *testing.T) {
	page := filepath.Join(t.TempDir(), "bad.html")
	if err := os.WriteFile(page, []byte(`<!DOCTYPE html><p>x</p><script>console.error("boom"); nosuch()</script>`), 0o644); err != nil {
		t.Fatal(err)
	}
	stderr, dom := chromium(t, "--dump-dom", "file://"+page)
	if !strings.Contains(stderr, `:CONSOLE`) || !strings.Contains(stderr, `"boom"`) || !strings.Contains(dom, "<p>x</p>") {
		t.Errorf("the console's lines are not where the report's test looks:\n%s", stderr)
	}
}
