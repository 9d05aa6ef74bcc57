package launcher

import (
	"io"
	"testing"
	"time"
)

type loggedInProc struct{}

func (loggedInProc) LoggedIn() bool { return true }

// A session handed over after the probe ran in it is logged in: the
// answer clock runs from the start, not the login limit's. Any other
// session runs on the login limit until its first byte.
func TestFirstByteClock(t *testing.T) {
	never := make(chan struct{})
	f := newFirstByte()
	f.loggedIn(loggedInProc{})
	if got := f.wait(never, time.Hour, time.Millisecond); got != time.Millisecond {
		t.Errorf("handed-over session given %s, want 1ms", got)
	}
	f = newFirstByte()
	f.loggedIn(struct{}{})
	if got := f.wait(never, 5*time.Millisecond, time.Millisecond); got != 5*time.Millisecond {
		t.Errorf("silent fresh session given %s, want the login limit, 5ms", got)
	}
	f = newFirstByte()
	f.writer(io.Discard).Write([]byte("x"))
	if got := f.wait(never, time.Hour, time.Millisecond); got != time.Millisecond {
		t.Errorf("session that spoke given %s, want 1ms", got)
	}
}
