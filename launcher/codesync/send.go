package codesync

import (
	"archive/tar"
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/alessio/shellescape"

	"github.com/tfhive/tfhive/probe/remote"
	"github.com/tfhive/tfhive/probe/remote/shscript"
)

// The host side. sync.sh travels on the command line, like the probe, as
// its stdin is the archive; both scripts start with cache.sh.
//
//go:embed scripts/*.sh
var scripts embed.FS

var (
	syncSh = shscript.LoadOneLine(scripts, "scripts/cache.sh", "scripts/sync.sh")
	gcSh   = shscript.LoadOneLine(scripts, "scripts/cache.sh", "scripts/gc.sh")
)

// syncCommand is the remote command line receiving the tree hash.
func syncCommand(hash string) string {
	return "exec sh -c " + shellescape.Quote(syncSh.With(shscript.Set("hash", hash)))
}

// The last line sync.sh prints.
const (
	syncSent    = "@@tfhive-sync sent"
	syncPresent = "@@tfhive-sync present"
)

// What is kept of a host's answer to sync.sh (a few lines of its own,
// the last of which says how it ended) and to gc.sh's stderr, read for
// one line: a host printing without end must not grow tfhive's memory.
const (
	maxAnswer = 64 << 10
	maxStderr = 64 << 10
)

// Target is a host to send the tree to, over its open connection.
type Target struct {
	Host string
	Exec remote.Executor
}

// Result is one host's transfer.
type Result struct {
	Host string
	// Sent counts the bytes sent to the host.
	Sent int64
	// Present: the host had the tree by the time the archive arrived
	// (another run sent it meanwhile); what was sent was not kept.
	Present bool
	Err     error
	Elapsed time.Duration
}

// Progress is how far Send has come: hosts done of all, bytes sent to
// all of them together.
type Progress struct {
	Done, Hosts int
	Sent, Total int64
}

// chunk is how much of the archive goes to the hosts at a time, and
// queued how many chunks a host's queue holds: the slowest host paces
// the reading, and memory stays under queued × chunk whatever the number
// of hosts, as every queue holds the same chunks.
const (
	chunk  = 64 << 10
	queued = 16
)

// Send streams the tree to the targets, at most parallel at a time, each
// over its host's connection, and says how each went. The archive is
// read from disk and hashed once for all the hosts of a round, and the
// hosts keep it only if it hashed to t.Hash: a tree that changed since
// Prepare fails every host, which keeps nothing. progress, when not nil,
// is called as transfers go on (a few times a second at most) and once at
// the end.
func (t *Tree) Send(ctx context.Context, targets []Target, parallel int, progress func(Progress)) []Result {
	results := make([]Result, len(targets))
	for i, tg := range targets {
		results[i].Host = tg.Host
	}
	var sent atomic.Int64
	var done atomic.Int32
	report := func() {
		if progress != nil {
			progress(Progress{Done: int(done.Load()), Hosts: len(targets), Sent: sent.Load(), Total: t.Bytes * int64(len(targets))})
		}
	}
	stop := make(chan struct{})
	ticked := make(chan struct{})
	go func() {
		defer close(ticked)
		tick := time.NewTicker(250 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-tick.C:
				report()
			case <-stop:
				return
			}
		}
	}()
	parallel = max(parallel, 1)
	for from := 0; from < len(targets); from += parallel {
		to := min(from+parallel, len(targets))
		t.sendRound(ctx, targets[from:to], results[from:to], &sent, &done)
	}
	close(stop)
	<-ticked
	report()
	return results
}

// sink is one host's end of a round: its session and the chunks queued
// for it.
type sink struct {
	res  *Result
	proc remote.Started
	q    chan []byte
	// out and errb: sync.sh's last line ("present", "sent") and its
	// message, within bounds (maxAnswer, maxStderr).
	out  remote.Bounded
	errb remote.Bounded
	werr error       // drain's first failed write: the rest is dropped
	dead atomic.Bool // nothing more need be queued for it
	// abort, set before q is closed, is why the archive must not be
	// kept: it was not written whole.
	abort error
	start time.Time
}

