package launcher

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tfhive/tfhive/launcher/rundir"
	"github.com/tfhive/tfhive/launcher/supervisor"
	"github.com/tfhive/tfhive/probe/remote"
	"github.com/tfhive/tfhive/probe/sshtest"
)

// lockedBuf is a buffer written by the session's copying goroutine and
// read by the test.
type lockedBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuf) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuf) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// The multiplexer run here by bash starts n kept supervisors over one
// session: each says its claim line, runs its task once told to go, and
// ends with the task's status once its output, stdout and stderr apart,
// is all in.
func TestMuxLocal(t *testing.T) {
	t.Setenv("HOME", t.TempDir())
	const n = 8
	m := newHostMux("T3STMARK")
	type tt struct {
		p                 *muxProc
		so, se, out, errw *lockedBuf
		claimed           chan string
	}
	var ts []tt
	var trunc atomic.Bool
	for i := range n {
		x := tt{so: &lockedBuf{}, se: &lockedBuf{}, out: &lockedBuf{}, errw: &lockedBuf{}, claimed: make(chan string, 1)}
		gate := &supervisor.ClaimGate{Next: x.so, Report: func(l string) { x.claimed <- l }}
		x.p = m.add(fmt.Sprintf("worker:%d", i), gate, x.se, x.out, x.errw, &trunc)
		ts = append(ts, x)
	}
	if err := m.open(context.Background(), remote.Local{}, "20260101-000000-mux", true); err != nil {
		t.Fatal(err)
	}
	defer m.proc.Close()
	for i, x := range ts {
		tk := supervisor.Task{Argv: []string{"sh", "-c", fmt.Sprintf("seq 1 %d; echo oops >&2; printf end; exit %d", 100*(i+1), i)},
			HeartbeatTimeout: 10 * time.Second, Keep: time.Minute, RunID: "20260101-000000-mux", ID: fmt.Sprintf("worker:%d", i),
			Mux: true, Mark: "T3STMARK"}
		if err := m.start(x.p, supervisor.Input(tk)); err != nil {
			t.Fatal(err)
		}
	}
	if err := m.follow(); err != nil {
		t.Fatal(err)
	}
	for i, x := range ts {
		select {
		case l := <-x.claimed:
			if l != supervisor.ClaimOK {
				t.Fatalf("task %d: claim line %q", i, l)
			}
		case <-time.After(20 * time.Second):
			t.Fatalf("task %d: no claim line; stderr %q, mux noise %q", i, x.se.String(), m.noise.String())
		}
		x.p.Stdin().Write([]byte(supervisor.CtlGo))
	}
	for i, x := range ts {
		done := make(chan struct{})
		var rc int
		var err error
		go func() { rc, err = x.p.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(20 * time.Second):
			t.Fatalf("task %d never ended; out %d bytes, n %v, want %v", i, len(x.out.String()), x.p.n, x.p.want)
		}
		if err != nil || rc != i {
			t.Errorf("task %d: rc %d, %v; want %d", i, rc, err, i)
		}
		var want strings.Builder
		for j := 1; j <= 100*(i+1); j++ {
			fmt.Fprintf(&want, "%d\n", j)
		}
		want.WriteString("end")
		if got := x.out.String(); got != want.String() {
			t.Errorf("task %d: stdout %d bytes, want %d: …%q", i, len(got), want.Len(), got[max(0, len(got)-40):])
		}
		if got := x.errw.String(); got != "oops\n" {
			t.Errorf("task %d: stderr %q", i, got)
		}
	}
	if trunc.Load() {
		t.Error("truncated")
	}
	// Every supervisor ended: the multiplexer's session ends too.
	select {
	case <-m.exited:
	case <-time.After(20 * time.Second):
		t.Error("the multiplexer's session outlived its supervisors")
	}
}

