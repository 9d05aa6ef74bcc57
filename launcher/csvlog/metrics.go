package csvlog

import (
	"sync"
	"time"

	"github.com/tfhive/tfhive/probe/wording"
)

// metrics.csv: the values --capture finds, each with the time it arrived
// (time,task,name,value), so that the report draws each metric over the
// run; the summary keeps only the last.
//
// Decisions:
//   - A value is what launcher/capture.go finds: the last match of the lines that
//     arrived together (one Write), stamped with their arrival. Lines that
//     arrive together have one time: keeping their every match would add
//     points at that one time, and cost a regex per line.
//   - Bounded, however long the run: each task's series of each name keeps
//     MetricsDense rows at every stride, first every value, then every 2nd,
//     4th… (so a week's run keeps its whole curve, denser at its start);
//     the last value is always written when the task's output ends. At
//     most MetricsMaxRows rows in all, values cut at MetricsMaxValue bytes.
//   - Written where the value is found, under the task's lock, into a
//     buffer (a write to the file per 64 KiB): it costs a run next to
//     nothing. A run started again on a new plan appends, as the logs do.

// The bounds of metrics.csv (see above).
const (
	MetricsDense    = 1000
	MetricsMaxRows  = 100_000
	MetricsMaxValue = 64
)

// Metrics is a run's metrics.csv.
type Metrics struct {
	mu   sync.Mutex
	csv  File
	rows int
	line []byte
}

// NewMetrics is the metrics.csv at path, appended to when appends.
func NewMetrics(path string, appends bool) *Metrics {
	return &Metrics{csv: File{Path: path, Appends: appends, Header: "time,task,name,value\n", BufSize: 64 << 10}}
}

// TaskMetrics is one task's series, one per capture.
type TaskMetrics struct {
	book *Metrics
	task string
	st   []seriesState
}

// seriesState thins one series: skip values before the next kept one,
// kept at this stride; pending: the last value found was not written, at.
type seriesState struct {
	stride, skip, kept int
	pending            bool
	at                 time.Time
}

// Task is the series of task id's n captures; nil for a nil Metrics.
func (b *Metrics) Task(id string, n int) *TaskMetrics {
	if b == nil {
		return nil
	}
	ts := &TaskMetrics{book: b, task: id, st: make([]seriesState, n)}
	for i := range ts.st {
		ts.st[i].stride = 1
	}
	return ts
}

// Found takes capture i's value v (named name), found now.
func (ts *TaskMetrics) Found(i int, name string, v []byte) {
	st := &ts.st[i]
	now := time.Now()
	if st.skip > 0 {
		st.skip--
		st.pending, st.at = true, now
		return
	}
	st.pending = false
	ts.book.write(now, ts.task, name, v)
	st.skip = st.stride - 1
	if st.kept++; st.kept == MetricsDense {
		st.stride, st.kept = 2*st.stride, 0
	}
}

// End writes capture i's last value, if thinning passed it over.
func (ts *TaskMetrics) End(i int, name, v string) {
	if st := &ts.st[i]; st.pending {
		st.pending = false
		ts.book.write(st.at, ts.task, name, []byte(v))
	}
}

func (b *Metrics) write(t time.Time, task, name string, v []byte) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.rows >= MetricsMaxRows {
		return
	}
	w := b.csv.Writer()
	if w == nil {
		return
	}
	v = wording.Cut(v, MetricsMaxValue)
	l := Time(b.line[:0], t)
	l = append(append(l, ','), Field(task)...)
	l = append(append(l, ','), name...)
	l = append(append(l, ','), Field(string(v))...)
	b.line = append(l, '\n')
	w.Write(b.line)
	b.rows++
}

// Close flushes metrics.csv.
func (b *Metrics) Close() error {
	if b == nil {
		return nil
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.csv.Close()
}
