package launcher

import (
	"bytes"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/tfhive/tfhive/launcher/view"
)

// Restarts (tfhive run --restarts): a task's supervisor runs it again,
// under the same claims, when tfhive says so (scripts/supervisor-run.sh).
// Which failures restart, how long to wait first and who restarts with
// the failed task are decided here and in the policy; the supervisor only
// reports each attempt's end and waits for "r" or "e".

// Restart is --restarts, --restart-on and --restart-backoff.
type Restart struct {
	// Max is how many times a task may be started again: it runs at most
	// Max+1 times. 0: never restarted.
	Max int
	// On says which failures restart; nil: any.
	On *RestartOn
	// Backoff is the wait before the first restart of a task; it doubles
	// with each restart, up to MaxRestartBackoff.
	Backoff time.Duration
}

// DefaultRestartBackoff is --restart-backoff's default: long enough for a
// port in TIME_WAIT or a flaky mount to come back, short against a run.
const DefaultRestartBackoff = 10 * time.Second

// MaxRestartBackoff caps the backoff's growth (a longer --restart-backoff
// is used as given, without growing).
const MaxRestartBackoff = 5 * time.Minute

// RestartOn is --restart-on: exit codes and ranges, and "lost" for a
// lost host (relaunch.go).
type RestartOn struct {
	ranges [][2]int
	lost   bool
	text   string
}

// ParseRestartOn reads "1-127,137,lost".
func ParseRestartOn(s string) (*RestartOn, error) {
	on := &RestartOn{text: s}
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		if f == "lost" {
			on.lost = true
			continue
		}
		lo, hi, isRange := strings.Cut(f, "-")
		a, err1 := strconv.Atoi(lo)
		b := a
		var err2 error
		if isRange {
			b, err2 = strconv.Atoi(hi)
		}
		if err1 != nil || err2 != nil || a < 1 || b > 255 || a > b {
			return nil, fmt.Errorf("--restart-on: %q is not an exit code 1-255, a range of them (1-127) or lost", f)
		}
		on.ranges = append(on.ranges, [2]int{a, b})
	}
	return on, nil
}

func (on *RestartOn) String() string {
	if on == nil {
		return "any failure"
	}
	return on.text
}

// restarts says whether a task that ended with code (or whose host was
// lost) may be restarted.
func (rs Restart) restarts(code int, lost bool) bool {
	if rs.Max <= 0 || (code == 0 && !lost) {
		return false
	}
	if rs.On == nil {
		return true
	}
	if lost {
		return rs.On.lost
	}
	for _, r := range rs.On.ranges {
		if code >= r[0] && code <= r[1] {
			return true
		}
	}
	return false
}

// backoff is the wait before a task's restart number n (1 for the first):
// Backoff, doubled for each restart before, capped.
func (rs Restart) backoff(n int) time.Duration {
	d := rs.Backoff
	for i := 1; i < n && d < MaxRestartBackoff; i++ {
		d *= 2
	}
	if d > MaxRestartBackoff && rs.Backoff <= MaxRestartBackoff {
		d = MaxRestartBackoff
	}
	return d
}

// ctlEnd tells a supervisor between attempts to exit with the last one's
// status; "r N" (restartLine) to start attempt N, only if N is its next.
const ctlEnd = "e\n"

// restartLine starts attempt n. The number makes it safe to repeat: a new
// session repeats it, in case the old one lost it with its link.
func restartLine(n int) string { return "r " + strconv.Itoa(n) + "\n" }

// attemptMarker, then the run's mark, the attempt's number and its status,
// is the line a supervisor writes after an attempt's last stdout byte.
const attemptMarker = "@@tfhive-attempt "

// attemptFilter takes the attempt lines out of a task's stdout, wherever
// they are (after a partial last line too), and reports each.
//
// Placed (the task started by its host's multiplexer), it takes out only
// a line at an offset of the stream that its supervisor gave first, on
// its own stdout (expect): the line's text alone proves nothing, since
// the task can read the run's word from run.json and print the line
// itself; such a line is the task's output.
//
// Checked (a later session, attach.sh, or logs.sh: checked), the
// supervisor's records come from its file NAME.att in the stream itself
// (recordLines takes them out, ahead of the stream's gate),
// each on a line "@@tfhive-rec SECRET at OFFSET", SECRET a word of that
// session alone; a line "@@tfhive-rec SECRET seen SIZE" says that every
// record of a line before SIZE has come. Those lines come from another
// process than the file's bytes (rundir.sh's tfhive_records), so anywhere
// in the stream: they are taken out first, wherever they are, and count
// for no offset. An attempt line's text met before its record, or before
// a "seen" past it, waits for them: the supervisor writes the record
// before the line, so once the file held the line its record was there.
// One no record names is the task's output. Loose (neither), it goes by
// the line's text alone.
type attemptFilter struct {
	next   io.Writer
	prefix []byte // attemptMarker, the mark, " "
	report func(attempt, rc int)
	held   []byte

	placed bool
	pos    int64          // the stream's bytes before held's first one
	at     map[int64]bool // offsets of attempt lines, from the records
	anyAt  int            // records without an offset: take the next lines

	rec   []byte // checked: recMarker, the session's secret, " "
	seen  int64  // checked: every record of a line before it has come
	final bool   // the stream has ended: nothing more will come
}

