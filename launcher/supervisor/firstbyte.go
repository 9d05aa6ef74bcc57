package supervisor

import (
	"io"
	"sync"
	"time"
)

// FirstByte notes when a session has said anything at all, on stdout or
// stderr: from then on its login shell has started, and the supervisor
// it runs is to answer within the usual time.
type FirstByte struct {
	once sync.Once
	seen chan struct{}
}

func NewFirstByte() *FirstByte { return &FirstByte{seen: make(chan struct{})} }

// Writer passes everything on to next, noting the first byte.
func (f *FirstByte) Writer(next io.Writer) io.Writer { return firstByteWriter{f, next} }

type firstByteWriter struct {
	f    *FirstByte
	next io.Writer
}

func (w firstByteWriter) Write(p []byte) (int, error) {
	if len(p) > 0 {
		w.f.once.Do(func() { close(w.f.seen) })
	}
	return w.next.Write(p)
}

// LoggedIn notes a session handed over after the probe ran in it: its
// login is long done (remote's spares).
func (f *FirstByte) LoggedIn(p any) {
	if l, ok := p.(interface{ LoggedIn() bool }); ok && l.LoggedIn() {
		f.once.Do(func() { close(f.seen) })
	}
}

// Wait returns 0 once answered is closed, or how long the session was
// given when it was not: login while it has said nothing, answer from
// its first byte.
func (f *FirstByte) Wait(answered <-chan struct{}, login, answer time.Duration) time.Duration {
	t := time.NewTimer(login)
	defer t.Stop()
	select {
	case <-answered:
		return 0
	case <-t.C:
		return login
	case <-f.seen:
	}
	t.Reset(answer)
	select {
	case <-answered:
		return 0
	case <-t.C:
		return answer
	}
}
