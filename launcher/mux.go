package launcher

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tfhive/tfhive/launcher/supervisor"
	"github.com/tfhive/tfhive/probe/remote"
	"github.com/tfhive/tfhive/probe/wording"
)

// A kept run starts all of a host's supervisors through one session, the
// probe's handed over: its multiplexer (scripts/mux.sh). One login per
// host per run, whatever its number of tasks; the run's GPU sampler
// (--sample) is its child too, its lines on the session's stderr
// (muxStderr). Each supervisor is a
// virtual session (muxProc, a remote.Started) over it, so that the
// runner treats it as it treats a session of its own. A multiplexer's
// session that ends (its link dropped) ends all of them without a status:
// each is then followed again by a session of its own (attach.sh), which
// costs a login per task, only on a reconnect.

// muxName is the name of a task's files on its host, as supervisor-run.sh
// makes it from the task's id.
func muxName(id string) string { return strings.ReplaceAll(id, ":", "-") }

// A supervisor's four files, as the multiplexer's tail names them.
var muxExts = [4]string{".so", ".se", ".out", ".err"}

// hostMux is a host's multiplexer session.
type hostMux struct {
	mark   string
	procs  map[string]*muxProc
	proc   remote.Started
	wmu    sync.Mutex // one frame at a time on the session's stdin
	left   atomic.Int64
	closed bool // under wmu
	// refused is why the multiplexer refused the run ("failed WHY"), once
	// it said so: what a start that met it closed reports.
	refused atomic.Pointer[string]
	exited  chan struct{} // closed once the session has ended
	noise   supervisor.NoiseBuffer
	stderr  muxStderr
	// sampled is closed once the session has ended, before its
	// supervisors' virtual sessions end: the sampler it ran, if any,
	// ended with it (its last sample closed).
	sampled chan struct{}

	// The session's stdout, read by its one copying goroutine.
	pre    []byte // before the first line was complete
	ready  bool
	demux  *supervisor.MuxFrames
	events []byte
	// failure is why the multiplexer's pump could not follow the files
	// (its frame "failed"), at most maxMuxFailure bytes: every task not
	// ended reports it once the session has ended, which it does at once.
	fmu     sync.Mutex
	failure []byte
}

// maxMuxFailure bounds the pump's reason kept: a path and a few words.
const maxMuxFailure = 1024

// muxProc is one supervisor started by a multiplexer.
type muxProc struct {
	m    *hostMux
	name string
	w    [4]io.Writer // stdout, stderr, the task's stdout, stderr
	n    [4]int64     // bytes received of each
	// From the supervisor's exit event: its status and its files' sizes
	// then; Wait returns once all those bytes are in.
	want      *[4]int64
	rc        int
	truncated *atomic.Bool

	once sync.Once
	done chan struct{}
	err  error
}

func newHostMux(mark string) *hostMux {
	m := &hostMux{mark: mark, procs: map[string]*muxProc{}, exited: make(chan struct{}), sampled: make(chan struct{})}
	m.stderr = muxStderr{tag: []byte(supervisor.MuxSampleTag + mark + " "), noise: &m.noise}
	m.demux = &supervisor.MuxFrames{Emit: m.emit}
	return m
}

// add makes the virtual session of task id, writing its supervisor's
// output (claim line, errors) to so and se and the task's own to out
// and errw; truncated is set when the host's files could not take it
// all.
func (m *hostMux) add(id string, so, se, out, errw io.Writer, truncated *atomic.Bool) *muxProc {
	p := &muxProc{m: m, name: muxName(id), w: [4]io.Writer{so, se, out, errw}, truncated: truncated, done: make(chan struct{})}
	m.procs[p.name] = p
	m.left.Add(1)
	return p
}

// open starts the multiplexer on ex: the probe's spare session if the
// host has one (it is supervisor.Command), else a new one. A spare that
// ended since the probe is replaced by a fresh session, once.
func (m *hostMux) open(ctx context.Context, ex remote.Executor, runID string, fresh bool) error {
	proc, err := startFed(ctx, ex, m, &m.stderr, supervisor.MuxInput(runID, m.mark, fresh), "starting the host's multiplexer")
	if err != nil {
		return err
	}
	m.wmu.Lock()
	m.proc = proc
	if m.closed {
		proc.Stdin().Close()
	}
	m.wmu.Unlock()
	go m.wait()
	return nil
}

// wait ends every supervisor's virtual session not ended when the
// multiplexer's does: their fate is unknown.
func (m *hostMux) wait() {
	rc, err := m.proc.Wait()
	m.stderr.end()
	close(m.sampled)
	m.fmu.Lock()
	failure := string(m.failure)
	m.fmu.Unlock()
	switch {
	case failure != "":
		err = fmt.Errorf("the host's multiplexer failed: %s", wording.FirstLine(failure))
	case err == nil:
		err = fmt.Errorf("the host's multiplexer ended (status %d)", rc)
		if why := bytes.TrimSpace(m.noise.Bytes()); len(why) > 0 {
			err = fmt.Errorf("%w: %s", err, wording.FirstLine(string(why)))
		}
	}
	for _, p := range m.procs {
		p.finish(-1, err)
	}
	close(m.exited)
}

