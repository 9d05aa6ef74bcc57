package hostops

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/tfhive/tfhive/launcher/supervisor"
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
	tickets []holder // one per host, its host named
	// requests are the preemptions asked (Preempt): they go when the run
	// starts (Park), or gives up.
	requests []holder
	// asked are the victims asked to be preempted, by host, user and run.
	asked  map[string]bool
	parked bool
}

// HoldTickets takes a ticket on every host of execs that answers, in
// parallel, and returns once each is held or refused (a host that
// refuses, or is lost, is simply one where the run holds no place).
//
// While held, a ticket's host says when its locks change (a claim let
// go): each time, wake gets a value if it has room, so that the waiting
// run probes again at once (Retry.Wake). nil: nobody listens. requeued
// is how often the run went back to the queue once preempted (`tfhive
// queue` says so; 0: never). parked: the tickets are held parked (Park)
// from the start, for a run that may be requeued and started without
// waiting: its place is then when it started.
func HoldTickets(ctx context.Context, execs map[string]remote.Executor, req schedule.Request, requeued int, wake chan<- struct{}, parked bool) *Tickets {
	t := &Tickets{parked: parked}
	t.tickets = holdTickets(ctx, execs, req, requeued, wake, parked)
	return t
}

func holdTickets(ctx context.Context, execs map[string]remote.Executor, req schedule.Request, requeued int, wake chan<- struct{}, parked bool) []holder {
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
	state := ""
	if parked {
		state = probe.TicketParked
	}
	script := ticketSh.With(shscript.Set("tfhive_kind", "ticket"), shscript.Set("tfhive_name", name),
		shscript.Set("tfhive_label", strings.Join([]string{req.RunID, prio, strconv.FormatInt(ms, 10), strings.Join(words, ",")}, " ")),
		shscript.Set("tfhive_requeued", strconv.Itoa(max(requeued, 0))), shscript.Set("tfhive_state", state))
	hosts := make([]string, 0, len(execs))
	for h := range execs {
		hosts = append(hosts, h)
	}
	slices.Sort(hosts)
	list := make([]remote.Executor, len(hosts))
	for i, h := range hosts {
		list[i] = execs[h]
	}
	procs, _ := holdLocks(ctx, list, hosts, script, wake)
	return procs
}

// Park takes the tickets out of the queue while their run runs, holding
// them still (scripts/ticket.sh): their holders, dated by each host's
// kernel when the run began to wait, are its place should it be
// requeued (Resume). The preemptions it asked go.
func (t *Tickets) Park() {
	if t == nil {
		return
	}
	for _, h := range t.tickets {
		io.WriteString(h.proc.Stdin(), "park\n")
	}
	release(t.requests)
	t.requests, t.asked, t.parked = nil, nil, true
}

// Parked says whether the tickets are parked (Park, or held so).
func (t *Tickets) Parked() bool { return t != nil && t.parked }

// Resume puts parked tickets back in the queue, requeued times requeued:
// each host whose holder lived on keeps the run's first place there; a
// host that holds none (its connection was lost, it was not in the fleet
// then) gets a new ticket, dated now.
func (t *Tickets) Resume(ctx context.Context, execs map[string]remote.Executor, req schedule.Request, requeued int, wake chan<- struct{}) {
	live := map[string]bool{}
	var kept []holder
	for _, h := range t.tickets {
		select {
		case <-h.ended:
			h.proc.Close()
			continue
		default:
		}
		if _, err := io.WriteString(h.proc.Stdin(), "wait "+strconv.Itoa(max(requeued, 0))+"\n"); err != nil {
			release([]holder{h})
			continue
		}
		live[h.host] = true
		kept = append(kept, h)
	}
	rest := map[string]remote.Executor{}
	for h, ex := range execs {
		if !live[h] && ex != nil {
			rest[h] = ex
		}
	}
	if len(rest) > 0 {
		kept = append(kept, holdTickets(ctx, rest, req, requeued, wake, false)...)
	}
	t.tickets, t.parked = kept, false
}

// Preempt asks each victim's hosts to preempt it for run high (the lock
// tfhive-preempt.HIGH.LOW.lock, held as a ticket is: scripts/ticket.sh);
// the victim's own supervisors decide (scripts/preempt-watch.sh). A
// victim asked already is not asked again. The requests go with the
// tickets (Release).
//
// The name is anyone's to guess from the high run's ticket and the low
// run's claims: where another made it first, warn names its owner and
// the request is held again as tfhive-preempt.HIGH.WORD.LOW.lock, WORD
// random, which nobody can make ahead of it.
// It returns the victims asked now, with the hosts asked.
func (t *Tickets) Preempt(ctx context.Context, execs map[string]remote.Executor, high string, vs []schedule.Victim, warn func(string)) []schedule.Victim {
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
		procs, taken := holdLocks(ctx, hosts, names, preemptScript(high+"."+v.RunID, high, v.RunID), nil)
		t.requests = append(t.requests, procs...)
		var again []remote.Executor
		var againNames []string
		for i, owner := range taken {
			if owner == "" {
				continue
			}
			if warn != nil {
				warn(fmt.Sprintf("%s: tfhive-preempt.%s.%s.lock was made by %s, not by this run: asking run %s to stop under another name", names[i], high, v.RunID, owner, v.RunID))
			}
			again = append(again, hosts[i])
			againNames = append(againNames, names[i])
		}
		if len(again) > 0 {
			procs, _ := holdLocks(ctx, again, againNames, preemptScript(high+"."+randomWord()+"."+v.RunID, high, v.RunID), nil)
			t.requests = append(t.requests, procs...)
		}
	}
	return now
}

