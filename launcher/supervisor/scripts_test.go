package supervisor

import (
	"strconv"
	"strings"
	"testing"

	"github.com/tfhive/tfhive/probe/claim"
	"github.com/tfhive/tfhive/probe/remote/shscript"
	"github.com/tfhive/tfhive/probe/remote/shscript/shscripttest"
)

func TestScriptsShellcheck(t *testing.T) {
	shscripttest.Shellcheck(t, Scripts)
}

// What is sent means what the files say: comments dropped, and the
// command line's scripts joined into one line.
func TestScriptsSentAsWritten(t *testing.T) {
	for name, s := range map[string]shscript.Script{"read-stage.sh": readStage, "supervisor-command.sh": supervisorLine,
		"supervisor-claim.sh": claimSh, "supervisor-run.sh": runSh, "task.sh": taskSh, "attach.sh": attachSh, "sample.sh": sampleSh, "mux.sh": muxSh} {
		shscripttest.SameMeaning(t, name, s)
	}
	if strings.Contains(Command, "\n") {
		t.Errorf("the supervisor's command line holds a newline (csh cannot quote one): %q", Command)
	}
}

// The scripts write what the Go side reads, in the claim format of
// probe/claim: the first line's markers, the holders' label, the status
// of a claim taken.
func TestScriptsFormats(t *testing.T) {
	busy := strconv.Itoa(ExitClaimBusy)
	for _, tt := range []struct {
		s    shscript.Script
		want []string
	}{
		{claimSh, []string{"'" + ClaimBlocked + "'", "-E " + busy + " ", " " + claim.HolderMarker + " "}},
		{runSh, []string{"'" + ClaimOK + "'", "'" + ClaimQueued + "'", "exit " + busy + "\n", "'" + StreamMarker + "'", "'" + ClaimFailed + "'",
			"printf '%s %s\\n' '" + strings.TrimSpace(TruncatedMarker) + "' \"$tfhive_mark\""}},
		{attachSh, []string{"'" + StreamMarker + "'", "printf '%s %s\\n' '" + strings.TrimSpace(TruncatedMarker) + "' \"$tfhive_mark\""}},
		{readStage, []string{"exit " + busy + ";"}},
	} {
		for _, want := range tt.want {
			if !strings.Contains(tt.s.Text(), want) {
				t.Errorf("%.40q… does not hold %q", tt.s.Text(), want)
			}
		}
	}
}