// send writes one frame.
func (m *hostMux) send(frame string) error {
	m.wmu.Lock()
	defer m.wmu.Unlock()
	if m.closed {
		return errMuxEnded
	}
	return supervisor.WriteChunked(m.proc.Stdin(), frame)
}

// start sends p's supervisor its input; follow, once every one is
// started, starts the multiplexer's tail.
func (m *hostMux) start(p *muxProc, input string) error {
	return m.send("s " + p.name + " " + strconv.Itoa(len(input)) + "\n" + input)
}

func (m *hostMux) follow() error { return m.send("f\n") }

// Write takes the session's stdout: the first line, then the frames.
func (m *hostMux) Write(b []byte) (int, error) {
	if m.ready {
		m.demux.Write(b)
		return len(b), nil
	}
	m.pre = append(m.pre, b...)
	for {
		i := bytes.IndexByte(m.pre, '\n')
		if i < 0 {
			return len(b), nil
		}
		line := string(m.pre[:i])
		rest := m.pre[i+1:]
		m.pre = rest
		// A login shell's own lines (a session not from the probe)
		// come first.
		what, ok := strings.CutPrefix(line, supervisor.MuxMarker+m.mark+" ")
		if !ok {
			continue
		}
		m.ready, m.pre = true, nil
		if what != "ok" {
			why := strings.TrimPrefix(what, "failed ")
			m.refused.Store(&why)
			for _, p := range m.procs {
				io.WriteString(p.w[0], supervisor.ClaimFailed+why+"\n")
				p.finish(126, nil)
			}
			return len(b), nil
		}
		if len(rest) > 0 {
			m.demux.Write(rest)
		}
		return len(b), nil
	}
}

// sample starts the run's sampler on the multiplexer's host, fed input
// (supervisor.SampleInput, tagged with supervisor.MuxSampleTag and the mark), its samples to
// lw; m.sampled says when it has ended. An error: the multiplexer was
// closed (every supervisor it started has ended) or its session has
// ended or cannot be written to.
func (m *hostMux) sample(lw *sampleLines, input string) error {
	if !m.stderr.take(lw) {
		return errMuxGone
	}
	err := m.send("u " + strconv.Itoa(len(input)) + "\n" + input)
	if err != nil {
		m.stderr.take(nil)
	}
	return err
}

// stopSample ends the sampler: EOF on its stdin ends its loop at once.
func (m *hostMux) stopSample() { m.send("e .sample\n") }

// sampleTag is what starts each of the sampler's lines here.
func (m *hostMux) sampleTag() string { return string(m.stderr.tag) }

// muxStderr takes the multiplexer's stderr: the lines that start with
// tag (its sampler's) go, untagged, to lines; the rest, the login
// shell's and the multiplexer's own, to noise. Nothing of a task's comes
// there: their output is in files, read through tail on stdout.
type muxStderr struct {
	tag   []byte
	noise io.Writer
	mu    sync.Mutex
	buf   []byte
	lines *sampleLines
	ended bool // the session has ended: no sampler any more
}

func (e *muxStderr) Write(p []byte) (int, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.buf = append(e.buf, p...)
	for {
		i := bytes.IndexByte(e.buf, '\n')
		if i < 0 {
			break
		}
		e.line(e.buf[:i+1])
		e.buf = e.buf[i+1:]
	}
	if len(e.buf) > 4096 {
		e.noise.Write(e.buf) // no line of the sampler's is this long
		e.buf = e.buf[:0]
	}
	return len(p), nil
}

func (e *muxStderr) line(l []byte) {
	if rest, ok := bytes.CutPrefix(l, e.tag); ok {
		if e.lines != nil {
			e.lines.line(string(rest[:len(rest)-1]))
		}
		return
	}
	e.noise.Write(l)
}

// take sets where the sampler's lines go (nil: nowhere); false once the
// session has ended.
func (e *muxStderr) take(lw *sampleLines) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.ended {
		return false
	}
	e.lines = lw
	return true
}

// end, once the session has ended, passes a last line without its
// newline on to noise (a sampler's, cut short, is no sample) and closes
// the sampler's last sample.
func (e *muxStderr) end() {
	e.mu.Lock()
	defer e.mu.Unlock()
	if len(e.buf) > 0 && !bytes.HasPrefix(e.buf, e.tag) {
		e.noise.Write(e.buf)
	}
	e.buf = nil
	e.ended = true
	if e.lines != nil {
		e.lines.end()
	}
}

