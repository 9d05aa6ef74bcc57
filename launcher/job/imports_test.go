package job

import (
	"testing"

	"github.com/tfhive/tfhive/probe/testkit"
)

// job is a run's story, below the commands: it imports neither the
// commands nor the CLI (urfave/cli) nor what renders for people (view:
// its caller prints), and reads no environment: what a keeper learns
// from its environment, commands reads and passes in.
func TestImportsAndEnvironment(t *testing.T) {
	testkit.BelowTheCommands(t)
}
