package remote_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/tfhive/tfhive/probe/remote"
	"github.com/tfhive/tfhive/probe/remote/remotetest"
)

// Bounded keeps all that is written up to its bound, at the bound too;
// the write that passes it keeps what fits, Over is called once, and
// later writes are swallowed: each write still succeeds in full, so the
// stream is still read.
func TestBounded(t *testing.T) {
	for _, c := range []struct {
		name   string
		writes []string
		kept   string
		passed bool
	}{
		{"under", []string{"ab", "cd"}, "abcd", false},
		{"at", []string{"abc", "de"}, "abcde", false},
		{"over in one write", []string{"abcdefg"}, "abcde", true},
		{"over across writes", []string{"abc", "defg", "hij", ""}, "abcde", true},
		{"over right after the bound", []string{"abcde", "f", "gh"}, "abcde", true},
		{"nothing", nil, "", false},
	} {
		overs := 0
		b := &remote.Bounded{Max: 5, Over: func() { overs++ }}
		for _, w := range c.writes {
			if n, err := b.Write([]byte(w)); n != len(w) || err != nil {
				t.Errorf("%s: Write(%q) = %d, %v; want %d, nil", c.name, w, n, err, len(w))
			}
		}
		want := 0
		if c.passed {
			want = 1
		}
		if got := b.String(); got != c.kept || string(b.Bytes()) != c.kept || b.Passed() != c.passed || overs != want {
			t.Errorf("%s: kept %q (%q), passed %v, Over called %d times; want %q, %v, %d",
				c.name, got, b.Bytes(), b.Passed(), overs, c.kept, c.passed, want)
		}
	}
	// Without Over: only cut.
	b := &remote.Bounded{Max: 2}
	b.Write([]byte("abc"))
	b.Write([]byte("d"))
	if b.String() != "ab" || !b.Passed() {
		t.Errorf("no Over: kept %q, passed %v", b.String(), b.Passed())
	}
	// What Bytes returned stays as it was.
	b = &remote.Bounded{Max: 100}
	b.Write([]byte("abc"))
	got := b.Bytes()
	b.Write(bytes.Repeat([]byte("x"), 90))
	if string(got) != "abc" {
		t.Errorf("Bytes changed by a later write: %q", got)
	}
}

// RunBounded: an answer within its bounds is the command's; stdout past
// its bound stops the command at once and is ErrTooMuchOutput with no
// stdout; stderr past its bound is only cut.
func TestRunBounded(t *testing.T) {
	f := &remotetest.Fake{}
	f.Handle(remotetest.Exact("small"), func(p *remotetest.Proc) int {
		b, _ := io.ReadAll(p.Stdin)
		io.WriteString(p.Stdout, "got "+string(b))
		io.WriteString(p.Stderr, "warning\n")
		return 3
	})
	f.Handle(remotetest.Exact("flood"), func(p *remotetest.Proc) int {
		if p.Flood(p.Stdout, 64<<20) < 0 {
			t.Error("flood: never stopped")
		}
		return 0
	})
	f.Handle(remotetest.Exact("noisy"), func(p *remotetest.Proc) int {
		io.WriteString(p.Stdout, "answer\n")
		io.WriteString(p.Stderr, "first line\n"+strings.Repeat("e", 1<<20))
		return 1
	})
	ctx := context.Background()

	rc, out, errb, err := remote.RunBounded(ctx, f, "small", strings.NewReader("in"), 64, 64)
	if rc != 3 || string(out) != "got in" || string(errb) != "warning\n" || err != nil {
		t.Errorf("small: %d, %q, %q, %v", rc, out, errb, err)
	}

	rc, out, _, err = remote.RunBounded(ctx, f, "flood", nil, 1<<20, 64)
	var tm *remote.TooMuchOutputError
	if !errors.Is(err, remote.ErrTooMuchOutput) || !errors.As(err, &tm) || tm.Max != 1<<20 || rc != -1 || out != nil {
		t.Fatalf("flood: %d, %d bytes, %v; want -1, none, ErrTooMuchOutput", rc, len(out), err)
	}
	if err.Error() != "its answer passed 1 MiB" {
		t.Errorf("flood: %q", err)
	}
	if p := f.Procs()[1]; !p.Killed() {
		t.Error("flood: the command was not stopped")
	}

	rc, out, errb, err = remote.RunBounded(ctx, f, "noisy", nil, 64, 1024)
	if rc != 1 || string(out) != "answer\n" || len(errb) != 1024 || !strings.HasPrefix(string(errb), "first line\n") || err != nil {
		t.Errorf("noisy: %d, %q, %d bytes of stderr, %v", rc, out, len(errb), err)
	}
}
