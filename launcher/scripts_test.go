package launcher

import (
	"os/exec"
	"strconv"
	"strings"
	"testing"

	"github.com/tfhive/tfhive/probe/claim"
	"github.com/tfhive/tfhive/probe/remote/shscript"
	"github.com/tfhive/tfhive/probe/remote/shscript/shscripttest"
)

func TestScriptsShellcheck(t *testing.T) {
	shscripttest.Shellcheck(t, scripts)
}

// What is sent means what the files say: comments dropped, and the
// command line's scripts joined into one line.
func TestScriptsSentAsWritten(t *testing.T) {
	for name, s := range map[string]shscript.Script{"read-stage.sh": readStage, "supervisor-command.sh": supervisorLine,
		"supervisor-claim.sh": claimSh, "supervisor-run.sh": runSh, "task.sh": taskSh, "attach.sh": attachSh, "find-run.sh": findRunSh, "sample.sh": sampleSh, "logs.sh": logsSh, "mux.sh": muxSh} {
		shscripttest.SameMeaning(t, name, s)
	}
	if strings.Contains(SupervisorCommand, "\n") {
		t.Errorf("the supervisor's command line holds a newline (csh cannot quote one): %q", SupervisorCommand)
	}
}

// The scripts write what the Go side reads, in the claim format of
// probe/claim: the first line's markers, the holders' label, the status
// of a claim taken.
func TestScriptsFormats(t *testing.T) {
	busy := strconv.Itoa(exitClaimBusy)
	for _, tt := range []struct {
		s    shscript.Script
		want []string
	}{
		{claimSh, []string{"'" + claimBlocked + "'", "-E " + busy + " ", " " + claim.HolderMarker + " "}},
		{runSh, []string{"'" + claimOK + "'", "exit " + busy + "\n", "'" + streamMarker + "'", "'" + claimFailed + "'",
			"printf '%s %s\\n' '" + strings.TrimSpace(truncatedMarker) + "' \"$tfhive_mark\""}},
		{attachSh, []string{"'" + streamMarker + "'", "printf '%s %s\\n' '" + strings.TrimSpace(truncatedMarker) + "' \"$tfhive_mark\""}},
		{logsSh, []string{"'" + streamMarker + "'", "'" + logsMarker + "'", `"` + logMarker + `"`, "'" + noneMarker}},
		{readStage, []string{"exit " + busy + ";"}},
	} {
		for _, want := range tt.want {
			if !strings.Contains(tt.s.Text(), want) {
				t.Errorf("%.40q… does not hold %q", tt.s.Text(), want)
			}
		}
	}
}

// The low run's watch takes a request named HIGH.LOW, or HIGH.WORD.LOW
// with WORD 16 hex digits, for the runs its label names, and no other.
func TestPreemptWatchRequestNames(t *testing.T) {
	src, err := scripts.ReadFile("scripts/preempt-watch.sh")
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]bool{
		"hi.lo":                     true,
		"hi.0123456789abcdef.lo":    true,
		"hi.0123456789abcde.lo":     false,
		"hi.0123456789ABCDEF.lo":    false,
		"hi.x.0123456789abcdef.lo":  false,
		"hi.lo.0123456789abcdef":    false,
		"other.0123456789abcdef.lo": false,
		"hi.lo2":                    false,
	} {
		cmd := exec.Command("bash", "-c", "tfhive_preempt= tfhive_grace=1\n"+string(src)+"\ntfhive_request_name \"$1\" hi lo", "-", name)
		err := cmd.Run()
		if got := err == nil; got != want {
			t.Errorf("%s: taken %v, want %v (%v)", name, got, want, err)
		}
	}
}