// sendRound sends the archive once, to every target of the round.
func (t *Tree) sendRound(ctx context.Context, targets []Target, results []Result, sent *atomic.Int64, done *atomic.Int32) {
	sinks := make([]*sink, len(targets))
	var started sync.WaitGroup
	for i, tg := range targets {
		s := &sink{res: &results[i], q: make(chan []byte, queued), start: time.Now(),
			out: remote.Bounded{Max: maxAnswer}, errb: remote.Bounded{Max: maxStderr}}
		sinks[i] = s
		started.Add(1)
		go func() {
			defer started.Done()
			p, err := tg.Exec.Start(ctx, syncCommand(t.Hash), &s.out, &s.errb)
			if err != nil {
				s.res.Err = err
				s.dead.Store(true)
				return
			}
			s.proc = p
		}()
	}
	started.Wait()
	var wg sync.WaitGroup
	for _, s := range sinks {
		if s.proc == nil {
			close(s.q)
			done.Add(1)
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer done.Add(1)
			s.drain(ctx, sent)
		}()
	}
	err := t.produce(ctx, sinks)
	if errors.Is(err, errNoHost) {
		err = nil // each host's own failure says more
	}
	for _, s := range sinks {
		if s.proc != nil {
			s.abort = err // drain reads it once q is closed
			close(s.q)
		}
	}
	wg.Wait()
}

// produce writes the archive to every live sink; an error means it must
// not be kept (nothing ended it with "done").
func (t *Tree) produce(ctx context.Context, sinks []*sink) error {
	fan := &fanout{ctx: ctx, sinks: sinks}
	bw := bufio.NewWriterSize(fan, chunk)
	h := sha256.New()
	io.WriteString(h, hashVersion)
	tw := tar.NewWriter(io.MultiWriter(h, bw))
	err := t.writeEntries(tw)
	if err == nil && hex.EncodeToString(h.Sum(nil)) != t.Hash {
		err = &Error{Msg: "--sync: " + t.Root + " changed while being sent", Fix: "run again once nothing writes into the tree"}
	}
	if err == nil {
		err = t.writeEnd(tw)
	}
	if err == nil {
		err = bw.Flush()
	}
	return err
}

// fanout hands each chunk of the archive to every sink still taking it.
type fanout struct {
	ctx   context.Context
	sinks []*sink
}

var errNoHost = errors.New("no host is taking the archive")

func (f *fanout) Write(p []byte) (int, error) {
	c := bytes.Clone(p)
	live := 0
	for _, s := range f.sinks {
		if s.proc == nil || s.dead.Load() {
			continue
		}
		live++
		select {
		case s.q <- c:
		case <-f.ctx.Done():
			return 0, f.ctx.Err()
		}
	}
	if live == 0 {
		return 0, errNoHost
	}
	return len(p), nil
}

// drain writes the queued chunks to the host's session, then ends it:
// EOF after a whole archive, EOF without "done" otherwise (the host then
// keeps nothing), and reads what the host made of it.
func (s *sink) drain(ctx context.Context, sent *atomic.Int64) {
	stdin := s.proc.Stdin()
	for c := range s.q {
		if s.werr != nil {
			continue
		}
		if _, err := stdin.Write(c); err != nil {
			s.werr = err
			s.dead.Store(true)
			continue
		}
		s.res.Sent += int64(len(c))
		sent.Add(int64(len(c)))
	}
	stdin.Close()
	type waited struct {
		rc  int
		err error
	}
	w := make(chan waited, 1)
	go func() {
		rc, err := s.proc.Wait()
		w <- waited{rc, err}
	}()
	var r waited
	select {
	case r = <-w:
	case <-ctx.Done():
		// The host keeps nothing: its stdin ended without "done".
		s.proc.Close()
		s.res.Err, s.res.Elapsed = ctx.Err(), time.Since(s.start)
		return
	}
	s.res.Elapsed = time.Since(s.start)
	last := lastLine(s.out.String())
	switch {
	case r.err != nil:
		s.res.Err = r.err
	case s.out.Passed():
		// Its last line is unknown: not taken as present, nor as sent.
		s.res.Err = fmt.Errorf("receiving the tree failed: %w", &remote.TooMuchOutputError{Max: maxAnswer})
	case r.rc == 0 && last == syncPresent:
		s.res.Present = true
	case s.abort != nil:
		s.res.Err = s.abort
	case r.rc == 0 && last == syncSent && s.werr == nil:
	default:
		msg := hostError(s.errb.String())
		switch {
		case msg != "":
		case s.werr != nil:
			msg = s.werr.Error()
		default:
			msg = fmt.Sprintf("unexpected answer %q", last)
		}
		s.res.Err = fmt.Errorf("receiving the tree failed (exit %d): %s", r.rc, msg)
	}
}

// hostError is the first line the host wrote on stderr, without the
// "tfhive: " the scripts start their own with.
func hostError(stderr string) string {
	return strings.TrimPrefix(firstLine(stderr), "tfhive: ")
}

func lastLine(s string) string {
	s = strings.TrimRight(s, "\n")
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		return s[i+1:]
	}
	return s
}
