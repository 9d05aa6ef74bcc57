package launcher

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/tfhive/tfhive/launcher/lifecycle"
	"github.com/tfhive/tfhive/launcher/record"
	"github.com/tfhive/tfhive/launcher/supervisor"
	"github.com/tfhive/tfhive/probe/remote"
	"github.com/tfhive/tfhive/probe/wording"
)

// A kept run (Options.Reconnect) outlives its links: when a task's
// session ends without a status (the connection dropped, or stopped
// answering keepalives), its host is redialled with backoff for up to
// Reconnect, and a new session follows each of its tasks again from the
// first byte not yet received (scripts/attach.sh). Only then is the host
// lost. The policy hears none of it: to it the task is still running.

// Backoff between redials: short at first (a reset link is usually back
// at once), never longer than redialMax, so that a link back is used
// within a step.
const (
	redialFirst = 250 * time.Millisecond
	redialMax   = 2 * time.Second
)

// hostBack is a redial's outcome: a new connection, or the error that
// stood when Reconnect ran out.
type hostBack struct {
	host string
	ex   remote.Executor
	err  error
}

// attached is an attach session started (or not) for a task.
type attached struct {
	i    int
	gen  int
	proc remote.Started
}

// reconnecting is a host being redialled.
type reconnecting struct {
	since time.Time
	why   string
	tasks []int
}

// linkState is the runner's view of the hosts' links, for a kept run.
type linkState struct {
	conn  map[string]remote.Executor // each host's current connection
	redo  map[string]*reconnecting   // hosts being redialled
	gone  map[string]string          // hosts lost for good: why
	back  chan hostBack
	ready chan attached
	stop  chan struct{} // closed when the run ends: redials give up
	// replaced hears that a newer keeper adopted the run: what its
	// supervisors said.
	replaced chan string
	// now and after are the redials' clock (time.Now, time.After), for
	// tests to step through the backoff.
	now   func() time.Time
	after func(time.Duration) <-chan time.Time
}

func newLinkState(execs map[string]remote.Executor, hosts int) *linkState {
	l := &linkState{conn: map[string]remote.Executor{}, redo: map[string]*reconnecting{}, gone: map[string]string{},
		back: make(chan hostBack, hosts), ready: make(chan attached, 16), stop: make(chan struct{}),
		replaced: make(chan string, 1), now: time.Now, after: time.After}
	for h, e := range execs {
		l.conn[h] = e
	}
	return l
}

// sessionLost handles a kept task's session that ended without a status:
// it is followed again once its host answers. False: the task is not
// one to follow again (not kept, not started, abandoned), or its host is
// lost for good; the caller reports it lost.
func (r *runner) sessionLost(ev exitEvent) bool {
	rt := r.tasks[ev.i]
	if r.links == nil || !ev.afterGo || rt.abandoned || r.p.State(ev.i).Phase != lifecycle.PhaseStarted {
		return false
	}
	host := rt.t.Host
	if _, gone := r.links.gone[host]; gone {
		return false
	}
	if rc := r.links.redo[host]; rc != nil {
		rc.tasks = append(rc.tasks, ev.i)
		return true
	}
	if ev.ex != r.links.conn[host] {
		// Its session was on a connection already replaced.
		r.attach(ev.i)
		return true
	}
	why := "connection lost"
	if ev.err != nil {
		why = wording.FirstLine(ev.err.Error())
	}
	r.links.redo[host] = &reconnecting{since: time.Now(), why: why, tasks: []int{ev.i}}
	r.timeline.Add("", host, record.EventLinkLost, why)
	r.o.Console.Printf("tfhive: lost the connection to %s (%s); reconnecting for up to %s", host, why, r.o.Reconnect)
	go r.redial(host)
	return true
}

// redial dials host again until it answers or Reconnect has passed.
func (r *runner) redial(host string) {
	deadline := r.links.now().Add(r.o.Reconnect)
	delay := redialFirst
	for {
		ctx, cancel := context.WithDeadline(context.Background(), deadline)
		go func() {
			select {
			case <-r.links.stop:
				cancel()
			case <-ctx.Done():
			}
		}()
		ex, err := r.o.Redial(ctx, host)
		cancel()
		if err == nil {
			r.links.back <- hostBack{host: host, ex: ex}
			return
		}
		if !r.links.now().Add(delay).Before(deadline) {
			r.links.back <- hostBack{host: host, err: err}
			return
		}
		select {
		case <-r.links.after(delay):
		case <-r.links.stop:
			r.links.back <- hostBack{host: host, err: errors.New("the run ended")}
			return
		}
		delay = min(2*delay, redialMax)
	}
}

// hostBack takes a redial's outcome: the host's tasks are followed again,
// or lost.
func (r *runner) hostBack(b hostBack) {
	r.hang.heard()
	rc := r.links.redo[b.host]
	delete(r.links.redo, b.host)
	if rc == nil {
		if b.ex != nil {
			b.ex.Close()
		}
		return
	}
	if b.err != nil {
		why := fmt.Sprintf("no connection for %s (%s)", r.o.Reconnect, wording.FirstLine(b.err.Error()))
		r.links.gone[b.host] = why
		r.timeline.Add("", b.host, record.EventHostLost, why)
		r.o.Console.Printf("tfhive: gave up on %s: %s", b.host, why)
		for _, i := range rc.tasks {
			r.lost(i, why)
		}
		return
	}
	r.links.conn[b.host] = b.ex
	r.o.Execs[b.host] = b.ex
	after := time.Since(rc.since).Round(100 * time.Millisecond)
	r.timeline.Add("", b.host, record.EventReconnect, "after "+after.String())
	r.o.Console.Printf("tfhive: %s is back after %s; following %s again", b.host, after, wording.Count(len(rc.tasks), "task"))
	for _, i := range rc.tasks {
		if r.p.State(i).Phase == lifecycle.PhaseStarted {
			r.attach(i)
		}
	}
	r.startSampler(b.host)
}

