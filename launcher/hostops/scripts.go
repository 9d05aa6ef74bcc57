package hostops

import (
	"embed"
	"io/fs"

	"github.com/tfhive/tfhive/launcher"
)

// The scripts hostops sends, each a stage for the supervisor's command
// line (launcher.SupervisorCommand) but kill.sh, which sh reads.
//
//go:embed scripts/*.sh
var own embed.FS

// scripts is this package's scripts and, as scripts/rundir.sh, the
// supervisor's run directory helpers that gc-runs.sh starts with: the
// supervisor writes a run's files, so its copy says where they are.
var scripts fs.FS = withRunDir{}

type withRunDir struct{}

func (withRunDir) Open(name string) (fs.File, error) {
	if name == "scripts/rundir.sh" {
		return launcher.RunDirFS().Open(name)
	}
	return own.Open(name)
}

// What hostops needs of the supervisor, in one place: its command line,
// which every kept run's host runs already, and the way stages are sent.
var (
	supervisorCommand = launcher.SupervisorCommand
	writeChunked      = launcher.WriteChunked
)
