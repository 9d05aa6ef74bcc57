package remote

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

const markEnd = "@@tfhive-end"

// The end marker is found however the output is cut into writes; what
// follows it is kept for the new owner (stdout) or dropped (stderr).
func TestHandoffFindsTheMarkerAcrossWrites(t *testing.T) {
	probeOut := "banner\n" + "@@tfhive-smi" + " 0\n<xml/>\n" + markEnd + "\n"
	all := probeOut + "after\n"
	for size := 1; size <= len(all); size++ {
		h := newHandoff(markEnd)
		for i := 0; i < len(all); i += size {
			h.Write([]byte(all[i:min(i+size, len(all))]))
		}
		select {
		case <-h.ended:
		default:
			t.Fatalf("writes of %d: marker not found", size)
		}
		if got := string(h.probe); got != probeOut {
			t.Fatalf("writes of %d: probe output %q", size, got)
		}
		var w bytes.Buffer
		h.handTo(&w, true)
		h.Write([]byte("later\n"))
		if w.String() != "after\nlater\n" {
			t.Fatalf("writes of %d: new owner got %q", size, w.String())
		}
	}

	h := newHandoff(markEnd)
	h.Write([]byte("no marker here: " + markEnd + " is not a line\n"))
	select {
	case <-h.ended:
		t.Fatal("marker found inside a line")
	default:
	}

	e := newHandoff("")
	e.Write([]byte("the probe's stderr\n"))
	var w bytes.Buffer
	e.handTo(&w, false)
	e.Write([]byte("the task's\n"))
	if w.String() != "the task's\n" {
		t.Fatalf("stderr's new owner got %q", w.String())
	}
}

// A session kept after its marker goes on as a spare that the first Start
// of its next command gets; the next Start opens a session of its own; a
// later RunKeeping on the host ends a spare that was not taken.
func TestSparesKeepTheSession(t *testing.T) {
	s := NewSpares(1)
	defer s.DropAll()
	then := `IFS= read -r x || exit 3; echo "$$ got $x"`
	cmd := "echo banner; echo " + markEnd + "; " + then
	ctx := context.Background()
	rc, out, _, err := s.RunKeeping(ctx, 0, Local{}, cmd, markEnd, then)
	if rc != 0 || err != nil || string(out) != "banner\n"+markEnd+"\n" {
		t.Fatalf("RunKeeping: rc %d, err %v, output %q", rc, err, out)
	}
	if !s.Held(0) {
		t.Fatal("no spare after the marker")
	}
	start := func() (pid string) {
		t.Helper()
		var out, errb bytes.Buffer
		p, err := s.Executor(0, Local{}).Start(ctx, then, &out, &errb)
		if err != nil {
			t.Fatal(err)
		}
		io.WriteString(p.Stdin(), "hello\n")
		if rc, err := p.Wait(); rc != 0 || err != nil {
			t.Fatalf("rc %d, err %v, stderr %q", rc, err, errb.String())
		}
		pid, rest, _ := strings.Cut(out.String(), " ")
		if rest != "got hello\n" {
			t.Fatalf("output %q: the first output leaked, or stdin did not arrive", out.String())
		}
		return pid
	}
	first, second := start(), start()
	if first == second {
		t.Fatal("the second Start reused the spare too")
	}
	if s.Held(0) {
		t.Fatal("the spare is still there after being taken")
	}

	s.RunKeeping(ctx, 0, Local{}, cmd, markEnd, then)
	left := s.spares[0].p
	s.RunKeeping(ctx, 0, Local{}, cmd, markEnd, then)
	select {
	case <-left.done:
		if left.rc != 3 {
			t.Errorf("the spare not taken exited %d, want 3 (EOF)", left.rc)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("a new RunKeeping did not end the spare not taken")
	}
}

// A spare whose session ended before a task took it (its host closed it)
// is not handed out: the task gets a fresh session.
func TestSpareThatEndedIsNotTaken(t *testing.T) {
	dir := t.TempDir()
	marker, gate := filepath.Join(dir, "fresh"), filepath.Join(dir, "gate")
	if err := syscall.Mkfifo(gate, 0o600); err != nil {
		t.Fatal(err)
	}
	// Each session waits at the gate: the spare must be kept before it
	// ends, and it ends when the test opens the gate.
	open := func() {
		go func() {
			if f, err := os.OpenFile(gate, os.O_WRONLY, 0); err == nil {
				f.Close()
			}
		}()
	}
	then := `cat ` + gate + ` >/dev/null; [ -e ` + marker + ` ] || exit 9; echo fresh`
	s := NewSpares(1)
	defer s.DropAll()
	ctx := context.Background()
	if rc, _, _, err := s.RunKeeping(ctx, 0, Local{}, "echo banner; echo "+markEnd+"; "+then, markEnd, then); rc != 0 || err != nil || !s.Held(0) {
		t.Fatalf("RunKeeping: rc %d, err %v, held %v", rc, err, s.Held(0))
	}
	open()
	<-s.spares[0].p.done // the spare's session ends (as if its host ended it)
	os.WriteFile(marker, nil, 0o644)
	var out strings.Builder
	p, err := s.Executor(0, Local{}).Start(ctx, then, &out, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	open()
	if rc, err := p.Wait(); rc != 0 || err != nil || out.String() != "fresh\n" {
		t.Errorf("got exit %d, %v, %q: want a fresh session", rc, err, out.String())
	}
}

// A command whose output passes MaxHeld before its end marker is stopped
// and is ErrTooMuchOutput, at once (not when the command ends, nor at the
// caller's timeout), and keeps nothing of it; one that ends past it
// without the marker is the same error.
func TestRunKeepingBoundsOutput(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	s := NewSpares(1)
	start := time.Now()
	// Endless output, then (never reached) the marker.
	rc, out, _, err := s.RunKeeping(ctx, 0, Local{}, "yes xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx; echo "+markEnd+"; cat", markEnd, "cat")
	if !errors.Is(err, ErrTooMuchOutput) || rc != -1 || out != nil || s.Held(0) {
		t.Errorf("endless output: rc %d, %d bytes, err %v, held %v", rc, len(out), err, s.Held(0))
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("stopped after %v", d)
	}
	rc, out, _, err = s.RunKeeping(ctx, 0, Local{}, "head -c 9000000 /dev/zero", markEnd, "cat")
	if !errors.Is(err, ErrTooMuchOutput) || out != nil {
		t.Errorf("9 MB then the end: rc %d, %d bytes, err %v", rc, len(out), err)
	}
	// Under the bound, as before.
	rc, out, _, err = s.RunKeeping(ctx, 0, Local{}, "head -c 7000000 /dev/zero; echo; echo "+markEnd+"; cat", markEnd, "cat")
	if err != nil || rc != 0 || len(out) != 7000001+len(markEnd)+1 {
		t.Errorf("7 MB: rc %d, %d bytes, err %v", rc, len(out), err)
	}
	s.DropAll()
}
