package launcher

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"regexp"
	"slices"
	"strings"
	"sync"

	"github.com/tfhive/tfhive/launcher/supervisor"
	"github.com/tfhive/tfhive/launcher/supervisor/stagetest"
	"github.com/tfhive/tfhive/probe/remote"
)

// A scripted stand-in for a host's connection, for running the lifecycle
// in-process: every Start plays a task's supervisor. It reads what tfhive
// sends (the claim stage and the task stage, each behind its length line),
// then acts out the script its task was given: answer the claim phase,
// obey the control lines (g, a, h, t, k), write output, exit with a code,
// lose the connection or never answer.
//
// The dependency on probe's interfaces is these few lines; the rest is
// plain io.
var (
	_ remote.Executor = (*fakeHost)(nil)
	_ remote.Started  = (*fakeProc)(nil)
)

func (h *fakeHost) Start(_ context.Context, cmd string, stdout, stderr io.Writer) (remote.Started, error) {
	return h.start(cmd, stdout, stderr)
}

func fakeExecs(hosts ...*fakeHost) map[string]remote.Executor {
	m := map[string]remote.Executor{}
	for _, h := range hosts {
		m[h.name] = h
	}
	return m
}

// fakeScript is a supervisor's behaviour, from the moment its input is in.
type fakeScript func(p *fakeProc)

// fakeHost plays the supervisors of the tasks of one host.
type fakeHost struct {
	name    string
	ids     []string // the tasks it runs, told apart by their ids in the input
	scripts map[string]fakeScript
	// run, when set, plays Run (a one-shot command: the stacks script).
	run func(cmd string, stdin io.Reader, stdout, stderr io.Writer) (int, error)
	// startErr fails every Start; stdinErr fails every write to stdin;
	// stdinErrOnce fails the writes to the first session's stdin only.
	startErr, stdinErr, stdinErrOnce error

	mu    sync.Mutex
	procs map[string]*fakeProc // by task id, once identified
}

func newFakeHost(name string, ids ...string) *fakeHost {
	return &fakeHost{name: name, ids: ids, scripts: map[string]fakeScript{}, procs: map[string]*fakeProc{}}
}

// script sets what task id does (by default: claim, then run until stopped).
func (h *fakeHost) script(id string, s fakeScript) *fakeHost {
	h.scripts[id] = s
	return h
}

func (h *fakeHost) proc(id string) *fakeProc {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.procs[id]
}

func (h *fakeHost) Run(_ context.Context, cmd string, stdin io.Reader, stdout, stderr io.Writer) (int, error) {
	if h.run != nil {
		return h.run(cmd, stdin, stdout, stderr)
	}
	return -1, errors.New("fake host: Run is not played")
}

func (h *fakeHost) Close() error { return nil }

func (h *fakeHost) start(cmd string, stdout, stderr io.Writer) (*fakeProc, error) {
	if h.startErr != nil {
		return nil, h.startErr
	}
	if cmd != supervisor.Command {
		return nil, fmt.Errorf("fake host: not the supervisor: %q", cmd)
	}
	pr, pw := io.Pipe()
	failStdin := h.stdinErr
	h.mu.Lock()
	if h.stdinErrOnce != nil {
		failStdin, h.stdinErrOnce = h.stdinErrOnce, nil
	}
	h.mu.Unlock()
	p := &fakeProc{host: h, stdin: pw, stdout: stdout, stderr: stderr, failStdin: failStdin,
		ctl: make(chan string, 1024), heard: make(chan struct{}), gotTerm: make(chan struct{}),
		exited: make(chan struct{}), dropped: make(chan struct{})}
	go p.read(pr)
	return p, nil
}

// fakeProc is one supervisor.
type fakeProc struct {
	host           *fakeHost
	failStdin      error
	stdin          *io.PipeWriter
	stdout, stderr io.Writer
	id             string
	claimStage     string
	runStage       string

	ctl      chan string   // control lines but heartbeats, closed at EOF
	heard    chan struct{} // closed at the first heartbeat
	heardOne sync.Once
	gotTerm  chan struct{} // closed at the first "t"
	termOne  sync.Once

	mu        sync.Mutex
	lines     []string // every control line, heartbeats included
	rc        int
	err       error
	exited    chan struct{}
	exitOnce  sync.Once
	dropped   chan struct{}
	dropOnce  sync.Once
	killed    bool
	abandoned bool
}

// read takes the two stages, finds the task, starts its script, then
// passes on control lines until stdin ends.
func (p *fakeProc) read(r *io.PipeReader) {
	defer close(p.ctl)
	br := bufio.NewReader(r)
	stage := func() (string, bool) {
		s, err := stagetest.ReadOneStage(br)
		return s, err == nil
	}
	claim, ok1 := stage()
	run, ok2 := stage()
	if !ok1 || !ok2 {
		return
	}
	p.claimStage, p.runStage = claim, run
	// The claim stage: the task stage of a kept run's first task on a
	// host names every task (run.json).
	p.id = p.host.identify(claim)
	p.host.mu.Lock()
	p.host.procs[p.id] = p
	script := p.host.scripts[p.id]
	p.host.mu.Unlock()
	if script == nil {
		script = runs(untilStopped)
	}
	go script(p)
	for {
		line, err := br.ReadString('\n')
		if err != nil {
			return
		}
		line = strings.TrimSuffix(line, "\n")
		p.mu.Lock()
		p.lines = append(p.lines, line)
		p.mu.Unlock()
		switch line {
		case "h":
			p.heardOne.Do(func() { close(p.heard) })
			continue
		case "t":
			p.termOne.Do(func() { close(p.gotTerm) })
		}
		p.ctl <- line
	}
}

