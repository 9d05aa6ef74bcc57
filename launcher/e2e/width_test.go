package e2e

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/tfhive/tfhive/probe/sshtest"
)

// The width rule (launcher/view/width.go) on the real binary: a row is
// one line; cut to a terminal's width with "…"; whole into a pipe; and
// status --watch redraws within the terminal's height.

// nodriverReason is what status says of gpu-nodriver: 150 columns, past
// any terminal's DETAIL column.
const nodriverReason = "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. " +
	"Make sure that the latest NVIDIA driver is installed and running. (exit 9)"

// wideFleet has more rows than a 30-line terminal (three 8-GPU hosts, a
// busy host, 29 rows in all), a host whose reason is long and a GPU whose
// processes make a long DETAIL.
func wideFleet(t *testing.T) *sshtest.Fleet {
	return sshtest.Start(t,
		sshtest.Profile{Name: "gpu-a", GPU: "idle-8gpu.xml"},
		sshtest.Profile{Name: "gpu-b", GPU: "idle-8gpu.xml"},
		sshtest.Profile{Name: "gpu-c", GPU: "idle-8gpu.xml"},
		sshtest.Profile{Name: "gpu-busy", GPU: "busy-4gpu.xml", BusyPIDs: busyCommands},
		sshtest.Profile{Name: "gpu-nodriver", GPU: "driver-failed.txt", GPUExit: 9},
	)
}

// wantOneRowEach checks that the table has one line per GPU of each host
// (one for gpu-nodriver) and nothing else but its header.
func wantOneRowEach(t *testing.T, what string, lines []string) {
	t.Helper()
	want := map[string]int{"gpu-a": 8, "gpu-b": 8, "gpu-c": 8, "gpu-busy": 4, "gpu-nodriver": 1}
	table := strings.Join(lines, "\n")
	for host, n := range want {
		if got := len(rowsOf(table, host)); got != n {
			t.Errorf("%s: %d lines for %s, want %d:\n%s", what, got, host, n, table)
		}
	}
	for _, l := range lines {
		if cols := splitCols(l); len(cols) > 0 && cols[0] != "HOST" && want[cols[0]] == 0 {
			t.Errorf("%s: a line that is no host's row: %q", what, l)
		}
	}
}

// Into a pipe, status prints one line per GPU (one per host without
// GPUs), each whole: gpu-nodriver's 150-column reason on its row, not on
// lines below it, whatever $COLUMNS says.
func TestStatusIntoAPipeOneLineAGPU(t *testing.T) {
	t.Parallel() // beside others, on a fleet of its own (testing.md)
	f := wideFleet(t)
	r := tfhive(t, append(f.Env(), "COLUMNS=60"), f.Dir, fleetArgs(f, "status")...)
	wantCode(t, r, 0)
	lines := strings.Split(strings.TrimSuffix(r.stdout, "\n"), "\n")
	if len(lines) != 1+29 {
		t.Errorf("%d lines, want a header and 29 rows:\n%s", len(lines), r.stdout)
	}
	wantOneRowEach(t, "status | cat", lines)
	if rows := rowsOf(r.stdout, "gpu-nodriver"); len(rows) != 1 || rows[0][6] != nodriverReason {
		t.Errorf("gpu-nodriver's DETAIL is not whole on its row: %q\n%s", rows, r.stdout)
	}
	if busy := rowsOf(r.stdout, "gpu-busy"); len(busy) != 4 || !strings.Contains(busy[2][6], "ray::RolloutWorker") {
		t.Errorf("gpu-busy GPU 2's DETAIL does not name both processes: %q", busy)
	}
}

