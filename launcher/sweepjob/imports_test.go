package sweepjob

import (
	"testing"

	"github.com/tfhive/tfhive/probe/testkit"
)

// sweepjob is a sweep's story, below the commands, as job is a run's: it
// imports neither the commands nor the CLI (urfave/cli) nor what renders
// for people (view: its caller prints the table), and reads no
// environment: what a keeper learns from its environment, commands reads
// and passes in.
func TestImportsAndEnvironment(t *testing.T) {
	testkit.BelowTheCommands(t)
}