// lost reports task i lost, unless it ended meanwhile.
func (r *runner) lost(i int, why string) {
	if r.p.State(i).Phase == lifecycle.PhaseStarted {
		r.tasks[i].res.Duration = time.Since(r.tasks[i].started)
		r.apply(lifecycle.Event{Kind: lifecycle.EvLost, Task: i, Err: why})
	}
}

// attach starts a session that follows task i again, in the background:
// a host that answers slowly must not hold the run's loop.
func (r *runner) attach(i int) {
	rt := r.tasks[i]
	rt.gen++
	gen, ex := rt.gen, r.links.conn[rt.t.Host]
	rt.marked.Store(false)
	rt.attachNoise.Reset()
	var stdout io.Writer = rt.out.Stdout()
	secret := ""
	if r.o.Restart.Max > 0 {
		if rt.filter == nil {
			rt.filter = r.attemptFilter(i, stdout)
		}
		// attach.sh sends the supervisor's records among the stream's
		// bytes, behind a word of this session alone.
		secret = rand.Text()
		rt.filter.Checked(secret)
		stdout = rt.filter
	}
	var out io.Writer = &supervisor.StreamGate{Next: stdout, N: &rt.outN, Marked: &rt.marked}
	var recs *supervisor.RecordLines
	if secret != "" {
		// Ahead of the gate: rt.outN counts the file's bytes alone.
		recs = supervisor.NewRecordLines(out, rt.filter)
		out = recs
	}
	errw := &supervisor.StreamGate{Next: rt.out.Stderr(), Noise: &rt.attachNoise, N: &rt.errN, Replaced: r.links.sayReplaced,
		End: r.endLine(), Truncated: &rt.truncated}
	tap := r.preemptTap(errw, &rt.preempted)
	input := supervisor.AttachInput(r.o.Plan.RunID, rt.t.ID, rt.outN, rt.errN, r.gen(), r.mark, secret)
	go func() {
		proc, err := ex.Start(context.Background(), supervisor.Command, out, tap)
		if err == nil {
			if err = supervisor.WriteChunked(proc.Stdin(), input); err != nil {
				proc.Close()
			}
		}
		if err != nil {
			r.events <- exitEvent{i: i, rc: -1, err: err, ex: ex, afterGo: true, attach: true}
			return
		}
		r.links.ready <- attached{i: i, gen: gen, proc: proc}
		rc, err := proc.Wait()
		tap.Flush()
		if err == nil {
			errw.Flush()
			if recs != nil {
				recs.Flush()
			}
			if rt.filter != nil {
				rt.filter.Flush()
			}
		}
		r.events <- exitEvent{i: i, rc: rc, err: err, ex: ex, afterGo: true, attach: true, marked: rt.marked.Load()}
	}()
}

// attachedTo takes a started attach session: control lines go to it now,
// the stop already sent (lost with the old link) first.
func (r *runner) attachedTo(a attached) {
	rt := r.tasks[a.i]
	if a.gen != rt.gen {
		return
	}
	rt.proc = a.proc
	if rt.stopLine != "" {
		rt.send(rt.stopLine)
	} else {
		if rt.restartLine != "" {
			// Passed over unless the supervisor still waits for it.
			rt.send(rt.restartLine)
		}
		rt.send(supervisor.CtlHeartbeat)
	}
}

// attachFailed: an attach session that ended before its marker found the
// task gone from the host, or its directory refused: why is what it
// said, its "tfhive: " line; a login shell may have written to stderr
// before it (a locale warning, stty), and that is not why.
func (rt *runTask) attachFailed() string {
	noise := bytes.TrimSpace(rt.attachNoise.Bytes())
	why := ""
	for line := range bytes.Lines(noise) {
		if s, ok := bytes.CutPrefix(line, []byte("tfhive: ")); ok {
			why = wording.FirstLine(string(s))
		}
	}
	if why == "" {
		why = wording.FirstLine(string(noise))
	}
	if why == "" {
		why = "its supervisor could not be found again"
	}
	return why
}

// endLine is the truncation line of this tfhive's kept tasks' sessions.
func (r *runner) endLine() []byte { return []byte(supervisor.TruncatedMarker + r.mark + "\n") }

// gen is this keeper's generation.
func (r *runner) gen() int { return max(r.o.Gen, 1) }

// sayReplaced passes on, once, that a newer keeper adopted the run.
func (l *linkState) sayReplaced(why string) {
	select {
	case l.replaced <- why:
	default:
	}
}

// stepDown lets go of the run for the keeper that adopted it: nothing is
// stopped, every session is dropped.
func (r *runner) stepDown(why string) {
	r.o.Console.Printf("tfhive: %s; stepping down (the tasks go on)", why)
	for _, rt := range r.tasks {
		rt.abandoned = true
	}
	ev := lifecycle.Event{Kind: lifecycle.EvSteppedDown, Err: why}
	d := r.p.Apply(ev)
	r.noteEvent(ev, d)
	for _, i := range d.Abandon {
		if rt := r.tasks[i]; rt.proc != nil {
			rt.proc.Close()
		}
	}
}
