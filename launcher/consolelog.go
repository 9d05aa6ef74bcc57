package launcher

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/tfhive/tfhive/launcher/rundir"
)

// ConsoleLog is a foreground run's console.log (Console.Record): what its
// terminal shows, as a detached run's keeper writes it, so that `tfhive
// logs RUN` prints any run's console. The log dir is made only once
// tasks are about to start (the launcher's rundir.Make): until it is
// there, lines wait in memory (at most maxConsoleWait bytes, then the
// oldest are dropped); a run that never made it leaves no file. The file
// is opened in the run's own log dir, never through a link
// (rundir.OpenFile). Writes never fail: the record is never the run's
// failure.
type ConsoleLog struct {
	path    string
	f       *os.File
	pending []byte
	gone    bool // the file could not be opened: nothing more is kept
}

// maxConsoleWait bounds what waits for the log dir.
const maxConsoleWait = 1 << 20

// NewConsoleLog is the record at path (LOGDIR/console.log).
func NewConsoleLog(path string) *ConsoleLog { return &ConsoleLog{path: path} }

// Write is called by one Console's drain goroutine at a time.
func (c *ConsoleLog) Write(p []byte) (int, error) {
	if c.gone {
		return len(p), nil
	}
	if c.f == nil && !c.open() {
		c.pending = append(c.pending, p...)
		if over := len(c.pending) - maxConsoleWait; over > 0 {
			c.pending = c.pending[over:]
		}
		return len(p), nil
	}
	if _, err := c.f.Write(p); err != nil {
		c.gone = true
	}
	return len(p), nil
}

// open opens the file once its directory is there, writing what waited.
func (c *ConsoleLog) open() bool {
	if _, err := os.Stat(filepath.Dir(c.path)); errors.Is(err, fs.ErrNotExist) {
		return false
	}
	f, err := rundir.OpenFile(c.path, os.O_CREATE|os.O_WRONLY|os.O_APPEND)
	if err != nil {
		c.gone, c.pending = true, nil
		return false
	}
	c.f = f
	if len(c.pending) > 0 {
		if _, err := f.Write(c.pending); err != nil {
			c.gone = true
		}
		c.pending = nil
	}
	return true
}

// Close writes what still waited, if the log dir is there now, and
// closes the file.
func (c *ConsoleLog) Close() error {
	if c.f == nil && !c.gone && len(c.pending) > 0 {
		c.open()
	}
	if c.f != nil {
		return c.f.Close()
	}
	return nil
}