// recMarker starts a record of the supervisor's file in a checked stream.
const recMarker = "@@tfhive-rec "

// maxAttemptWait bounds what a checked filter holds behind an attempt
// line that waits for its record: a real one is followed by nothing
// until tfhive answers it (the supervisor waits), so past this the line
// can only be the task's.
const maxAttemptWait = 4 << 20

func newAttemptFilter(next io.Writer, mark string, report func(attempt, rc int)) *attemptFilter {
	return &attemptFilter{next: next, prefix: []byte(attemptMarker + mark + " "), report: report}
}

// expect says that an attempt line starts at offset off of the stream
// (-1: somewhere), and makes the filter placed.
func (f *attemptFilter) expect(off int64) {
	f.placed = true
	if off < 0 {
		f.anyAt++
		return
	}
	if f.at == nil {
		f.at = map[int64]bool{}
	}
	f.at[off] = true
}

// loose: the stream now comes from a session that has no records.
func (f *attemptFilter) loose() { f.placed, f.rec = false, nil }

// checked: the stream now comes from a session that sends the
// supervisor's records among the file's bytes, behind secret.
func (f *attemptFilter) checked(secret string) {
	f.placed, f.rec = true, []byte(recMarker+secret+" ")
}

func (f *attemptFilter) Write(p []byte) (int, error) {
	n := len(p)
	if len(f.held) > 0 {
		p = append(f.held, p...)
		f.held = nil
	}
	f.scan(p)
	return n, nil
}

// recordLines takes the record lines of a checked stream out of it, ahead
// of the stream's gate (which counts the file's bytes only), and gives
// them to the filter; the rest goes to next.
type recordLines struct {
	next io.Writer
	f    *attemptFilter
	held []byte
}

func (r *recordLines) Write(p []byte) (int, error) {
	n := len(p)
	if len(r.held) > 0 {
		p = append(r.held, p...)
		r.held = nil
	}
	data, tail := r.f.records(p, false)
	r.held = tail
	if len(data) > 0 {
		if _, err := r.next.Write(data); err != nil {
			return n, err
		}
	}
	// A line that waits may be told now, with nothing after it.
	r.f.Write(nil)
	return n, nil
}

// flush passes on what was held: the stream has ended.
func (r *recordLines) flush() {
	data, _ := r.f.records(r.held, true)
	r.held = nil
	if len(data) > 0 {
		r.next.Write(data)
	}
}

// records takes the record lines out of b and applies them; tail is
// what may be the start of one, to wait for the next write (none once
// final).
func (f *attemptFilter) records(b []byte, final bool) (data, tail []byte) {
	for {
		i := bytes.Index(b, f.rec)
		if i < 0 {
			k := len(b) - partialPrefix(b, f.rec)
			if final {
				k = len(b)
			}
			return append(data, b[:k]...), append([]byte(nil), b[k:]...)
		}
		data = append(data, b[:i]...)
		rest := b[i+len(f.rec):]
		j := bytes.IndexByte(rest, '\n')
		if j < 0 {
			if final {
				return append(data, b[i:]...), nil
			}
			return data, append([]byte(nil), b[i:]...)
		}
		if w := strings.Fields(string(rest[:j])); len(w) == 2 {
			if off, err := strconv.ParseInt(w[1], 10, 64); err == nil && off >= 0 {
				switch w[0] {
				case "at":
					f.expect(off)
				case "seen":
					f.seen = max(f.seen, off)
				}
			}
		}
		b = rest[j+1:]
	}
}

