package supervisor

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// pumpHarness runs the multiplexer's pump (tfhive_pump, mux.sh's own
// text) by itself in bash, over the files a, b and events of a
// directory, its frames taken apart as tfhive does (MuxFrames); stat and
// head are wrapped, each call logged (only the pump runs them).
type pumpHarness struct {
	t       *testing.T
	dir     string
	calls   string    // the wrappers' log: a name a line
	tick    *os.File  // the pump's FIFO, written to wake it
	mux     *exec.Cmd // the "multiplexer" the pump watches: its end ends the pump
	cmd     *exec.Cmd
	exited  chan struct{} // closed once the pump has ended, with err
	err     error
	mu      sync.Mutex
	got     map[string]*bytes.Buffer
	frames  int
	decoder *MuxFrames
}

// pumpFunctions is the text of mux.sh's tfhive_pump and tfhive_pumpfail.
func pumpFunctions(t *testing.T) string {
	var fns []string
	for _, name := range []string{"tfhive_pump", "tfhive_pumpfail"} {
		m := regexp.MustCompile(`(?ms)^` + name + `\(\) \{\n.*?^\}\n`).FindString(muxSh.Text())
		if m == "" {
			t.Fatalf("mux.sh has no function %s", name)
		}
		fns = append(fns, m)
	}
	return strings.Join(fns, "")
}

