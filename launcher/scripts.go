package launcher

import (
	"embed"
	"errors"
	"io/fs"

	"github.com/tfhive/tfhive/launcher/supervisor"
)

// ownScripts are the host scripts of the operations still in this
// package (find-run, logs, kill, gc-runs, ticket, doctor); the
// supervisor's are its own (supervisor.Scripts).
//
//go:embed scripts/*.sh
var ownScripts embed.FS

// scripts is where this package loads its scripts from: its own, and the
// supervisor's rundir.sh (the layout of the hosts' run directories),
// which several of them start with.
var scripts fs.FS = unionFS{ownScripts, supervisor.Scripts}

// unionFS opens a name in the first of its file systems that has it.
type unionFS []fs.FS

func (u unionFS) Open(name string) (fs.File, error) {
	for _, f := range u {
		file, err := f.Open(name)
		if err == nil || !errors.Is(err, fs.ErrNotExist) {
			return file, err
		}
	}
	return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrNotExist}
}
