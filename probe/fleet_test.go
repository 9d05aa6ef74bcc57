package probe

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tfhive/tfhive/probe/inventory"
	"github.com/tfhive/tfhive/probe/remote"
)

// With Then, the probe session goes on as a spare that the first Start of
// that command gets; the next Start opens a session of its own; a later
// Probe ends a spare that was not taken (remote's TestSparesKeepTheSession
// checks how it ends).
func TestFleetKeepsTheProbeSession(t *testing.T) {
	f := NewFleet([]inventory.Host{{Name: "localhost", Address: "localhost", Local: true}}, Options{CommandTimeout: 10 * time.Second})
	defer f.Close()
	eof := filepath.Join(t.TempDir(), "eof")
	then := `IFS= read -r x || { echo "$$" >> ` + eof + `; exit 3; }; echo "$$ got $x"`
	f.KeepSessions(then)
	ctx := context.Background()
	if inv := f.Probe(ctx); inv.Hosts[0].Err != nil {
		t.Fatalf("probe: %s", inv.Hosts[0].Err.Message)
	}
	if !f.spares.Held(0) {
		t.Fatal("no spare after the probe")
	}
	start := func() string {
		t.Helper()
		pid, _ := startThen(t, f.Executor(0), then)
		return pid
	}
	first, second := start(), start()
	if first == second {
		t.Fatal("the second Start reused the spare too")
	}
	if f.spares.Held(0) {
		t.Fatal("the spare is still there after being taken")
	}

	f.Probe(ctx)
	if !f.spares.Held(0) {
		t.Fatal("no spare after the second probe")
	}
	f.Probe(ctx)
	deadline := time.Now().Add(5 * time.Second)
	for {
		if data, _ := os.ReadFile(eof); len(data) > 0 {
			if lines := strings.Count(string(data), "\n"); lines != 1 {
				t.Errorf("%d spares saw EOF, want the one not taken:\n%s", lines, data)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("a new probe did not end the spare not taken")
		}
		time.Sleep(10 * time.Millisecond)
	}
	// The last probe's spare, ended by Close, writes into the test's
	// TempDir too: it is waited for before the TempDir goes ("directory
	// not empty" once, 1 run in 5 under -race).
	f.Close()
	for deadline := time.Now().Add(5 * time.Second); ; {
		data, _ := os.ReadFile(eof)
		if strings.Count(string(data), "\n") == 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("Close did not end the last spare: %q", data)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// A host left out (a host lost during a run) is not probed again: the
// probe reports it with the reason, its connection and spare are gone,
// and the other hosts are probed as before.
func TestFleetLeave(t *testing.T) {
	f := NewFleet([]inventory.Host{{Name: "a", Address: "localhost", Local: true}, {Name: "b", Address: "localhost", Local: true}},
		Options{CommandTimeout: 10 * time.Second, Then: "exec cat"})
	defer f.Close()
	ctx := context.Background()
	for i, h := range f.Probe(ctx).Hosts {
		if h.Err != nil {
			t.Fatalf("probe %d: %s", i, h.Err.Message)
		}
	}
	f.Leave("a", "lost during the run")
	f.Leave("nowhere", "no such host: nothing happens")
	if f.Executor(0) != nil || f.spares.Held(0) {
		t.Error("the host left out still has its connection or spare")
	}
	inv := f.Probe(ctx)
	if e := inv.Hosts[0].Err; e == nil || e.Kind != inventory.ErrLost || e.Message != "lost during the run" {
		t.Errorf("left out: %+v", e)
	}
	if e := inv.Hosts[1].Err; e != nil || f.Executor(1) == nil {
		t.Errorf("the other host: %+v", e)
	}
}

// startThen starts then (a command that echoes its pid and the line it
// reads) on ex, feeds it "hello" and returns its pid and whether the
// session was a spare (it ran a probe before: LoggedIn).
func startThen(t *testing.T, ex remote.Executor, then string) (pid string, spare bool) {
	t.Helper()
	var out, errb bytes.Buffer
	p, err := ex.Start(context.Background(), then, &out, &errb)
	if err != nil {
		t.Fatal(err)
	}
	l, ok := p.(interface{ LoggedIn() bool })
	spare = ok && l.LoggedIn()
	io.WriteString(p.Stdin(), "hello\n")
	if rc, err := p.Wait(); rc != 0 || err != nil {
		t.Fatalf("rc %d, err %v, stderr %q", rc, err, errb.String())
	}
	pid, rest, _ := strings.Cut(out.String(), " ")
	if rest != "got hello\n" {
		t.Fatalf("output %q: the probe's output leaked, or stdin did not arrive", out.String())
	}
	return pid, spare
}
