package launcher

import (
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/tfhive/tfhive/launcher/lifecycle"
	"github.com/tfhive/tfhive/launcher/record"
	"github.com/tfhive/tfhive/probe/wording"
)

// events.csv: what happened to the run's tasks and links, when
// (time,task,host,event,detail), for the report's timeline. The summary
// has each task's and attempt's duration, not when things happened.
//
// The events, each a word: start (the task was told to go; adopted, for a
// run attach -H took over), not-started, attempt-end and restart (with
// --restarts), stop (SIGTERM sent), kill (SIGKILL sent), abort (another
// task could not claim), exit, lost, preempted; a host's link-lost,
// reconnected and host-lost (task empty); the run's timeout, interrupt and
// stepped-down (task and host empty). At most timelineMaxRows rows, the
// last then saying "truncated"; each row is written as it happens (a run
// has few), so that a run still going on, or killed, has its own.

const timelineMaxRows = 10_000

// timeline is a run's events.csv.
type timeline struct {
	mu   sync.Mutex
	csv  csvLog
	rows int
}

func newTimeline(path string, appends bool) *timeline {
	return &timeline{csv: csvLog{path: path, appends: appends, header: "time,task,host,event,detail\n"}}
}

// add writes one event now.
func (tl *timeline) add(task, host, event, detail string) {
	if tl == nil {
		return
	}
	tl.mu.Lock()
	defer tl.mu.Unlock()
	if tl.rows > timelineMaxRows {
		return
	}
	w := tl.csv.writer()
	if w == nil {
		return
	}
	if tl.rows == timelineMaxRows {
		task, host, event, detail = "", "", record.EventTruncated, "more events were not recorded"
	}
	tl.rows++
	detail = cutRunes(wording.FirstLine(detail), 200)
	_, tl.csv.err = fmt.Fprintf(w, "%s,%s,%s,%s,%s\n", time.Now().UTC().Format("2006-01-02T15:04:05.000Z"),
		csvField(task), csvField(host), event, csvField(detail))
}

func (tl *timeline) close() {
	if tl == nil {
		return
	}
	tl.mu.Lock()
	defer tl.mu.Unlock()
	tl.csv.close()
}

// taskEvent writes task i's event.
func (r *runner) taskEvent(i int, event, detail string) {
	t := r.tasks[i].t
	r.timeline.add(t.ID, t.Host, event, detail)
}

// noteEvent writes what ev and the policy's decision d did to the
// timeline.
func (r *runner) noteEvent(ev lifecycle.Event, d lifecycle.Decision) {
	if r.timeline == nil {
		return
	}
	switch ev.Kind {
	case lifecycle.EvNotStarted:
		r.taskEvent(ev.Task, record.EventNotStarted, ev.Err)
	case lifecycle.EvExited:
		if run, user, ok := r.tasks[ev.Task].preempted.Get(); ok {
			r.taskEvent(ev.Task, record.EventPreempted, "by run "+run+" of "+user)
		}
		r.taskEvent(ev.Task, record.EventExit, "code "+strconv.Itoa(ev.Code))
	case lifecycle.EvLost:
		r.taskEvent(ev.Task, record.EventLost, ev.Err)
	case lifecycle.EvAttemptEnd:
		detail := "code " + strconv.Itoa(ev.Code)
		if a := r.p.State(ev.Task).Attempts; len(a) > 0 {
			detail = fmt.Sprintf("attempt %d, code %d", a[len(a)-1].Attempt, ev.Code)
		}
		r.taskEvent(ev.Task, record.EventAttemptEnd, detail)
	case lifecycle.EvTimeout:
		r.timeline.add("", "", record.EventTimeout, "after "+ev.After.String())
	case lifecycle.EvInterrupt:
		r.timeline.add("", "", record.EventInterrupt, ev.Sig.String())
	case lifecycle.EvSteppedDown:
		r.timeline.add("", "", record.EventSteppedDn, ev.Err)
	}
	word := map[lifecycle.Control]string{lifecycle.CtlGo: record.EventStart, lifecycle.CtlTerm: record.EventStop,
		lifecycle.CtlKill: record.EventKill, lifecycle.CtlAbort: record.EventAbort}[d.Send]
	detail := map[lifecycle.Control]string{lifecycle.CtlTerm: "SIGTERM", lifecycle.CtlKill: "SIGKILL"}[d.Send]
	for _, i := range d.To {
		if d.Send == lifecycle.CtlGo && r.o.Restart.Max > 0 {
			detail = "attempt " + strconv.Itoa(r.p.State(i).Attempt)
		}
		if word != "" {
			r.taskEvent(i, word, detail)
		}
	}
	for _, i := range d.Restart {
		r.taskEvent(i, record.EventRestart, "attempt "+strconv.Itoa(r.p.State(i).Attempt))
	}
}
