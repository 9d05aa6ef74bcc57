package supervisor

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
	f := NewFirstByte()
	f.LoggedIn(loggedInProc{})
	if got := f.Wait(never, time.Hour, time.Millisecond); got != time.Millisecond {
		t.Errorf("handed-over session given %s, want 1ms", got)
	}
	f = NewFirstByte()
	f.LoggedIn(struct{}{})
	if got := f.Wait(never, 5*time.Millisecond, time.Millisecond); got != 5*time.Millisecond {
		t.Errorf("silent fresh session given %s, want the login limit, 5ms", got)
	}
	f = NewFirstByte()
	f.Writer(io.Discard).Write([]byte("x"))
	if got := f.Wait(never, time.Hour, time.Millisecond); got != time.Millisecond {
		t.Errorf("session that spoke given %s, want 1ms", got)
	}
}