// identify tells which of the host's tasks the claim stage is for: the
// only one whose id is in it as a word (the holders' label carries it).
func (h *fakeHost) identify(input string) string {
	var found []string
	for _, id := range h.ids {
		if regexp.MustCompile(`(^|[^\w:])` + regexp.QuoteMeta(id) + `($|[^\w:])`).MatchString(input) {
			found = append(found, id)
		}
	}
	if len(found) != 1 {
		panic(fmt.Sprintf("fake host %s: input names tasks %v, want one of %v", h.name, found, h.ids))
	}
	return found[0]
}

// Started.

func (p *fakeProc) Stdin() io.WriteCloser {
	if p.failStdin != nil {
		return failingWriter{p.failStdin}
	}
	return p.stdin
}

// Wait returns the status, or an error once the supervisor was abandoned
// (Kill, Close) before it ended, as over SSH.
func (p *fakeProc) Wait() (int, error) {
	select {
	case <-p.exited:
	case <-p.dropped:
		select {
		case <-p.exited:
		default:
			p.mu.Lock()
			p.abandoned = true
			p.mu.Unlock()
			return -1, errors.New("abandoned before the command finished")
		}
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.rc, p.err
}

func (p *fakeProc) Close() error {
	p.dropOnce.Do(func() {
		close(p.dropped)
		p.stdin.CloseWithError(errors.New("session closed"))
	})
	return nil
}

func (p *fakeProc) Kill() {
	p.mu.Lock()
	p.killed = true
	p.mu.Unlock()
	p.Close()
}

// The script's side.

func (p *fakeProc) out(s string)    { p.write(p.stdout, s) }
func (p *fakeProc) errOut(s string) { p.write(p.stderr, s) }

func (p *fakeProc) write(w io.Writer, s string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.abandoned {
		io.WriteString(w, s)
	}
}

// exit ends the supervisor with status rc; its stdin then fails.
func (p *fakeProc) exit(rc int) { p.end(rc, nil) }

// lose ends it with the connection lost: its fate unknown.
func (p *fakeProc) lose() {
	p.end(-1, errors.New("connection lost before the command finished"))
}

func (p *fakeProc) end(rc int, err error) {
	p.exitOnce.Do(func() {
		if err == nil && p.gotStop() {
			// As the supervisor does once it passed tfhive's stop on to
			// its task: the line that makes it "stopped".
			p.errOut(supervisor.StoppedMarker + p.mark() + " signalled\n")
		}
		p.mu.Lock()
		p.rc, p.err = rc, err
		p.mu.Unlock()
		close(p.exited)
		p.stdin.CloseWithError(io.ErrClosedPipe)
	})
}

// gotStop says whether "t" or "k" came: the task was signalled.
func (p *fakeProc) gotStop() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Contains(p.lines, "t") || slices.Contains(p.lines, "k")
}

var markRE = regexp.MustCompile(`tfhive_mark='?([A-Za-z0-9]+)`)

// mark is the run's word, from the task stage.
func (p *fakeProc) mark() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	if m := markRE.FindStringSubmatch(p.runStage); m != nil {
		return m[1]
	}
	return ""
}

// next is the next control line but heartbeats; "" at EOF.
func (p *fakeProc) next() string {
	return <-p.ctl
}

// claimed says the claims are held and waits for go, as the task stage
// does: anything else ends it with supervisor.ExitClaimBusy.
func (p *fakeProc) claimed() bool {
	p.out(supervisor.ClaimOK + "\n")
	if p.next() == "g" {
		return true
	}
	p.exit(supervisor.ExitClaimBusy)
	return false
}

func (p *fakeProc) sawLines() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.lines...)
}

func (p *fakeProc) wasKilled() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.killed
}

// Scripts.

// runs is a supervisor that claims and, on go, runs task.
func runs(task fakeScript) fakeScript {
	return func(p *fakeProc) {
		if p.claimed() {
			task(p)
		}
	}
}

// untilStopped runs until tfhive stops it: TERM ends it 143, KILL 137, EOF
// (tfhive gone) 143, as the supervisor does.
func untilStopped(p *fakeProc) {
	for {
		switch p.next() {
		case "t", "":
			p.exit(143)
			return
		case "k":
			p.exit(137)
			return
		}
	}
}

// ignoresTerm runs until SIGKILL.
func ignoresTerm(p *fakeProc) {
	for {
		switch p.next() {
		case "k":
			p.exit(137)
			return
		case "":
			return
		}
	}
}

// exits writes out to stdout and ends with rc.
func exits(rc int, out string) fakeScript {
	return func(p *fakeProc) {
		p.out(out)
		p.exit(rc)
	}
}

// hangs never ends: only abandoning it ends its Wait.
func hangs(p *fakeProc) { <-p.dropped }

// after runs until ch is closed, then acts as s; stopped before, it ends
// as untilStopped does.
func after(ch <-chan struct{}, s fakeScript) fakeScript {
	return func(p *fakeProc) {
		for {
			select {
			case <-ch:
				s(p)
				return
			case line := <-p.ctl:
				switch line {
				case "t", "":
					p.exit(143)
					return
				case "k":
					p.exit(137)
					return
				}
			}
		}
	}
}

type failingWriter struct{ err error }

func (w failingWriter) Write([]byte) (int, error) { return 0, w.err }
func (w failingWriter) Close() error              { return nil }
