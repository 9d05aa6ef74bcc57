package launcher

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tfhive/tfhive/probe/remote"
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
		gate := &claimGate{next: x.so, report: func(l string) { x.claimed <- l }}
		x.p = m.add(fmt.Sprintf("worker:%d", i), gate, x.se, x.out, x.errw, &trunc)
		ts = append(ts, x)
	}
	if err := m.open(context.Background(), remote.Local{}, "20260101-000000-mux", true); err != nil {
		t.Fatal(err)
	}
	defer m.proc.Close()
	for i, x := range ts {
		tk := task{Argv: []string{"sh", "-c", fmt.Sprintf("seq 1 %d; echo oops >&2; printf end; exit %d", 100*(i+1), i)},
			HeartbeatTimeout: 10 * time.Second, Keep: time.Minute, RunID: "20260101-000000-mux", ID: fmt.Sprintf("worker:%d", i),
			Mux: true, Mark: "T3STMARK"}
		if err := m.start(x.p, supervisorInput(tk)); err != nil {
			t.Fatal(err)
		}
	}
	if err := m.follow(); err != nil {
		t.Fatal(err)
	}
	for i, x := range ts {
		select {
		case l := <-x.claimed:
			if l != claimOK {
				t.Fatalf("task %d: claim line %q", i, l)
			}
		case <-time.After(20 * time.Second):
			t.Fatalf("task %d: no claim line; stderr %q, mux noise %q", i, x.se.String(), m.noise.String())
		}
		x.p.Stdin().Write([]byte(ctlGo))
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
