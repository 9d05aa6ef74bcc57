package supervisor

import (
	"strconv"
	"strings"
	"time"
)

// IdleMarker, then the session's mark, starts what a task's idle watch
// says on the session's stderr (scripts/idle-watch.sh): " warn TENTHS"
// once the task's GPUs have been idle for the rule's warning, " busy"
// when they are used again, and, after the task's last byte, " stopped
// TENTHS" ("-" from a later session) when the watch stopped it. The
// supervisor says " ledger WHY" there too, when an attempt could not go
// into the host's usage ledger (scripts/ledger.sh).
const IdleMarker = "@@tfhive-idle "

// DefaultIdleEvery is how often a task's GPUs are sampled for the usage
// ledger's idle time where no idle rule applies: one nvidia-smi a minute.
const DefaultIdleEvery = time.Minute

// idleWords is tfhive_idle: "BELOW WARN STOP EVERY", percent, then
// tenths of a second (every at least 1); "" for a task with no GPU to
// watch.
func idleWords(t Task) string {
	if len(t.IdleGPUs) == 0 {
		return ""
	}
	every := t.IdleEvery
	if every <= 0 {
		every = DefaultIdleEvery
	}
	tenths := func(d time.Duration) string { return strconv.FormatInt(int64(d/(100*time.Millisecond)), 10) }
	return strings.Join([]string{strconv.Itoa(t.Idle.Below), tenths(t.Idle.Warn), tenths(t.Idle.Stop),
		tenths(max(every, 100*time.Millisecond))}, " ")
}

func joinInts(xs []int) string {
	s := make([]string, len(xs))
	for i, x := range xs {
		s[i] = strconv.Itoa(x)
	}
	return strings.Join(s, ",")
}

// Idle is what a task's sessions said of its GPUs' idleness.
type Idle struct {
	// Since is when the current warned stretch began (zero: none).
	Since time.Time
	// Stopped: the watch stopped the task after that long idle (-1:
	// a later session could not know how long).
	Stopped time.Duration
	stopped bool
}

// setIdle takes an idle line's words: "warn TENTHS", "busy", "stopped
// TENTHS", "stopped -" or "ledger WHY".
func (p *Preemption) setIdle(line string) {
	what, n, _ := strings.Cut(line, " ")
	if what == "ledger" {
		p.mu.Lock()
		f := p.OnLedger
		p.mu.Unlock()
		if f != nil {
			f(n)
		}
		return
	}
	d := time.Duration(-1)
	if v, err := strconv.ParseInt(n, 10, 64); err == nil && v >= 0 {
		d = time.Duration(v) * 100 * time.Millisecond
	}
	p.mu.Lock()
	switch what {
	case "warn":
		if d < 0 {
			p.mu.Unlock()
			return
		}
		p.idle.Since = time.Now().Add(-d)
	case "busy":
		p.idle.Since = time.Time{}
	case "stopped":
		p.idle.stopped, p.idle.Stopped = true, d
	default:
		p.mu.Unlock()
		return
	}
	f := p.OnIdle
	p.mu.Unlock()
	if f != nil {
		f(what, d)
	}
}

// IdleNow is the idle state the sessions reported: since when the
// task's GPUs have been idle past the warning (zero: not), and whether
// the watch stopped it, after how long (-1: unknown).
func (p *Preemption) IdleNow() (since time.Time, stopped bool, after time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.idle.Since, p.idle.stopped, p.idle.Stopped
}
