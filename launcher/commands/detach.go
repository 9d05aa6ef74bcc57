package commands

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/tfhive/tfhive/launcher/keeper"
	"github.com/tfhive/tfhive/launcher/rundir"
)

// `tfhive run --detach` starts a keeper (launcher/keeper) and waits for
// its word.

// ExitError ends tfhive with Code, having said all there is to say.
type ExitError struct{ Code int }

func (e *ExitError) Error() string { return fmt.Sprintf("exit %d", e.Code) }

// detach starts the keeper and waits for it to say the tasks started.
func detach(o RunOptions) error {
	id := o.Job.Name
	if id == "" {
		id = newRunID(time.Now())
	}
	dir := o.LogDir
	if dir == "" {
		dir = rundir.Path(id)
	}
	if err := checkLogDir(dir, o.LogDir != ""); err != nil {
		return err
	}
	if err := rundir.Make(dir); err != nil {
		return fmt.Errorf("log dir: %w", err)
	}
	code, err := keeper.Spawn(dir, id, os.O_EXCL, o.Notify, o.Stderr)
	if err != nil {
		return err
	}
	if code < 0 {
		if o.JSON {
			fmt.Fprintf(o.Stdout, "{\"run_id\": %q, \"log_dir\": %q}\n", id, dir)
		} else {
			fmt.Fprintln(o.Stdout, id)
		}
		from := ""
		if f := hostsFrom(o.Hosts); f != "" {
			from = " (" + f + ")"
		}
		fmt.Fprintf(o.Stderr, "tfhive: run %s started, detached%s; logs in %s\n", id, from, dir)
		fmt.Fprintf(o.Stderr, "tfhive: hint: tfhive attach %s follows it, tfhive wait %s waits for its end, tfhive kill %s stops it\n", id, id, id)
		return nil
	}
	if _, err := os.Stat(filepath.Join(dir, rundir.Summary)); errors.Is(err, os.ErrNotExist) {
		// Nothing ran: no log dir is left behind.
		os.RemoveAll(dir)
	}
	return &ExitError{Code: code}
}
