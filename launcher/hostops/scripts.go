package hostops

import (
	"embed"

	"github.com/tfhive/tfhive/launcher/supervisor"
)

// The scripts hostops sends, each a stage for the supervisor's command
// line (supervisor.Command) but kill.sh, which sh reads.
//
//go:embed scripts/*.sh
var own embed.FS

// scripts is this package's scripts and, as scripts/rundir.sh, the
// supervisor's run directory helpers that gc-runs.sh starts with: the
// supervisor writes a run's files, so its copy says where they are.
var scripts = supervisor.WithRunDir(own)

// What hostops needs of the supervisor, in one place: its command line,
// which every kept run's host runs already, and the way stages are sent.
var (
	supervisorCommand = supervisor.Command
	writeChunked      = supervisor.WriteChunked
)

// The bounds of what is read of a host's answer: a listing (gc-runs.sh's
// runs and their sizes, a line each), a script's few lines of its own
// (kill.sh's count), and stderr, read for one line. An answer past its
// bound stops the script and is not read at all: what the host did is
// unknown, and said to be (remote.RunBounded).
const (
	maxListing = 4 << 20
	maxLines   = 64 << 10
	maxStderr  = 64 << 10
)
