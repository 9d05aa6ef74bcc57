package view

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/tfhive/tfhive/probe/wording"
	"github.com/tfhive/tfhive/schedule"
)

// Waiting is what `run --wait` says while it waits: what for, its place
// in the queue every waiter computes (schedule.Ahead, as `tfhive queue`
// lists it) and what is left of --wait. On a terminal one line says it,
// redrawn in place; elsewhere a line is written when Key changes.
type Waiting struct {
	// GPUs is how many GPUs the run asks, Free how many it found; GPUs 0:
	// GPUs are not what it waits for, Reason says what is.
	GPUs, Free int
	Reason     string
	// Ahead are the runs waiting ahead of it, in order; Queued says it
	// waits in the queue at all (--wait).
	Ahead  []schedule.QueueEntry
	Queued bool
	// Left is what is left of Wait (--wait; 0: none).
	Left, Wait time.Duration
}

// Line is the line, without its end: "tfhive: waiting for 4 GPUs (2 free
// now): 2nd in the queue (after run r17 of alice); 1:23:45 left of --wait
// 2h".
func (w Waiting) Line() string {
	s := w.Key()
	if w.GPUs > 0 {
		// Free is left out of the key: a GPU whose use hovers around
		// --max-util must not write a line a second.
		s = strings.Replace(s, wording.Count(w.GPUs, "GPU"), fmt.Sprintf("%s (%d free now)", wording.Count(w.GPUs, "GPU"), w.Free), 1)
	}
	if w.Wait > 0 {
		s += "; " + Clock(w.Left) + " left of --wait " + compact(w.Wait)
	}
	return s
}

// Fit is Line in at most cols columns (0: any): the free count goes
// first, then the run just ahead, then the end of the line, so that the
// time left stays as long as it can.
func (w Waiting) Fit(cols int) string {
	line := w.Line()
	if cols <= 0 || len([]rune(line)) <= cols {
		return line
	}
	if w.GPUs > 0 {
		short := w
		short.GPUs, short.Reason = 0, wording.Count(w.GPUs, "GPU")
		line = strings.Replace(short.Line(), "tfhive: waiting: ", "tfhive: waiting for ", 1)
	}
	if len([]rune(line)) > cols && len(w.Ahead) > 0 {
		e := w.Ahead[len(w.Ahead)-1]
		line = strings.Replace(line, fmt.Sprintf(" (after run %s of %s)", SanitizeCell(e.RunID), SanitizeCell(e.User)), "", 1)
	}
	return Truncate(line, cols)
}

// Key is what the line says, less what changes by itself (the time
// left, the free count): a line per change of it is written where the
// line cannot be redrawn.
func (w Waiting) Key() string {
	s := "tfhive: waiting"
	if w.GPUs > 0 {
		s += " for " + wording.Count(w.GPUs, "GPU")
	} else {
		s += ": " + SanitizeCell(wording.FirstLine(w.Reason))
	}
	if !w.Queued {
		return s
	}
	s += ": " + Ordinal(len(w.Ahead)+1) + " in the queue"
	if n := len(w.Ahead); n > 0 {
		e := w.Ahead[n-1]
		// A ticket's words are the host's: made inert, as in a table.
		s += fmt.Sprintf(" (after run %s of %s)", SanitizeCell(e.RunID), SanitizeCell(e.User))
	}
	return s
}

// Ordinal is 1st, 2nd, 3rd, 4th, …, 11th, 21st.
func Ordinal(n int) string {
	suffix := "th"
	if n%100 < 11 || n%100 > 13 {
		switch n % 10 {
		case 1:
			suffix = "st"
		case 2:
			suffix = "nd"
		case 3:
			suffix = "rd"
		}
	}
	return strconv.Itoa(n) + suffix
}

// Clock is a duration as h:mm:ss, or m:ss under an hour, to the second
// (rounded up: 0:00 only at the end).
func Clock(d time.Duration) string {
	s := int64((d + time.Second - 1) / time.Second)
	if s < 0 {
		s = 0
	}
	if s >= 3600 {
		return fmt.Sprintf("%d:%02d:%02d", s/3600, s/60%60, s%60)
	}
	return fmt.Sprintf("%d:%02d", s/60, s%60)
}

// compact is a duration as written on a command line: 2h, 1h30m, 90s
// as 1m30s, without the zero units time.Duration.String adds.
func compact(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}