// The multiplexer's stderr: its sampler's lines, by their tag, are
// samples, cut anywhere across writes (none before the sampler was
// started); the login shell's lines and a line that lacks the session's
// very tag are noise, never samples; a last line cut short is neither.
func TestMuxStderr(t *testing.T) {
	b := newUsageBook(filepath.Join(t.TempDir(), rundir.GPUUsage), 0, nil)
	b.addTask(0, "worker:0", "h1", []int{0})
	m := newHostMux("T3STMARK")
	tag := m.sampleTag()
	if tag != "@@tfhive-sampler T3STMARK " {
		t.Fatalf("tag %q", tag)
	}
	m.stderr.Write([]byte("Welcome to h1\n" + tag + "0, G0, 1, 1\n"))
	if !m.stderr.take(&sampleLines{host: "h1", book: b}) {
		t.Fatal("take refused before the session ended")
	}
	out := tag + supervisor.SampleMarker + "\n" + tag + "0, G0, 10, 100\n" + "stty: not a tty\n" +
		"@@tfhive-sampler OTHERMARK 0, G0, 99, 999\n" + tag + supervisor.SampleMarker + "\n" + supervisor.SampleMarker + "\n0, G0, 98, 998\n" +
		tag + "0, G0, 30, 300\n" + tag + "0, G0, 5"
	for _, c := range bytes.SplitAfter([]byte(out), []byte("G")) {
		m.stderr.Write(c)
	}
	m.stderr.end()
	if m.stderr.take(nil) {
		t.Error("take accepted after the session ended")
	}
	b.close()
	u := b.usage(0)
	if u == nil || u.Samples != 2 || u.UtilMean != 20 || u.MemPeak != 300 {
		t.Errorf("usage %+v, want the two tagged rows", u)
	}
	noise := m.noise.String()
	if !strings.HasPrefix(noise, "Welcome to h1\nstty: not a tty\n@@tfhive-sampler OTHERMARK 0, G0, 99, 999\n") ||
		strings.Contains(noise, "0, G0, 1,") || strings.Contains(noise, "0, G0, 10, 100") || strings.Contains(noise, "0, G0, 5") {
		t.Errorf("noise %q", noise)
	}
}

