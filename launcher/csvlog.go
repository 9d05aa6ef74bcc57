package launcher

import (
	"bufio"
	"io"
	"os"

	"github.com/tfhive/tfhive/launcher/rundir"
)

// csvLog is one of a log dir's CSV files (gpu-usage.csv, metrics.csv,
// events.csv): opened at its first row, never through a link
// (rundir.OpenFile), appended to by a run started again on a new plan, its
// header written when the file is empty. Its owner holds the lock.
type csvLog struct {
	path    string
	appends bool
	header  string
	// bufSize 0: each row goes straight to the file (events.csv, whose
	// rows are few and worth having on a crash).
	bufSize int
	f       *os.File
	w       *bufio.Writer
	err     error
	closed  bool
}

// writer is where the next row goes, the file opened if need be; nil
// once the file could not be opened or written, or was closed.
func (c *csvLog) writer() io.Writer {
	if c.closed || c.err != nil {
		return nil
	}
	if c.f == nil {
		mode := os.O_TRUNC
		if c.appends {
			mode = os.O_APPEND
		}
		f, err := rundir.OpenFile(c.path, os.O_CREATE|os.O_WRONLY|mode)
		if err != nil {
			c.err = err
			return nil
		}
		c.f = f
		if c.bufSize > 0 {
			c.w = bufio.NewWriterSize(f, c.bufSize)
		}
		if fi, err := f.Stat(); err != nil || fi.Size() == 0 {
			c.out().Write([]byte(c.header))
		}
	}
	return c.out()
}

func (c *csvLog) out() io.Writer {
	if c.w != nil {
		return c.w
	}
	return c.f
}

// close flushes and closes the file: nothing is written after it. It
// says the first error the file had.
func (c *csvLog) close() error {
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
