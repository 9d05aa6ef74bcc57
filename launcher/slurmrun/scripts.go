package slurmrun

import (
	"embed"

	"github.com/tfhive/tfhive/probe/remote/shscript"
)

// Scripts are the scripts sent to the login node (shellcheck reads them
// in the tests).
//
//go:embed scripts/*.sh
var Scripts embed.FS

var (
	submitSh = shscript.Load(Scripts, "scripts/submit.sh")
	followSh = shscript.Load(Scripts, "scripts/follow.sh")
	cancelSh = shscript.Load(Scripts, "scripts/cancel.sh")
)
