package probe

import (
	"bytes"
	"context"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/tfhive/tfhive/probe/inventory"
)

// The end marker is found however the output is cut into writes; what
// follows it is kept for the new owner (stdout) or dropped (stderr).
func TestHandoffFindsTheMarkerAcrossWrites(t *testing.T) {
	probeOut := "banner\n" + markSMI + " 0\n<xml/>\n" + markEnd + "\n"
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

// With Then, the probe session goes on as a spare that the first Start of
// that command gets; the next Start opens a session of its own; a later
// Probe ends a spare that was not taken.
func TestFleetKeepsTheProbeSession(t *testing.T) {
	f := NewFleet([]inventory.Host{{Name: "localhost", Address: "localhost", Local: true}}, Options{CommandTimeout: 10 * time.Second})
	defer f.Close()
	then := `IFS= read -r x || exit 3; echo "$$ got $x"`
	f.KeepSessions(then)
	ctx := context.Background()
	if inv := f.Probe(ctx); inv.Hosts[0].Err != nil {
		t.Fatalf("probe: %s", inv.Hosts[0].Err.Message)
	}
	spare := f.spares[0]
	if spare == nil {
		t.Fatal("no spare after the probe")
	}
	start := func() (pid string) {
		t.Helper()
		var out, errb bytes.Buffer
		p, err := f.Executor(0).Start(ctx, then, &out, &errb)
		if err != nil {
			t.Fatal(err)
		}
		io.WriteString(p.Stdin(), "hello\n")
		if rc, err := p.Wait(); rc != 0 || err != nil {
			t.Fatalf("rc %d, err %v, stderr %q", rc, err, errb.String())
		}
		pid, rest, _ := strings.Cut(out.String(), " ")
		if rest != "got hello\n" {
			t.Fatalf("output %q: the probe's output leaked, or stdin did not arrive", out.String())
		}
		return pid
	}
	first, second := start(), start()
	if first == second {
		t.Fatal("the second Start reused the spare too")
	}
	if f.spares[0] != nil {
		t.Fatal("the spare is still there after being taken")
	}

	f.Probe(ctx)
	left := f.spares[0].p.(*waited)
	f.Probe(ctx)
	select {
	case <-left.done:
		if left.rc != 3 {
			t.Errorf("the spare not taken exited %d, want 3 (EOF)", left.rc)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("a new probe did not end the spare not taken")
	}
}
