package csvlog

import (
	"fmt"
	"sync"
	"time"

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
// stepped-down (task and host empty). At most EventsMaxRows rows, the
// last then saying "truncated"; each row is written as it happens (a run
// has few), so that a run still going on, or killed, has its own.

// EventsMaxRows bounds events.csv (see above).
const EventsMaxRows = 10_000

// Events is a run's events.csv.
type Events struct {
	mu   sync.Mutex
	csv  File
	rows int
	// sub is told every row written (Subscribe), until Close.
	sub    func(task, host, event, detail string)
	closed bool
}

// Subscribe has f told every row as it is written, after it is: the one
// stream of a run's events, which --notify delivers from. f must not
// block; nil: nobody.
func (tl *Events) Subscribe(f func(task, host, event, detail string)) {
	if tl == nil {
		return
	}
	tl.mu.Lock()
	tl.sub = f
	tl.mu.Unlock()
}

// NewEvents is the events.csv at path, appended to when appends.
func NewEvents(path string, appends bool) *Events {
	return &Events{csv: File{Path: path, Appends: appends, Header: "time,task,host,event,detail\n"}}
}

// Add writes one event now, and tells the subscriber (Subscribe) even
// where events.csv is full or cannot be written: a notification does not
// hang on the local disk. A nil Events writes nothing.
func (tl *Events) Add(task, host, event, detail string) {
	if tl == nil {
		return
	}
	tl.mu.Lock()
	defer tl.mu.Unlock()
	detail = wording.Cut(wording.FirstLine(detail), 200)
	if tl.sub != nil && !tl.closed {
		tl.sub(task, host, event, detail)
	}
	if tl.rows > EventsMaxRows {
		return
	}
	w := tl.csv.Writer()
	if w == nil {
		return
	}
	if tl.rows == EventsMaxRows {
		task, host, event, detail = "", "", record.EventTruncated, "more events were not recorded"
	}
	tl.rows++
	if _, err := fmt.Fprintf(w, "%s,%s,%s,%s,%s\n", Time(nil, time.Now()),
		Field(task), Field(host), event, Field(detail)); err != nil {
		tl.csv.Fail(err)
	}
}

// Close closes events.csv: nothing is written after it.
func (tl *Events) Close() {
	if tl == nil {
		return
	}
	tl.mu.Lock()
	defer tl.mu.Unlock()
	tl.closed = true
	tl.csv.Close()
}
