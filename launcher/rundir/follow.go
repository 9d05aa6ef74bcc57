package rundir

import (
	"context"
	"io"
	"os"
	"time"
)

// FollowPoll is how often a file that grows is read again while its run
// goes on: a file has no wakeup of its own.
const FollowPoll = 100 * time.Millisecond

// Follow copies path (a file of run dir dir: its console, a task's log)
// from offset to w, then, while the run goes on and live is set, what is
// added to it, until the run ends or ctx does.
func Follow(ctx context.Context, w io.Writer, path string, offset int64, dir string, live bool) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	if _, err := f.Seek(offset, io.SeekStart); err != nil {
		return err
	}
	tick := time.NewTicker(FollowPoll)
	defer tick.Stop()
	for {
		// Whether it went on is asked before the last read: what was
		// written before it ended is then all read.
		goesOn := live && GoesOn(dir)
		if _, err := io.Copy(w, f); err != nil {
			return err
		}
		if !goesOn {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
		}
	}
}
