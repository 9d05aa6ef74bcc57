package sweepjob

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/tfhive/tfhive/launcher/rundir"
)

// AskStop asks the tfhive of the sweep in dir, if one runs it, to stop
// its trials and start no more; false when none runs it. The caller
// waits for the sweep's end (rundir.WaitEnd).
//
// The word is a file, tfhive-runs/SWEEP/stop, which that tfhive looks
// for before it starts a trial and every StopPoll (askedToStop): unlike
// a signal it needs no pid (none to trust, none reused), reaches a
// foreground sweep and a detached one alike, and a tfhive on another
// machine that shares the log root. It is created only in a log dir of
// the user's own (rundir.Check), new (O_EXCL) and never through a link
// (O_NOFOLLOW).
func AskStop(dir string) (bool, error) {
	if !rundir.GoesOn(dir) {
		return false, nil
	}
	if err := rundir.Check(dir); err != nil {
		return false, fmt.Errorf("log dir: %w", err)
	}
	f, err := rundir.OpenFile(filepath.Join(dir, rundir.SweepStop), os.O_CREATE|os.O_WRONLY|os.O_EXCL)
	switch {
	case err == nil:
		f.Close()
	case !errors.Is(err, fs.ErrExist): // asked before: asking again is the same
		return false, fmt.Errorf("log dir: %w", err)
	}
	return true, nil
}
