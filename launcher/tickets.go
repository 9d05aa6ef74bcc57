package launcher

import (
	"bytes"
	"context"
	"io"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/tfhive/tfhive/probe"
	"github.com/tfhive/tfhive/probe/remote"
	"github.com/tfhive/tfhive/probe/remote/shscript"
	"github.com/tfhive/tfhive/schedule"
)

var ticketSh = shscript.Load(scripts, "scripts/ticket.sh")

// Tickets are a waiting run's tickets, one per host (scripts/ticket.sh):
// each a session whose flock holder keeps the ticket for as long as the
// session's input stays open.
type Tickets struct {
	procs []remote.Started
	// asked are the victims asked to be preempted, by host, user and run.
	asked map[string]bool
}

// HoldTickets takes a ticket on every host of execs that answers, in
// parallel, and returns once each is held or refused (a host that
// refuses, or is lost, is simply one where the run holds no place).
//
// While held, a ticket's host says when its locks change (a claim let
// go): each time, wake gets a value if it has room, so that the waiting
// run probes again at once (Retry.Wake). nil: nobody listens.
func HoldTickets(ctx context.Context, execs []remote.Executor, req schedule.Request, wake chan<- struct{}) *Tickets {
	prio := req.Priority
	if prio == "" {
		prio = schedule.PriorityNormal
	}
	ms := req.QueueSince.UnixMilli()
	shape := req.Shape()
	words := make([]string, len(shape))
	for i, g := range shape {
		words[i] = strconv.Itoa(g)
	}
	name := probe.TicketName(schedule.PriorityRank(prio), ms, req.RunID)
	script := ticketSh.With(shscript.Set("tfhive_kind", "ticket"), shscript.Set("tfhive_name", name),
		shscript.Set("tfhive_label", strings.Join([]string{req.RunID, prio, strconv.FormatInt(ms, 10), strings.Join(words, ",")}, " ")))
	return &Tickets{procs: holdLocks(ctx, execs, script, wake)}
}

// Preempt asks each victim's hosts to preempt it for run high (the lock
// tfhive-preempt.HIGH.LOW.lock, held as a ticket is: scripts/ticket.sh);
// the victim's own supervisors decide (scripts/preempt-watch.sh). A
// victim asked already is not asked again. The requests go with the
// tickets (Release).
// It returns the victims asked now, with the hosts asked.
func (t *Tickets) Preempt(ctx context.Context, execs map[string]remote.Executor, high string, vs []schedule.Victim) []schedule.Victim {
	if t.asked == nil {
		t.asked = map[string]bool{}
	}
	var now []schedule.Victim
	for _, v := range vs {
		var hosts []remote.Executor
		var names []string
		for _, h := range v.Hosts {
			if k := h + "\x00" + v.User + "\x00" + v.RunID; !t.asked[k] && execs[h] != nil {
				t.asked[k] = true
				hosts = append(hosts, execs[h])
				names = append(names, h)
			}
		}
		if len(hosts) == 0 {
			continue
		}
		v.Hosts = names
		now = append(now, v)
		script := ticketSh.With(shscript.Set("tfhive_kind", "preempt"), shscript.Set("tfhive_name", high+"."+v.RunID),
			shscript.Set("tfhive_label", high+" "+v.RunID))
		t.procs = append(t.procs, holdLocks(ctx, hosts, script, nil)...)
	}
	return now
}

// holdLocks runs a ticket.sh script on every executor, in parallel, and
// returns the sessions of those whose lock is held, once each is held or
// refused (a host that refuses, or is lost, is simply one where the run
// holds no place).
func holdLocks(ctx context.Context, execs []remote.Executor, script string, wake chan<- struct{}) []remote.Started {
	input := strconv.Itoa(len(script)) + "\n" + script
	var procs []remote.Started
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, ex := range execs {
		if ex == nil {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			held := make(chan struct{})
			w := &ticketLines{held: held, wake: wake}
			proc, err := ex.Start(ctx, SupervisorCommand, w, io.Discard)
			if err != nil {
				return
			}
			if err := writeChunked(proc.Stdin(), input); err != nil {
				proc.Close()
				return
			}
			ended := make(chan struct{})
			go func() { proc.Wait(); close(ended) }()
			select {
			case <-held:
				mu.Lock()
				procs = append(procs, proc)
				mu.Unlock()
			case <-ended:
			case <-time.After(30 * time.Second):
				proc.Close()
			}
		}()
	}
	wg.Wait()
	return procs
}

// Release gives the tickets up: EOF ends each holder, which removes its
// file; the sessions' ends are not waited for.
func (t *Tickets) Release() {
	if t == nil {
		return
	}
	for _, p := range t.procs {
		p.Stdin().Close()
		go func() { p.Wait(); p.Close() }()
	}
	t.procs = nil
}

// ticketLines closes held at the holder's "@@tfhive-ticket held" line,
// then sends to wake (when it has room) at each "@@tfhive-changed".
type ticketLines struct {
	buf  []byte
	held chan struct{}
	done bool
	wake chan<- struct{}
}

const (
	ticketHeld    = "@@tfhive-ticket held\n"
	ticketChanged = "@@tfhive-changed\n"
)

func (w *ticketLines) Write(p []byte) (int, error) {
	w.buf = append(w.buf, p...)
	if !w.done {
		i := bytes.Index(w.buf, []byte(ticketHeld))
		if i < 0 {
			if len(w.buf) > 4096 {
				w.buf = w.buf[len(w.buf)-64:]
			}
			return len(p), nil
		}
		w.done = true
		close(w.held)
		w.buf = w.buf[i+len(ticketHeld):]
	}
	for {
		i := bytes.Index(w.buf, []byte(ticketChanged))
		if i < 0 {
			break
		}
		w.buf = w.buf[i+len(ticketChanged):]
		if w.wake != nil {
			select {
			case w.wake <- struct{}{}:
			default:
			}
		}
	}
	if len(w.buf) > 64 {
		w.buf = w.buf[len(w.buf)-64:]
	}
	return len(p), nil
}
