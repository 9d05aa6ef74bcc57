package launcher

import (
	"io"
	"sync"
	"time"
)

// firstByte notes when a session has said anything at all, on stdout or
// stderr: from then on its login shell has started, and the supervisor
// it runs is to answer within the usual time.
type firstByte struct {
	once sync.Once
	seen chan struct{}
}

func newFirstByte() *firstByte { return &firstByte{seen: make(chan struct{})} }

// writer passes everything on to next, noting the first byte.
func (f *firstByte) writer(next io.Writer) io.Writer { return firstByteWriter{f, next} }

type firstByteWriter struct {
	f    *firstByte
	next io.Writer
}

func (w firstByteWriter) Write(p []byte) (int, error) {
	if len(p) > 0 {
		w.f.once.Do(func() { close(w.f.seen) })
	}
	return w.next.Write(p)
}

// loggedIn notes a session handed over after the probe ran in it: its
// login is long done (remote's spares).
func (f *firstByte) loggedIn(p any) {
	if l, ok := p.(interface{ LoggedIn() bool }); ok && l.LoggedIn() {
		f.once.Do(func() { close(f.seen) })
	}
}

// wait returns 0 once answered is closed, or how long the session was
// given when it was not: login while it has said nothing, answer from
// its first byte.
func (f *firstByte) wait(answered <-chan struct{}, login, answer time.Duration) time.Duration {
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
