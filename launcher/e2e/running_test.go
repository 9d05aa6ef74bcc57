package e2e

import (
	"bufio"
	"bytes"
	"io"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/tfhive/tfhive/probe/sshtest"
)

// stream is which of a background tfhive's outputs its test reads line by
// line, as it comes.
type stream int

const (
	readStdout stream = iota
	readStderr
)

// running is tfhive started in the background on a fleet: its test reads
// one stream line by line while tfhive runs (to know when to act), and
// the other is kept whole in other, to read after Wait.
type running struct {
	*exec.Cmd
	lines *bufio.Scanner
	read  strings.Builder // the lines read so far, each ending in "\n"
	other bytes.Buffer
	// discarded is closed once discardRest's reader has read to the end:
	// from then on that reader owns lines, and a later read waits for it.
	discarded chan struct{}
	// tailMu guards tail: the last lines discardRest's reader read, for a
	// failure's message.
	tailMu sync.Mutex
	tail   []string
}

// startTfhive starts tfhive with f's environment in f's directory. The
// test's end kills it if it still runs.
// startAttach starts `tfhive attach RUN` as from a second machine: a HOME
// and log dir of its own, the same hosts. It is killed at the test's end.
func startAttach(t *testing.T, f *sshtest.Fleet, id string) (a *running, home, logDir string) {
	t.Helper()
	home, logDir = t.TempDir(), filepath.Join(t.TempDir(), "adopted")
	a = &running{Cmd: exec.Command(tfhiveBin, "attach", "--hosts", f.HostsYAML, "--ssh-config", f.SSHConfig,
		"--log-dir", logDir, "--grace", "2s", id)}
	a.Env, a.Dir = append(f.Env(), "HOME="+home), home
	a.Stderr = &a.other
	pipe, err := a.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Process.Kill(); a.Wait() })
	a.lines = bufio.NewScanner(pipe)
	return a, home, logDir
}

func startTfhive(t *testing.T, f *sshtest.Fleet, s stream, args ...string) *running {
	t.Helper()
	r := &running{Cmd: exec.Command(tfhiveBin, args...)}
	r.Env, r.Dir = f.Env(), f.Dir
	var pipe io.ReadCloser
	var err error
	if s == readStderr {
		r.Stdout = &r.other
		pipe, err = r.StderrPipe()
	} else {
		r.Stderr = &r.other
		pipe, err = r.StdoutPipe()
	}
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Start(); err != nil {
		t.Fatal(err)
	}
	// A run still going at the end of its test is stopped as a user
	// would (SIGTERM: its tasks stopped on the hosts), killed if it hangs.
	t.Cleanup(func() {
		r.Process.Signal(syscall.SIGTERM)
		t := time.AfterFunc(30*time.Second, func() { r.Process.Kill() })
		r.Wait()
		t.Stop()
	})
	r.lines = bufio.NewScanner(pipe)
	return r
}

// readUntil reads lines until one matches, and says whether one did
// before the stream ended.
func (r *running) readUntil(match func(line string) bool) bool {
	if r.discarded != nil {
		<-r.discarded
		return false
	}
	for r.lines.Scan() {
		r.read.WriteString(r.lines.Text() + "\n")
		if match(r.lines.Text()) {
			return true
		}
	}
	return false
}

// readAll reads the stream to its end: Wait may be called after it.
func (r *running) readAll() { r.readUntil(func(string) bool { return false }) }

// discardRest reads the rest of the stream in the background, unkept, so
// that tfhive never blocks on a full pipe while the test does other things.
func (r *running) discardRest() {
	if r.discarded != nil {
		return
	}
	r.discarded = make(chan struct{})
	go func() {
		defer close(r.discarded)
		for r.lines.Scan() {
			r.tailMu.Lock()
			if len(r.tail) == 40 {
				r.tail = r.tail[1:]
			}
			r.tail = append(r.tail, r.lines.Text())
			r.tailMu.Unlock()
		}
	}()
}

// lastLines are the last lines discardRest's reader read.
func (r *running) lastLines() string {
	r.tailMu.Lock()
	defer r.tailMu.Unlock()
	return strings.Join(r.tail, "\n")
}
