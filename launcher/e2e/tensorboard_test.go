package e2e

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tfhive/tfhive/probe/sshtest"
)

// summaryCopier is a task that puts a real TensorFlow run's summaries
// (testdata/tensorboard: tf.summary's scalar over five steps, recorded
// once) into its --model_dir: what training leaves there, without the
// TensorFlow import (20 s of this test under load) that writing it costs.
const summaryCopier = `import os, shutil, sys
d = sys.argv[2].split("=", 1)[1]
os.makedirs(d, exist_ok=True)
shutil.copy(sys.argv[1], d)
print("summaries written")
`

var tbURL = regexp.MustCompile(`^http://localhost:(\d+)/[0-9a-f]{32}/$`)

// A real TensorFlow run's summaries (recorded), served by a real TensorBoard through
// the SSH link: `tfhive tensorboard RUN` starts TensorBoard on the host of
// the run's --model_dir (from the hosts file's setup:, the venv), prints
// http://localhost:P/, and this machine's P reaches it over tfhive's own
// connection: headless Chromium loads the page, and TensorBoard's scalar
// API lists the run's tag. Ctrl-C stops it: exit 0, no TensorBoard left on
// the host, P closed. Then --detach leaves one serving after tfhive
// returned, until `tensorboard --stop` stops it the same way. (One test
// for both: TensorBoard's start, which imports TensorFlow, is most of
// its time.)
func TestTensorBoardThroughSSH(t *testing.T) {
	t.Parallel() // beside others, on a fleet of its own (testing.md)
	b := newTFBed(t, sshtest.DefaultBed(t), "tb1")
	root := t.TempDir()
	model := filepath.Join(b.f.Dir, "model") // the host sees the fleet's directory
	r := tfhive(t, b.f.Env(), b.f.Dir, b.args("run", "--name", "tb-e2e", "--log-dir", filepath.Join(root, "tb-e2e"),
		"--workers", "1", "--gpus-per-worker", "0", "--", "python3", "-c", summaryCopier, tbSummaries(t), "--model_dir="+model)...)
	wantCode(t, r, 0)

	// The foreground path.
	start := time.Now()
	tb := startTfhive(t, b.f, readStdout, b.args("tensorboard", "tb-e2e", "--log-root", root, "--port", freePort(t))...)
	var url string
	if !tb.readUntil(func(l string) bool { url = l; return tbURL.MatchString(l) }) {
		tb.Wait()
		t.Fatalf("no address printed:\n%s\n%s", tb.read.String(), tb.other.String())
	}
	tb.discardRest()
	t.Logf("TensorBoard on the host served after %s", time.Since(start).Round(100*time.Millisecond))
	wantTag(t, url, "tb-e2e", "tfhive_loss")
	// Another local user who finds the port but not the secret path gets
	// nothing of it.
	bare := "http://localhost:" + tbURL.FindStringSubmatch(url)[1] + "/"
	for _, u := range []string{bare, bare + "data/plugin/scalars/tags"} {
		if resp, err := http.Get(u); err != nil || resp.StatusCode != http.StatusNotFound {
			t.Errorf("%s without the secret: %v %v", u, resp, err)
		} else {
			resp.Body.Close()
		}
	}
	if _, dom := chromium(t, "--virtual-time-budget=10000", "--dump-dom", url); !strings.Contains(dom, "<title>TensorBoard</title>") || !strings.Contains(dom, "tfhive_loss") {
		t.Errorf("Chromium's page of %s is not TensorBoard's with the run's tag:\n%.300s", url, dom)
	}
	t.Logf("the page and the tag checked after %s", time.Since(start).Round(100*time.Millisecond))
	tb.Process.Signal(syscall.SIGINT)
	if err := tb.Wait(); err != nil {
		t.Fatalf("tensorboard after Ctrl-C: %v\n%s", err, tb.other.String())
	}
	wantContains(t, "tensorboard's stderr", tb.other.String(), "TensorBoard of tb-e2e on tb1 stopped")
	noLeftovers(t, b.f, 10*time.Second)
	wantClosed(t, url)

	// Detached, until --stop.
	// A failing test leaves no keeper behind.
	t.Cleanup(func() { tfhive(t, b.f.Env(), b.f.Dir, "tensorboard", "--stop", "--log-root", root) })
	d := tfhive(t, b.f.Env(), b.f.Dir, b.args("tensorboard", "tb-e2e", "--log-root", root, "--detach", "--port", freePort(t))...)
	wantCode(t, d, 0)
	url = strings.TrimSpace(d.stdout)
	if !tbURL.MatchString(url) {
		t.Fatalf("--detach printed %q:\n%s", d.stdout, d.stderr)
	}
	wantTag(t, url, "tb-e2e", "tfhive_loss")
	if fi, err := os.Stat(filepath.Join(root, "tb-e2e", "tensorboard.json")); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("no record of the detached TensorBoard, 0600 (it holds the secret): %v %v", fi, err)
	}
	again := tfhive(t, b.f.Env(), b.f.Dir, b.args("tensorboard", "tb-e2e", "--log-root", root, "--detach")...)
	wantCode(t, again, 0)
	if strings.TrimSpace(again.stdout) != url || !strings.Contains(again.stderr, "already served") {
		t.Errorf("a second --detach: %q %q", again.stdout, again.stderr)
	}
	s := tfhive(t, b.f.Env(), b.f.Dir, "tensorboard", "--stop", "--log-root", root)
	wantCode(t, s, 0)
	wantContains(t, "--stop's output", s.stdout, "stopped TensorBoard of tb-e2e ("+url+" on tb1)")
	noLeftovers(t, b.f, 10*time.Second)
	wantClosed(t, url)
	t.Logf("detached and stopped after %s", time.Since(start).Round(100*time.Millisecond))
	if _, err := os.Stat(filepath.Join(root, "tb-e2e", "tensorboard.json")); err == nil {
		t.Error("the detached TensorBoard's record is left after --stop")
	}

}

// tbSummaries is the recorded summaries' file (testdata/tensorboard).
func tbSummaries(t *testing.T) string {
	t.Helper()
	p, err := filepath.Abs(filepath.Join("testdata", "tensorboard", "events.out.tfevents.1796198161.tfhive.0.v2"))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// freePort is a port of this machine's 127.0.0.1 free a moment ago.
func freePort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return fmt.Sprint(ln.Addr().(*net.TCPAddr).Port)
}

// wantTag: TensorBoard at url lists tag among run's scalars (TensorBoard
// names its runs by the directory under run's own: "RUN/." for the model
// dir itself).
func wantTag(t *testing.T, url, run, tag string) {
	t.Helper()
	resp, err := http.Get(url + "data/plugin/scalars/tags")
	if err != nil {
		t.Fatalf("TensorBoard's scalar tags: %v", err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	var tags map[string]map[string]any
	err = json.Unmarshal(body, &tags)
	found := false
	for name, ts := range tags {
		found = found || (name == run || strings.HasPrefix(name, run+"/")) && ts[tag] != nil
	}
	if err != nil || !found {
		t.Fatalf("TensorBoard's scalar tags (%s, %v) lack %s of %s:\n%s", resp.Status, err, tag, run, body)
	}
}

// wantClosed: nothing answers at url any more.
func wantClosed(t *testing.T, url string) {
	t.Helper()
	addr := tbURL.FindStringSubmatch(url)[1]
	if c, err := net.DialTimeout("tcp", "127.0.0.1:"+addr, 2*time.Second); err == nil {
		c.Close()
		t.Errorf("%s still answers", url)
	}
}
