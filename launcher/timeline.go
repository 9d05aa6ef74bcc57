package launcher

import (
	"cmp"
	"fmt"
	"strconv"

	"github.com/tfhive/tfhive/launcher/lifecycle"
	"github.com/tfhive/tfhive/launcher/record"
)

// The run's events.csv (csvlog.Events): what the runner saw and decided,
// for the report's timeline.

// taskEvent writes task i's event.
func (r *runner) taskEvent(i int, event, detail string) {
	t := r.tasks[i].t
	r.timeline.Add(t.ID, t.Host, event, detail)
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
		r.timeline.Add("", "", record.EventTimeout, "after "+ev.After.String())
	case lifecycle.EvInterrupt:
		r.timeline.Add("", "", record.EventInterrupt, ev.Sig.String())
	case lifecycle.EvSteppedDown:
		r.timeline.Add("", "", record.EventSteppedDn, ev.Err)
	}
	word := map[lifecycle.Control]string{lifecycle.CtlGo: record.EventStart, lifecycle.CtlTerm: record.EventStop,
		lifecycle.CtlKill: record.EventKill, lifecycle.CtlAbort: record.EventAbort}[d.Send]
	detail := map[lifecycle.Control]string{lifecycle.CtlTerm: "SIG" + cmp.Or(r.o.StopSignal, "TERM"), lifecycle.CtlKill: "SIGKILL"}[d.Send]
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
