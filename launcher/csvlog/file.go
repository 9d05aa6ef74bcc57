// Package csvlog is a run's CSV records, written as the run goes, into
// its directory: events.csv (Events: what happened to the tasks and
// links, when) and metrics.csv (Metrics: --capture's values over time),
// and the file they and gpu-usage.csv are written through (File). The
// report reads them (launcher/report).
package csvlog

import (
	"bufio"
	"io"
	"os"
	"strings"
	"time"

	"github.com/tfhive/tfhive/launcher/rundir"
)

// File is one of a run directory's CSV files (gpu-usage.csv, metrics.csv,
// events.csv): opened at its first row, never through a link
// (rundir.OpenFile), appended to by a run started again on a new plan
// (Appends), its Header written when the file is empty. Its owner holds
// the lock.
type File struct {
	Path    string
	Appends bool
	Header  string
	// BufSize 0: each row goes straight to the file (events.csv, whose
	// rows are few and worth having on a crash).
	BufSize int
	f       *os.File
	w       *bufio.Writer
	err     error
	closed  bool
}

// Writer is where the next row goes, the file opened if need be; nil
// once the file could not be opened or written (Fail), or was closed.
func (c *File) Writer() io.Writer {
	if c.closed || c.err != nil {
		return nil
	}
	if c.f == nil {
		mode := os.O_TRUNC
		if c.Appends {
			mode = os.O_APPEND
		}
		f, err := rundir.OpenFile(c.Path, os.O_CREATE|os.O_WRONLY|mode)
		if err != nil {
			c.err = err
			return nil
		}
		c.f = f
		if c.BufSize > 0 {
			c.w = bufio.NewWriterSize(f, c.BufSize)
		}
		if fi, err := f.Stat(); err != nil || fi.Size() == 0 {
			c.out().Write([]byte(c.Header))
		}
	}
	return c.out()
}

func (c *File) out() io.Writer {
	if c.w != nil {
		return c.w
	}
	return c.f
}

// Fail notes that a row could not be written: nothing more is.
func (c *File) Fail(err error) {
	if c.err == nil {
		c.err = err
	}
}

// Close flushes and closes the file: nothing is written after it. It
// says the first error the file had.
func (c *File) Close() error {
	if c.closed {
		return c.err
	}
	c.closed = true
	if c.f == nil {
		return c.err
	}
	var err error
	if c.w != nil {
		err = c.w.Flush()
	}
	if cerr := c.f.Close(); err == nil {
		err = cerr
	}
	c.f, c.w = nil, nil
	if c.err == nil {
		c.err = err
	}
	return c.err
}

// Field quotes a field holding a comma, quote or line end (host names
// come from the hosts file, values from the tasks' output).
func Field(s string) string {
	if !strings.ContainsAny(s, ",\"\n\r") {
		return s
	}
	return `"` + strings.ReplaceAll(s, `"`, `""`) + `"`
}

// Time is a row's time, as every CSV file of a run writes it.
func Time(b []byte, t time.Time) []byte { return t.UTC().AppendFormat(b, "2006-01-02T15:04:05.000Z") }