// scan passes p on, less the attempt lines, holding what cannot be told
// yet.
func (f *attemptFilter) scan(p []byte) {
	for len(p) > 0 {
		i := bytes.Index(p, f.prefix)
		if i < 0 {
			// What may be the start of a marker waits for the next write.
			k := len(p) - partialPrefix(p, f.prefix)
			if f.final {
				k = len(p)
			}
			f.pass(p[:k])
			if k < len(p) {
				f.held = append([]byte(nil), p[k:]...)
			}
			return
		}
		at := f.pos + int64(i)
		if f.rec != nil && !f.at[at] && at >= f.seen && !f.final && len(p)-i < maxAttemptWait {
			// Its record may be on its way.
			f.pass(p[:i])
			f.held = append([]byte(nil), p[i:]...)
			return
		}
		if f.placed && !f.at[at] && f.anyAt == 0 {
			// No record put a line here: the task's own bytes.
			f.pass(p[:i+1])
			p = p[i+1:]
			continue
		}
		f.pass(p[:i])
		p = p[i:]
		rest := p[len(f.prefix):]
		j := bytes.IndexByte(rest, '\n')
		if j < 0 {
			if len(rest) > 32 || f.final {
				// Not a line of ours after all.
				f.pass(p[:1])
				p = p[1:]
				continue
			}
			f.held = append([]byte(nil), p...)
			return
		}
		a, rc, ok := strings.Cut(string(rest[:j]), " ")
		an, err1 := strconv.Atoi(a)
		rn, err2 := strconv.Atoi(rc)
		if !ok || err1 != nil || err2 != nil {
			f.pass(p[:1])
			p = p[1:]
			continue
		}
		if f.at[at] {
			delete(f.at, at)
		} else if f.anyAt > 0 {
			f.anyAt--
		}
		f.pos += int64(len(f.prefix) + j + 1)
		f.report(an, rn)
		p = rest[j+1:]
	}
}

// attemptRecords takes a supervisor's own stdout past its claim line:
// its records "@@tfhive-attempt MARK N RC OFFSET" go to the task's
// stdout filter (expect), the rest to next. One line at a time: the
// supervisor writes whole lines.
type attemptRecords struct {
	next   io.Writer
	prefix string // attemptMarker, the mark, " "
	f      *attemptFilter
	buf    []byte
}

func (r *attemptRecords) Write(p []byte) (int, error) {
	r.buf = append(r.buf, p...)
	for {
		i := bytes.IndexByte(r.buf, '\n')
		if i < 0 {
			break
		}
		line := r.buf[:i+1]
		r.buf = r.buf[i+1:]
		if rest, ok := strings.CutPrefix(string(line[:i]), r.prefix); ok {
			if w := strings.Fields(rest); len(w) == 3 {
				off, err := strconv.ParseInt(w[2], 10, 64)
				if err != nil {
					off = -1
				}
				r.f.expect(off)
				continue
			}
		}
		r.next.Write(line)
	}
	return len(p), nil
}

// flush passes on what was held: the stream has ended.
func (f *attemptFilter) flush() {
	p := f.held
	f.held = nil
	f.final = true
	f.scan(p)
	f.pass(f.held)
	f.held = nil
	f.final = false
}

func (f *attemptFilter) pass(p []byte) {
	if len(p) > 0 {
		f.pos += int64(len(p))
		f.next.Write(p)
	}
}

// attemptEnded: task ev.task's attempt ended with ev.code; its supervisor
// waits for "r" or "e".
func (p *policy) attemptEnded(ev event, d *decision) {
	s := &p.state[ev.task]
	if s.phase != phaseStarted || s.between {
		return
	}
	s.between = true
	a := Attempt{Attempt: s.attempt, Outcome: OutcomeExited, ExitCode: intPtr(ev.code), Duration: ev.after}
	t := p.tasks[ev.task]
	label := t.ID + " on " + t.Host
	switch {
	case s.stopped || p.decided():
		if s.stopped {
			a.Outcome = OutcomeStopped
		}
		s.attempts = append(s.attempts, a)
		d.ends = append(d.ends, ev.task)
	case p.inRegroup(ev.task):
		a.Outcome, a.Restart = OutcomeStopped, "restarted with every task: "+p.regroupWhy
		if ev.code != 0 && !p.signalled(ev.code) {
			a.Outcome = OutcomeExited
		}
		s.attempts = append(s.attempts, a)
		p.regroupReady(d)
	case ev.code == 0 || !p.restart.restarts(ev.code, false) || s.attempt >= p.restart.Max:
		s.attempts = append(s.attempts, a)
		d.ends = append(d.ends, ev.task)
	default:
		wait := p.restart.backoff(s.attempt + 1)
		next := fmt.Sprintf("attempt %d of %d", s.attempt+2, p.restart.Max+1)
		if p.alone(ev.task) {
			a.Restart = "restarted alone"
			s.attempts = append(s.attempts, a)
			s.backoff = true
			d.say = append(d.say, fmt.Sprintf("tfhive: %s %s; restarting it in %s (%s)", label, describeExit(ev.code), wait, next))
			d.later = append(d.later, delayed{wait, event{kind: evBackoffOver, task: ev.task}})
			return
		}
		p.regroupWhy = label + " " + describeExit(ev.code)
		a.Restart = "restarted every task"
		s.attempts = append(s.attempts, a)
		p.regroup, p.regroupWait = p.live(), wait
		d.say = append(d.say, fmt.Sprintf("tfhive: %s %s; restarting every task in %s (%s)", label, describeExit(ev.code), wait, next))
		for _, i := range p.regroup {
			o := &p.state[i]
			if o.between {
				// A restart of its own waiting: it goes with the group's.
				o.backoff = false
				continue
			}
			d.to = append(d.to, i)
		}
		if len(d.to) > 0 {
			d.send, d.armRegroupKill = ctlTerm, true
		}
		p.regroupReady(d)
	}
}

