package launcher

import (
	"embed"

	"github.com/tfhive/tfhive/launcher/supervisor"
)

// ownScripts are the host scripts of the engine's own: find-run.sh, which
// finds a kept run to adopt (adopt.go), and set-aside.sh, which keeps a
// trial's earlier run directory before it runs again (setaside.go),
// end-notice.sh, which tells a kept run's end once (endnotice.go); the
// supervisor's are its own
// (supervisor.Scripts), and the other operations' are in their packages
// (launcher/hostlogs, launcher/hostops, launcher/doctor, launcher/codesync).
//
//go:embed scripts/*.sh
var ownScripts embed.FS

// scripts is ownScripts with the supervisor's rundir.sh (the layout of
// the hosts' run directories), which both start with.
var scripts = supervisor.WithRunDir(ownScripts)
