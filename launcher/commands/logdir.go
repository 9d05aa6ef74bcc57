package commands

import (
	"errors"

	"github.com/tfhive/tfhive/launcher/rundir"
)

// checkLogDir refuses, before any host is contacted, a log dir that run
// could not create or fill (rundir.CheckUsable), or one that another
// user could have made or could swap (rundir.Check: a link, a directory
// of theirs on the way, one that others may write to): one line, naming
// the path and its owner. It creates nothing. given says the user chose
// dir, for the hint.
func checkLogDir(dir string, given bool) error {
	if err := rundir.CheckUsable(dir); err != nil {
		var ue *rundir.UnusableError
		if !errors.As(err, &ue) {
			return err
		}
		hint := "choose another --log-dir"
		switch {
		case ue.NotEmpty && !given:
			hint = "choose another --name or --log-dir"
		case !given:
			hint = "give --log-dir DIR, or start tfhive in a directory you can write to"
		}
		return &UsageError{Msg: ue.Error(), Fix: hint}
	}
	if err := rundir.Check(dir); err != nil {
		return &UsageError{Msg: "log dir " + dir + " refused: " + err.Error()}
	}
	return nil
}
