package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/tfhive/tfhive/probe/sshtest"
)

// tmuxBed is a tmux server of the test's own (its own socket), killed at
// the test's end.
type tmuxBed struct {
	t    *testing.T
	sock string
	env  []string
}

func newTmux(t *testing.T) *tmuxBed {
	t.Helper()
	if _, err := exec.LookPath("tmux"); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("tmux is required in CI")
		}
		t.Skip("no tmux here")
	}
	b := &tmuxBed{t: t, sock: filepath.Join(t.TempDir(), "tmux.sock")}
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "TMUX=") && !strings.HasPrefix(kv, "TMUX_PANE=") {
			b.env = append(b.env, kv)
		}
	}
	t.Cleanup(func() { exec.Command("tmux", "-S", b.sock, "kill-server").Run() })
	return b
}

// tmux runs a tmux command on the test's server.
func (b *tmuxBed) tmux(args ...string) string {
	b.t.Helper()
	cmd := exec.Command("tmux", append([]string{"-S", b.sock}, args...)...)
	cmd.Env = b.env
	out, err := cmd.CombinedOutput()
	if err != nil {
		b.t.Fatalf("tmux %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// screen is the pane as a person sees it now.
func (b *tmuxBed) screen() string { return b.tmux("capture-pane", "-p", "-t", "top") }

// waitScreen polls the pane until ok says yes, for up to within.
func (b *tmuxBed) waitScreen(what string, within time.Duration, ok func(string) bool) string {
	b.t.Helper()
	return b.waitPane("top", what, within, ok)
}

// waitPane is waitScreen on session name's pane.
func (b *tmuxBed) waitPane(name, what string, within time.Duration, ok func(string) bool) string {
	b.t.Helper()
	deadline := time.Now().Add(within)
	for {
		s := b.tmux("capture-pane", "-p", "-t", name)
		if ok(s) {
			return s
		}
		if time.Now().After(deadline) {
			b.t.Fatalf("the screen never showed %s within %s:\n%s", what, within, s)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// shQuote quotes s for sh.
func shQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// startTop starts tfhive top on fleet f in an 80×24 pane named "top",
// its log root root; its exit status goes into exitFile.
func (tb *tmuxBed) startTop(f *sshtest.Fleet, root, exitFile string) {
	t := tb.t
	t.Helper()
	// The pane's shell gets the fleet's environment from a script: tmux
	// starts it from its server, not from this process.
	var script strings.Builder
	script.WriteString("cd " + shQuote(f.Dir) + " || exit 1\n")
	for _, kv := range f.Env() {
		k, _, _ := strings.Cut(kv, "=")
		if k == "TERM" || k == "NO_COLOR" || k == "TMUX" || k == "TMUX_PANE" || strings.ContainsAny(k, "() ") {
			continue
		}
		script.WriteString("export " + shQuote(kv) + "\n")
	}
	argv := []string{tfhiveBin, "top", "--hosts", f.HostsYAML, "--ssh-config", f.SSHConfig, "--log-root", root, "--grace", "2s"}
	for i := range argv {
		argv[i] = shQuote(argv[i])
	}
	script.WriteString(strings.Join(argv, " ") + "\necho \"EXIT=$?\" > " + shQuote(exitFile) + "\n")
	scriptFile := filepath.Join(t.TempDir(), "top.sh")
	if err := os.WriteFile(scriptFile, []byte(script.String()), 0o755); err != nil {
		t.Fatal(err)
	}
	tb.tmux("new-session", "-d", "-s", "top", "-x", "80", "-y", "24", "sh "+shQuote(scriptFile))
}

// tfhive top as a person uses it: typed into an 80×24 terminal (tmux)
// over the sshd test fleet. It shows every host's GPUs; a run started
// beside it shows, as the holder of its GPU and among the user's runs,
// within 5 s of its start, then with the loss its task printed; x and y
// stop it (kill's path, over top's own connections); q quits, exit 0.
func TestTopUnderTmux(t *testing.T) {
	tb := newTmux(t)
	f := runFleet(t, "t1", "t2")
	root := t.TempDir()
	exitFile := filepath.Join(t.TempDir(), "exit")

	tb.startTop(f, root, exitFile)

	s := tb.waitScreen("the fleet's GPUs", 60*time.Second, func(s string) bool {
		return strings.Contains(s, "4 GPUs, 4 free") && len(rowsOf(s, "t1")) == 2 && len(rowsOf(s, "t2")) == 2
	})
	for _, row := range append(rowsOf(s, "t1"), rowsOf(s, "t2")...) {
		if len(row) < 5 || row[4] != "free" {
			t.Errorf("a GPU row: %q", row)
		}
	}
	lines := strings.Split(strings.TrimSuffix(s, "\n"), "\n")
	if len(lines) != 24 {
		t.Errorf("%d lines on a 24-line terminal:\n%s", len(lines), s)
	}
	for _, l := range lines {
		if utf8.RuneCountInString(l) > 80 {
			t.Errorf("a line wider than 80 columns: %q", l)
		}
	}
	if !strings.Contains(lines[23], "q quit") {
		t.Errorf("the last line is not the keys': %q", lines[23])
	}

	// A run of the user's, started beside top.
	r := startTfhive(t, f, readStdout, fleetArgs(f, "run", "--name", "top-e2e", "--log-dir", filepath.Join(root, "top-e2e"),
		"--grace", "2s", "--workers", "1", "--gpus-per-worker", "1", "--capture", `loss=loss=([0-9.]+)`,
		"--", "sh", "-c", "echo loss=0.42; while :; do sleep 0.1; done")...)
	if !r.readUntil(func(line string) bool { return runIDLine.MatchString(line) }) {
		r.Wait()
		t.Fatalf("the run never started:\n%s\n%s", r.read.String(), r.other.String())
	}
	started := time.Now()
	s = tb.waitScreen("the run", 5*time.Second, func(s string) bool {
		return strings.Contains(s, "> top-e2e") && strings.Contains(s, "claimed") && strings.Contains(s, "top-e2e ")
	})
	t.Logf("the run showed %s after its start", time.Since(started).Round(10*time.Millisecond))
	tb.waitScreen("the run's loss", 30*time.Second, func(s string) bool { return strings.Contains(s, "loss=0.42") })

	// Stop it from top: asked first.
	tb.tmux("send-keys", "-t", "top", "x")
	tb.waitScreen("the question", 10*time.Second, func(s string) bool { return strings.Contains(s, "stop run top-e2e on t") })
	tb.tmux("send-keys", "-t", "top", "y")
	tb.waitScreen("the stop said", 30*time.Second, func(s string) bool { return strings.Contains(s, "stopped run top-e2e on t") })
	r.readAll()
	if err := r.Wait(); err == nil {
		t.Errorf("the stopped run exited 0:\n%s", r.read.String())
	}
	tb.waitScreen("the GPUs free again", 30*time.Second, func(s string) bool { return strings.Contains(s, "4 GPUs, 4 free") })

	tb.tmux("send-keys", "-t", "top", "q")
	waitExit0(t, tb, exitFile)
}

// top's GPU list scrolls as a person scrolls it, typed into an 80×24
// terminal over 24 GPUs (three hosts of eight): the last host's last GPUs,
// hidden at first, show after End; PgUp goes back to the first; / filters
// the list to one host as typed and Esc clears it; q quits, exit 0.
func TestTopScrollsUnderTmux(t *testing.T) {
	t.Parallel() // beside others, on a fleet of its own (testing.md)
	tb := newTmux(t)
	var ps []sshtest.Profile
	for _, n := range []string{"s1", "s2", "s3"} {
		ps = append(ps, sshtest.Profile{Name: n, GPU: "idle-8gpu.xml", AliveInterval: 1})
	}
	f := sshtest.Start(t, ps...)
	exitFile := filepath.Join(t.TempDir(), "exit")
	tb.startTop(f, t.TempDir(), exitFile)

	s := tb.waitScreen("the fleet's GPUs", 60*time.Second, func(s string) bool {
		return strings.Contains(s, "24 GPUs, 24 free") && len(rowsOf(s, "s1")) == 8
	})
	shown := len(rowsOf(s, "s1")) + len(rowsOf(s, "s2")) + len(rowsOf(s, "s3"))
	if shown >= 24 || !strings.Contains(s, fmt.Sprintf("rows 1–%d of 24", shown)) || len(rowsOf(s, "s3")) == 8 {
		t.Fatalf("the first screen shows %d GPU rows, not all 24 and saying so:\n%s", shown, s)
	}
	tb.tmux("send-keys", "-t", "top", "End")
	s = tb.waitScreen("the last GPUs", 10*time.Second, func(s string) bool {
		return strings.Contains(s, fmt.Sprintf("rows %d–24 of 24", 25-shown)) && len(rowsOf(s, "s3")) == 8
	})
	if rows := rowsOf(s, "s3"); rows[7][1] != "7" || len(rowsOf(s, "s1")) == 8 {
		t.Errorf("after End:\n%s", s)
	}
	tb.tmux("send-keys", "-t", "top", "PPage")
	tb.waitScreen("the first GPUs again", 10*time.Second, func(s string) bool {
		return strings.Contains(s, fmt.Sprintf("rows 1–%d of 24", shown)) && len(rowsOf(s, "s1")) == 8
	})
	tb.tmux("send-keys", "-t", "top", "/", "s", "2")
	s = tb.waitScreen("s2's GPUs only", 10*time.Second, func(s string) bool {
		return len(rowsOf(s, "s2")) == 8 && len(rowsOf(s, "s1")) == 0 && strings.Contains(s, "filter: s2")
	})
	if len(rowsOf(s, "s3")) != 0 {
		t.Errorf("the filter left other hosts' rows:\n%s", s)
	}
	tb.tmux("send-keys", "-t", "top", "Escape")
	tb.waitScreen("every GPU again", 10*time.Second, func(s string) bool {
		return len(rowsOf(s, "s1")) == 8 && !strings.Contains(s, "filter:")
	})
	tb.tmux("send-keys", "-t", "top", "q")
	waitExit0(t, tb, exitFile)
}

// waitExit0 waits for top's pane to write its exit status, 0.
func waitExit0(t *testing.T, tb *tmuxBed, exitFile string) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		data, _ := os.ReadFile(exitFile)
		if got := strings.TrimSpace(string(data)); got != "" {
			if got != "EXIT=0" {
				t.Fatalf("top ended with %s", got)
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("top did not quit on q:\n%s", tb.screen())
		}
		time.Sleep(100 * time.Millisecond)
	}
}