// preemptScript is ticket.sh holding the request name for run high to
// preempt run low.
func preemptScript(name, high, low string) string {
	return ticketSh.With(shscript.Set("tfhive_kind", "preempt"), shscript.Set("tfhive_name", name),
		shscript.Set("tfhive_label", high+" "+low))
}

// randomWord is 16 random hex digits.
func randomWord() string {
	var b [8]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// holdLocks runs a ticket.sh script on every executor, in parallel, and
// returns the sessions of those whose lock is held, once each is held or
// refused (a host that refuses, or is lost, is simply one where the run
// holds no place), and, by executor, the owner of the file where the
// name was taken already ("" elsewhere; "-" when the host could not say).
func holdLocks(ctx context.Context, execs []remote.Executor, hosts []string, script string, wake chan<- struct{}) ([]holder, []string) {
	input := strconv.Itoa(len(script)) + "\n" + script
	var procs []holder
	taken := make([]string, len(execs))
	var mu sync.Mutex
	var wg sync.WaitGroup
	for i, ex := range execs {
		if ex == nil {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			held := make(chan struct{})
			w := &ticketLines{held: held, wake: wake}
			proc, err := ex.Start(ctx, supervisorCommand, w, io.Discard)
			if err != nil {
				return
			}
			if err := supervisor.WriteChunked(proc.Stdin(), input); err != nil {
				proc.Close()
				return
			}
			ended := make(chan struct{})
			go func() { proc.Wait(); close(ended) }()
			select {
			case <-held:
				mu.Lock()
				procs = append(procs, holder{proc, ended, hosts[i]})
				mu.Unlock()
			case <-ended:
				taken[i] = w.takenBy()
			case <-time.After(30 * time.Second):
				proc.Close()
			}
		}()
	}
	wg.Wait()
	return procs, taken
}

// Release gives the tickets up: EOF ends each holder, which removes its
// file; the sessions' ends are not waited for.
func (t *Tickets) Release() {
	if t == nil {
		return
	}
	release(t.tickets)
	release(t.requests)
	t.tickets, t.requests = nil, nil
}

func release(hs []holder) {
	for _, h := range hs {
		h.proc.Stdin().Close()
		go func() { <-h.ended; h.proc.Close() }()
	}
}

// holder is a held ticket's session, and when it ended: holdLocks waits
// for it already (a session is waited for once: a second Wait on a local
// process races the first).
type holder struct {
	proc  remote.Started
	ended <-chan struct{}
	host  string
}

// ticketLines closes held at the holder's "@@tfhive-ticket held" line,
// then sends to wake (when it has room) at each "@@tfhive-changed". The
// script's "@@tfhive-ticket refused exists OWNER" is kept (takenBy).
type ticketLines struct {
	buf  []byte
	held chan struct{}
	done bool
	wake chan<- struct{}
	mu   sync.Mutex
	all  []byte // the output before "held", up to 4 KiB
}

const ticketExists = "@@tfhive-ticket refused exists "

// takenBy is the owner the script named when the lock's name was taken
// already, "" when it said nothing of it. Call it once the session ended.
func (w *ticketLines) takenBy() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	i := bytes.Index(w.all, []byte(ticketExists))
	if i < 0 {
		return ""
	}
	line, _, _ := bytes.Cut(w.all[i+len(ticketExists):], []byte("\n"))
	owner := strings.TrimSpace(string(line))
	if owner == "" || len(owner) > 64 || strings.ContainsFunc(owner, func(r rune) bool { return r < ' ' || r > '~' }) {
		return "-"
	}
	return owner
}

const (
	ticketHeld    = "@@tfhive-ticket held\n"
	ticketChanged = "@@tfhive-changed\n"
)

func (w *ticketLines) Write(p []byte) (int, error) {
	w.buf = append(w.buf, p...)
	if !w.done {
		w.mu.Lock()
		if len(w.all) < 4096 {
			w.all = append(w.all, p[:min(len(p), 4096-len(w.all))]...)
		}
		w.mu.Unlock()
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