// The multiplexer run here by bash runs the sampler as its child: its
// samples come back on the session's stderr, "e .sample" stops it while
// the multiplexer goes on, and the session ends (m.sampled) once the
// multiplexer is closed.
func TestMuxSampleLocal(t *testing.T) {
	t.Setenv("HOME", t.TempDir())
	bin := t.TempDir()
	calls := filepath.Join(bin, "calls")
	smi := "#!/bin/sh\ncase \"$*\" in *--query-gpu*) echo x >>" + calls + "; echo '0, GPU-a, 42, 100'; echo '1, GPU-b, 7, 200';; esac\n"
	if err := os.WriteFile(filepath.Join(bin, "nvidia-smi"), []byte(smi), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", bin+":"+os.Getenv("PATH"))
	b := newUsageBook(filepath.Join(t.TempDir(), rundir.GPUUsage), 0, nil)
	b.addTask(0, "worker:0", "local", []int{1})
	m := newHostMux("T3STMARK")
	if err := m.open(context.Background(), remote.Local{}, "20260101-000000-smp", true); err != nil {
		t.Fatal(err)
	}
	defer m.proc.Close()
	if err := m.sample(&sampleLines{host: "local", book: b}, supervisor.SampleInput([]int{1}, 50*time.Millisecond, "20260101-000000-smp", m.sampleTag())); err != nil {
		t.Fatal(err)
	}
	n := func() int { c, _ := os.ReadFile(calls); return strings.Count(string(c), "\n") }
	deadline := time.Now().Add(20 * time.Second)
	for n() < 4 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if n() < 4 {
		t.Fatalf("%d samples; noise %q", n(), m.noise.String())
	}
	m.stopSample()
	time.Sleep(200 * time.Millisecond)
	stopped := n()
	time.Sleep(300 * time.Millisecond)
	if n() != stopped {
		t.Errorf("the sampler went on after e .sample: %d samples, then %d", stopped, n())
	}
	select {
	case <-m.sampled:
		t.Fatal("the session ended with its sampler")
	default:
	}
	m.close()
	select {
	case <-m.sampled:
	case <-time.After(20 * time.Second):
		t.Fatal("the session outlived its multiplexer")
	}
	b.close()
	if u := b.usage(0); u == nil || u.Samples < 3 || u.UtilMean != 7 || u.MemPeak != 200 {
		t.Errorf("usage %+v, want GPU 1's rows only", u)
	}
	if noise := m.noise.String(); strings.Contains(noise, "@@tfhive") {
		t.Errorf("noise %q", noise)
	}
}

// shellBetween is a shim's first lines: they append "shell-between" to
// log when the shim's parent is a forked copy of a shell whose command
// line holds word, told by the grandparent's holding it too (a
// subshell has its shell's command line).
func shellBetween(word, log string) string {
	return "(read -r s </proc/$PPID/stat; s=${s##*) }; set -- $s\n" +
		"case $(tr '\\0' ' ' </proc/$2/cmdline) in *" + word + "*) echo shell-between >>" + log + ";; esac)\n"
}

// The sampler's queries are its own children, with no shell between and
// no head after them: a sample is two processes (both nvidia-smi), where
// a command substitution around "nvidia-smi | head" and a process
// substitution around another were six. Its rows and an intruder still
// come. The shim tells a shell between by its grandparent: a forked
// subshell of the sampler has the sampler's command line, and the
// sampler's own parent is the multiplexer's wrapper.
func TestMuxSamplerForksLittle(t *testing.T) {
	t.Setenv("HOME", t.TempDir())
	bin := t.TempDir()
	calls := filepath.Join(bin, "calls")
	// A long-lived process of nobody's run, on GPU 1: an intruder.
	other := exec.Command("sleep", "60")
	if err := other.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { other.Process.Kill(); other.Wait() }()
	smi := "#!/bin/sh\n" + shellBetween("tfhive-mux-sample", calls) +
		"case \"$*\" in\n" +
		"*--query-gpu*) echo gpu >>" + calls + "; echo '0, GPU-a, 42, 100'; echo '1, GPU-b, 7, 200';;\n" +
		"*--query-compute-apps*) echo apps >>" + calls + "; echo '" + strconv.Itoa(other.Process.Pid) + ", GPU-b';;\n" +
		"esac\n"
	head := "#!/bin/sh\necho head >>" + calls + "\nexec /usr/bin/head \"$@\"\n"
	for name, text := range map[string]string{"nvidia-smi": smi, "head": head} {
		if err := os.WriteFile(filepath.Join(bin, name), []byte(text), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv("PATH", bin+":"+os.Getenv("PATH"))
	b := newUsageBook(filepath.Join(t.TempDir(), rundir.GPUUsage), 0, nil)
	b.addTask(0, "worker:0", "local", []int{1})
	m := newHostMux("T3STMARK")
	const run = "20260101-000000-smpfork"
	if err := m.open(context.Background(), remote.Local{}, run, true); err != nil {
		t.Fatal(err)
	}
	defer m.proc.Close()
	if err := m.sample(&sampleLines{host: "local", book: b}, supervisor.SampleInput([]int{1}, 50*time.Millisecond, run, m.sampleTag())); err != nil {
		t.Fatal(err)
	}
	count := func(what string) int { c, _ := os.ReadFile(calls); return strings.Count(string(c), what+"\n") }
	deadline := time.Now().Add(20 * time.Second)
	for count("apps") < 3 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	m.stopSample()
	m.close()
	<-m.sampled
	b.close()
	if n := count("apps"); n < 3 {
		t.Fatalf("%d samples; noise %q", n, m.noise.String())
	}
	if n := count("shell-between"); n != 0 {
		t.Errorf("a shell between the sampler and nvidia-smi in %d of %d queries", n, count("gpu")+count("apps"))
	}
	if n := count("head"); n != 0 {
		t.Errorf("head ran %d times", n)
	}
	if u := b.usage(0); u == nil || u.Samples < 3 || u.UtilMean != 7 || u.MemPeak != 200 {
		t.Errorf("usage %+v, want GPU 1's rows", u)
	}
	if in := b.intrudersOf(0); len(in) != 1 || in[0].PID != other.Process.Pid || in[0].GPU != 1 {
		t.Errorf("intruders %+v, want pid %d on GPU 1", in, other.Process.Pid)
	}
}

// A multiplexer whose pump cannot open a task's files (here removed
// between the start and the follow, as a clone's multiplexer sharing
// the directory once did) says why at once, and the task's session ends
// with that reason, not after the watchdog's silence.
func TestMuxPumpFailureSaid(t *testing.T) {
	home := t.TempDir()
	t.Setenv("HOME", home)
	// The supervisor's wrapper outlives the multiplexer the pump ended,
	// and writes its end record there (else, at times, the TempDir went
	// first: "unlinkat …/.mux-F4ILMARK: directory not empty").
	waitHomeUnused(t, home)
	const run = "20260101-000000-muxfail"
	waitRunGone(t, run)
	m := newHostMux("F4ILMARK")
	so := &lockedBuf{}
	var trunc atomic.Bool
	p := m.add("worker:0", so, &lockedBuf{}, &lockedBuf{}, &lockedBuf{}, &trunc)
	if err := m.open(context.Background(), remote.Local{}, run, true); err != nil {
		t.Fatal(err)
	}
	defer m.proc.Close()
	tk := supervisor.Task{Argv: []string{"true"}, HeartbeatTimeout: 10 * time.Second, Keep: time.Minute, RunID: run, ID: "worker:0", Mux: true, Mark: "F4ILMARK"}
	if err := m.start(p, supervisor.Input(tk)); err != nil {
		t.Fatal(err)
	}
	// The start is done once its files are there.
	var out string
	for range 1000 {
		if ms, _ := filepath.Glob(filepath.Join(home, ".tfhive", "runs-*", run, "worker-0.out")); len(ms) == 1 {
			out = ms[0]
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if out == "" || os.Remove(out) != nil {
		t.Fatalf("no task file to remove (%q)", out)
	}
	if err := m.follow(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	var err error
	go func() { _, err = p.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("the task's session is still waiting: the pump's failure went unsaid")
	}
	if want := "the host's multiplexer failed: cannot open " + filepath.Dir(out) + "/.mux-F4ILMARK/worker-0.out"; err == nil || err.Error() != want {
		t.Errorf("Wait: %v, want %q", err, want)
	}
}

// A multiplexer that cannot make its directory says why, as the system
// says it (a full disk's "no space left on device"; here a file in the
// way): the run's tasks could not start, and the line says what to fix.
func TestMuxCannotCreate(t *testing.T) {
	home := t.TempDir()
	t.Setenv("HOME", home)
	const run = "20260101-000000-mux"
	rd := filepath.Join(home, ".tfhive", sshtest.LocalRunsKey(), run)
	if err := os.MkdirAll(rd, 0o700); err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{filepath.Join(home, ".tfhive"), filepath.Dir(rd), rd} {
		os.Chmod(d, 0o700)
	}
	if err := os.WriteFile(filepath.Join(rd, ".mux-T3STMARK"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	m := newHostMux("T3STMARK")
	if err := m.open(context.Background(), remote.Local{}, run, false); err != nil {
		t.Fatal(err)
	}
	defer m.proc.Close()
	select {
	case <-m.exited:
	case <-time.After(20 * time.Second):
		t.Fatal("the multiplexer did not end")
	}
	why := m.refused.Load()
	if want := "cannot create " + filepath.Join(rd, ".mux-T3STMARK") + ": file exists"; why == nil || *why != want {
		t.Errorf("refused %v, want %q", why, want)
	}
}

// An idle pump forks next to nothing: a task that prints a line, sleeps 2
// s and prints another costs a few stat, where a look every 50 ms (then
// 200 ms) cost one each, some 25; its lines still all come. Six in all:
// the run directory's check, the wrapper's sizes, and four looks of the
// pump (the claim line, each of the task's lines, the end), none of them
// forced while the task sleeps (a look is forced 2 s after the last one;
// every tenth look was, two or three more). The supervisor's FIFOs are
// made by one mkfifo of its own, not from a command substitution's
// subshell (which was a fork a task).
func TestMuxIdlePumpForksLittle(t *testing.T) {
	t.Setenv("HOME", t.TempDir())
	shims := t.TempDir()
	log := filepath.Join(shims, "stat.log")
	real, err := exec.LookPath("stat")
	if err != nil {
		t.Skip("no stat here")
	}
	shim := "#!/bin/sh\necho \"$*\" >>" + log + "\nexec " + real + " \"$@\"\n"
	if err := os.WriteFile(filepath.Join(shims, "stat"), []byte(shim), 0o755); err != nil {
		t.Fatal(err)
	}
	// The supervisor makes its FIFOs itself, not from a subshell.
	fifos := filepath.Join(shims, "mkfifo.log")
	realFifo, err := exec.LookPath("mkfifo")
	if err != nil {
		t.Fatal(err)
	}
	shim = "#!/bin/sh\n" + shellBetween("tfhive-sup", fifos) + "echo mkfifo >>" + fifos + "\nexec " + realFifo + " \"$@\"\n"
	if err := os.WriteFile(filepath.Join(shims, "mkfifo"), []byte(shim), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", shims+":"+os.Getenv("PATH"))
	m := newHostMux("T3STMARK")
	out := &lockedBuf{}
	claimed := make(chan string, 1)
	var trunc atomic.Bool
	gate := &supervisor.ClaimGate{Next: &lockedBuf{}, Report: func(l string) { claimed <- l }}
	p := m.add("worker:0", gate, &lockedBuf{}, out, &lockedBuf{}, &trunc)
	const run = "20260101-000000-idle"
	if err := m.open(context.Background(), remote.Local{}, run, true); err != nil {
		t.Fatal(err)
	}
	defer m.proc.Close()
	tk := supervisor.Task{Argv: []string{"sh", "-c", "echo first; sleep 2; echo last"},
		HeartbeatTimeout: 10 * time.Second, Keep: time.Minute, RunID: run, ID: "worker:0", Mux: true, Mark: "T3STMARK"}
	if err := m.start(p, supervisor.Input(tk)); err != nil {
		t.Fatal(err)
	}
	if err := m.follow(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-claimed:
	case <-time.After(20 * time.Second):
		t.Fatal("no claim line")
	}
	p.Stdin().Write([]byte(supervisor.CtlGo))
	done := make(chan struct{})
	go func() { p.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		t.Fatal("the task never ended")
	}
	if got := out.String(); got != "first\nlast\n" {
		t.Errorf("stdout %q", got)
	}
	b, _ := os.ReadFile(log)
	n := bytes.Count(b, []byte("\n"))
	t.Logf("stat ran %d times:\n%s", n, b)
	if n > 6 {
		t.Errorf("stat ran %d times over a 2 s task, want at most 6", n)
	}
	if b, _ := os.ReadFile(fifos); string(b) != "mkfifo\nmkfifo\n" {
		t.Errorf("mkfifo: %q, want the multiplexer's and the supervisor's, neither from a subshell", b)
	}
}

// waitRunGone has the test's end wait (10 s at most) until no process
// of run is left on this machine: the multiplexer ends with the pump's
// failure, and the kept task's supervisor writes its files after that;
// the home's TempDir, removed after this cleanup, would find them coming
// ("directory not empty").
// waitHomeUnused waits, once the test is over and before its TempDir
// goes, until no process but this one has home as its HOME: every
// process a local multiplexer starts inherits it, whatever its command
// line says (a wrapper's is its multiplexer's).
func waitHomeUnused(t *testing.T, home string) {
	mark := []byte("\x00HOME=" + home + "\x00")
	self := fmt.Sprintf("/proc/%d/environ", os.Getpid())
	inUse := func() bool {
		envs, _ := filepath.Glob("/proc/[0-9]*/environ")
		return slices.ContainsFunc(envs, func(p string) bool {
			env, err := os.ReadFile(p)
			return err == nil && p != self && bytes.Contains(append([]byte{0}, env...), mark)
		})
	}
	t.Cleanup(func() {
		for range 1000 {
			if !inUse() {
				return
			}
			time.Sleep(10 * time.Millisecond)
		}
		t.Errorf("processes with HOME=%s still running 10 s after the test", home)
	})
}

func waitRunGone(t *testing.T, run string) {
	t.Cleanup(func() {
		for range 1000 {
			if exec.Command("pgrep", "-f", "--", run).Run() != nil {
				return
			}
			time.Sleep(10 * time.Millisecond)
		}
		t.Errorf("processes of run %s still running 10 s after the test", run)
	})
}
