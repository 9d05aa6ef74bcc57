package launcher

import (
	"sync"
	"time"
)

// metrics.csv: the values --capture finds, each with the time it arrived
// (time,task,name,value), so that the report draws each metric over the
// run; the summary keeps only the last.
//
// Decisions:
//   - A value is what capture.go finds: the last match of the lines that
//     arrived together (one Write), stamped with their arrival. Lines that
//     arrive together have one time: keeping their every match would add
//     points at that one time, and cost a regex per line.
//   - Bounded, however long the run: each task's series of each name keeps
//     seriesDense rows at every stride, first every value, then every 2nd,
//     4th… (so a week's run keeps its whole curve, denser at its start);
//     the last value is always written when the task's output ends. At
//     most seriesMaxRows rows in all, values cut at seriesMaxValue bytes.
//   - Written where the value is found, under the task's lock, into a
//     buffer (a write to the file per 64 KiB): it costs a run next to
//     nothing. A run started again on a new plan appends, as the logs do.

const (
	seriesDense    = 1000
	seriesMaxRows  = 100_000
	seriesMaxValue = 64
)

// seriesBook is a run's metrics.csv.
type seriesBook struct {
	mu   sync.Mutex
	csv  csvLog
	rows int
	line []byte
}

func newSeriesBook(path string, appends bool) *seriesBook {
	return &seriesBook{csv: csvLog{path: path, appends: appends, header: "time,task,name,value\n", bufSize: 64 << 10}}
}

// taskSeries is one task's series, one per capture.
type taskSeries struct {
	book *seriesBook
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

func (b *seriesBook) task(id string, n int) *taskSeries {
	if b == nil {
		return nil
	}
	ts := &taskSeries{book: b, task: id, st: make([]seriesState, n)}
	for i := range ts.st {
		ts.st[i].stride = 1
	}
	return ts
}

// found takes capture i's value v (named name), found now.
func (ts *taskSeries) found(i int, name string, v []byte) {
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
	if st.kept++; st.kept == seriesDense {
		st.stride, st.kept = 2*st.stride, 0
	}
}

// end writes capture i's last value, if thinning passed it over.
func (ts *taskSeries) end(i int, name, v string) {
	if st := &ts.st[i]; st.pending {
		st.pending = false
		ts.book.write(st.at, ts.task, name, []byte(v))
	}
}

func (b *seriesBook) write(t time.Time, task, name string, v []byte) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.rows >= seriesMaxRows {
		return
	}
	w := b.csv.writer()
	if w == nil {
		return
	}
	v = cutRunes(v, seriesMaxValue)
	l := t.UTC().AppendFormat(b.line[:0], "2006-01-02T15:04:05.000Z")
	l = append(append(l, ','), csvField(task)...)
	l = append(append(l, ','), name...)
	l = append(append(l, ','), csvField(string(v))...)
	b.line = append(l, '\n')
	w.Write(b.line)
	b.rows++
}

// close flushes metrics.csv.
func (b *seriesBook) close() error {
	if b == nil {
		return nil
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.csv.close()
}
