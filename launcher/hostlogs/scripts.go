package hostlogs

import (
	"embed"

	"github.com/tfhive/tfhive/launcher/supervisor"
)

// logs.sh, which starts with the supervisor's rundir.sh: where a kept
// run's files are on its host.
//
//go:embed scripts/*.sh
var own embed.FS

var scripts = supervisor.WithRunDir(own)