func startPump(t *testing.T, env ...string) *pumpHarness {
	h := &pumpHarness{t: t, dir: t.TempDir(), got: map[string]*bytes.Buffer{}, exited: make(chan struct{})}
	md := filepath.Join(h.dir, ".mux-T3ST")
	if err := os.Mkdir(md, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mkfifo(filepath.Join(md, "tick"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"a", "b", "events"} {
		if err := os.WriteFile(filepath.Join(md, f), nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	bin := filepath.Join(h.dir, "bin")
	h.calls = filepath.Join(h.dir, "calls")
	if err := os.Mkdir(bin, 0o700); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"stat", "head"} {
		real, err := exec.LookPath(name)
		if err != nil {
			t.Skipf("no %s: %v", name, err)
		}
		w := fmt.Sprintf("#!/bin/sh\necho %s >>'%s'\nexec '%s' \"$@\"\n", name, h.calls, real)
		if err := os.WriteFile(filepath.Join(bin, name), []byte(w), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	h.mux = exec.Command("sleep", "600")
	if err := h.mux.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.mux.Process.Kill(); h.mux.Wait() })
	script := "tfhive_mux=$1 tfhive_md=$2 tfhive_rd=$3\n" + pumpFunctions(t) +
		"cd \"$tfhive_rd\" || exit 9\ntfhive_pump .mux-T3ST/a .mux-T3ST/b .mux-T3ST/events\n"
	h.cmd = exec.Command("bash", "--norc", "-c", script, "pump", strconv.Itoa(h.mux.Process.Pid), md, h.dir)
	h.cmd.Env = append(append(os.Environ(), "PATH="+bin+":"+os.Getenv("PATH")), env...)
	h.cmd.Stderr = os.Stderr
	out, err := h.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	h.decoder = &MuxFrames{Emit: func(name string, p []byte) {
		b := h.got[name]
		if b == nil {
			b = &bytes.Buffer{}
			h.got[name] = b
		}
		b.Write(p)
	}}
	if err := h.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.cmd.Process.Kill(); <-h.exited })
	go func() {
		buf := make([]byte, 64<<10)
		for {
			n, err := out.Read(buf)
			h.mu.Lock()
			h.decoder.Write(buf[:n])
			h.frames++
			h.mu.Unlock()
			if err != nil {
				break
			}
		}
		h.err = h.cmd.Wait()
		close(h.exited)
	}()
	// The FIFO opens for writing once the pump has it open: not before
	// (O_NONBLOCK: ENXIO while it has no reader).
	deadline := time.Now().Add(20 * time.Second)
	for {
		f, err := os.OpenFile(filepath.Join(md, "tick"), os.O_WRONLY|unix.O_NONBLOCK, 0)
		if err == nil {
			h.tick = f
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the pump never opened its FIFO: %v", err)
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Cleanup(func() { h.tick.Close() })
	return h
}

// appendTo adds p to the file name (a, b or events) in one write.
func (h *pumpHarness) appendTo(name string, p []byte) {
	f, err := os.OpenFile(filepath.Join(h.dir, ".mux-T3ST", name), os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		h.t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.Write(p); err != nil {
		h.t.Fatal(err)
	}
}

// wake ends n of the pump's waits at once, and returns once it has read
// all of them: its looks before the last one are done.
func (h *pumpHarness) wake(n int) {
	if _, err := h.tick.Write(bytes.Repeat([]byte("\n"), n)); err != nil {
		h.t.Fatal(err)
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		left, err := unix.IoctlGetInt(int(h.tick.Fd()), unix.TIOCINQ)
		if err != nil {
			h.t.Fatal(err)
		}
		if left == 0 {
			return
		}
		if time.Now().After(deadline) {
			h.t.Fatalf("the pump left %d bytes of its FIFO unread", left)
		}
		time.Sleep(time.Millisecond)
	}
}

// waitFor waits until the frames of name hold n bytes.
func (h *pumpHarness) waitFor(name string, n int) []byte {
	deadline := time.Now().Add(20 * time.Second)
	for {
		h.mu.Lock()
		var b []byte
		if h.got[name] != nil {
			b = bytes.Clone(h.got[name].Bytes())
		}
		broken := h.decoder.broken
		h.mu.Unlock()
		if broken {
			h.t.Fatal("the pump's stdout is not frames")
		}
		if len(b) >= n {
			return b
		}
		if time.Now().After(deadline) {
			h.t.Fatalf("%s: %d bytes framed, want %d", name, len(b), n)
		}
		time.Sleep(time.Millisecond)
	}
}

// pumpCalls counts the wrapped commands the pump ran.
func (h *pumpHarness) pumpCalls() map[string]int {
	c, _ := os.ReadFile(h.calls)
	n := map[string]int{}
	for _, l := range strings.Fields(string(c)) {
		n[l]++
	}
	return n
}

// reaped is the minor page faults of the pump's children it has waited
// for (/proc/PID/stat's cminflt): any process it forked, whatever it
// ran, adds to it once reaped (a forked child's first write to its stack
// is a fault).
func (h *pumpHarness) reaped() int {
	s, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", h.cmd.Process.Pid))
	if err != nil {
		h.t.Fatal(err)
	}
	f := strings.Fields(string(s[bytes.LastIndexByte(s, ')')+1:]))
	n, err := strconv.Atoi(f[8])
	if err != nil {
		h.t.Fatalf("/proc/PID/stat %q: %v", s, err)
	}
	return n
}

// The pump's looks at files that did not grow fork nothing: 21 of them
// (more than its first idle second's) run no stat, no head, no process;
// the look that finds a file grown runs its stat, and the bytes come.
func TestMuxPumpIdleForksNothing(t *testing.T) {
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		t.Skip("no /proc")
	}
	h := startPump(t)
	h.appendTo("a", []byte("first\n"))
	h.wake(1)
	h.waitFor("a", 6)
	h.wake(2) // past the look that framed it
	before, calls := h.reaped(), h.pumpCalls()
	if calls["stat"] == 0 {
		t.Fatalf("the wrapped stat never ran (calls %v): the count below could not fail", calls)
	}
	h.wake(21)
	if n, after := h.pumpCalls(), h.reaped(); n["stat"] != calls["stat"] || n["head"] != calls["head"] || after != before {
		t.Errorf("21 idle looks forked: stat %d, head %d, children's page faults %d (want none of them)",
			n["stat"]-calls["stat"], n["head"]-calls["head"], after-before)
	}
	h.appendTo("b", []byte("then more"))
	h.wake(1)
	if got := h.waitFor("b", 9); string(got) != "then more" {
		t.Errorf("b framed %q", got)
	}
	if n := h.pumpCalls(); n["stat"] <= calls["stat"] {
		t.Errorf("the look that found b grown ran no stat (calls %v, before %v)", n, calls)
	}
	h.appendTo("events", []byte("x last;\n"))
	h.mux.Process.Kill()
	h.mux.Wait() // no zombie: kill -0 would find it alive
	select {
	case <-h.exited:
		if h.err != nil {
			t.Errorf("the pump ended with %v", h.err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the pump outlived its multiplexer")
	}
	if got := h.waitFor("events", 8); string(got) != "x last;\n" {
		t.Errorf("events framed %q", got)
	}
}

// Every byte value, NUL too, is the first of a frame (the one the pump's
// look reads itself) and comes as it was, once, in order, in a UTF-8
// locale too; frames of one byte and of more alternate.
func TestMuxPumpEveryByte(t *testing.T) {
	h := startPump(t, "LC_ALL=C.UTF-8")
	var want []byte
	for i := range 256 {
		p := []byte{byte(i)}
		if i%2 == 1 {
			p = append(p, byte(255-i), '\n', 0, 'z')
		}
		want = append(want, p...)
		h.appendTo("a", p)
		h.wake(1)
		h.waitFor("a", len(want))
	}
	if got := h.waitFor("a", len(want)); !bytes.Equal(got, want) {
		t.Errorf("a framed %d bytes, want %d: %q", len(got), len(want), got)
	}
}
