package launcher

import (
	"strings"
	"testing"

	"github.com/tfhive/tfhive/launcher/supervisor"
	"github.com/tfhive/tfhive/probe/remote/shscript"
	"github.com/tfhive/tfhive/probe/remote/shscript/shscripttest"
)

func TestScriptsShellcheck(t *testing.T) {
	shscripttest.Shellcheck(t, ownScripts)
}

// What is sent means what the files say: comments dropped, and the
// command line's scripts joined into one line.
func TestScriptsSentAsWritten(t *testing.T) {
	for name, s := range map[string]shscript.Script{"find-run.sh": findRunSh, "logs.sh": logsSh, "set-aside.sh": setAsideSh} {
		shscripttest.SameMeaning(t, name, s)
	}
}

// The scripts write what the Go side reads: the stream's markers, and
// the holders' label of probe/claim's format.
func TestScriptsFormats(t *testing.T) {
	for _, tt := range []struct {
		s    shscript.Script
		want []string
	}{
		{logsSh, []string{"'" + supervisor.StreamMarker + "'", "'" + logsMarker + "'", `"` + logMarker + `"`, "'" + noneMarker}},
	} {
		for _, want := range tt.want {
			if !strings.Contains(tt.s.Text(), want) {
				t.Errorf("%.40q… does not hold %q", tt.s.Text(), want)
			}
		}
	}
}
