package notify

import (
	"context"
	"sync"
	"time"
)

// Timeout bounds each delivery: a webhook's whole exchange, a command's
// run. A notification that cannot be made in it is a warning.
const Timeout = 10 * time.Second

// RowKinds are the timeline's kinds (events.csv, record.Event… and the
// rows other features add) that are sent as they happen. A run's end is
// always sent, from its summary; the rows that end a run (preempted,
// idle-stopped) are not sent beside it, so that one end is one message.
var RowKinds = map[string]bool{
	"idle-warning": true,
	"hang":         true,
	"requeued":     true,
}

// quiet is how long after a row of a kind another row of the same kind
// (another task of the run, the same cause) goes unsent: a run's tasks
// idle or hang together, and one message says it.
const quiet = time.Minute

// Notifier sends a run's events to its targets.
type Notifier struct {
	Targets []Target
	// Base is every event's run, user, machine and log dir.
	Base Event
	// Warn says a failed delivery, in a line (without "tfhive: warning: ").
	Warn func(string)
	// Timeout bounds each delivery: 0, Timeout.
	Timeout time.Duration
	// Now stands in for the clock (tests); nil: time.Now.
	Now func() time.Time

	mu       sync.Mutex
	lastSent map[string]time.Time
	rows     sync.WaitGroup
}

// Active: there is somewhere to send to (a nil Notifier has not).
func (n *Notifier) Active() bool { return n != nil && len(n.Targets) > 0 }

func (n *Notifier) now() time.Time {
	if n.Now != nil {
		return n.Now()
	}
	return time.Now()
}

// Row is one timeline row (task, host, kind, detail as events.csv has
// them): sent in the background when its kind is one of RowKinds and no
// row of that kind was sent in the last minute. It never blocks the run.
func (n *Notifier) Row(task, host, kind, detail string) {
	if !n.Active() || !RowKinds[kind] {
		return
	}
	now := n.now()
	n.mu.Lock()
	if last, ok := n.lastSent[kind]; ok && now.Sub(last) < quiet {
		n.mu.Unlock()
		return
	}
	if n.lastSent == nil {
		n.lastSent = map[string]time.Time{}
	}
	n.lastSent[kind] = now
	n.mu.Unlock()
	e := n.Base
	e.Kind, e.Task, e.Host, e.Detail, e.Time = kind, task, host, detail, now
	n.rows.Add(1)
	go func() {
		defer n.rows.Done()
		n.Send(context.Background(), e)
	}()
}

// End sends the run's end: kind EndKind(result), with the exit code
// tfhive exits with; nothing for a keeper that stepped down. It waits
// for the rows still being sent, then for its own deliveries.
func (n *Notifier) End(ctx context.Context, result string, code int, detail string) {
	if !n.Active() {
		return
	}
	n.rows.Wait()
	kind := EndKind(result)
	if kind == "" {
		return
	}
	e := n.Base
	e.Kind, e.End, e.Result, e.ExitCode, e.Detail, e.Time = kind, true, result, &code, detail, n.now()
	n.Send(ctx, e)
}

// Wait waits for the rows being sent.
func (n *Notifier) Wait() {
	if n != nil {
		n.rows.Wait()
	}
}

// Send delivers e to every target at once and returns when each has
// answered, failed or timed out; each failure is one warning.
func (n *Notifier) Send(ctx context.Context, e Event) {
	if !n.Active() {
		return
	}
	if e.Text == "" {
		e.Text = e.text()
	}
	timeout := n.Timeout
	if timeout <= 0 {
		timeout = Timeout
	}
	var wg sync.WaitGroup
	for _, t := range n.Targets {
		wg.Add(1)
		go func() {
			defer wg.Done()
			tctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), timeout)
			defer cancel()
			if err := t.deliver(tctx, e, timeout); err != nil && n.Warn != nil {
				n.Warn("notify " + t.String() + ": " + e.Kind + " not delivered: " + err.Error())
			}
		}()
	}
	wg.Wait()
}