// signalled: code is a signal's (tfhive's SIGTERM or SIGKILL of a group
// restart).
func (p *policy) signalled(code int) bool { return code == 128+15 || code == 128+9 }

func (p *policy) inRegroup(i int) bool {
	return p.regroup != nil && slices.Contains(p.regroup, i)
}

// regroupReady arms the group's backoff once every task of the group
// restart has ended its attempt.
func (p *policy) regroupReady(d *decision) {
	if p.regroup == nil || p.regroupArmed {
		return
	}
	for _, i := range p.regroup {
		if s := p.state[i]; s.phase == phaseStarted && !s.between {
			return
		}
	}
	p.regroupArmed = true
	d.later = append(d.later, delayed{p.regroupWait, event{kind: evBackoffOver, task: -1}})
}

// backoffOver starts the next attempt of task i (-1: of the group
// restart's tasks), unless the run was decided meanwhile (they were told
// to end then).
func (p *policy) backoffOver(i int, d *decision) {
	if p.decided() {
		return
	}
	next := func(i int) {
		s := &p.state[i]
		if s.phase != phaseStarted || !s.between {
			return
		}
		s.between, s.backoff = false, false
		s.attempt++
		d.restart = append(d.restart, i)
	}
	if i >= 0 {
		if p.state[i].backoff {
			next(i)
		}
		return
	}
	for _, i := range p.regroup {
		next(i)
	}
	p.regroup, p.regroupArmed = nil, false
}

// attemptFilter is task i's stdout filter: attempt lines go to the run's
// loop.
func (r *runner) attemptFilter(i int, next io.Writer) *attemptFilter {
	return newAttemptFilter(next, r.mark, func(attempt, rc int) {
		select {
		case r.attemptEnds <- attemptEnd{i, attempt, rc}:
		case <-r.quit:
		}
	})
}

// after feeds ev back to the run's loop after d.
func (r *runner) after(d time.Duration, ev event) {
	time.AfterFunc(d, func() {
		select {
		case r.later <- ev:
		case <-r.quit:
		}
	})
}

// attemptsOf is task i's attempts for the summary: those that ended with
// a line of their own, then the last one, however it ended.
func (r *runner) attemptsOf(i int) []Attempt {
	s := r.p.state[i]
	l := append(r.o.Relaunch.earlier(r.tasks[i].t.ID, r.tasks[i].t.Host), s.attempts...)
	if n := len(l); n == 0 || l[n-1].Attempt != s.attempt {
		if s.phase == phaseDone && s.outcome == OutcomeNoStart {
			return l
		}
		rt := r.tasks[i]
		l = append(l, Attempt{Attempt: s.attempt, Outcome: s.outcome, ExitCode: s.code, Duration: rt.res.Duration - rt.attemptStart.Sub(rt.started)})
	}
	return l
}

// withAttemptsColumn adds ATTEMPTS after OUTCOME when the run could
// restart its tasks.
func withAttemptsColumn(s *Summary, header []string, rows [][]string) ([]string, [][]string) {
	if !slices.ContainsFunc(s.Tasks, func(t TaskResult) bool { return t.Attempts != nil }) {
		return header, rows
	}
	at := slices.Index(header, "OUTCOME") + 1
	header = slices.Insert(slices.Clone(header), at, "ATTEMPTS")
	for i, t := range s.Tasks {
		rows[i] = slices.Insert(slices.Clone(rows[i]), at, strconv.Itoa(max(len(t.Attempts), 1)))
	}
	return header, rows
}

// writeRestartNotes: one line per attempt that was followed by another,
// saying how it ended and why the task restarted.
func writeRestartNotes(w io.Writer, s *Summary) error {
	for _, t := range s.Tasks {
		for _, a := range t.Attempts {
			if a.Restart == "" {
				continue
			}
			how := a.Outcome
			if a.ExitCode != nil {
				how += " " + strconv.Itoa(*a.ExitCode)
			}
			host := t.Host
			if a.Host != "" {
				host = a.Host
			}
			if _, err := fmt.Fprintf(w, "restart: %s on %s: attempt %d %s after %s; %s\n", t.ID, view.SanitizeCells([]string{host})[0],
				a.Attempt, how, a.Duration.Round(100*time.Millisecond), a.Restart); err != nil {
				return err
			}
		}
	}
	return nil
}