// emit takes one file's bytes from a frame.
func (m *hostMux) emit(name string, b []byte) {
	if name == "failed" {
		m.fmu.Lock()
		m.failure = append(m.failure, b[:min(len(b), maxMuxFailure-len(m.failure))]...)
		m.fmu.Unlock()
		return
	}
	if name == "events" {
		m.events = append(m.events, b...)
		for {
			i := bytes.IndexByte(m.events, ';')
			if i < 0 {
				break
			}
			m.event(strings.Fields(string(m.events[:i])))
			m.events = m.events[i+1:]
		}
		return
	}
	for k, ext := range muxExts {
		if base, ok := strings.CutSuffix(name, ext); ok {
			if p := m.procs[base]; p != nil {
				p.n[k] += int64(len(b))
				p.w[k].Write(b)
				p.check()
			}
			return
		}
	}
}

// event takes "x NAME RC TRUNC SO SE OUT ERR", or "n NAME WHY…": the
// supervisor was never started, its files could not be made; its task
// could not start, for that reason, as when the multiplexer refused the
// run's directory.
func (m *hostMux) event(f []string) {
	if len(f) >= 3 && f[0] == "n" {
		if p := m.procs[f[1]]; p != nil && p.want == nil {
			io.WriteString(p.w[0], supervisor.ClaimFailed+strings.Join(f[2:], " ")+"\n")
			p.finish(126, nil)
		}
		return
	}
	if len(f) != 8 || f[0] != "x" {
		return
	}
	p := m.procs[f[1]]
	if p == nil || p.want != nil {
		return
	}
	rc, err := strconv.Atoi(f[2])
	if err != nil {
		return
	}
	var want [4]int64
	for k := range want {
		want[k], _ = strconv.ParseInt(f[4+k], 10, 64)
	}
	p.rc, p.want = rc, &want
	if f[3] == "1" {
		p.truncated.Store(true)
	}
	p.check()
}

func (p *muxProc) check() {
	if p.want == nil {
		return
	}
	for k := range p.n {
		if p.n[k] < p.want[k] {
			return
		}
	}
	p.finish(p.rc, nil)
}

func (p *muxProc) finish(rc int, err error) {
	p.once.Do(func() {
		p.rc, p.err = rc, err
		close(p.done)
		if p.m.left.Add(-1) == 0 {
			p.m.close()
		}
	})
}

// startErr is what a start or follow that failed with err reports: the
// multiplexer's own refusal when it said one (the write failed because
// the multiplexer had ended, having said why), else err.
func (m *hostMux) startErr(err error) error {
	if errors.Is(err, errMuxEnded) || m.refused.Load() == nil {
		// The session's last bytes (the refusal) may still be on their
		// way: they are in once it has ended.
		select {
		case <-m.exited:
		case <-time.After(5 * time.Second):
		}
	}
	if why := m.refused.Load(); why != nil {
		return errors.New(*why)
	}
	return fmt.Errorf("sending the task: %w", err)
}

// close ends the multiplexer once all its supervisors have ended (or
// were let go of): EOF on its stdin ends its loop, its tail reads the
// last bytes and the session ends. A session not yet handed its stage
// (m.proc unset: the multiplexer refused the run's directory) ends by
// itself.
func (m *hostMux) close() {
	m.wmu.Lock()
	defer m.wmu.Unlock()
	m.closed = true
	if m.proc != nil {
		m.proc.Stdin().Close()
	}
}

// errMuxKilled, errMuxClosed: Wait's error for a supervisor tfhive
// killed or let go of, as for a session.
var (
	errMuxKilled = errors.New("killed")
	errMuxClosed = errors.New("abandoned")
	errMuxEnded  = errors.New("the host's multiplexer was closed")
	errMuxGone   = errors.New("the host's multiplexer's session has ended")
)

func (p *muxProc) Stdin() io.WriteCloser { return muxStdin{p} }

func (p *muxProc) Wait() (int, error) {
	<-p.done
	return p.rc, p.err
}

func (p *muxProc) Close() error {
	p.m.send("e " + p.name + "\n")
	p.finish(-1, errMuxClosed)
	return nil
}

func (p *muxProc) Kill() {
	p.m.send("k " + p.name + "\n")
	p.finish(-1, errMuxKilled)
}

// LoggedIn: the multiplexer's session is logged in long before any of
// its supervisors starts (supervisor.FirstByte).
func (p *muxProc) LoggedIn() bool { return true }

// muxStdin frames each control line for the supervisor.
type muxStdin struct{ p *muxProc }

func (s muxStdin) Write(b []byte) (int, error) {
	var frames strings.Builder
	for line := range strings.Lines(string(b)) {
		frames.WriteString("c " + s.p.name + " " + strings.TrimSuffix(line, "\n") + "\n")
	}
	if err := s.p.m.send(frames.String()); err != nil {
		return 0, err
	}
	return len(b), nil
}

func (s muxStdin) Close() error { return s.p.m.send("e " + s.p.name + "\n") }