// On a 100×30 terminal (tmux), status's every line is at most 100 columns,
// one per GPU, cut with "…" where it was longer (gpu-nodriver's reason, a
// busy GPU's processes); status --watch redraws within the 30 lines, its
// header staying on the first, its last saying how many rows it hides.
func TestStatusFitsTerminalUnderTmux(t *testing.T) {
	tb := newTmux(t)
	f := wideFleet(t)
	dir := t.TempDir()

	// pane starts a session of width×height running tfhive with args,
	// its stderr to a file (warnings are not the table's), then a shell
	// that stays: the pane is read after tfhive's end.
	pane := func(name string, args ...string) (exitFile string) {
		exitFile = filepath.Join(dir, name+".exit")
		var script strings.Builder
		// Ctrl-C is for tfhive: the shell, in its process group, goes on
		// to say how it ended.
		script.WriteString("trap : INT\ncd " + shQuote(f.Dir) + " || exit 1\n")
		for _, kv := range f.Env() {
			k, _, _ := strings.Cut(kv, "=")
			if k == "TERM" || k == "NO_COLOR" || k == "TMUX" || k == "TMUX_PANE" || k == "COLUMNS" || k == "LINES" || strings.ContainsAny(k, "() ") {
				continue
			}
			script.WriteString("export " + shQuote(kv) + "\n")
		}
		argv := append([]string{tfhiveBin}, fleetArgs(f, args...)...)
		for i := range argv {
			argv[i] = shQuote(argv[i])
		}
		script.WriteString(strings.Join(argv, " ") + " 2>" + shQuote(filepath.Join(dir, name+".stderr")) +
			"\necho \"EXIT=$?\" > " + shQuote(exitFile) + "\nexec sleep 600\n")
		scriptFile := filepath.Join(dir, name+".sh")
		if err := os.WriteFile(scriptFile, []byte(script.String()), 0o755); err != nil {
			t.Fatal(err)
		}
		tb.tmux("new-session", "-d", "-s", name, "-x", "100", "-y", "30", "sh "+shQuote(scriptFile))
		return exitFile
	}
	waitExit := func(name, exitFile string) string {
		t.Helper()
		deadline := time.Now().Add(60 * time.Second)
		for {
			if data, _ := os.ReadFile(exitFile); strings.TrimSpace(string(data)) != "" {
				return strings.TrimSpace(string(data))
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s did not end:\n%s", name, tb.tmux("capture-pane", "-p", "-t", name))
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	// capture is the pane's lines, those the terminal wrapped joined
	// back (-J: a wrapped row shows as one line wider than the pane),
	// with the scrollback when all.
	capture := func(name string, all bool) []string {
		args := []string{"capture-pane", "-p", "-J", "-t", name}
		if all {
			args = append(args, "-S", "-")
		}
		out := strings.Split(strings.TrimSuffix(tb.tmux(args...), "\n"), "\n")
		for i := range out {
			out[i] = strings.TrimRight(out[i], " ")
		}
		return out
	}
	wantWithin := func(what string, lines []string) {
		t.Helper()
		for _, l := range lines {
			if n := utf8.RuneCountInString(l); n > 100 {
				t.Errorf("%s: a line of %d columns on a 100-column terminal: %q", what, n, l)
			}
		}
	}

	// status, once.
	if got := waitExit("status", pane("status", "status")); got != "EXIT=0" {
		t.Fatalf("status: %s\n%s", got, strings.Join(capture("status", true), "\n"))
	}
	lines := capture("status", true)
	for len(lines) > 0 && lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	wantWithin("status", lines)
	wantOneRowEach(t, "status on a terminal", lines)
	// The rows longer than the terminal: cut to its 100 columns, "…" last.
	for _, re := range []*regexp.Regexp{regexp.MustCompile(`^gpu-nodriver\s+-\s`), regexp.MustCompile(`^gpu-busy\s+2\s`)} {
		i := slices.IndexFunc(lines, re.MatchString)
		if i < 0 {
			t.Errorf("no line matches %s:\n%s", re, strings.Join(lines, "\n"))
			continue
		}
		if l := lines[i]; utf8.RuneCountInString(l) != 100 || !strings.HasSuffix(l, "…") {
			t.Errorf("a long row not cut at 100 columns with …: %q", l)
		}
	}
	if i := slices.IndexFunc(lines, func(l string) bool { return strings.HasPrefix(l, "gpu-nodriver ") }); i >= 0 &&
		!strings.Contains(lines[i], "driver-error  NVIDIA-SMI has") {
		t.Errorf("gpu-nodriver's row does not start its reason: %q", lines[i])
	}

	// status --watch: every screen is the terminal's 30 lines, the header
	// first (nothing scrolled), the rows that do not fit counted last.
	exitFile := pane("watch", "status", "--watch", "200ms")
	header := regexp.MustCompile(`^Every 200ms: tfhive status    \d\d:\d\d:\d\d$`)
	more := regexp.MustCompile(`^… \d+ more rows$`)
	tb.waitPane("watch", "a refreshed screen", 60*time.Second, func(s string) bool { return strings.Contains(s, "gpu-a ") })
	seen := map[string]bool{}
	for deadline := time.Now().Add(10 * time.Second); len(seen) < 2 && time.Now().Before(deadline); time.Sleep(150 * time.Millisecond) {
		s := capture("watch", false)
		if len(s) != 30 {
			t.Fatalf("a screen of %d lines (those the terminal wrapped joined) on a 30-line terminal:\n%s", len(s), strings.Join(s, "\n"))
		}
		if strings.Contains(strings.Join(s, "\n"), "gpu-a ") {
			if !header.MatchString(s[0]) || !strings.HasPrefix(s[2], "HOST ") || !more.MatchString(s[29]) {
				t.Fatalf("the screen scrolled or overflowed (want the header on line 1, the table's on 3, \"… N more rows\" on 30):\n%s",
					strings.Join(s, "\n"))
			}
			wantWithin("status --watch", s)
			seen[s[0]] = true
		}
	}
	if len(seen) < 2 {
		t.Errorf("status --watch did not redraw within 10s: %v", seen)
	}
	tb.tmux("send-keys", "-t", "watch", "C-c")
	if got := waitExit("watch", exitFile); got != "EXIT=0" {
		t.Errorf("status --watch on Ctrl-C: %s", got)
	}
}
